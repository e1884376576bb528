"""Checks of "Non-asymptotic Convergence of Training Transformers for Next-token Prediction"
(Huang, Liang, Yang, NeurIPS 2024, arXiv 2409.17335): the max-margin problems (Eqns 2-3,
Proposition 2), stage 1 (Proposition 1, Lemma 3, Corollary 1), stage 2 (Theorems 1-3, Lemma 5),
Example 2 on SVOP and Theorem 1 over many random datasets.

[`CHECKS`][] lists the check functions in paper order; the registry runs them through
`theory.check_makers(PAPER, CHECKS, quick)`. A check with a quick mode takes `quick: bool`,
which uses fewer datasets, never a looser tolerance; the others take no argument. Everything
runs in float64 and `W*_kq` is the QP solution of Eqn 3 (Proposition 2's closed form is checked
only where its Hall-type condition holds). The max-margin solutions and closed forms are in
[`closed_forms`][]; [`figure_run`][] and [`svop_run`][] are the cached runs the checks measure.
"""

from . import closed_forms
from ._maxmargin import MaxMargin, least_distance
from ._sims import PAPER, Simulated, cosine, cosines, figure_run, svop_predictions, svop_run
from ._stage1 import (
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
from ._stage2 import (
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
from .closed_forms import (
    eqn2_constraints,
    eqn3_constraints,
    hall_columns,
    stage1_loss,
    w_kq_closed_form,
    w_kq_star_qp,
    w_ov_star_closed,
    w_ov_star_qp,
)

CHECKS = (
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


__all__ = [
    "CHECKS",
    "PAPER",
    "MaxMargin",
    "Simulated",
    "closed_forms",
    "cosine",
    "cosines",
    "eqn2_constraints",
    "eqn3_constraints",
    "figure_run",
    "hall_columns",
    "least_distance",
    "stage1_loss",
    "svop_predictions",
    "svop_run",
    "w_kq_closed_form",
    "w_kq_star_qp",
    "w_ov_star_closed",
    "w_ov_star_qp",
] + [fn.__name__ for fn in CHECKS]
