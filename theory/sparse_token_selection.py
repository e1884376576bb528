"""Checks of "Transformers Provably Learn Sparse Token Selection While Fully-Connected Nets Cannot"
(Wang, Wei, Hsu, Lee, ICML 2024, arXiv 2406.06893), spec `specs/sparse_token_selection.md`.

The paper's full text is lost (spec §0): only the hypotheses of Theorem 1, the captions of
Figs. 1-5 and the abstract survive. Each check's `provenance` says what it rests on: `derived`
(a consequence of the [PAPER]/[RECON] definitions, derived in the spec) or `recon` (a
reconstructed experiment); the claim text names the paper's statement ([PAPER]) it supports.
`quick` shrinks simulations, never a tolerance. Everything runs in float64 (online runs in
float32, as the experiments).
"""

from collections.abc import Callable

from ._check import Check, check_makers
from ._sts_checks import (
    fcn_bound_attained,
    fcn_bound_random_layers,
    fcn_trained_widths,
    fixed_pe_floor_T250,
    fixed_pe_floor_T300,
    fixed_pe_floor_T350,
    fixed_pe_floor_T400,
    lemma1_antithetic_blocks,
    lemma1_invariant_set,
    lemma1_reduced_loss,
    stochastic_beats_fixed,
    theorem1_attention_scale,
    theorem1_direction_V,
    theorem1_direction_W,
    theorem1_discrete_rate,
    theorem1_inverse_loss_slope,
    theorem1_rate_constant,
    theorem1_t_eps,
    theorem1_value_scale,
    theorem2_bank_invariance,
    theorem2_sphere_floor_mc,
    theorem2_sphere_flow,
    theorem3_closed_form,
    theorem3_ratio_gap_rate,
    theorem3_ratio_limit,
)
from ._sts_sims import PAPER

_CHECKS = (
    lemma1_invariant_set,
    lemma1_reduced_loss,
    lemma1_antithetic_blocks,
    theorem1_rate_constant,
    theorem1_inverse_loss_slope,
    theorem1_t_eps,
    theorem1_attention_scale,
    theorem1_value_scale,
    theorem1_discrete_rate,
    theorem1_direction_W,
    theorem1_direction_V,
    theorem2_bank_invariance,
    theorem2_sphere_floor_mc,
    theorem2_sphere_flow,
    theorem3_closed_form,
    theorem3_ratio_limit,
    theorem3_ratio_gap_rate,
    fixed_pe_floor_T250,
    fixed_pe_floor_T300,
    fixed_pe_floor_T350,
    fixed_pe_floor_T400,
    stochastic_beats_fixed,
    fcn_bound_attained,
    fcn_bound_random_layers,
    fcn_trained_widths,
)


def checks(quick: bool) -> list[Callable[[], Check]]:
    """The sparse-token-selection checks, as zero-argument makers named after their check.

    **Arguments:** `quick`: smaller simulations (same tolerances).

    **Returns:** one maker per check, in spec order.

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`).
    """
    return check_makers(PAPER, _CHECKS, quick)


__all__ = ["PAPER", "checks"] + [fn.__name__ for fn in _CHECKS]
