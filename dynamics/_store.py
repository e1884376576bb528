"""A sweep written to a zarr store one block of runs at a time: memory bounded by the block, a
killed run resumed where it stopped, the blocks split into shards that share nothing, and every
file checked against its checksum when read.

Layout (xarray over zarr, format 2): one dimension per grid axis, then `seed` and `save`; every
variable is chunked as one grid point × `seeds_per_chunk` seeds, so each *cell* (a grid point and
a block of seeds) is one zarr chunk per variable. Cells are packed into *blocks* (units) of at
most `chunk_size` runs that share one compiled call, as even as their number allows, and every
call of a program is padded to its widest block, so each program compiles once (see
[`make_plan`][]); a block's data is written, then its marker
`.attnflow_units_done/<block>` with the checksum of each of its files (see `_integrity`). A rerun
skips the intact blocks and reruns the missing and damaged ones, so its result is the
uninterrupted one bit for bit; shard `i` of `n` runs the blocks `u` with `u % n == i`.

Processes that write one store cooperate through file locks (see `_lock`): each holds the store's
lock shared, a replacement (`overwrite`) needs it alone, and a block is computed by the process
that claims it, so two writers never compute one block twice.
"""

import concurrent.futures
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import jax
import numpy as np
import xarray as xr
import zarr

from ._batch import compile_ahead, even_width, run_many
from ._files import alive, atomic_write, prepare_folder, remove_stale_temporaries, temporary_path
from ._fingerprint import code_differences, json_digest
from ._grid import Axes, grid_coords, grid_dims
from ._integrity import (
    CLAIMS,
    CREATED,
    DONE,
    FORMAT,
    WRITERS,
    StoreNeedsRuns,
    chunk_key,
    differing_files,
    file_digest,
    layout_digests,
    read_json,
    recorded_files,
    unit_damage,
)
from ._lock import Held, file_lock, store_lock_path
from ._progress import inner_meters, progress_over
from ._run import STOP_REASONS, Run
from ._simulation import AbstractSimulation, batched_run, draw_shapes, draws, replayed_run, traced_arrays

SEED_DIM = "seed"
"""The dimension of a store's variables that runs over the seeds of each grid point."""
SAVE_DIM = "save"
"""The dimension of a store's saved variables that runs over the saves of each run."""


@dataclasses.dataclass(frozen=True)
class Program:
    """One compiled program of a sweep: the static part of its simulations, the shapes of one
    run's outputs, and the lowered text of one run."""

    static: AbstractSimulation
    run: Run
    text: str


