"""Many runs at once: `vmap` over seeds and hyper-parameter grids, chunked and sharded."""

import itertools
from collections.abc import Callable, Iterable

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import PyTree

from ._progress import inner_meters, progress_inside, progress_over
from ._run import Run, StopReason

SEEDS_AXIS = "seeds"
"""The name of the device-mesh axis that [`run_many`][] splits the runs over when it shards them
across several devices."""


def _call(fn: Callable, args: tuple) -> PyTree:
    return fn(*args)


@eqx.filter_jit
def _batched(fn: Callable, args: tuple, meters: bool) -> PyTree:
    """`vmap(fn)(*args)` over the leading axis of `args`, compiled by `equinox.filter_jit`: the
    arrays `fn` holds (as a PyTree callable) are arguments of the compiled call, broadcast over
    runs, and everything else is static; with `meters` it is traced inside [`progress_inside`][].

    The runs are laid out over the devices by their `NamedSharding` (the compiler partitions the
    batched program). `jax.shard_map` (each device on its own) measures 1.10-1.20x faster for an
    explicit flow on 4 CPU devices (`bench/scan_snap/sharding.py`), but Diffrax's implicit solvers and
    root-found events solve linear systems with lineax, which fails under `shard_map` ("pytree
    does not match out_structure"), so the compiler's partitioning stays."""
    with progress_inside(meters):
        return eqx.filter_vmap(_call, in_axes=(None, 0))(fn, args)


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """`num_seeds` independent PRNG keys derived from one integer seed (run i uses key i).

    **Example:** four keys, four different draws:

        >>> import jax
        >>> import dynamics
        >>> keys = dynamics.seed_keys(0, 4)
        >>> keys.shape
        (4, 2)
        >>> draws = jax.vmap(lambda key: jax.random.normal(key))(keys)
        >>> len(set(draws.tolist()))
        4
    """
    return jax.random.split(jax.random.PRNGKey(seed), num_seeds)


def grid(**axes: Iterable) -> dict[str, np.ndarray]:
    """The Cartesian product of named axes, flattened in C order (the last axis varies fastest).

    `grid(eta_z=[0.5, 1], ratio=[1, 2, 5])` gives two arrays of length 6; reshape a result of
    [`run_many`][] over it with `.reshape(2, 3, ...)`.

    **Arguments:** `**axes`: name → the values along that axis.

    **Returns:** name → a 1-D numpy array over all combinations.

    **Example:** a 2 × 3 grid, one run per point, reshaped back to the grid:

        >>> import dynamics
        >>> points = dynamics.grid(eta=[0.5, 1.0], ratio=[1.0, 2.0, 5.0])
        >>> points["eta"].tolist()
        [0.5, 0.5, 0.5, 1.0, 1.0, 1.0]
        >>> points["ratio"].tolist()
        [1.0, 2.0, 5.0, 1.0, 2.0, 5.0]
        >>> products, _ = dynamics.run_many(lambda eta, ratio: eta * ratio, points["eta"], points["ratio"])
        >>> products.reshape(2, 3).tolist()
        [[0.5, 1.0, 2.5], [1.0, 2.0, 5.0]]
    """
    names = list(axes)
    values = [list(v) for v in axes.values()]
    for name, v in zip(names, values):
        if not v:
            raise ValueError(f"grid axis {name!r} must have at least one value")
    combos = list(itertools.product(*values))
    return {name: np.asarray([c[i] for c in combos]) for i, name in enumerate(names)}


