"""Paper figures, one function per figure, each writing PNG + PDF + the JSON data behind it.

`FIGURES` maps a figure's name to `fn(out_dir, full) -> list[Path]`; [`make`][] runs one.
"""

from collections.abc import Callable
from pathlib import Path

from . import scan_snap
from ._save import save_figure

FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = dict(scan_snap.FIGURES)


def make(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
    """Draw the figure called `name` into `out_dir` (paper sizes when `full`).

    **Returns:** the files written.
    """
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    return FIGURES[name](Path(out_dir), full)


__all__ = ["FIGURES", "make", "save_figure"]
