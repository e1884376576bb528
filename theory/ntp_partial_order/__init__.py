"""Checks of "Non-asymptotic Convergence of Training Transformers for Next-token Prediction"
(Huang, Liang, Yang, NeurIPS 2024, arXiv 2409.17335): the max-margin problems (Eqns 2-3,
Proposition 2), stage 1 (Proposition 1, Lemma 3, Corollary 1), stage 2 (Theorems 1-3, Lemma 5),
Example 2 on SVOP and Theorem 1 over many random datasets.

[`CHECKS`][] lists the check functions in paper order; the registry runs them through
`theory.check_makers("ntp_partial_order", CHECKS, full)`. Each is declared with `theory.claim` (its claim,
tolerance and provenance); a `sized` one takes `full: bool`, the paper's number of datasets (fewer
otherwise), never a looser tolerance; the others take no argument. Everything
runs in float64 and `W*_kq` is the QP solution of Eqn 3 ([`solve_qp`][], Clarabel with its KKT
residuals; [`least_distance`][] the second solver) (Proposition 2's closed form is checked
only where its Hall-type condition holds). The max-margin solutions and closed forms are in
[`closed_forms`][]; [`figure_run`][], [`very_long_run`][] and [`svop_run`][] are the cached runs
the checks measure.
"""

from . import closed_forms
from ._maxmargin import MaxMargin, least_distance
from ._qp import QPSolution, kkt_residuals, solve_qp
from ._runs import (
    LongRun,
    Simulated,
    cosine,
    cosines,
    figure_run,
    svop_predictions,
    svop_run,
    very_long_run,
)
from ._stage1 import (
    cor1_gap_lower_end,
    cor1_gap_upper_end,
    eqn2_closed_form_vs_qp,
    eqn3_qp_kkt_and_second_solver,
    lemma3_equal_nontarget_logits,
    prop1_direction,
    prop1_loss_closed_form,
    prop1_norm_linear,
    prop2_closed_form_where_valid,
)
from ._stage2 import (
    example2_svop_generalisation,
    lemma5_optimal_attention,
    thm1_direction_monotone,
    thm1_direction_very_long_run,
    thm1_many_datasets_direction,
    thm1_norm_bounds,
    thm1_rate_log2t_over_t,
    thm2_loss_envelope_eqn4,
    thm2_loss_linear_rate,
    thm2_no_critical_point,
    thm2_optimal_attention_mass,
    thm3_noncomparable_entries_zero,
    thm3_noncomparable_inserted,
    thm3_unseen_sentences,
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
    eqn2_closed_form_vs_qp,
    eqn3_qp_kkt_and_second_solver,
    prop2_closed_form_where_valid,
    prop1_norm_linear,
    prop1_direction,
    lemma3_equal_nontarget_logits,
    prop1_loss_closed_form,
    cor1_gap_lower_end,
    cor1_gap_upper_end,
    thm1_norm_bounds,
    thm1_direction_monotone,
    thm1_rate_log2t_over_t,
    thm1_direction_very_long_run,
    lemma5_optimal_attention,
    thm2_optimal_attention_mass,
    thm2_loss_envelope_eqn4,
    thm2_loss_linear_rate,
    thm2_no_critical_point,
    thm3_noncomparable_entries_zero,
    thm3_noncomparable_inserted,
    thm3_unseen_sentences,
    example2_svop_generalisation,
    thm1_many_datasets_direction,
)


__all__ = [
    "CHECKS",
    "LongRun",
    "MaxMargin",
    "QPSolution",
    "Simulated",
    "closed_forms",
    "cosine",
    "cosines",
    "eqn2_constraints",
    "eqn3_constraints",
    "figure_run",
    "hall_columns",
    "kkt_residuals",
    "least_distance",
    "solve_qp",
    "stage1_loss",
    "svop_predictions",
    "svop_run",
    "very_long_run",
    "w_kq_closed_form",
    "w_kq_star_qp",
    "w_ov_star_closed",
    "w_ov_star_qp",
] + [fn.__name__ for fn in CHECKS]
