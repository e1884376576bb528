"""Checks of "Transformers Provably Learn Sparse Token Selection While Fully-Connected Nets Cannot"
(Wang, Wei, Hsu, Lee, ICML 2024, arXiv 2406.06893).

The paper's full text is lost: only the hypotheses of Theorem 1, the captions of Figs. 1-5 and
the abstract survive. Each check's `provenance` says what it rests on: `derived` (a consequence
of the paper's or the reconstructed definitions) or `recon` (a reconstructed experiment); the
claim text names the paper's statement (paper) it supports. A `sized` check takes `full` (the
paper's sizes; quick ones otherwise, never a looser tolerance). Everything runs in float64 (online runs
in float32, as the experiments).

- [`CHECKS`][]: the check functions in order, each declared with `theory.claim`;
  `theory.check_makers("sparse_token_selection", CHECKS, full)` runs them.
- [`closed_forms`][]: the closed forms the checks, figures and benchmark compare against
  (re-exported here).
"""

from . import closed_forms
from ._checks import (
    fcn_bound_attained,
    fcn_bound_random_layers,
    fcn_trained_widths,
    fig2_stochastic_beats_fixed,
    fixed_pe_floors,
    lemma1_antithetic_off_blocks,
    lemma1_invariant_set,
    lemma1_reduced_equals_full_gd,
    theorem1_attention_scale,
    theorem1_direction_V,
    theorem1_direction_W,
    theorem1_discrete_rate,
    theorem1_inverse_loss_slope,
    theorem1_rate_constant,
    theorem1_score_gap_half_log_t,
    theorem1_t_eps,
    theorem1_value_scale,
    theorem2_bank_invariance,
    theorem2_sphere_floor_mc,
    theorem2_sphere_flow_converges,
    theorem3_closed_form,
    theorem3_ratio_gap_rate,
    theorem3_ratio_limit,
)
from ._length_generalisation import (
    fig2_fixed_follows_closed_form,
    fig2_fixed_stays_above_constant,
    fig2_stochastic_converges,
    fig2_stochastic_follows_theorem3,
    fig2_token_key_noise,
    fig4_unseen_q_follows_speed,
)
from .closed_forms import (
    attention_scale,
    coordinate_risk,
    fcn_lower_bound,
    fcn_min_risk,
    fixed_pe_floor,
    fixed_pe_loss,
    ood_ratio_limit,
    rate_constant,
    t_eps,
    theorem1_eps_max,
    theorem1_step_max,
    token_key_bias,
    trivial_loss,
    value_excess,
)

CHECKS = (
    lemma1_invariant_set,
    lemma1_reduced_equals_full_gd,
    lemma1_antithetic_off_blocks,
    theorem1_rate_constant,
    theorem1_inverse_loss_slope,
    theorem1_t_eps,
    theorem1_attention_scale,
    theorem1_score_gap_half_log_t,
    theorem1_value_scale,
    theorem1_discrete_rate,
    theorem1_direction_W,
    theorem1_direction_V,
    theorem2_bank_invariance,
    theorem2_sphere_floor_mc,
    theorem2_sphere_flow_converges,
    theorem3_closed_form,
    theorem3_ratio_limit,
    theorem3_ratio_gap_rate,
    *fixed_pe_floors,
    fig2_stochastic_beats_fixed,
    fig2_stochastic_follows_theorem3,
    fig2_stochastic_converges,
    fig2_fixed_follows_closed_form,
    fig2_fixed_stays_above_constant,
    fig2_token_key_noise,
    fig4_unseen_q_follows_speed,
    fcn_bound_attained,
    fcn_bound_random_layers,
    fcn_trained_widths,
)
"""The sparse-token-selection checks in order, each reporting under its function's name."""

__all__ = [
    "CHECKS",
    "attention_scale",
    "closed_forms",
    "coordinate_risk",
    "fcn_lower_bound",
    "fcn_min_risk",
    "fixed_pe_floor",
    "fixed_pe_floors",
    "fixed_pe_loss",
    "ood_ratio_limit",
    "rate_constant",
    "t_eps",
    "theorem1_eps_max",
    "theorem1_step_max",
    "token_key_bias",
    "trivial_loss",
    "value_excess",
] + [fn.__name__ for fn in CHECKS if fn not in fixed_pe_floors]
