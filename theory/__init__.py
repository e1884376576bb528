"""Closed-form predictions of the papers and the checks that hold them against simulation.

One package per paper (`theory.scan_snap`, ...), named as the paper is everywhere, exports `CHECKS`
(its check functions, in order, each declared with [`claim`][]: what it claims, its tolerance and
provenance, while the function measures) and its public `closed_forms`; [`check_makers`][] binds a paper's
checks and [`run_checks`][] runs them into [`Check`][]s. The registry of papers is `attnflow.papers`.
"""

from ._check import (
    Bound,
    Check,
    Declaration,
    Measured,
    Outcome,
    Provenance,
    Verdict,
    check_makers,
    claim,
    claims,
    relative_error,
    run_checks,
    within,
)

__all__ = [
    "Bound",
    "Check",
    "Declaration",
    "Measured",
    "Outcome",
    "Provenance",
    "Verdict",
    "check_makers",
    "claim",
    "claims",
    "relative_error",
    "run_checks",
    "within",
]
