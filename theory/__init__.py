"""Closed-form predictions of the papers and the checks that hold them against simulation.

`PAPERS` maps a paper's name to `checks(quick) -> list of zero-argument check makers`;
[`run_paper`][] runs them and returns [`Check`][]s.
"""

from collections.abc import Callable

from . import contextual_bigram, decision_lists, ntp_partial_order, scan_snap, sparse_token_selection
from ._check import VERDICTS, Check, format_table, relative_error, run_checks, within, write_json

PAPERS: dict[str, Callable[[bool], list[Callable[[], Check]]]] = {
    "scan_snap": scan_snap.checks,
    "ntp_partial_order": ntp_partial_order.checks,
    "decision_lists": decision_lists.checks,
    "contextual_bigram": contextual_bigram.checks,
    "sparse_token_selection": sparse_token_selection.checks,
}


def run_paper(
    paper: str, *, quick: bool = False, progress: Callable[[str], None] | None = None
) -> list[Check]:
    """Run every check of `paper` (smaller simulations when `quick`).

    **Returns:** the [`Check`][]s in order.
    """
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; known: {', '.join(PAPERS)}")
    return run_checks(PAPERS[paper](quick), progress)


__all__ = [
    "PAPERS",
    "VERDICTS",
    "Check",
    "format_table",
    "relative_error",
    "run_checks",
    "run_paper",
    "within",
    "write_json",
]
