"""Many seeds of one simulation, and a grid of settings × seeds as one labelled dataset."""

import dataclasses
import itertools
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import numpy as np
import xarray as xr

from ._batch import run_many
from ._params import params
from ._run import STOP_REASONS, Run
from ._simulation import AbstractSimulation, batched_run, static_part, traced_arrays
from ._trajectory import Trajectory, flatten_tree

SEED_DIM = "seed"
SAVE_DIM = "save"


def _check_seeds(num_seeds: int, seed: int) -> None:
    for name, value, low in (("num_seeds", num_seeds, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _run_points(
    sims: list[AbstractSimulation], num_seeds: int, seed: int, chunk_size: int, progress: bool
) -> list[Run]:
    """Every simulation in `sims` × every seed, batched: simulations that differ only in traced
    fields share one compiled call. Returns one `Run` per simulation, each with a seed axis."""
    seeds = seed + np.arange(num_seeds)
    groups: dict[AbstractSimulation, list[int]] = {}
    for i, sim in enumerate(sims):
        groups.setdefault(static_part(sim), []).append(i)
    results: list[Run | None] = [None] * len(sims)
    for static, members in groups.items():
        traced = traced_arrays(static, [sims[i] for i in members])
        traced = {k: np.repeat(v, num_seeds) for k, v in traced.items()}
        runs, _ = run_many(
            batched_run(static),
            traced,
            np.tile(seeds, len(members)),
            chunk_size=chunk_size,
            progress=progress,
            description=type(static).__name__,
        )
        for j, i in enumerate(members):
            results[i] = jax.tree.map(lambda x, j=j: x[j * num_seeds : (j + 1) * num_seeds], runs)
    if num_seeds > 1 and any(_seeds_identical(r) for r in results):
        hint = f" ({sims[0].seed_hint})" if sims[0].seed_hint else ""
        warnings.warn(
            f"{type(sims[0]).__name__}: every seed gave the same run; with these settings the "
            f"seeds change nothing{hint}",
            stacklevel=3,
        )
    return results


def _seeds_identical(runs: Run) -> bool:
    """True when every run of a batch saved exactly what the first did."""
    return all(
        np.array_equal(x, np.broadcast_to(x[:1], x.shape), equal_nan=True)
        for x in jax.tree.leaves(runs.values)
    )


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
    - `progress`: show a progress bar.

    **Returns:** a [`Trajectory`][] whose config is `sim.describe()` with the seeds.

    **Example:**

    ```python
    trajectory = dynamics.simulate(MyFlow(eta=0.5), num_seeds=64)
    trajectory.values["loss"].shape  # (64, number of saves)
    ```
    """
    _check_seeds(num_seeds, seed)
    (runs,) = _run_points([sim], num_seeds, seed, chunk_size, progress)
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
) -> xr.Dataset:
    """A grid of settings × seeds of `sim`, as one labelled dataset.

    Every grid point is `sim` with the grid's values replaced (and checked) before any run starts.
    Grid points that differ only in fields declared `traced` run in one compiled, batched call;
    every grid point uses the same seeds `seed, seed + 1, ...` (common random numbers).

    **Arguments:**

    - `sim`: the simulation whose other fields stay fixed.
    - `grid`: field name -> the values along that axis (the last axis varies fastest).
    - `num_seeds`, `seed`, `chunk_size`, `progress`: as in [`simulate`][].

    **Returns:** an `xarray.Dataset` with one dimension per grid axis (its values as the
    coordinate), then `seed` and `save`: `time` and every saved value over
    `(*grid, seed, save, ...)` (`value` when the run saves one array), `final.<name>` for the
    state each run ended in, `stop` (an index into `stop_reasons`), `event` (an index into
    `event_names`, −1 if none fired), `t_stop`, `num_steps`; the attribute `config` holds
    `sim.describe()`, the grid and the seeds as JSON.

    **Raises:** `ValueError` naming a field that is not a setting of `sim`, an empty axis, a bad
    value, or a grid whose points save differently shaped values.

    **Example:**

    ```python
    ds = dynamics.sweep(MyFlow(), {"eta": [0.5, 1.0, 2.0]}, num_seeds=16)
    ds["loss"].isel(save=-1).mean("seed")  # final loss against eta
    ```
    """
    _check_seeds(num_seeds, seed)
    known = {info.name for info in params(type(sim))}
    for name, values in grid.items():
        if name not in known:
            known_text = ", ".join(sorted(known))
            raise ValueError(f"{type(sim).__name__} has no setting {name!r}; known: {known_text}")
        if len(list(values)) == 0:
            raise ValueError(f"grid axis {name!r} must have at least one value")
    axes = {name: list(values) for name, values in grid.items()}
    points = list(itertools.product(*axes.values()))
    sims = [dataclasses.replace(sim, **dict(zip(axes, point))) for point in points]
    runs = _run_points(sims, num_seeds, seed, chunk_size, progress)
    if len({str(jax.tree.map(np.shape, r)) for r in runs}) > 1:
        raise ValueError("the grid's points save values of different shapes; sweep them separately")
    stacked = jax.tree.map(lambda *xs: np.stack(xs), *runs)
    config = sim.describe() | {"grid": axes, "num_seeds": num_seeds, "seed": seed}
    return _dataset(stacked, axes, seed + np.arange(num_seeds), config, sim.event_names)


def _dataset(runs: Run, axes: dict, seeds: np.ndarray, config: dict, event_names) -> xr.Dataset:
    grid_shape = tuple(len(v) for v in axes.values())
    lead = (*axes, SEED_DIM)

    def variable(x, extra_dims: tuple[str, ...], name: str):
        x = np.asarray(x).reshape(grid_shape + np.shape(x)[1:])
        rest = tuple(f"{name}_dim{k}" for k in range(x.ndim - len(lead) - len(extra_dims)))
        return (*lead, *extra_dims, *rest), x

    data = {"time": variable(runs.ts, (SAVE_DIM,), "time")}
    for name, x in flatten_tree(runs.values, "", ".").items():
        name = name or "value"  # a saved array rather than a PyTree of them
        data[name] = variable(x, (SAVE_DIM,), name)
    for name, x in flatten_tree(runs.final, "final.", ".").items():
        data[name] = variable(x, (), name)
    for name in ("stop", "event", "t_stop", "num_steps"):
        data[name] = variable(getattr(runs, name), (), name)
    coords = {name: np.asarray(values) for name, values in axes.items()} | {SEED_DIM: seeds}
    ds = xr.Dataset(data, coords=coords)
    ds.attrs["config"] = json.dumps(config)
    ds.attrs["stop_reasons"] = list(STOP_REASONS)
    ds.attrs["event_names"] = list(event_names)
    return ds


def save_sweep(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write a sweep (from [`sweep`][]) to a zarr store at `path` (replaced if present).

    **Returns:** the path written.
    """
    path = Path(path)
    ds.to_zarr(path, mode="w", zarr_format=2, consolidated=True)
    return path


def load_sweep(path: str | os.PathLike) -> xr.Dataset:
    """Read a zarr store written by [`save_sweep`][] into memory.

    **Raises:** `ValueError` naming the path when it is not such a store.
    """
    try:
        ds = xr.open_zarr(path, zarr_format=2, consolidated=True).load()
    except (FileNotFoundError, KeyError, ValueError) as err:
        raise ValueError(f"{path} is not a sweep written by attnflow ({err})") from None
    if "config" not in ds.attrs:
        raise ValueError(f"{path} is a zarr store but not an attnflow sweep (no config attribute)")
    return ds