_REPLAYS_LOCK = threading.Lock()
"""Held while a plan makes a replayed run (`Plan.replay`)."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a sweep runs and where each run's results go.

    **Fields:**

    - `sims`: the grid points, in C order over `axes` (the last axis varies fastest).
    - `axes`: grid axis name (a paired axis: its tuple of names) → its values.
    - `seed`, `num_seeds`: the integer seeds `seed, seed + 1, ...` every grid point runs.
    - `chunk_size`: at most this many runs per compiled call.
    - `units`: per block, its static simulation (the compiled program) and its cells
      `(point index, seed block index)`.
    - `widths`: per static simulation, the runs of each of its calls (its widest block; a
      narrower block is padded to it, so the program compiles once).
    - `config`: the JSON record of the sweep (`sim.describe()`, the grid, the seeds).
    - `code`: the fingerprint of the code (see `_fingerprint`).
    - `replays`: filled as the blocks run (see `replay`).
    """

    sims: list[AbstractSimulation]
    axes: Axes
    seed: int
    num_seeds: int
    chunk_size: int
    units: list[tuple[AbstractSimulation, list[tuple[int, int]]]]
    widths: dict[AbstractSimulation, int]
    config: dict
    code: dict

    replays: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def replay(self, static: AbstractSimulation) -> Callable:
        """The run of `static` that its blocks vmap, replayed from the trace made before the sweep
        (`replayed_run`): made when a block of it first needs it, then kept in `replays`, one
        object for all its blocks, so that they share one compilation."""
        with _REPLAYS_LOCK:  # the programs compile in threads
            if static not in self.replays:
                self.replays[static] = replayed_run(static)
            return self.replays[static]

    @property
    def seeds(self) -> np.ndarray:
        """Every grid point's integer seeds."""
        return self.seed + np.arange(self.num_seeds)

    @property
    def seeds_per_chunk(self) -> int:
        """Seeds in one cell (the last may hold fewer): a grid point's seeds in as few cells as
        `chunk_size` allows, each of as few seeds as that many cells allow (100 seeds in blocks
        of at most 64: 50 and 50, not 64 and 36)."""
        return even_width(self.num_seeds, self.chunk_size)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The number of values along each grid axis."""
        return tuple(len(v) for v in self.axes.values())

    @property
    def identity(self) -> str:
        """A digest of everything that makes the runs: the settings, the blocks and the code."""
        code = {k: self.code[k] for k in ("program", "sources")}
        return json_digest({"config": self.config, "chunk_size": self.chunk_size, "code": code})

    def seed_block(self, block: int) -> slice:
        """The seed positions of seed block `block`."""
        start = block * self.seeds_per_chunk
        return slice(start, min(start + self.seeds_per_chunk, self.num_seeds))

    def grid_index(self, point: int) -> tuple[int, ...]:
        """The index of grid point `point` along each axis."""
        shape = self.grid_shape
        return tuple(int(i) for i in np.unravel_index(point, shape)) if shape else ()


def make_plan(
    sims: list[AbstractSimulation],
    axes: Axes,
    statics: list[AbstractSimulation],
    seed: int,
    num_seeds: int,
    chunk_size: int,
    config: dict,
    code: dict,
) -> Plan:
    """Pack each compiled program's cells, in order, into blocks (`statics[i]` is the static part
    of `sims[i]`: points that share one share a program): as few blocks as blocks of at most
    `chunk_size` runs need, each no wider than the narrowest width that needs no more. A
    program's calls are then padded to one width with little waste: 100 one-seed points in
    blocks of at most 64 make two blocks of 50, not 64 and 36 (two programs, or 28 padded runs).
    """
    plan = Plan(sims, axes, seed, num_seeds, chunk_size, [], {}, config, code)
    groups: dict[AbstractSimulation, list[int]] = {}
    for i, static in enumerate(statics):
        groups.setdefault(static, []).append(i)
    num_blocks = -(-num_seeds // plan.seeds_per_chunk)
    for static, members in groups.items():
        cells = [(p, b) for p in members for b in range(num_blocks)]
        runs = [plan.seed_block(b).stop - plan.seed_block(b).start for _, b in cells]
        fewest = len(_packed(runs, chunk_size))
        low, high = max(runs), chunk_size  # packing in order needs no more blocks when wider
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if len(_packed(runs, middle)) == fewest else (middle + 1, high)
        blocks = _packed(runs, low)
        plan.units.extend((static, [cells[k] for k in block]) for block in blocks)
        plan.widths[static] = low  # the widest block: a narrower width would pack the same
    return plan


def _packed(runs: list[int], width: int) -> list[list[int]]:
    """The indices of `runs` packed in order into blocks of at most `width` runs (a block takes
    the next item while it fits)."""
    blocks: list[list[int]] = [[]]
    size = 0
    for k, n in enumerate(runs):
        if blocks[-1] and size + n > width:
            blocks.append([])
            size = 0
        blocks[-1].append(k)
        size += n
    return blocks


def named_leaves(tree, prefix: str) -> dict[str, object]:
    """The leaves of `tree` by name: `prefix` + the PyTree path joined by dots (e.g. `"final.Z"`,
    or `"loss"` for a dict entry)."""
    return {
        (prefix + jax.tree_util.keystr(path, simple=True, separator=".")).rstrip("."): leaf
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
    }


def variables(run: Run, batched: bool = False) -> dict[str, tuple[tuple[str, ...], object]]:
    """The dataset's variables of a run: name → (dims after `seed`, leaf). With `batched`, the
    leaves carry a leading run axis (not counted in the dims)."""

    def dims(name: str, leaf, extra: tuple[str, ...]) -> tuple[str, ...]:
        rank = len(np.shape(leaf)) - batched
        return extra + tuple(f"{name}_dim{k}" for k in range(rank - len(extra)))

    out = {"time": ((SAVE_DIM,), run.ts)}
    for name, leaf in named_leaves(run.values, "").items():
        name = name or "value"  # a saved array rather than a PyTree of them
        out[name] = (dims(name, leaf, (SAVE_DIM,)), leaf)
    for name, leaf in named_leaves(run.final, "final.").items():
        out[name] = (dims(name, leaf, ()), leaf)
    for name in ("stop", "event", "t_stop", "num_steps"):
        out[name] = ((), getattr(run, name))
    return out


def template(programs: Mapping[AbstractSimulation, Program]) -> dict[str, tuple[tuple[str, ...], object]]:
    """The variables of one run (shapes and dtypes), the same for every program.

    **Raises:** `ValueError` when grid points save differently shaped values.
    """
    shapes = [variables(p.run) for p in programs.values()]
    described = {repr({k: (d, v.shape, v.dtype) for k, (d, v) in s.items()}) for s in shapes}
    if len(described) > 1:
        raise ValueError("the grid's points save values of different shapes; sweep them separately")
    return shapes[0]


def _fill_value(dtype: np.dtype):
    if np.issubdtype(dtype, np.inexact):
        return np.nan
    return False if dtype == np.bool_ else -1


def _attrs(plan: Plan, event_names: tuple[str, ...], extra: Mapping) -> dict:
    return dict(extra) | {
        "format": FORMAT,
        "config": json.dumps(plan.config),
        "code": json.dumps(plan.code),
        "identity": plan.identity,
        "chunk_size": plan.chunk_size,
        "seeds_per_chunk": plan.seeds_per_chunk,
        "grid_shape": list(plan.grid_shape),
        "num_units": len(plan.units),
        "stop_reasons": list(STOP_REASONS),
        "event_names": list(event_names),
    }


def _create(
    store, plan: Plan, variables_of_a_run: dict, event_names: tuple[str, ...], attrs: Mapping
) -> None:
    """Write the coordinates, the attributes and every variable's empty array (fill values)."""
    coords = grid_coords(plan.axes) | {SEED_DIM: plan.seeds}
    xr.Dataset(coords=coords, attrs=_attrs(plan, event_names, attrs)).to_zarr(
        store, mode="w", zarr_format=2, consolidated=False
    )
    group = zarr.open_group(store, mode="a", zarr_format=2)
    lead = (*grid_dims(plan.axes), SEED_DIM)
    lead_shape = (*plan.grid_shape, plan.num_seeds)
    lead_chunks = (*(1 for _ in plan.axes), plan.seeds_per_chunk)
    for name, (dims, leaf) in variables_of_a_run.items():
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


