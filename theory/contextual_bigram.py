"""Checks of "Learning and Transferring Sparse Contextual Bigrams with Linear Transformers"
(Ren, Wang, Lee, NeurIPS 2024, arXiv 2410.23438). The paper's formulas were lost; the spec
re-derives them. Each check's `provenance` says whose claim it holds: `paper` (a claim of the
paper's prose, [TEXT]), `derived` (a formula derived in the spec from the [TEXT] definitions) or
`recon` (a reconstructed detail). Every numeric setting is the spec's [RECON] default.

[`checks`][] lists them; each is a module-level function `name(quick) -> Check` in
`_contextual_bigram_checks`. `quick` shrinks the simulations, never a tolerance. float64.
"""

from collections.abc import Callable

from ._check import Check, check_makers
from ._contextual_bigram_checks import (
    CHECKS,
    PAPER,
    STAGE1_STEPS,
    batch_for_success,
    default_instance,
    stage1_success,
)


def checks(quick: bool) -> list[Callable[[], Check]]:
    """The SCB checks, as zero-argument makers named after their check.

    **Arguments:** `quick`: smaller simulations (same tolerances).

    **Returns:** one maker per check.

    **Raises:** `ValueError` unless float64 is enabled (tolerances reach 1e-12).
    """
    return check_makers(PAPER, CHECKS, quick)


__all__ = [
    "CHECKS",
    "PAPER",
    "STAGE1_STEPS",
    "batch_for_success",
    "checks",
    "default_instance",
    "stage1_success",
]