def even_width(count: int, most: int) -> int:
    """The width of the fewest parts of at most `most` items that hold `count` items, as even as
    their number allows (the last may hold fewer): 100 in parts of at most 64 are parts of 50.

        >>> from dynamics._batch import even_width
        >>> even_width(100, 64), even_width(65, 64), even_width(3, 64)
        (50, 33, 3)
    """
    return -(-count // -(-count // most))


def _leading_size(tree: PyTree) -> int:
    sizes = {np.shape(x)[0] for x in jax.tree.leaves(tree)}
    if len(sizes) != 1:
        raise ValueError(
            f"every batched argument needs the same leading (run) axis, got sizes {sorted(sizes)}"
        )
    return sizes.pop()


def run_many(
    fn: Callable[..., PyTree],
    *batched_args: PyTree,
    chunk_size: int | None = None,
    devices: list | None = None,
    progress: bool = False,
    description: str = "runs",
) -> tuple[PyTree, np.ndarray]:
    """Call `fn` once per run, vectorised: `vmap` in chunks, each chunk sharded over devices.

    Every leaf of every argument carries a leading run axis (seeds, grid points, or both,
    flattened). Runs are split into chunks of at most `chunk_size` so memory stays bounded, as
    even as their number allows (65 runs in chunks of at most 64: two of 33), the last padded
    to the others' width so that they share one compilation; each chunk is padded to a multiple
    of the device count and laid out along a `seeds` mesh axis over all local devices
    (`jax.sharding`), so 1 run and 4096 runs are the same call.

    **Arguments:**

    - `fn`: one run, `(*args) -> PyTree of arrays`, compiled once per chunk shape with
      `equinox.filter_jit`. A PyTree callable (an `equinox.Module` such as a simulation's bound
      `sim.run`, or `equinox.Partial(f, data)`) passes the arrays it holds to the compiled call:
      a later call with other arrays of the same shapes reuses the compilation; its other
      values are static (a new value compiles anew). A plain function (a `lambda`, a closure)
      is compiled once per function object, with the arrays it captures as constants, as
      `jax.jit` does.
    - `*batched_args`: PyTrees whose leaves have the run axis first.
    - `chunk_size`: runs per compiled call; default all at once.
    - `devices`: devices to shard over; default `jax.local_devices()`.
    - `progress`: show progress over the chunks (when there are several) and, on a terminal, a
      bar inside each flow or scan (see [`progress_inside`][]); where stderr is not a terminal
      (a log, a pipe), one line per chunk and nothing inside.
    - `description`: the progress bar's label.

    **Returns:** `(outputs, finite)`: the outputs stacked along the run axis as numpy arrays,
    and a boolean array that is False for each run whose outputs hold a NaN or an infinity
    (a diverging run is flagged; the others are unaffected).

    **Example:** gradient flow on L(θ) = ½‖θ‖² from 4 random starts (one per seed), in one call:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import dynamics
        >>> def one_run(key):
        ...     theta0 = jax.random.normal(key, (2,))
        ...     return dynamics.gradient_flow(lambda theta: 0.5 * jnp.sum(theta**2), theta0, t1=1.0)
        >>> runs, finite = dynamics.run_many(one_run, dynamics.seed_keys(0, 4))
        >>> runs.values.shape, runs.final.shape, finite.tolist()
        ((4, 2, 2), (4, 2), [True, True, True, True])
        >>> bool(np.allclose(runs.final, runs.values[:, 0] * np.exp(-1.0)))
        True
    """
    num_runs = _leading_size(batched_args)
    devices = jax.local_devices() if devices is None else devices
    chunk = _chunk_width(num_runs, chunk_size, devices)
    pieces = []
    starts = range(0, num_runs, chunk)
    meters = inner_meters(progress)
    with progress_over(len(starts), description, "chunk", progress and len(starts) > 1) as bar:
        for start in starts:
            stop = min(start + chunk, num_runs)
            args = _chunk_args(batched_args, start, chunk, num_runs, devices)
            out = jax.device_get(_batched(fn, args, meters))
            pieces.append(jax.tree.map(lambda x: np.asarray(x)[: stop - start], out))
            bar.update()
    outputs = jax.tree.map(lambda *xs: np.concatenate(xs), *pieces)
    return outputs, _finite_runs(outputs, num_runs)


def compile_ahead(
    fn: Callable[..., PyTree],
    *batched_args: PyTree,
    chunk_size: int | None = None,
    devices: list | None = None,
    progress: bool = False,
) -> None:
    """Compile the program that [`run_many`][]`(fn, *batched_args, ...)` calls with the same
    arguments, without running anything: the call then compiles nothing. Only the shapes and
    dtypes of `batched_args` matter (zeros will do).

    Compiling every program of a piece of work before running any keeps the compiler apart from
    the runs (on a GPU, XLA's autotuner times its kernels on the device, where queued runs would
    delay it), and lets several programs compile side by side (see [`sweep`][]).

    **Arguments:** as [`run_many`][]'s.

    **Example:**

        >>> import numpy as np
        >>> import dynamics
        >>> from dynamics._batch import compile_ahead
        >>> def double(x):
        ...     return 2 * x
        >>> compile_ahead(double, np.zeros(4))
        >>> with dynamics.recording_compiles() as record:
        ...     out, _ = dynamics.run_many(double, np.arange(4.0))
        >>> out.tolist(), record.stats.compiled + record.stats.cached
        ([0.0, 2.0, 4.0, 6.0], 0)
    """
    num_runs = _leading_size(batched_args)
    devices = jax.local_devices() if devices is None else devices
    chunk = _chunk_width(num_runs, chunk_size, devices)
    args = _chunk_args(batched_args, 0, chunk, num_runs, devices)
    _batched.lower(fn, args, inner_meters(progress)).compile()


def _chunk_width(num_runs: int, chunk_size: int | None, devices: list) -> int:
    """The runs of each call of [`run_many`][]: as even as their number allows, a multiple of the
    device count."""
    chunk = num_runs if chunk_size is None else even_width(num_runs, max(1, chunk_size))
    return -(-chunk // len(devices)) * len(devices)


def _chunk_args(batched_args: tuple, start: int, chunk: int, num_runs: int, devices: list) -> tuple:
    """The arguments of the call of [`run_many`][] from run `start`: `chunk` runs (the last run
    repeated past the end), laid out over `devices` along the `seeds` mesh axis."""
    sharding = NamedSharding(Mesh(np.asarray(devices), (SEEDS_AXIS,)), PartitionSpec(SEEDS_AXIS))
    stop = min(start + chunk, num_runs)
    index = np.minimum(np.arange(start, start + chunk), stop - 1)
    whole = start == 0 and chunk == num_runs  # every run, in order: nothing to select

    def part(x):  # host arrays are cut on the host: no program compiled for the selection
        return x if whole else (x[index] if isinstance(x, jax.Array) else np.asarray(x)[index])

    return jax.tree.map(lambda x: jax.device_put(part(x), sharding), batched_args)


def _finite_runs(outputs: PyTree, num_runs: int) -> np.ndarray:
    """Per run: False where it diverged. A [`Run`][] says so itself (its saves after an early
    stop legitimately hold `inf`); other outputs are checked leaf by leaf."""
    if isinstance(outputs, Run):
        return np.asarray(outputs.stop) != StopReason.nonfinite
    finite = np.ones(num_runs, bool)
    for leaf in jax.tree.leaves(outputs):
        if np.issubdtype(np.asarray(leaf).dtype, np.inexact):
            finite &= np.isfinite(np.asarray(leaf).reshape(num_runs, -1)).all(axis=1)
    return finite