def _runs_of_points(plan: Plan, cells: list[tuple[int, int, dict]]) -> list[list[tuple[int, int, dict]]]:
    """The cells `(point, seed block, outputs)` of a block in groups that one write can take:
    on a grid of one dimension, consecutive points of the same seed block; otherwise one cell each."""
    groups: list[list[tuple[int, int, dict]]] = []
    for cell in cells:
        last = groups[-1][-1] if groups else None
        follows = last is not None and last[1] == cell[1] and last[0] + 1 == cell[0]
        if follows and len(plan.grid_shape) == 1:
            groups[-1].append(cell)
        else:
            groups.append([cell])
    return groups


def _write_cells(group: zarr.Group, plan: Plan, cells: list[tuple[int, int, dict]]) -> None:
    """Write cells' outputs (leading axis: their seeds) into their chunks of every variable, in
    one write per variable (a chunk of fill values too: every written chunk is a file with a
    checksum). Several cells are consecutive points of a one-dimensional grid (`_runs_of_points`)."""
    (first, block, outputs), last = cells[0], cells[-1][0]
    index = plan.grid_index(first) + (plan.seed_block(block),)
    if len(cells) > 1:
        index = (slice(first, last + 1), plan.seed_block(block))
    with zarr.config.set({"array.write_empty_chunks": True}):
        for name in outputs:
            values = [np.asarray(cell[2][name][1]) for cell in cells]
            group[name][index] = values[0] if len(cells) == 1 else np.stack(values)


