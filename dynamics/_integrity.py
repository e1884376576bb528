"""What a store holds, checked: checksums of every file it is made of, recorded when written and
compared when read, so that a lost, truncated or edited file is named instead of read as data.

- `.attnflow_created` (JSON): the store's format and identity (a digest of its settings and of
  its code's fingerprint), the checksum of every file written when the store was made (the
  metadata, the coordinates) and, per block, its cells `(grid point, seed block)`.
- `.attnflow_units_done/<block>` (JSON), written once the block's data is: the identity, the
  checksum of each chunk file of the block, where and how long it ran.
- `.attnflow_added` (JSON), once variables are added to the finished store (the analyses of its
  runs, [`add_to_store`][dynamics.store.add_to_store]): the identity, the names of the added variables, the
  checksum of each of their files and of the consolidated metadata that lists them; `pending` while they are
  being written.
"""

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

FORMAT = "attnflow-sweep-2"
"""The `format` attribute of every store this version writes."""
CREATED = ".attnflow_created"
DONE = ".attnflow_units_done"
CLAIMS = ".attnflow_claims"
WRITERS = ".attnflow_writers"
ADDED = ".attnflow_added"
METADATA = ".zmetadata"
"""The consolidated metadata of a store: rewritten when variables are added to it."""
_OURS = (CREATED, DONE, CLAIMS, WRITERS, ADDED)


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def layout_digests(path: Path) -> dict[str, str]:
    """Every data and metadata file of the store at `path`, by path relative to it, with its
    checksum (attnflow's own markers excluded)."""
    files = {}
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d not in _OURS]
        for name in names:
            if name in _OURS:
                continue
            full = Path(root) / name
            files[str(full.relative_to(path))] = file_digest(full)
    return dict(sorted(files.items()))


