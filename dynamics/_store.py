"""A sweep written to a zarr store one block of runs at a time: memory bounded by the block, a
killed run resumed where it stopped, the blocks split into shards that share nothing.

Layout (xarray over zarr, format 2): one dimension per grid axis, then `seed` and `save`; every
variable is chunked as one grid point × `seeds_per_chunk` seeds, so each *cell* (a grid point and
a block of seeds) is one zarr chunk per variable. Cells are packed into *units* of at most
`chunk_size` runs that share one compiled call; a unit's data is written, then a marker file
`.attnflow_units_done/<unit>` (atomically). A rerun skips the marked units, so its result is the
uninterrupted one bit for bit; shard `i` of `n` runs the units `u` with `u % n == i`.
"""

import dataclasses
import json
import os
import platform
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

import jax
import numpy as np
import xarray as xr
import zarr
from tqdm.auto import tqdm

from ._batch import run_many
from ._run import STOP_REASONS, Run
from ._simulation import AbstractSimulation, batched_run, static_part, traced_arrays
from ._trajectory import named_leaves, umask

SEED_DIM = "seed"
SAVE_DIM = "save"
FORMAT = "attnflow-sweep-1"
"""The `format` attribute of every store this module writes."""
CREATED = ".attnflow_created"
"""The marker of a store made by [`write_sweep`][] (its layout complete before it took its name)."""
_DONE = ".attnflow_units_done"


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a sweep runs and where each run's results go.

    **Fields:**

    - `sims`: the grid points, in C order over `axes` (the last axis varies fastest).
    - `axes`: grid axis name -> its values.
    - `seeds`: the integer seeds every grid point runs.
    - `chunk_size`: at most this many runs per compiled call.
    - `units`: per unit, its static simulation (the compiled program) and its cells
      `(point index, seed block index)`.
    - `config`: the JSON record of the sweep (`sim.describe()`, the grid, the seeds).
    """

    sims: list[AbstractSimulation]
    axes: dict[str, list]
    seeds: np.ndarray
    chunk_size: int
    units: list[tuple[AbstractSimulation, list[tuple[int, int]]]]
    config: dict

    @property
    def seeds_per_chunk(self) -> int:
        """Seeds in one cell (the last block may hold fewer)."""
        return min(self.chunk_size, len(self.seeds))

    def seed_block(self, block: int) -> slice:
        """The seed positions of seed block `block`."""
        start = block * self.seeds_per_chunk
        return slice(start, min(start + self.seeds_per_chunk, len(self.seeds)))

    def grid_index(self, point: int) -> tuple[int, ...]:
        """The index of grid point `point` along each axis."""
        shape = tuple(len(v) for v in self.axes.values())
        return tuple(int(i) for i in np.unravel_index(point, shape)) if shape else ()


def make_plan(
    sims: list[AbstractSimulation], axes: dict[str, list], seeds: np.ndarray, chunk_size: int, config: dict
) -> Plan:
    """Group the grid points by compiled program (points that differ only in traced fields share
    one) and pack each group's cells, in order, into units of at most `chunk_size` runs."""
    plan = Plan(sims, axes, seeds, chunk_size, [], config)
    groups: dict[AbstractSimulation, list[int]] = {}
    for i, sim in enumerate(sims):
        groups.setdefault(static_part(sim), []).append(i)
    num_blocks = -(-len(seeds) // plan.seeds_per_chunk)
    for static, members in groups.items():
        unit, size = [], 0
        for cell in ((p, b) for p in members for b in range(num_blocks)):
            runs = plan.seed_block(cell[1]).stop - plan.seed_block(cell[1]).start
            if unit and size + runs > chunk_size:
                plan.units.append((static, unit))
                unit, size = [], 0
            unit.append(cell)
            size += runs
        plan.units.append((static, unit))
    return plan


def _variables(run: Run, batched: bool = False) -> dict[str, tuple[tuple[str, ...], object]]:
    """The dataset's variables of a run: name -> (dims after `seed`, leaf). With `batched`, the
    leaves carry a leading run axis (not counted in the dims)."""

    def dims(name: str, leaf, extra: tuple[str, ...]) -> tuple[str, ...]:
        rank = len(np.shape(leaf)) - batched
        return extra + tuple(f"{name}_dim{k}" for k in range(rank - len(extra)))

    out = {"time": ((SAVE_DIM,), run.ts)}
    for name, leaf in named_leaves(run.values, "", ".").items():
        name = name or "value"  # a saved array rather than a PyTree of them
        out[name] = (dims(name, leaf, (SAVE_DIM,)), leaf)
    for name, leaf in named_leaves(run.final, "final.", ".").items():
        out[name] = (dims(name, leaf, ()), leaf)
    for name in ("stop", "event", "t_stop", "num_steps"):
        out[name] = ((), getattr(run, name))
    return out


def _template(plan: Plan) -> dict[str, tuple[tuple[str, ...], jax.ShapeDtypeStruct]]:
    """The variables of one run (shapes and dtypes, from tracing only), the same for every unit.

    **Raises:** `ValueError` when grid points save differently shaped values.
    """
    shapes = {}
    for static, cells in plan.units:
        sim = plan.sims[cells[0][0]]
        if static in shapes:
            continue
        traced = {k: v[0] for k, v in traced_arrays(static, [sim]).items()}
        shapes[static] = _variables(jax.eval_shape(batched_run(static), traced, plan.seeds[0]))
    described = {repr({k: (d, v.shape, v.dtype) for k, (d, v) in s.items()}) for s in shapes.values()}
    if len(described) > 1:
        raise ValueError("the grid's points save values of different shapes; sweep them separately")
    return next(iter(shapes.values()))


def _fill_value(dtype: np.dtype):
    if np.issubdtype(dtype, np.inexact):
        return np.nan
    return False if dtype == np.bool_ else -1


def _attrs(plan: Plan, event_names: tuple[str, ...], extra: Mapping) -> dict:
    return dict(extra) | {
        "format": FORMAT,
        "config": json.dumps(plan.config),
        "chunk_size": plan.chunk_size,
        "num_units": len(plan.units),
        "stop_reasons": list(STOP_REASONS),
        "event_names": list(event_names),
    }


def _create(store, plan: Plan, event_names: tuple[str, ...], attrs: Mapping) -> None:
    """Write the coordinates, the attributes and every variable's empty array (fill values)."""
    coords = {name: np.asarray(values) for name, values in plan.axes.items()} | {SEED_DIM: plan.seeds}
    xr.Dataset(coords=coords, attrs=_attrs(plan, event_names, attrs)).to_zarr(
        store, mode="w", zarr_format=2, consolidated=False
    )
    group = zarr.open_group(store, mode="a", zarr_format=2)
    lead = (*plan.axes, SEED_DIM)
    lead_shape = (*(len(v) for v in plan.axes.values()), len(plan.seeds))
    lead_chunks = (*(1 for _ in plan.axes), plan.seeds_per_chunk)
    for name, (dims, leaf) in _template(plan).items():
        dtype = np.dtype(leaf.dtype)
        group.create_array(
            name,
            shape=lead_shape + leaf.shape,
            chunks=lead_chunks + leaf.shape,
            dtype=dtype,
            fill_value=_fill_value(dtype),
            attributes={"_ARRAY_DIMENSIONS": [*lead, *dims]},
        )
    zarr.consolidate_metadata(store, zarr_format=2)


def _write_cell(group: zarr.Group, plan: Plan, point: int, block: int, outputs: dict) -> None:
    """Write one cell's outputs (leading axis: its seeds) into its chunk of every variable."""
    index = plan.grid_index(point) + (plan.seed_block(block),)
    for name, (_, x) in outputs.items():
        group[name][index] = np.asarray(x)


def _differences(stored: Mapping, wanted: Mapping) -> list[str]:
    keys = sorted(set(stored) | set(wanted))
    return [
        f"{k}: {stored.get(k)!r} in the store, {wanted.get(k)!r} now"
        for k in keys
        if stored.get(k) != wanted.get(k)
    ]


def _open_or_create(path: Path, plan: Plan, event_names: tuple[str, ...], attrs: Mapping) -> None:
    """Create the store at `path`, or check that the store there was made by the same sweep.

    **Raises:** `ValueError` naming the path when it holds something else, or naming the fields
    whose values differ from the store's.
    """
    if not (path / CREATED).exists():
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise ValueError(f"{path} exists and is not an attnflow sweep store; choose another output")
        _create_atomically(path, plan, event_names, attrs)
    stored = zarr.open_group(path, mode="r", zarr_format=2, use_consolidated=True).attrs
    differences = _differences(
        json.loads(stored["config"]) | {"chunk_size": stored.get("chunk_size")},
        plan.config | {"chunk_size": plan.chunk_size},
    )
    if differences:
        raise ValueError(
            f"{path} holds a sweep made with other settings, so it cannot be resumed: "
            + "; ".join(differences)
            + " (choose another output, or overwrite it)"
        )


def _create_atomically(path: Path, plan: Plan, event_names: tuple[str, ...], attrs: Mapping) -> None:
    """Build the store in a temporary folder beside `path`, then rename it into place: a kill
    never leaves half a store, and of several shards racing to create it one wins and the others
    use the winner's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes 0700; a result is as readable as any folder
        _create(str(tmp), plan, event_names, attrs)
        (tmp / _DONE).mkdir()
        (tmp / CREATED).touch()
        os.rename(tmp, path)  # onto nothing or an empty folder; fails where another shard won
    except OSError:
        if not (path / CREATED).exists():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _write_atomic(path: Path, text: str) -> None:
    """Write a small file atomically (a temporary file renamed into place), mode per the umask."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.fchmod(fd, 0o666 & ~umask())
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def units_done(path: str | os.PathLike) -> set[int]:
    """The units of the store at `path` whose results are written."""
    folder = Path(path) / _DONE
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()


def _run_unit(plan: Plan, static, cells, progress: bool) -> Iterator[tuple[int, int, dict]]:
    """Run one unit in one batched call; yield `(point, block, outputs)` per cell."""
    seeds, traced = [], []
    for point, block in cells:
        positions = plan.seeds[plan.seed_block(block)]
        seeds.append(positions)
        traced.append(
            {k: np.repeat(v, len(positions)) for k, v in traced_arrays(static, [plan.sims[point]]).items()}
        )
    traced = {k: np.concatenate([t[k] for t in traced]) for k in traced[0]} if traced[0] else {}
    runs, _ = run_many(batched_run(static), traced, np.concatenate(seeds), progress=progress)
    variables = _variables(runs, batched=True)
    start = 0
    for (point, block), positions in zip(cells, seeds):
        part = slice(start, start + len(positions))
        yield point, block, {name: (dims, np.asarray(x)[part]) for name, (dims, x) in variables.items()}
        start += len(positions)


def warn_if_seeds_identical(sim: AbstractSimulation, num_seeds: int, saved: list[np.ndarray]) -> bool:
    """Warn, with the simulation's `seed_hint`, when two or more seeds all saved exactly what the
    first did (a deterministic run from a fixed start).

    **Arguments:** `sim`; `num_seeds`: the runs in the batch; `saved`: their saved values, seed
    axis first.

    **Returns:** whether it warned.
    """
    identical = num_seeds > 1 and all(
        np.array_equal(x, np.broadcast_to(x[:1], x.shape), equal_nan=True) for x in saved
    )
    if identical:
        hint = f" ({sim.seed_hint})" if sim.seed_hint else ""
        warnings.warn(
            f"{type(sim).__name__}: every seed gave the same run; with these settings the "
            f"seeds change nothing{hint}",
            stacklevel=4,  # the caller of `simulate` or `sweep`
        )
    return identical


def write_sweep(
    plan: Plan,
    store: str | os.PathLike | None,
    *,
    event_names: tuple[str, ...],
    shard: tuple[int, int] = (0, 1),
    progress: bool = False,
    attrs: Mapping | None = None,
) -> xr.Dataset:
    """Run the units of `plan` that belong to `shard` and are not yet written, writing each to
    `store` as it finishes.

    **Arguments:**

    - `plan`: from [`make_plan`][].
    - `store`: a directory (created, or resumed when it holds the same sweep), or `None` for a
      store in memory.
    - `event_names`: the simulation's event names, recorded in the attributes.
    - `shard`: `(i, n)`: run only the units `u` with `u % n == i`.
    - `progress`: progress bars over the units and inside each run.
    - `attrs`: more attributes recorded when the store is created (e.g. provenance).

    Each finished unit's marker records the host and the seconds it took.

    **Returns:** the store opened as an `xarray.Dataset` (lazily when on disk; cells of units
    not yet written hold fill values: NaN, or −1 for integers).
    """
    if store is None:
        target = zarr.storage.MemoryStore()
        _create(target, plan, event_names, attrs or {})
        done: set[int] = set()
    else:
        path = Path(store)
        _open_or_create(path, plan, event_names, attrs or {})
        target, done = str(path), units_done(path)
    group = zarr.open_group(target, mode="r+", zarr_format=2, use_consolidated=True)
    index, count = shard
    mine = [u for u in range(len(plan.units)) if u % count == index and u not in done]
    warned = False
    for u in tqdm(mine, desc="blocks", unit="block", disable=not progress):
        start = time.perf_counter()
        static, cells = plan.units[u]
        for point, block, outputs in _run_unit(plan, static, cells, progress):
            _write_cell(group, plan, point, block, outputs)
            saved = [x for name, (dims, x) in outputs.items() if SAVE_DIM in dims and name != "time"]
            seeds = len(plan.seeds[plan.seed_block(block)])
            warned = warned or warn_if_seeds_identical(static, seeds, saved)
        if store is not None:
            record = {"host": platform.node(), "seconds": round(time.perf_counter() - start, 3)}
            _write_atomic(Path(store) / _DONE / str(u), json.dumps(record))
    return open_store(target)


def open_store(store) -> xr.Dataset:
    """A sweep's store as a lazy `xarray.Dataset`, values as stored (integers stay integers: the
    fill value −1 of an unwritten block is not turned into NaN)."""
    return xr.open_zarr(store, zarr_format=2, consolidated=True, mask_and_scale=False)
