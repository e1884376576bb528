"""Many seeds of one simulation, and a grid of settings × seeds as one labelled dataset."""

import dataclasses
import itertools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import numpy as np
import xarray as xr
import zarr

from ._batch import run_many
from ._params import params
from ._run import Run
from ._simulation import AbstractSimulation, batched_run, static_part, traced_arrays
from ._store import CREATED, make_plan, open_store, units_done, warn_if_seeds_identical, write_sweep
from ._trajectory import Trajectory


def _check_seeds(num_seeds: int, seed: int) -> None:
    for name, value, low in (("num_seeds", num_seeds, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _run_seeds(sim: AbstractSimulation, num_seeds: int, seed: int, chunk_size: int, progress: bool) -> Run:
    """`num_seeds` runs of `sim`, batched; warns when every seed gave the same run."""
    seeds = seed + np.arange(num_seeds)
    static = static_part(sim)
    traced = {k: np.repeat(v, num_seeds) for k, v in traced_arrays(static, [sim]).items()}
    runs, _ = run_many(
        batched_run(static),
        traced,
        seeds,
        chunk_size=chunk_size,
        progress=progress,
        description=type(sim).__name__,
    )
    warn_if_seeds_identical(sim, num_seeds, jax.tree.leaves(runs.values))
    return runs


def simulate(
    sim: AbstractSimulation, num_seeds: int, *, seed: int = 0, chunk_size: int = 64, progress: bool = False
) -> Trajectory:
    """Run `num_seeds` seeds of `sim` in batched calls (`vmap` in chunks over local devices).

    Run i uses the PRNG key of the integer seed `seed + i` ([`seed_key`][]). When every seed gives
    the same run (a deterministic flow from a fixed start), a `UserWarning` says so, with the
    simulation's `seed_hint`.

    **Arguments:**

    - `sim`: the simulation.
    - `num_seeds`: the number of runs (>= 1).
    - `seed`: the first run's integer seed (>= 0).
    - `chunk_size`: runs per compiled call.
    - `progress`: show progress bars: over chunks of runs, and inside each flow or scan.

    **Returns:** a [`Trajectory`][] whose config is `sim.describe()` with the seeds.

    **Example:** 4 seeds of an exponential decay from random starts, each ending at
    y(1) = y(0) e^{−2} (float64):

        >>> import numpy as np
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval(0, low_open=True), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> trajectory = dynamics.simulate(Decay(rate=2.0), num_seeds=4)
        >>> trajectory.values["y"].shape, trajectory.stop_reasons.tolist()
        ((4, 2), ['completed', 'completed', 'completed', 'completed'])
        >>> y = trajectory.values["y"]
        >>> bool(np.allclose(y[:, 1], y[:, 0] * np.exp(-2.0))), len(set(y[:, 0].tolist()))
        (True, 4)
        >>> trajectory.config["rate"], trajectory.config["num_seeds"], trajectory.config["seed"]
        (2.0, 4, 0)
    """
    _check_seeds(num_seeds, seed)
    runs = _run_seeds(sim, num_seeds, seed, chunk_size, progress)
    config = sim.describe() | {"num_seeds": num_seeds, "seed": seed}
    return Trajectory.from_runs(runs, config, sim.event_names)


def sweep(
    sim: AbstractSimulation,
    grid: Mapping[str, Sequence],
    *,
    num_seeds: int,
    seed: int = 0,
    chunk_size: int = 64,
    progress: bool = False,
    store: str | os.PathLike | None = None,
    shard: tuple[int, int] = (0, 1),
    attrs: Mapping | None = None,
) -> xr.Dataset:
    """A grid of settings × seeds of `sim`, as one labelled dataset, written block by block.

    Every grid point is `sim` with the grid's values replaced (and checked) before any run starts.
    Grid points that differ only in fields declared `traced` run in one compiled, batched call;
    every grid point uses the same seeds `seed, seed + 1, ...` (common random numbers).

    With a `store`, each block of at most `chunk_size` runs is written to it as soon as it
    finishes, so memory holds one block, not the sweep; the same call on the same store resumes
    after a crash (the blocks already written are skipped, and the result is bit for bit the
    uninterrupted one), and `shard=(i, n)` runs only every n-th block from the i-th, so n
    processes (or cluster jobs) sharing the store complete it together.

    **Main arguments:**

    - `sim`: the simulation whose other fields stay fixed.
    - `grid`: field name -> the values along that axis (the last axis varies fastest); `{}` for
      seeds only.
    - `num_seeds`: runs per grid point (>= 1).

    **Other arguments:**

    - `seed`: the first run's integer seed (>= 0).
    - `chunk_size`: runs per compiled call and per written block (a store resumes only with the
      chunk size that made it).
    - `progress`: progress bars over blocks and inside each flow or scan.
    - `store`: a directory for the zarr store (created, or resumed when it holds this same sweep);
      default: in memory.
    - `shard`: `(i, n)`: this process's share of the blocks (`0 <= i < n`).
    - `attrs`: more attributes of the dataset (recorded when a store is created), e.g. provenance.

    **Returns:** an `xarray.Dataset` with one dimension per grid axis (its values as the
    coordinate), then `seed` and `save`: `time` and every saved value over
    `(*grid, seed, save, ...)` (`value` when the run saves one array), `final.<name>` for the
    state each run ended in, `stop` (an index into `stop_reasons`), `event` (an index into
    `event_names`, −1 if none fired), `t_stop`, `num_steps`; the attribute `config` holds
    `sim.describe()`, the grid and the seeds as JSON. In memory without a `store`; opened lazily
    from the store with one (blocks of other shards not yet written hold NaN, or −1 for integers:
    see [`sweep_progress`][]).

    **Raises:** `ValueError`, before any run, naming a field that is not a setting of `sim`, an
    empty axis, a bad value, a grid whose points save differently shaped values, a bad shard, or
    a store that holds something else (another sweep: the differing settings are named).

    **Example:** a 2-point grid of decay rates × 3 seeds, in memory, in one compiled call (the
    rate is `traced`); the ratio y(1)/y(0) is e^{−rate} at every seed:

        >>> import numpy as np
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval(0, low_open=True), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> ds = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=3)
        >>> ds["y"].dims, ds["y"].shape, ds["rate"].values.tolist(), ds["seed"].values.tolist()
        (('rate', 'seed', 'save'), (2, 3, 2), [1.0, 2.0], [0, 1, 2])
        >>> ratio = (ds["y"].isel(save=-1) / ds["y"].isel(save=0)).mean("seed")
        >>> [round(float(r), 6) for r in ratio], [round(float(np.exp(-r)), 6) for r in (1.0, 2.0)]
        ([0.367879, 0.135335], [0.367879, 0.135335])
        >>> sorted(ds.data_vars)
        ['event', 'final.y', 'num_steps', 'stop', 't_stop', 'time', 'y']
    """
    _check_seeds(num_seeds, seed)
    _check_shard(shard)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    known = {info.name for info in params(type(sim))}
    for name, values in grid.items():
        if name not in known:
            known_text = ", ".join(sorted(known))
            raise ValueError(f"{type(sim).__name__} has no setting {name!r}; known: {known_text}")
        if len(list(values)) == 0:
            raise ValueError(f"grid axis {name!r} must have at least one value")
    axes = {name: list(values) for name, values in grid.items()}
    sims = [dataclasses.replace(sim, **dict(zip(axes, point))) for point in itertools.product(*axes.values())]
    config = sim.describe() | {"grid": axes, "num_seeds": num_seeds, "seed": seed}
    plan = make_plan(sims, axes, seed + np.arange(num_seeds), int(chunk_size), config)
    ds = write_sweep(
        plan,
        store,
        event_names=sim.event_names,
        shard=shard,
        progress=progress,
        attrs=attrs,
    )
    return ds.load() if store is None else ds


def _check_shard(shard: tuple[int, int]) -> None:
    ok = len(shard) == 2 and all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in shard)
    if not ok or not 0 <= shard[0] < shard[1]:
        raise ValueError(f"shard must be (i, n) with integers 0 <= i < n, got {shard!r}")


def sweep_progress(path: str | os.PathLike) -> tuple[int, int]:
    """`(written, total)`: the blocks of the sweep store at `path` written so far, of all.

    **Example:** a sweep of 2 blocks written by 2 shards that share one store:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval(0, low_open=True), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> grid = {"rate": [1.0, 2.0]}
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     store = pathlib.Path(folder) / "decay.zarr"
        ...     for shard in [(0, 2), (1, 2)]:
        ...         _ = dynamics.sweep(Decay(), grid, num_seeds=2, chunk_size=2, store=store, shard=shard)
        ...         print(shard, dynamics.sweep_progress(store))
        (0, 2) (1, 2)
        (1, 2) (2, 2)
    """
    attrs = _store_attrs(path)
    return len(units_done(path)), int(attrs["num_units"])


def _store_attrs(path: str | os.PathLike) -> dict:
    try:
        attrs = dict(zarr.open_group(str(path), mode="r", zarr_format=2, use_consolidated=True).attrs)
    except (FileNotFoundError, KeyError, ValueError, zarr.errors.GroupNotFoundError) as err:
        raise ValueError(f"{path} is not a sweep written by attnflow ({type(err).__name__}: {err})") from None
    if "config" not in attrs:
        raise ValueError(f"{path} is a zarr store but not an attnflow sweep (no config attribute)")
    return attrs


def save_sweep(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write a sweep (from [`sweep`][]) to a zarr store at `path` (replaced if present).

    **Returns:** the path written.

    **Example:** a sweep made in memory, saved and read back:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval(0, low_open=True), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> ds = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = dynamics.save_sweep(ds, pathlib.Path(folder) / "decay.zarr")
        ...     loaded = dynamics.load_sweep(path)
        >>> path.name, loaded["y"].shape, bool(loaded["y"].equals(ds["y"]))
        ('decay.zarr', (2, 2, 2), True)
    """
    path = Path(path)
    ds.to_zarr(path, mode="w", zarr_format=2, consolidated=True)
    return path


def load_sweep(path: str | os.PathLike) -> xr.Dataset:
    """Read a sweep's zarr store (written by [`save_sweep`][] or by [`sweep`][] with a `store`)
    into memory.

    **Raises:** `ValueError` naming the path when it is not such a store, or when blocks of it
    are not written yet (resume the sweep, or run its other shards).

    **Example:** a store written block by block by [`sweep`][] loads once every shard is done:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval(0, low_open=True), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> folder = tempfile.TemporaryDirectory()
        >>> store = pathlib.Path(folder.name) / "decay.zarr"
        >>> grid = {"rate": [1.0, 2.0]}
        >>> _ = dynamics.sweep(Decay(), grid, num_seeds=2, chunk_size=2, store=store, shard=(0, 2))
        >>> dynamics.load_sweep(store)
        Traceback (most recent call last):
        ...
        ValueError: ...decay.zarr is incomplete: 1 of 2 blocks written (rerun the sweep on it to finish, ...)
        >>> _ = dynamics.sweep(Decay(), grid, num_seeds=2, chunk_size=2, store=store, shard=(1, 2))
        >>> ds = dynamics.load_sweep(store)
        >>> ds["y"].shape, ds["stop"].values.tolist()
        ((2, 2, 2), [[0, 0], [0, 0]])
        >>> folder.cleanup()
    """
    attrs = _store_attrs(path)
    if (Path(path) / CREATED).exists():  # written block by block by `sweep`
        written, total = len(units_done(path)), int(attrs["num_units"])
        if written < total:
            raise ValueError(
                f"{path} is incomplete: {written} of {total} blocks written (rerun the sweep on it to "
                "finish, or run its other shards)"
            )
    return open_store(path).load()