def _differences(stored: Mapping, wanted: Mapping) -> list[str]:
    keys = sorted(set(stored) | set(wanted))
    return [
        f"{k}: {stored.get(k)!r} in the store, {wanted.get(k)!r} now"
        for k in keys
        if stored.get(k) != wanted.get(k)
    ]


def _open_or_create(path: Path, plan: Plan, variables_of_a_run: dict, event_names, attrs: Mapping) -> None:
    """Create the store at `path`, or check that the store there was made by the same sweep, with
    the same code, and that its own files are intact.

    **Raises:** `ValueError` naming the path when it holds something else, the fields whose
    values differ from the store's, what changed in the code, or the damaged file.
    """
    if not (path / CREATED).exists():
        if path.is_symlink() and not path.exists():
            raise ValueError(f"{path} is a link to {os.readlink(path)}, which does not exist")
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise ValueError(f"{path} exists and is not an attnflow sweep store; choose another output")
        _create_atomically(path, plan, variables_of_a_run, event_names, attrs)
    created = read_json(path / CREATED)
    stored = zarr.open_group(path, mode="r", zarr_format=2, use_consolidated=True).attrs
    again = " (choose another output, or overwrite it)"
    if created is None or stored.get("format") != FORMAT:
        raise ValueError(
            f"{path} was written by an older attnflow (format {stored.get('format')!r}), without the "
            f"checksums and the code fingerprint this version keeps, so it cannot be resumed{again}"
        )
    damaged = differing_files(path, recorded_files(path, created))
    if damaged:
        raise ValueError(f"{path} is damaged, so it cannot be resumed: {'; '.join(damaged)}{again}")
    config = json.loads(stored["config"])
    if config.get("simulation") != plan.config.get("simulation"):
        raise ValueError(
            f"{path} holds a sweep of {config.get('simulation')}, not of {plan.config.get('simulation')}, "
            f"so it cannot be resumed{again}"
        )
    differences = _differences(
        config | {"chunk_size": stored.get("chunk_size")}, plan.config | {"chunk_size": plan.chunk_size}
    )
    if differences:
        raise ValueError(
            f"{path} holds a sweep made with other settings, so it cannot be resumed: "
            + "; ".join(differences)
            + again
        )
    changed = code_differences(json.loads(stored["code"]), plan.code)
    if changed:
        raise ValueError(
            f"{path} was made by other code, so its numbers are not this code's: "
            + "; ".join(changed)
            + again
        )
    blocks = [[list(cell) for cell in cells] for _, cells in plan.units]
    if created["units"] != blocks or stored.get("seeds_per_chunk") != plan.seeds_per_chunk:
        raise ValueError(
            f"{path} holds this sweep in other blocks (blocks: {len(created['units'])}, seeds per "
            f"cell: {stored.get('seeds_per_chunk')}; now {len(blocks)} and {plan.seeds_per_chunk}), "
            f"as an older attnflow packed them, so it cannot be resumed{again}"
        )


def _create_atomically(path: Path, plan: Plan, variables_of_a_run: dict, event_names, attrs: Mapping) -> None:
    """Build the store in a temporary folder beside `path`, then rename it into place: a kill
    never leaves half a store, and of several shards racing to create it one wins and the others
    use the winner's."""
    tmp = temporary_path(path)
    try:
        tmp.mkdir()  # as readable as any new folder
        _create(str(tmp), plan, variables_of_a_run, event_names, attrs)
        for folder in (DONE, CLAIMS, WRITERS):
            (tmp / folder).mkdir()
        created = {
            "format": FORMAT,
            "identity": plan.identity,
            "files": layout_digests(tmp),
            "units": [cells for _, cells in plan.units],
        }
        with atomic_write(tmp / CREATED) as f:
            json.dump(created, f)
        os.rename(tmp, path)  # onto nothing or an empty folder; fails where another shard won
    except OSError:
        if not (path / CREATED).exists():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def units_done(path: str | os.PathLike) -> set[int]:
    """The blocks of the store at `path` whose results are written (intact or not)."""
    folder = Path(path) / DONE
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()


def _one_run(plan: Plan, static: AbstractSimulation, progress: bool) -> Callable:
    """The run a block of `plan` vmaps: replayed from its traced program, or traced anew where a
    bar is drawn inside each flow (the bar is part of the program)."""
    return batched_run(static) if inner_meters(progress) else plan.replay(static)


