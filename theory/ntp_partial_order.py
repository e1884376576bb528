"""Checks of "Non-asymptotic Convergence of Training Transformers for Next-token Prediction"
(Huang, Liang, Yang, NeurIPS 2024, arXiv 2409.17335): the max-margin problems (Eqns 2-3,
Proposition 2), stage 1 (Proposition 1, Lemma 3, Corollary 1), stage 2 (Theorems 1-3, Lemma 5),
Example 2 on SVOP and Theorem 1 over many random datasets.

Every check is a module-level function `name(quick) -> Check` (in `_ntp_stage1`, `_ntp_stage2`);
`quick` uses fewer datasets, never a looser tolerance. Everything runs in float64 and `W*_kq` is
the QP solution of Eqn 3 (Proposition 2's closed form is checked only where the Hall-type
condition of spec §5.4 holds).
"""

from collections.abc import Callable

from ._check import Check, check_makers
from ._ntp_maxmargin import (
    MaxMargin,
    cosine,
    hall_columns,
    least_distance,
    w_kq_closed_form,
    w_kq_star_qp,
    w_ov_star_closed,
    w_ov_star_qp,
)
from ._ntp_sims import PAPER
from ._ntp_stage1 import (
    cor1_lower,
    cor1_upper,
    eqn2_closed_form,
    eqn3_kkt,
    lemma3_nontarget,
    prop1_direction,
    prop1_loss,
    prop1_norm,
    prop2_closed_form,
)
from ._ntp_stage2 import (
    example2_svop,
    lemma5_attention,
    many_datasets,
    thm1_direction,
    thm1_norm,
    thm1_rate,
    thm2_attention,
    thm2_loss_envelope,
    thm2_loss_rate,
    thm3_insertion,
    thm3_noncomparable_zero,
    thm3_unseen,
)

_CHECKS = (
    eqn2_closed_form,
    eqn3_kkt,
    prop2_closed_form,
    prop1_norm,
    prop1_direction,
    lemma3_nontarget,
    prop1_loss,
    cor1_lower,
    cor1_upper,
    thm1_norm,
    thm1_direction,
    thm1_rate,
    lemma5_attention,
    thm2_attention,
    thm2_loss_envelope,
    thm2_loss_rate,
    thm3_noncomparable_zero,
    thm3_insertion,
    thm3_unseen,
    example2_svop,
    many_datasets,
)


def checks(quick: bool) -> list[Callable[[], Check]]:
    """The checks of this paper, as zero-argument makers named after their check.

    **Arguments:** `quick`: fewer datasets (same tolerances).

    **Returns:** one maker per check, in paper order.

    **Raises:** `ValueError` unless float64 is enabled (the tolerances reach 1e-12).
    """
    return check_makers(PAPER, _CHECKS, quick)


__all__ = [
    "PAPER",
    "MaxMargin",
    "checks",
    "cosine",
    "hall_columns",
    "least_distance",
    "w_kq_closed_form",
    "w_kq_star_qp",
    "w_ov_star_closed",
    "w_ov_star_qp",
] + [fn.__name__ for fn in _CHECKS]
