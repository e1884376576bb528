"""The pieces of `verify`, `figures` and `reproduce`: one paper's checks, one paper's figures, and
the runs they share while they run side by side (see `attnflow._workers`)."""

import contextlib
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import dynamics
import theory

from ._kept_checks import code_key
from .papers import loaded, with_data


def paper_checks(
    name: str, full: bool, only: list[str] | None = None, keep: Path | None = None, data: str | None = None
) -> list[theory.Check]:
    """The checks of paper `name` (those named in `only`, or all; at the paper's sizes when `full`;
    reading the data directory `data` where the paper has a data option), each announced as it
    starts, and kept in `keep` as it ends (see `Paper.run_checks`)."""
    return loaded(name).run_checks(
        full=full,
        progress=lambda check: print(f"  {name}: {check}", flush=True),
        only=only,
        keep=keep,
        data=data,
    )


@dataclasses.dataclass(frozen=True)
class DrawnFigure:
    """A figure drawn: the files written (PNG, PDF and the JSON data), the seconds it took and
    what compiling cost in it."""

    files: list[Path]
    seconds: float
    compiling: dynamics.CompileStats

    def to_dict(self) -> dict:
        """JSON-ready, the files by name."""
        return {
            "files": [path.name for path in self.files],
            "seconds": round(self.seconds, 3),
            "compiling": self.compiling.to_dict(),
        }


def paper_figures(
    name: str, out: Path, full: bool, only: list[str] | None = None, data: str | None = None
) -> dict[str, DrawnFigure]:
    """The figures of paper `name` (those named in `only`, or all) drawn into `out`, reading the
    data directory `data` where the paper has a data option, each announced as it starts (as a check
    is), timed and its compiling recorded: figure name -> [`DrawnFigure`][]."""
    drawn, paper = {}, loaded(name)
    with paper.reading(data):
        for figure, draw in paper.figures.items():
            if only is None or figure in only:
                print(f"  {name}: {figure}", flush=True)
                drawn[figure] = _drawn(figure, draw, out, full)
    return drawn


def _drawn(figure: str, draw, out: Path, full: bool) -> DrawnFigure:
    """`figure` drawn into `out` by `draw`, timed, its compiling recorded and announced."""
    start = time.perf_counter()
    with dynamics.recording_compiles() as record:
        files = draw(out, full)
    made = DrawnFigure(files, time.perf_counter() - start, record.stats)
    written = ", ".join(path.name for path in files)
    print(f"[figure] {figure}: {written} ({made.seconds:.1f} s; {record.stats.summary()})", flush=True)
    return made


@contextlib.contextmanager
def shared_runs(folder: Path, data: str | None = None, papers: list[str] | None = None) -> Iterator[Path]:
    """Make `folder` the place of the runs the pieces share (`dynamics.store.shared_store`), given
    to them by `run_pieces`; yields it. The stores there are kept for the same command made again when it
    stops half-way (killed, interrupted, a piece failed), so that it resumes them, and only for
    the same code and the same data directories of the command's `papers` (default every paper;
    `data`: `--data`): before the pieces start, stores made under another [`runs_key`][] are
    removed; once every piece has ended, all of them are."""
    key_file = folder / RUNS_KEY

    def empty():
        for store in folder.glob("*.zarr") if folder.is_dir() else ():
            dynamics.store.remove_store(store)
            (folder / f".{store.name}.lock").unlink(missing_ok=True)
        key_file.unlink(missing_ok=True)

    key = runs_key(data, papers)
    try:
        kept = json.loads(key_file.read_text())
    except (OSError, ValueError):
        kept = None
    if kept != key:
        empty()
    folder.mkdir(parents=True, exist_ok=True)
    with dynamics.store.atomic_write(key_file) as f:
        json.dump(key, f)
    yield folder
    empty()
    with contextlib.suppress(OSError):  # holding something not ours
        folder.rmdir()


RUNS_KEY = "key.json"
"""The file of [`shared_runs`][]'s folder that says what code its stores come from."""


def runs_key(data: str | None = None, papers: list[str] | None = None) -> dict:
    """What the shared runs of a command are results of, beyond their own settings (which name
    each store): the code (`attnflow._kept_checks.code_key`) and the data directory each paper of
    the command (`papers`, default every paper) with a data option reads (`data`, else the one its
    user set). Only those papers are imported."""
    read = {name: loaded(name).data_directory(data) for name in with_data(papers)}
    return {"shared runs of": code_key(), "data": read}