def compile_programs(plan: Plan, units: Iterable[int], progress: bool) -> None:
    """Compile the program of each static part among the blocks `units` of `plan` before any of
    them runs, so that the blocks then compile nothing (see `compile_ahead`). Several programs
    compile side by side in threads, one a core (XLA compiles outside Python's lock: the Scan and
    Snap Fig. 6 figure, four programs, takes 17-18 s instead of 23-24 s on two cores), with a bar
    over them where `progress` (a line per program in a log); one compiles in this thread."""
    statics = list(dict.fromkeys(plan.units[u][0] for u in units))
    if not statics:
        return

    def compile_one(static: AbstractSimulation) -> None:
        width = plan.widths[static]
        traced = {k: np.zeros(width, v.dtype) for k, v in traced_arrays(static, [static]).items()}
        drawn = jax.tree.map(lambda x: np.zeros((width, *x.shape), x.dtype), draw_shapes(static))
        seeds = np.zeros(width, np.int64)
        compile_ahead(_one_run(plan, static, progress), traced, seeds, drawn, progress=progress)

    if len(statics) == 1:
        compile_one(statics[0])
        return
    threads = min(len(statics), os.cpu_count() or 1)
    with progress_over(len(statics), "compiling", "program", progress) as bar:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for done in concurrent.futures.as_completed([pool.submit(compile_one, s) for s in statics]):
                done.result()
                bar.update()


def _run_unit(plan: Plan, static, cells, progress: bool) -> Iterator[tuple[int, int, dict]]:
    """Run one block in one batched call of its program's width (a narrower block repeats its
    last run to fill it); yield `(point, block, outputs)` per cell."""
    seeds, traced, sims = [], [], []
    all_seeds = plan.seeds
    for point, block in cells:
        positions = all_seeds[plan.seed_block(block)]
        seeds.append(positions)
        sims += [plan.sims[point]] * len(positions)
        traced.append(
            {k: np.repeat(v, len(positions)) for k, v in traced_arrays(static, [plan.sims[point]]).items()}
        )
    traced = {k: np.concatenate([t[k] for t in traced]) for k in traced[0]} if traced[0] else {}
    num_runs = sum(len(positions) for positions in seeds)
    padded = np.minimum(np.arange(plan.widths[static]), num_runs - 1)
    traced = {k: v[padded] for k, v in traced.items()}
    run_seeds = np.concatenate(seeds)[padded]
    drawn = draws([sims[i] for i in padded], run_seeds)
    runs, _ = run_many(_one_run(plan, static, progress), traced, run_seeds, drawn, progress=progress)
    outputs = variables(runs, batched=True)
    start = 0
    for (point, block), positions in zip(cells, seeds):
        part = slice(start, start + len(positions))
        yield point, block, {name: (dims, np.asarray(x)[part]) for name, (dims, x) in outputs.items()}
        start += len(positions)


def seeds_identical(num_seeds: int, saved: list[np.ndarray]) -> bool:
    """Whether two or more seeds all saved, and ended in, exactly what the first did (a
    deterministic run from a fixed start). `saved`: their saved values and final states, seed
    axis first."""
    return num_seeds > 1 and all(
        np.array_equal(x, np.broadcast_to(x[:1], x.shape), equal_nan=True) for x in saved
    )


def warn_seeds_identical(sim: AbstractSimulation, stacklevel: int) -> None:
    """Say that every seed gave the same run, with the simulation's `seed_hint`."""
    hint = f" ({sim.seed_hint})" if sim.seed_hint else ""
    warnings.warn(
        f"{type(sim).__name__}: every seed gave the same run; with these settings the seeds change "
        f"nothing{hint}",
        stacklevel=stacklevel + 1,
    )


