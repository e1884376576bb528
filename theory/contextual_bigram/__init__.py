"""Checks of "Learning and Transferring Sparse Contextual Bigrams with Linear Transformers"
(Ren, Wang, Lee, NeurIPS 2024, arXiv 2410.23438). The paper's formulas were lost and are
re-derived; each check's `provenance` says whose claim it holds: `paper` (a claim stated in the paper's
prose), `derived` (a formula derived from the paper's definitions and checked numerically) or
`recon` (a reconstructed detail the paper does not state). Every numeric setting is a recon default.

[`CHECKS`][] lists the check functions; the registry runs them through
`theory.check_makers("contextual_bigram", CHECKS, full)`. Each is declared with `theory.claim` (its claim,
tolerance and provenance); a `sized` one takes `full: bool`, the paper's sizes (quick ones otherwise), never
a looser tolerance; the others take no argument. Everything runs in
float64 (tolerances reach 1e-12). The closed forms are collected in [`closed_forms`][]; the
Stage-1 success experiment the checks and figures share is [`stage1_success`][] (its rates over a
batch grid: [`success_rates`][]; the growth of the batch need with T: [`fit_batch_exponent`][]);
the seeds' spread as Stage 1 leaves the scratch start against its linear-noise law:
[`linear_noise_law`][], [`stage1_spread`][], measured by [`ks_distance`][] against
[`KS_CRITICAL`][];
the growth of the error of Stages 2-3 with T: [`fit_T_exponent`][]; Appendix I's sweep over N with
the Gaussian-noise surrogate: [`l1_needed_small_batch`][].
"""

from . import closed_forms
from ._checks import (
    algorithm1_recovers,
    error_dynamics,
    l1_reduces_off_support,
    lemma_b8_enumeration,
    lemma_b8_monte_carlo,
    line_recursion,
    lyapunov,
    matrix_flow_on_lines,
    near_optimum_rates,
    normalisation_error,
    ode_first_order,
    population_lines,
    sgd_large_step_worse,
    sgd_small_step_worse,
    stage1_batch_exponent,
    stage1_large_batch,
    stage1_linearisation,
    stage1_log_time,
    stage1_needs_poly_T,
    stage1_plateau_is_saddle,
    surrogate_matches_minibatch,
    transfer_alpha1,
    transfer_skips_stage1,
)
from ._l1_over_N import l1_needed_small_batch
from ._stage1 import (
    STAGE1_STEPS,
    BatchExponent,
    batch_for_success,
    fit_batch_exponent,
    stage1_success,
    success_rates,
)
from ._stage1_spread import KS_CRITICAL, ks_distance, linear_noise_law, stage1_escape_spread, stage1_spread
from ._stages23 import TExponent, fit_T_exponent, stages23_flat_in_T, transfer_then_stages23

CHECKS = (
    lemma_b8_enumeration,
    lemma_b8_monte_carlo,
    population_lines,
    line_recursion,
    ode_first_order,
    matrix_flow_on_lines,
    lyapunov,
    error_dynamics,
    stage1_linearisation,
    stage1_log_time,
    stage1_plateau_is_saddle,
    stage1_escape_spread,
    near_optimum_rates,
    transfer_alpha1,
    normalisation_error,
    surrogate_matches_minibatch,
    l1_reduces_off_support,
    l1_needed_small_batch,
    algorithm1_recovers,
    sgd_large_step_worse,
    sgd_small_step_worse,
    stage1_needs_poly_T,
    stage1_batch_exponent,
    stage1_large_batch,
    stages23_flat_in_T,
    transfer_skips_stage1,
    transfer_then_stages23,
)

__all__ = [
    "CHECKS",
    "STAGE1_STEPS",
    "BatchExponent",
    "TExponent",
    "batch_for_success",
    "closed_forms",
    "fit_T_exponent",
    "fit_batch_exponent",
    "KS_CRITICAL",
    "ks_distance",
    "linear_noise_law",
    "stage1_spread",
    "stage1_success",
    "success_rates",
] + [fn.__name__ for fn in CHECKS]
