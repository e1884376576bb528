"""Many runs at once: `vmap` over seeds and hyper-parameter grids, chunked and sharded."""

import functools
import itertools
from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import PyTree
from tqdm.auto import tqdm

from ._run import Run, StopReason

SEEDS_AXIS = "seeds"


@functools.lru_cache(maxsize=64)
def _batched(fn: Callable) -> Callable:
    """`jit(vmap(fn))`, made once per function (the last 64 kept) so repeated calls with the
    same function reuse its compilations."""
    return jax.jit(jax.vmap(fn))


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """`num_seeds` independent PRNG keys derived from one integer seed (run i uses key i)."""
    return jax.random.split(jax.random.PRNGKey(seed), num_seeds)


def grid(**axes: Iterable) -> dict[str, np.ndarray]:
    """The Cartesian product of named axes, flattened in C order (the last axis varies fastest).

    `grid(eta_z=[0.5, 1], ratio=[1, 2, 5])` gives two arrays of length 6; reshape a result of
    [`run_many`][] over it with `.reshape(2, 3, ...)`.

    **Arguments:** `**axes`: name -> the values along that axis.

    **Returns:** name -> a 1-D numpy array over all combinations.
    """
    names = list(axes)
    values = [list(v) for v in axes.values()]
    for name, v in zip(names, values):
        if not v:
            raise ValueError(f"grid axis {name!r} must have at least one value")
    combos = list(itertools.product(*values))
    return {name: np.asarray([c[i] for c in combos]) for i, name in enumerate(names)}


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
    flattened). Runs are split into chunks of at most `chunk_size` so memory stays bounded;
    each chunk is padded to a multiple of the device count and laid out along a `seeds` mesh
    axis over all local devices (`jax.sharding`), so 1 run and 4096 runs are the same call.

    **Arguments:**

    - `fn`: one run, `(*args) -> PyTree of arrays` (e.g. a [`Run`][]); compiled once per chunk
      shape, and reused by later calls with the same `fn` object.
    - `*batched_args`: PyTrees whose leaves have the run axis first.
    - `chunk_size`: runs per compiled call; default all at once.
    - `devices`: devices to shard over; default `jax.local_devices()`.
    - `progress`: show a progress bar over chunks.
    - `description`: the progress bar's label.

    **Returns:** `(outputs, finite)`: the outputs stacked along the run axis as numpy arrays,
    and a boolean array that is False for each run whose outputs hold a NaN or an infinity
    (a diverging run is flagged; the others are unaffected).
    """
    num_runs = _leading_size(batched_args)
    devices = jax.local_devices() if devices is None else devices
    chunk = num_runs if chunk_size is None else max(1, min(chunk_size, num_runs))
    chunk = -(-chunk // len(devices)) * len(devices)
    sharding = NamedSharding(Mesh(np.asarray(devices), (SEEDS_AXIS,)), PartitionSpec(SEEDS_AXIS))
    batched_fn = _batched(fn)
    pieces = []
    for start in tqdm(range(0, num_runs, chunk), desc=description, disable=not progress, unit="chunk"):
        stop = min(start + chunk, num_runs)
        index = np.minimum(np.arange(start, start + chunk), stop - 1)
        args = jax.tree.map(lambda x: jax.device_put(jnp.asarray(x)[index], sharding), batched_args)
        out = jax.device_get(batched_fn(*args))
        pieces.append(jax.tree.map(lambda x: np.asarray(x)[: stop - start], out))
    outputs = jax.tree.map(lambda *xs: np.concatenate(xs), *pieces)
    return outputs, _finite_runs(outputs, num_runs)


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