class _Blocks:
    """Runs blocks of a plan and writes them to a group (on disk: with checksums and markers)."""

    def __init__(self, plan: Plan, names: list[str], target, path: Path | None, progress: bool):
        self.plan, self.names, self.path, self.progress = plan, names, path, progress
        self.group = zarr.open_group(target, mode="r+", zarr_format=2, use_consolidated=True)
        self.identical: AbstractSimulation | None = None  # a simulation whose seeds all ran alike
        self.repaired: list[str] = []

    def run(self, u: int) -> None:
        start = time.perf_counter()
        static, cells = self.plan.units[u]
        chunks = {}
        written = list(_run_unit(self.plan, static, cells, self.progress))
        for together in _runs_of_points(self.plan, written):
            _write_cells(self.group, self.plan, together)
        for point, block, outputs in written:
            saved = [
                x
                for name, (dims, x) in outputs.items()
                if name != "time" and (SAVE_DIM in dims or name == "final" or name.startswith("final."))
            ]
            seeds = self.plan.seed_block(block).stop - self.plan.seed_block(block).start
            if self.identical is None and seeds_identical(seeds, saved):
                self.identical = static
            if self.path is not None:
                lead = self.plan.grid_index(point) + (block,)
                for name in outputs:
                    key = chunk_key(self.group, name, lead)
                    chunks[key] = file_digest(self.path / key)
        if self.path is not None:
            record = {
                "identity": self.plan.identity,
                "chunks": chunks,
                "host": platform.node(),
                "seconds": round(time.perf_counter() - start, 3),
            }
            with atomic_write(self.path / DONE / str(u)) as f:
                json.dump(record, f)

    def intact(self, u: int) -> bool:
        """Whether block `u` is written and intact; a damaged block's marker is removed (and the
        damage recorded), so that it runs again."""
        marker = read_json(self.path / DONE / str(u))
        if marker is None:
            return False
        cells = self.plan.units[u][1]
        problems = unit_damage(self.path, self.group, self.names, cells, marker, self.plan.identity)
        if not problems:
            return True
        self.repaired.append(f"block {u}: " + "; ".join(f"{name}: {text}" for _, name, text in problems[:3]))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path / DONE / str(u))
        return False


_HELD: dict[str, Held] = {}
"""The stores this process holds ([`hold_store`][dynamics.store.hold_store]), by absolute path, with their
locks."""


