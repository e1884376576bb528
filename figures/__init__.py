"""Paper figures, one function per figure, each writing PNG + PDF + the JSON data behind it.

`FIGURES` maps a figure's name to `fn(out_dir, full) -> list[Path]`; [`make`][] runs one.
"""

from collections.abc import Callable
from pathlib import Path

from . import contextual_bigram, decision_lists, ntp_partial_order, scan_snap, sparse_token_selection
from ._save import save_figure

FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = {
    **scan_snap.FIGURES,
    **ntp_partial_order.FIGURES,
    **decision_lists.FIGURES,
    **contextual_bigram.FIGURES,
    **sparse_token_selection.FIGURES,
}


def make(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
    """Draw the figure called `name` into `out_dir` (paper sizes when `full`).

    **Returns:** the files written.
    """
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")
    return FIGURES[name](Path(out_dir), full)


__all__ = ["FIGURES", "make", "save_figure"]