def read_json(path: Path) -> dict | None:
    """A JSON marker, or `None` when it is missing or not JSON."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def chunk_key(group: zarr.Group, name: str, lead: tuple[int, ...]) -> str:
    """The file, relative to the store, of the chunk of variable `name` at leading chunk index
    `lead` (grid point, seed block; the trailing dimensions are one chunk)."""
    array = group[name]
    coords = lead + (0,) * (array.ndim - len(lead))
    return f"{name}/{array.metadata.encode_chunk_key(coords)}"


def differing_files(path: Path, recorded: dict[str, str]) -> list[str]:
    """The files of `recorded` that are missing under `path` or whose checksum differs, in words."""
    problems = []
    for name, digest in recorded.items():
        full = path / name
        if not full.is_file():
            problems.append(f"{name} is missing")
        elif file_digest(full) != digest:
            problems.append(f"{name} differs from its checksum (changed or truncated)")
    return problems


def recorded_files(path: Path, created: dict) -> dict[str, str]:
    """The store's own files with their checksums: those recorded when it was made, with the
    consolidated metadata as variables added since left it (unchecked while they are being added)."""
    files = dict(created["files"])
    added = read_json(path / ADDED)
    if added is not None:
        files.pop(METADATA, None)
        if not added.get("pending") and "metadata" in added:
            files[METADATA] = added["metadata"]
    return files


def added_variables(path: Path) -> list[str]:
    """The variables added to the finished store at `path` (none when nothing was added)."""
    added = read_json(Path(path) / ADDED)
    return list(added.get("variables", [])) if added else []


ADDED_PROBLEM = "added variables"
"""How every problem of the added variables starts, in a [`StoreReport`][dynamics.store.StoreReport]."""


def added_damage(path: Path, identity: str) -> list[str]:
    """The problems of the variables added to the store: one being written when the writing
    stopped, a marker of another sweep, a lost or changed file."""
    added = read_json(path / ADDED)
    if added is None:
        return []
    again = "(add them again: rerun the analysis that wrote them)"
    if added.get("pending"):
        return [
            f"{ADDED_PROBLEM} {', '.join(added.get('variables', []))}: their writing stopped before it "
            f"ended {again}"
        ]
    if added.get("identity") != identity:
        return [f"{ADDED_PROBLEM}: they belong to another sweep {again}"]
    return [f"{ADDED_PROBLEM}: {text} {again}" for text in differing_files(path, added.get("files", {}))]


class StoreNeedsRuns(ValueError):
    """A sweep's store some of whose blocks are missing or damaged, which running them again
    repairs: the same sweep on the store (`dynamics.sweep` with its settings and `store`) runs
    them. `path`: the store, where it is known.

    **Example:** a store that lost a file of its runs:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
        ...         return dynamics.ode_flow(lambda t, y, args: -y, y0, t1=1.0)
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "decay.zarr"
        >>> _ = dynamics.simulate(Decay(), num_seeds=2, store=path)
        >>> (path / "value" / "0.0").unlink()
        >>> try:
        ...     dynamics.load_sweep(path)
        ... except dynamics.store.StoreNeedsRuns as err:
        ...     print(err.path == path, "runs the damaged blocks again" in str(err))
        True True
    """

    def __init__(self, message: str, path: str | os.PathLike | None = None):
        super().__init__(message)
        self.path = path


class StoreNeedsRemaking(ValueError):
    """A sweep's store whose own files are damaged, which no run repairs: make it again
    (`overwrite=True`). `path`: the store.

    **Example:**

        >>> import dynamics
        >>> err = dynamics.store.StoreNeedsRemaking("decay.zarr is damaged: .zattrs differs", "decay.zarr")
        >>> isinstance(err, ValueError), err.path
        (True, 'decay.zarr')
    """

    def __init__(self, message: str, path: str | os.PathLike):
        super().__init__(message)
        self.path = path


@dataclasses.dataclass(frozen=True)
class StoreReport:
    """The state of a sweep's store, from [`check_store`][dynamics.store.check_store].

    **Fields:**

    - `path`: the store.
    - `state`: `"complete"` (every block written and intact), `"incomplete"` (blocks still to
      run, the rest intact), `"damaged"` (a file lost, truncated or changed) or `"foreign"`
      (not a store this version of attnflow wrote and can check).
    - `written`, `total`: the blocks written, of all.
    - `problems`: one line per problem found, naming the block, its grid point and seeds, the
      variable and the file.
    - `damaged`: the blocks whose data is damaged (a rerun of the sweep, or
      `attnflow check --repair`, computes them again).
    - `repairable`: whether rerunning blocks can repair the damage (not when the store's own
      settings or coordinates changed).

    **Example:**

        >>> import pathlib
        >>> import dynamics
        >>> report = dynamics.store.StoreReport(pathlib.Path("s.zarr"), "incomplete", 3, 8)
        >>> report.summary()
        's.zarr: incomplete, 3 of 8 blocks written'

    [`check_store`][dynamics.store.check_store] makes one.
    """

    path: Path
    state: str
    written: int
    total: int
    problems: tuple[str, ...] = ()
    damaged: tuple[int, ...] = ()
    repairable: bool = True

    @property
    def only_added_damaged(self) -> bool:
        """Whether the only damage is to variables added to the finished store (an analysis's):
        its runs are intact, and [`drop_added`][dynamics.store.drop_added] makes it whole again."""
        return self.state == "damaged" and all(p.startswith(ADDED_PROBLEM) for p in self.problems)

    def headline(self) -> str:
        """The state in words: `s.zarr: incomplete, 3 of 8 blocks written`."""
        if self.state == "foreign":
            return f"{self.path}: not a sweep store attnflow can check"
        return f"{self.path}: {self.state}, {self.written} of {self.total} blocks written"

    def summary(self, limit: int = 5) -> str:
        """The state in one line ([`headline`][dynamics.store.StoreReport.headline]), with the first
        `limit` problems."""
        head = self.headline()
        if not self.problems:
            return head
        more = f"; and {len(self.problems) - limit} more" if len(self.problems) > limit else ""
        return f"{head}; " + "; ".join(self.problems[:limit]) + more


def _unlike_a_store(path: Path) -> str | None:
    """Why `path` cannot be a store at all (nothing there, a file, an empty folder), else `None`."""
    if not path.exists():
        return "there is nothing at this path"
    if not path.is_dir():
        return "a file, not a store (a store is a folder)"
    if not any(path.iterdir()):
        return "an empty folder, not a store"
    return None


def _describe_cell(
    coords: dict[str, np.ndarray], axes: list[str], shape: tuple, cell, seeds_per_chunk
) -> str:
    point, block = cell
    index = np.unravel_index(point, shape) if shape else ()
    where = [f"{axis}={coords[axis][i].item()!r}" for axis, i in zip(axes, index)]
    seeds = coords["seed"][block * seeds_per_chunk : (block + 1) * seeds_per_chunk]
    where.append(f"seeds {seeds[0]}-{seeds[-1]}")
    return ", ".join(where).replace("'", "")


def check_store(path: str | os.PathLike) -> StoreReport:
    """Check every file of a sweep's store against the checksums recorded when it was written.

    Reads every file once; nothing is changed. `attnflow check STORE` prints the result.

    **Arguments:** `path`: the store (from [`sweep`][] with a `store`, or
    [`save_sweep`][dynamics.store.save_sweep]).

    **Returns:** a [`StoreReport`][dynamics.store.StoreReport].

    **Example:** a deleted chunk file is named with its block, grid point, seeds and variable:

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
        >>> store = pathlib.Path(tempfile.mkdtemp()) / "decay.zarr"
        >>> _ = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2, chunk_size=2, store=store)
        >>> dynamics.store.check_store(store).state
        'complete'
        >>> (store / "y" / "1.0.0").unlink()
        >>> report = dynamics.store.check_store(store)
        >>> report.state, report.damaged, report.repairable
        ('damaged', (1,), True)
        >>> print(report.problems[0])
        block 1 (rate=2.0, seeds 0-1): y: y/1.0.0 is missing
    """
    path = Path(path)
    unlike = _unlike_a_store(path)
    if unlike is not None:
        return StoreReport(path, "foreign", 0, 0, (unlike,), (), False)
    created = read_json(path / CREATED)
    try:
        attrs = dict(zarr.open_group(str(path), mode="r", zarr_format=2, use_consolidated=True).attrs)
    except Exception as err:  # noqa: BLE001 -- any failure to read it means it is not a whole store
        if created is not None:  # attnflow made it: its own files are damaged
            problems = differing_files(path, recorded_files(path, created))
            problems = problems or [f"its metadata cannot be read ({type(err).__name__}: {err})"]
            units = len(created["units"])
            written = sum((path / DONE / str(unit)).is_file() for unit in range(units))
            return StoreReport(path, "damaged", written, units, tuple(problems), (), False)
        return StoreReport(
            path, "foreign", 0, 0, (f"not a zarr store ({type(err).__name__}: {err})",), (), False
        )
    if created is None or attrs.get("format") != FORMAT:
        why = (
            f"written by an older attnflow (format {attrs.get('format')!r}), without checksums"
            if "config" in attrs
            else "not a sweep store written by attnflow"
        )
        return StoreReport(path, "foreign", 0, 0, (why,), (), False)
    problems = differing_files(path, recorded_files(path, created))
    added = added_damage(path, created["identity"])
    if created.get("whole"):  # written at once by `save_sweep`: its files are all recorded above
        problems += added
        return StoreReport(path, "damaged" if problems else "complete", 1, 1, tuple(problems), (), False)
    if problems:
        return StoreReport(path, "damaged", 0, len(created["units"]), tuple(problems + added), (), False)
    group = zarr.open_group(str(path), mode="r", zarr_format=2, use_consolidated=True)
    ds = xr.open_zarr(str(path), zarr_format=2, consolidated=True, mask_and_scale=False)
    axes = json.loads(attrs["config"]).get("grid", {})
    coords = {name: ds[name].values for name in [*axes, "seed"]}
    shape = tuple(len(coords[a]) for a in axes)
    added_names = set(added_variables(path))
    names = [n for n in ds.data_vars if n not in added_names]
    written, damaged = 0, []
    for unit, cells in enumerate(created["units"]):
        marker = read_json(path / DONE / str(unit))
        if marker is None:
            continue
        written += 1
        unit_problems = unit_damage(path, group, names, cells, marker, created["identity"])
        for cell, name, text in unit_problems:
            where = _describe_cell(coords, list(axes), shape, cell, attrs["seeds_per_chunk"])
            problems.append(f"block {unit} ({where}): {name}: {text}")
        if unit_problems:
            damaged.append(unit)
    problems += added
    state = "damaged" if problems else "complete" if written == len(created["units"]) else "incomplete"
    repairable = not added or bool(damaged)  # rerunning blocks does not write added variables again
    return StoreReport(
        path, state, written, len(created["units"]), tuple(problems), tuple(damaged), repairable
    )


def expected_chunks(group: zarr.Group, names: Iterable[str], cells) -> dict[str, tuple]:
    """The chunk files of a block's cells, by file: `(cell, variable)`."""
    return {
        chunk_key(group, name, group_index(group, cell)): (tuple(cell), name)
        for cell in cells
        for name in names
    }


def group_index(group: zarr.Group, cell) -> tuple[int, ...]:
    """The leading chunk index (one per grid axis, then the seed block) of a cell."""
    point, block = cell
    shape = tuple(group.attrs["grid_shape"])
    return (*(int(i) for i in np.unravel_index(point, shape)), block) if shape else (block,)


def unit_damage(path: Path, group: zarr.Group, names, cells, marker: dict, identity: str) -> list[tuple]:
    """The problems of one written block: `(cell, variable, text)` per damaged or missing file,
    and a marker of another sweep."""
    if marker.get("identity") != identity:
        return [(tuple(cells[0]), "marker", "its marker belongs to another sweep")]
    recorded = marker.get("chunks", {})
    out = []
    for key, (cell, name) in expected_chunks(group, names, cells).items():
        if key not in recorded:
            out.append((cell, name, f"{key} is not in the block's marker"))
            continue
        for text in differing_files(path, {key: recorded[key]}):
            out.append((cell, name, text))
    return out