@contextlib.contextmanager
def hold_store(path: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of the store at `path` (shared with its other writers) for the block, so that
    no other process replaces it from the first byte written to the last read: a command that
    writes a sweep, then reads it for its summary, plots and analyses, holds it throughout. An
    `overwrite` elsewhere is refused at once; this process's own [`sweep`][] with `overwrite`, and
    `add_to_store`, take the lock alone while no other process shares it. Where no store was made
    (the work refused its input), the lock file this made is removed.

    **Example:**

        >>> import pathlib
        >>> import tempfile
        >>> import dynamics
        >>> store = pathlib.Path(tempfile.mkdtemp()) / "sweep.zarr"
        >>> with dynamics.store.hold_store(store):
        ...     pass  # write it, read it: no one else replaces it meanwhile
    """
    key = os.path.abspath(path)
    if key in _HELD:
        yield
        return
    lock_file = store_lock_path(Path(key))
    made = not lock_file.exists()
    with file_lock(lock_file, shared=True) as lock:
        _HELD[key] = lock
        try:
            yield
        finally:
            del _HELD[key]
            if made and not os.path.exists(key):  # no store was made: nothing is left behind
                lock_file.unlink(missing_ok=True)


def held_here(path: str | os.PathLike) -> Held | None:
    """The lock of the store at `path` where this process holds it by
    [`hold_store`][dynamics.store.hold_store], else `None`."""
    return _HELD.get(os.path.abspath(path))


@contextlib.contextmanager
def store_alone(path: str | os.PathLike) -> Iterator[Held | None]:
    """The store's lock taken alone for the block, without waiting: the lock this process holds by
    [`hold_store`][dynamics.store.hold_store], where it holds one, else a lock of its own.

    **Yields:** the lock, or `None` where another process shares it.
    """
    held = held_here(path)
    if held is not None:
        with held.alone() as alone:
            yield held if alone else None
        return
    with file_lock(store_lock_path(Path(path)), shared=False, blocking=False) as lock:
        yield lock if lock.held else None


@contextlib.contextmanager
def _store_held(path: Path, overwrite: bool) -> Iterator[Held]:
    """Hold the store's lock for writing: shared with its other writers (the lock this process
    holds by [`hold_store`][dynamics.store.hold_store], where it holds one), or, to replace it
    (`overwrite`), alone until the new store is made (`store_alone`).

    **Raises:** `ValueError` naming the other writers when `overwrite` finds the store in use.
    """
    if overwrite:
        with store_alone(path) as lock:
            if lock is None:
                raise ValueError(_in_use(path))
            yield lock
        return
    held = held_here(path)
    if held is not None:
        yield held
        return
    with file_lock(store_lock_path(path), shared=True) as lock:
        yield lock


def _in_use(path: Path) -> str:
    """Why an overwrite of the store at `path` is refused, naming its writers."""
    return (
        f"{path} is being written by {_writers(path) or 'another process'}; overwrite replaces a store "
        "only when no one writes to it: wait for it or stop it, or choose another output"
    )


def _writers(path: Path) -> str:
    """The processes registered as writing the store, in words."""
    folder = path / WRITERS
    found = []
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        record = read_json(entry)
        if record and (record["host"] != platform.node() or alive(record["pid"])):  # not a killed one
            found.append(
                f"pid {record['pid']} on {record['host']} (since {record['since']}: {record['command']})"
            )
    return ", ".join(found)


@contextlib.contextmanager
def _registered(path: Path) -> Iterator[None]:
    """Record this process as a writer of the store (for the message of a refused overwrite)."""
    entry = path / WRITERS / f"{platform.node()}-{os.getpid()}"
    record = {
        "pid": os.getpid(),
        "host": platform.node(),
        "since": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python",
    }
    with atomic_write(entry) as f:
        json.dump(record, f)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()


def _remove_store(path: Path) -> None:
    """Remove the store at `path` before it is written anew; refuse anything else."""
    if not path.exists() and not path.is_symlink():
        return
    if not (path / CREATED).exists():
        if path.is_dir() and not any(path.iterdir()):
            return
        raise ValueError(
            f"{path} is not an attnflow sweep store, so it is not replaced; choose another output"
        )
    shutil.rmtree(path)


def remove_store(path: str | os.PathLike) -> None:
    """Remove the sweep store at `path` (nothing happens when there is none), as `overwrite` does
    before writing a store anew.

    **Raises:** `ValueError` when another process is writing the store (it is named), or when
    `path` holds something that is not an attnflow store (it is left as it is).

    **Example:**

        >>> import pathlib
        >>> import tempfile
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> (folder / "notes").mkdir()
        >>> (folder / "notes" / "a.txt").write_text("mine")
        4
        >>> dynamics.store.remove_store(folder / "notes")
        Traceback (most recent call last):
        ...
        ValueError: .../notes is not an attnflow sweep store, so it is not replaced; choose another output
        >>> dynamics.store.remove_store(folder / "absent.zarr")
    """
    path = Path(path)
    if not path.parent.is_dir():
        return
    with _store_held(path, overwrite=True):
        _remove_store(path)


def write_sweep(
    plan: Plan,
    variables_of_a_run: dict,
    store: str | os.PathLike | None,
    *,
    event_names: tuple[str, ...],
    shard: tuple[int, int] = (0, 1),
    progress: bool = False,
    attrs: Mapping | None = None,
    overwrite: bool = False,
    stacklevel: int = 3,
) -> xr.Dataset:
    """Run the blocks of `plan` that belong to `shard` and are not yet written intact, writing
    each to `store` as it finishes.

    **Arguments:**

    - `plan`: from [`make_plan`][]; `variables_of_a_run`: from [`template`][].
    - `store`: a directory (created, or resumed when it holds the same sweep made by the same
      code), or `None` for a store in memory.
    - `event_names`: the simulation's event names, recorded in the attributes.
    - `shard`: `(i, n)`: run only the blocks `u` with `u % n == i`.
    - `progress`: progress over the blocks (a bar on a terminal, one line per block in a log)
      and, on a terminal, inside each run.
    - `attrs`: more attributes recorded when the store is created (e.g. provenance).
    - `overwrite`: replace the store at `store` (refused while another process writes it).
    - `stacklevel`: the frame the warnings point to (3: the caller of the caller of this).

    **Returns:** the store opened as an `xarray.Dataset` (lazily when on disk; cells of blocks
    not yet written hold fill values: NaN, or −1 for integers).
    """
    if store is None:
        target = zarr.storage.MemoryStore()
        _create(target, plan, variables_of_a_run, event_names, attrs or {})
        blocks = _Blocks(plan, list(variables_of_a_run), target, None, progress)
        compile_programs(plan, range(len(plan.units)), progress)
        with progress_over(len(plan.units), "blocks", "block", progress) as bar:
            for u in range(len(plan.units)):
                blocks.run(u)
                bar.update()
        if blocks.identical is not None:
            warn_seeds_identical(blocks.identical, stacklevel)
        return open_store(target)
    path = Path(store)
    prepare_folder(path.parent, "the folder of the store")
    with _store_held(path, overwrite) as lock:
        remove_stale_temporaries(path.parent)
        if overwrite:
            _remove_store(path)
        _open_or_create(path, plan, variables_of_a_run, event_names, attrs or {})
        lock.share()  # the new store is made: other writers of the same sweep may join
        with _registered(path):
            blocks = _Blocks(plan, list(variables_of_a_run), str(path), path, progress)
            _run_blocks(blocks, path, shard)
    if blocks.identical is not None:
        warn_seeds_identical(blocks.identical, stacklevel)
    if blocks.repaired:
        warnings.warn(
            f"{len(blocks.repaired)} damaged block(s) of {path} were run again: "
            + " | ".join(blocks.repaired[:5]),
            stacklevel=stacklevel,
        )
    return open_store(str(path))


def _run_blocks(blocks: _Blocks, path: Path, shard: tuple[int, int]) -> None:
    """Run this shard's blocks that are not written intact, each under its claim: a block
    another process is computing is waited for (and run here if that process died)."""
    index, count = shard
    mine = [u for u in range(len(blocks.plan.units)) if u % count == index]
    compile_programs(blocks.plan, [u for u in mine if not (path / DONE / str(u)).exists()], blocks.progress)
    waiting, counts = [], {True: 0, False: 0}

    def done(bar, ran: bool) -> None:
        counts[ran] += 1
        if counts[False]:  # what this process ran, and what it found written (by another, or before)
            bar.set_postfix_str(f"{counts[True]} run here, {counts[False]} found written", refresh=False)
        bar.update()

    with progress_over(len(mine), "blocks", "block", blocks.progress) as bar:
        for u in mine:
            with file_lock(path / CLAIMS / str(u), blocking=False) as lock:
                if lock.held:
                    done(bar, _run_unless_intact(blocks, path, u))
                else:
                    waiting.append(u)
        for u in waiting:
            with file_lock(path / CLAIMS / str(u)):
                ran = _run_unless_intact(blocks, path, u)
            done(bar, ran)


def _run_unless_intact(blocks: _Blocks, path: Path, u: int) -> bool:
    """Run block `u` unless it is written intact; whether it ran."""
    ran = not blocks.intact(u)
    if ran:
        blocks.run(u)
    # the block is written: its claim file goes (a process waiting on it then finds the marker)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path / CLAIMS / str(u))
    return ran


def refuse_unwritten(ds: xr.Dataset, what: str) -> None:
    """Refuse to analyse a sweep some of whose runs are not written yet (a store's blocks of other
    shards, or of a sweep stopped half-way, hold the fill value −1 as their `stop`).

    **Raises:** `StoreNeedsRuns` (a `ValueError`) with how many runs are missing.
    """
    if "stop" not in ds:
        return
    missing = int(np.sum(np.asarray(ds["stop"]) < 0))
    if missing:
        raise StoreNeedsRuns(
            f"{missing} of {ds['stop'].size} runs of the sweep are not written yet (blocks of other "
            f"shards, or of a sweep that stopped): finish it (the same sweep on its store) before {what}"
        )


def open_store(store) -> xr.Dataset:
    """A sweep's store as a lazy `xarray.Dataset`, values as stored (integers stay integers: the
    fill value −1 of an unwritten block is not turned into NaN)."""
    return xr.open_zarr(store, zarr_format=2, consolidated=True, mask_and_scale=False)
