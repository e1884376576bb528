"""Many seeds of one simulation, and a grid of settings × seeds as one labelled dataset."""

import dataclasses
import json
import os
import shutil
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from ._files import atomic_write, temporary_path
from ._fingerprint import code_record, largest_array_bytes
from ._grid import check_grid, grid_points, grid_record
from ._integrity import (
    CREATED,
    FORMAT,
    StoreNeedsRemaking,
    StoreNeedsRuns,
    check_store,
    layout_digests,
    read_json,
)
from ._params import is_count
from ._preflight import DEFAULT_MAX_BYTES, check_precision, check_seeds, check_sizes, trace_run
from ._run import stop_reason
from ._simulation import AbstractSimulation
from ._store import (
    Program,
    make_plan,
    open_store,
    template,
    units_done,
    variables,
    write_sweep,
)


def _bytes_of(run) -> int:
    """The bytes one run's outputs take."""
    return sum(
        int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize for _, leaf in variables(run).values()
    )


def simulate(
    sim: AbstractSimulation,
    num_seeds: int,
    *,
    seed: int = 0,
    chunk_size: int = 64,
    progress: bool = False,
    store: str | os.PathLike | None = None,
    attrs: Mapping | None = None,
    overwrite: bool = False,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> xr.Dataset:
    r"""Run `num_seeds` seeds of `sim`: a [`sweep`][] of one grid point, with the same dataset,
    the same names and stop codes, and the same store when one is given.

    Run i uses the PRNG key of the integer seed `seed + i` ([`seed_key`][]). When every seed gives
    the same run (a deterministic flow from a fixed start), a `UserWarning` says so, with the
    simulation's `seed_hint`.

    **Main arguments:**

    - `sim`: the simulation.
    - `num_seeds`: the number of runs (≥ 1).

    **Other arguments:** `seed`, `chunk_size`, `progress`, `store`, `attrs`, `overwrite` and
    `max_bytes` as for [`sweep`][].

    **Returns:** an `xarray.Dataset` over `(seed, save, ...)`: `time` and every saved value,
    `final.<name>` for the state each run ended in, `stop` and `event` (readable with
    [`stop_reasons`][]), `t_stop` and `num_steps`; its attribute `config` holds
    `sim.describe()` with the seeds.

    **Raises:** `ValueError`, before any run, as [`sweep`][] does.

    **Example:** 4 seeds of an exponential decay from random starts, each ending at
    $y(1) = y(0)\, e^{-2}$ (float64):

        >>> import json
        >>> import numpy as np
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> ds = dynamics.simulate(Decay(rate=2.0), num_seeds=4)
        >>> ds["y"].dims, ds["y"].shape, dynamics.stop_reasons(ds).values.tolist()
        (('seed', 'save'), (4, 2), ['completed', 'completed', 'completed', 'completed'])
        >>> y = ds["y"].values
        >>> bool(np.allclose(y[:, 1], y[:, 0] * np.exp(-2.0))), len(set(y[:, 0].tolist()))
        (True, 4)
        >>> config = json.loads(ds.attrs["config"])
        >>> config["rate"], config["num_seeds"], config["seed"]
        (2.0, 4, 0)
    """
    return _sweep(
        sim,
        {},
        num_seeds=num_seeds,
        seed=seed,
        chunk_size=chunk_size,
        progress=progress,
        store=store,
        attrs=attrs,
        shard=(0, 1),
        overwrite=overwrite,
        max_bytes=max_bytes,
    )


def stop_reasons(ds: xr.Dataset) -> xr.DataArray:
    """How each run of a sweep stopped, in words: `"completed"`, `"event:<name>"`, `"nonfinite"`
    or `"max_steps"` (`"not written"` for a run of a block not written yet), labelled like
    `ds["stop"]`.

    **Example:** a flow stopped by an event at y = 0.5, and one that ends first:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     t1: float = dynamics.param(1.0, dynamics.Interval.positive())
        ...     dtype: str = dynamics.dtype_param("float64")
        ...     event_names = ("half",)
        ...
        ...     def run(self, key):
        ...         events = {"half": dynamics.Crossing(lambda y: y - 0.5)}
        ...         return dynamics.ode_flow(lambda t, y, args: -y, jnp.array(1.0), t1=self.t1, events=events)
        >>> ds = dynamics.sweep(Decay(), {"t1": [0.5, 1.0]}, num_seeds=1)
        >>> dynamics.stop_reasons(ds).values.tolist()
        [['completed'], ['event:half']]
    """
    names = [
        stop_reason(s, e, tuple(ds.attrs["event_names"])) if s >= 0 else "not written"
        for s, e in zip(np.asarray(ds["stop"]).ravel(), np.asarray(ds["event"]).ravel())
    ]
    return ds["stop"].copy(data=np.asarray(names, dtype=object).reshape(ds["stop"].shape))


def sweep(
    sim: AbstractSimulation,
    grid: Mapping[str | tuple[str, ...], Sequence],
    *,
    num_seeds: int,
    seed: int = 0,
    chunk_size: int = 64,
    progress: bool = False,
    store: str | os.PathLike | None = None,
    shard: tuple[int, int] = (0, 1),
    attrs: Mapping | None = None,
    overwrite: bool = False,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> xr.Dataset:
    r"""A grid of settings × seeds of `sim`, as one labelled dataset, written block by block.

    Every grid point is `sim` with the grid's values replaced (and checked) before any run starts.
    Grid points that differ only in fields declared `traced` run in one compiled, batched call;
    every grid point uses the same seeds `seed, seed + 1, ...` (common random numbers). Every
    program is compiled before any block runs, several side by side in threads.

    With a `store`, each block of at most `chunk_size` runs is written to it as soon as it
    finishes, with the checksum of each of its files, so memory holds one block, not the sweep.
    The same call on the same store resumes after a crash: the blocks written intact are skipped,
    missing and damaged ones run (the result is bit for bit the uninterrupted one). The store
    records the settings and a fingerprint of the code (the lowered program of one run and the
    source files of the simulation's package), so a store made with other settings or by other
    code is refused, naming what differs, never served. `shard=(i, n)` runs only every n-th block
    from the i-th, so n processes (or cluster jobs) sharing the store complete it together; other
    processes writing the same store at the same time claim blocks, so none is computed twice.

    **Main arguments:**

    - `sim`: the simulation whose other fields stay fixed.
    - `grid`: field name → the values along that axis (the last axis varies fastest); `{}` for
      seeds only. A tuple of names → a list of value tuples is a paired axis: those points only
      (points on no product grid, e.g. a refined phase diagram's), along the dimension
      [`POINT_DIM`][dynamics.store.POINT_DIM] (`point`), each of its settings a coordinate along
      it; at most one per grid.
    - `num_seeds`: runs per grid point (≥ 1).

    **Other arguments:**

    - `seed`: the first run's integer seed (≥ 0).
    - `chunk_size`: the most runs per compiled call and per written block: the blocks are as
      few as that allows and as even as their number allows, and each program compiles once
      (a store resumes only with the chunk size that made it).
    - `progress`: show progress over the blocks and, on a terminal, inside each flow or scan;
      in a log (stderr not a terminal), one line per block: `blocks: 3/8 done (12.4 s)`.
    - `store`: a directory for the zarr store (created, or resumed when it holds this same sweep);
      default: in memory.
    - `shard`: `(i, n)`: this process's share of the blocks (`0 <= i < n`).
    - `attrs`: more attributes of the dataset (recorded when a store is created), e.g. provenance.
    - `overwrite`: replace what `store` holds instead of resuming it (an attnflow store only;
      refused while another process writes it).
    - `max_bytes`: the most the results may take (default 16 GiB; `None`: no limit); they must
      also fit on the disk (or, without a store, in memory), and one block in memory.

    **Returns:** an `xarray.Dataset` with one dimension per grid axis (its values as the
    coordinate; `point` for a paired axis), then `seed` and `save`: `time` and every saved value over
    `(*grid, seed, save, ...)` (`value` when the run saves one array), `final.<name>` for the
    state each run ended in, `stop` (an index into `stop_reasons`), `event` (an index into
    `event_names`, −1 if none fired), `t_stop`, `num_steps`; the attribute `config` holds
    `sim.describe()`, the grid and the seeds as JSON, `code` the code's fingerprint. In memory
    without a `store`; opened lazily from the store with one (blocks of other shards not yet
    written hold NaN, or −1 for integers: see [`sweep_progress`][dynamics.store.sweep_progress];
    [`load_sweep`][] checks them).

    **Raises:** `ValueError`, before any run, naming a field that is not a setting of `sim`, grid
    values that are not a list (a string, a scalar, a generator), an empty axis or a repeated
    value, a bad value, a grid whose points save differently shaped values, a bad shard, seeds
    past 2³¹ − 1, a float64 simulation while JAX's x64 mode is off, events the simulation does
    not name, results too large (the numbers are given), or a store that cannot be resumed:
    another sweep's (the differing settings are named), other code's (what changed is named), a
    damaged one, or one another process writes while `overwrite` would replace it. `OSError`
    when the disk fails during the work (the blocks written so far stay, and a rerun resumes).

    **Example:** a 2-point grid of decay rates × 3 seeds, in memory, in one compiled call (the
    rate is `traced`); the ratio $y(1)/y(0)$ is $e^{-\mathrm{rate}}$ at every seed:

        >>> import numpy as np
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
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

    Two points of a paired axis of `rate` and `t1`, where a product grid would run four:

        >>> class DecayTo(Decay):
        ...     t1: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...
        ...     def run(self, key):
        ...         return dynamics.ode_flow(lambda t, s, args: -self.rate * s, 1.0, t1=self.t1)
        >>> ds = dynamics.sweep(DecayTo(), {("rate", "t1"): [(1.0, 2.0), (2.0, 1.0)]}, num_seeds=1)
        >>> ds["value"].dims, ds["rate"].values.tolist(), ds["t1"].values.tolist()
        (('point', 'seed', 'save'), [1.0, 2.0], [2.0, 1.0])
        >>> [round(float(v), 6) for v in ds["value"].isel(save=-1, seed=0)]
        [0.135335, 0.135335]
    """
    return _sweep(
        sim,
        grid,
        num_seeds=num_seeds,
        seed=seed,
        chunk_size=chunk_size,
        progress=progress,
        store=store,
        shard=shard,
        attrs=attrs,
        overwrite=overwrite,
        max_bytes=max_bytes,
    )


def _sweep(
    sim: AbstractSimulation,
    grid: Mapping[str | tuple[str, ...], Sequence],
    *,
    num_seeds: int,
    seed: int,
    chunk_size: int,
    progress: bool,
    store: str | os.PathLike | None,
    shard: tuple[int, int],
    attrs: Mapping | None,
    overwrite: bool,
    max_bytes: int | None,
) -> xr.Dataset:
    """[`sweep`][], whose warnings point to the caller of the function that calls this."""
    check_seeds(num_seeds, seed)
    _check_shard(shard)
    if not is_count(chunk_size):
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    axes = check_grid(sim, grid)
    check_precision(sim)
    sims, statics = grid_points(sim, axes)
    programs = {}
    for static, point in zip(statics, sims):
        if static not in programs:
            programs[static] = Program(static, *trace_run(static, point))
    variables_of_a_run = template(programs)
    path = None if store is None else Path(store)
    check_sizes(
        bytes_per_run=_bytes_of(next(iter(programs.values())).run),
        largest_array=max(largest_array_bytes(p.text) for p in programs.values()),
        num_runs=len(sims) * num_seeds,
        runs_per_block=min(int(chunk_size), len(sims) * num_seeds),
        store=path,
        done_fraction=0.0 if path is None or overwrite else _done_fraction(path),
        max_bytes=max_bytes,
    )
    config = sim.describe() | {"grid": grid_record(axes), "num_seeds": num_seeds, "seed": seed}
    code = code_record(type(sim), [p.text for p in programs.values()])
    plan = make_plan(sims, axes, statics, seed, num_seeds, int(chunk_size), config, code)
    ds = write_sweep(
        plan,
        variables_of_a_run,
        store,
        event_names=sim.event_names,
        shard=shard,
        progress=progress,
        attrs=attrs,
        overwrite=overwrite,
        stacklevel=4,
    )
    return ds.load() if store is None else ds


def sweep_blocks(
    sim: AbstractSimulation,
    grid: Mapping[str | tuple[str, ...], Sequence],
    *,
    num_seeds: int,
    chunk_size: int = 64,
) -> int:
    """The number of blocks [`sweep`][] writes these runs in (what its shards share out), found
    without tracing or running anything.

    **Arguments:** as [`sweep`][]'s.

    **Raises:** `ValueError` for a bad grid, as [`sweep`][] does.

    **Example:** two points that share one program, 100 seeds each, in blocks of at most 64 runs:

        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         return dynamics.ode_flow(lambda t, y, args: -self.rate * y, 1.0, t1=1.0)
        >>> dynamics.store.sweep_blocks(Decay(), {"rate": [1.0, 2.0]}, num_seeds=100)
        4
    """
    check_seeds(num_seeds, 0)
    axes = check_grid(sim, grid)
    sims, statics = grid_points(sim, axes)
    return len(make_plan(sims, axes, statics, 0, num_seeds, int(chunk_size), {}, {}).units)


def _done_fraction(path: Path) -> float:
    """The part of the store at `path` already written (0 when there is none)."""
    try:
        written, total = sweep_progress(path)
    except ValueError:
        return 0.0
    return written / total if total else 0.0


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
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
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
        ...         print(shard, dynamics.store.sweep_progress(store))
        (0, 2) (1, 2)
        (1, 2) (2, 2)
    """
    created = read_json(Path(path) / CREATED)
    if created is None or created.get("whole"):
        _store_attrs(path)  # refuses what is not a sweep's store
        return (1, 1) if created else (len(units_done(path)), int(_store_attrs(path)["num_units"]))
    return len(units_done(path)), len(created["units"])


def _store_attrs(path: str | os.PathLike) -> dict:
    try:
        attrs = dict(zarr.open_group(str(path), mode="r", zarr_format=2, use_consolidated=True).attrs)
    except (FileNotFoundError, KeyError, ValueError, zarr.errors.GroupNotFoundError) as err:
        raise ValueError(f"{path} is not a sweep written by attnflow ({type(err).__name__}: {err})") from None
    if "config" not in attrs:
        raise ValueError(f"{path} is a zarr store but not an attnflow sweep (no config attribute)")
    return attrs


def save_sweep(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write a sweep (from [`sweep`][]) to a zarr store at `path` (a store there is replaced),
    with the checksum of every file, as one block: [`load_sweep`][] and
    [`check_store`][dynamics.store.check_store] check it. The store appears whole or not at all (it is
    written beside `path`, then renamed).

    **Returns:** the path written.

    **Raises:** `ValueError` when `path` holds something other than a sweep's store.

    **Example:** a sweep made in memory, saved and read back:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # dy/dt = -rate y from y(0) in [1, 2)
        ...         y0 = {"y": 1.0 + jax.random.uniform(key, (), self.dtype)}
        ...         return dynamics.ode_flow(lambda t, s, args: {"y": -self.rate * s["y"]}, y0, t1=1.0)
        >>> ds = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = dynamics.store.save_sweep(ds, pathlib.Path(folder) / "decay.zarr")
        ...     loaded = dynamics.load_sweep(path)
        >>> path.name, loaded["y"].shape, bool(loaded["y"].equals(ds["y"]))
        ('decay.zarr', (2, 2, 2), True)
    """
    path = Path(path)
    if path.exists() and not (path / CREATED).exists():
        raise ValueError(f"{path} exists and is not an attnflow sweep store; choose another path")
    tmp = temporary_path(path)
    try:
        ds.to_zarr(tmp, mode="w", zarr_format=2, consolidated=True)
        created = {
            "format": FORMAT,
            "identity": ds.attrs.get("identity"),
            "files": layout_digests(tmp),
            "whole": True,
        }
        with atomic_write(tmp / CREATED) as f:
            json.dump(created, f)
        if path.exists():
            shutil.rmtree(path)
        os.rename(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return path


def load_sweep(path: str | os.PathLike) -> xr.Dataset:
    """Read a sweep's zarr store (written by [`save_sweep`][dynamics.store.save_sweep] or by
    [`sweep`][] with a `store`) into memory, after checking every file against its checksum (see
    [`check_store`][dynamics.store.check_store]). A store larger than the memory at hand is read with
    [`open_sweep`][dynamics.store.open_sweep] instead.

    **Raises:** `ValueError` naming the path when it is not such a store, when blocks of it are
    not written yet (resume the sweep, or run its other shards), or when a file is damaged (the
    block, its grid point and seeds, the variable and the file are named).

    **Example:** a store written block by block by [`sweep`][] loads once every shard is done:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
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
    return open_sweep(path).load()


def open_sweep(path: str | os.PathLike) -> xr.Dataset:
    """A sweep's zarr store, checked as [`load_sweep`][] checks it (every file against its
    checksum, one block at a time), opened lazily: each variable is read from disk when its values
    are asked for, so a store many times the memory at hand can be summarised a variable at a time.

    **Returns:** the sweep as a lazy `xarray.Dataset` (call `.load()` for it in memory: that is
    [`load_sweep`][]).

    **Raises:** `ValueError` as [`load_sweep`][] does.

    **Example:**

        >>> import pathlib
        >>> import tempfile
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         return dynamics.ode_flow(lambda t, s, args: -self.rate * s, 1.0, t1=1.0)
        >>> folder = tempfile.TemporaryDirectory()
        >>> store = pathlib.Path(folder.name) / "decay.zarr"
        >>> _ = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2, store=store)
        >>> ds = dynamics.store.open_sweep(store)
        >>> ds["stop"].values.tolist()  # only this variable is read
        [[0, 0], [0, 0]]
        >>> folder.cleanup()
    """
    report = check_store(path)
    if report.state == "foreign":
        attrs = _store_attrs(path)  # refuses what is not a sweep's store at all
        warnings.warn(f"{path}: {report.problems[0]}; it is read unchecked", stacklevel=2)
        if (Path(path) / CREATED).exists() and len(units_done(path)) < int(attrs["num_units"]):
            report = dataclasses.replace(
                report, state="incomplete", written=len(units_done(path)), total=int(attrs["num_units"])
            )
    if report.state == "damaged":
        more = f"; and {len(report.problems) - 3} more" if len(report.problems) > 3 else ""
        damage = f"{path} is damaged: {'; '.join(report.problems[:3])}{more}"
        if report.repairable:
            raise StoreNeedsRuns(f"{damage} (the same sweep on it runs the damaged blocks again)", path)
        raise StoreNeedsRemaking(
            f"{damage} (the store's own files cannot be repaired by running blocks again: make it again, "
            "overwrite=True)",
            path,
        )
    if report.state == "incomplete":
        raise ValueError(
            f"{path} is incomplete: {report.written} of {report.total} blocks written (rerun the sweep on it "
            "to finish, or run its other shards)"
        )
    return open_store(path)
