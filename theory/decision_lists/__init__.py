"""Checks of "Provable Gradient-Descent-Based Learning of Decision Lists by Transformers"
(anonymous extended abstract).

- Result 1: gradient flow on W with V = cP reaches perfect classification within 4M/(log(L) γ);
  perfect afterwards; loss monotone; GD → flow; scaling in m and c. The time bound and perfect
  classification also under `D = iid` (checks `*_iid`), where τ is located by enumeration.
- Result 2: GD on (W, V) with η = 1/λ_max classifies perfectly within T = ε/(2η) steps and V stays
  within ε of cP: a small configuration **outside** the hypotheses (enumerated), and one **inside**
  them (L = 40, n = 30, M = 2, ε = 4.1, frozen Monte-Carlo population, certified perfect).
- The conclusion's empirical claim (checks `section7_*`): uniform attention pushes V toward P; and
  its joint variant (checks `section7_joint_*`): W and V trained together from a small random start.
- The engine's λ_max against a dense Hessian.

The paper's quantities (paper): the model, the task, c, the time bound, the hypotheses and the step
window ([`closed_forms`][]). Reconstructed (recon): the sampling distribution `D` (distinct
tokens; i.i.d. tokens in the `*_iid` checks), δ and γ, m := M, the fixed point for the circular c,
the acceptance thresholds of the uniform-attention checks. `full` grows the sets of tasks to the
paper's, never changing a tolerance. Everything runs in float64.

`CHECKS` are the check functions in order, for `theory.check_makers("decision_lists", CHECKS,
full)`; each is declared with `theory.claim` (its claim, tolerance and provenance).
"""

from . import closed_forms
from ._checks import (
    hessian_lanczos_vs_dense,
    result1_c_monotone,
    result1_gd_limit,
    result1_list_length_scaling,
    result1_loss_monotone,
    result1_perfect_reached,
    result1_perfect_reached_iid,
    result1_time_within_bound,
    result1_time_within_bound_iid,
    result2_perfect_within_window,
    result2_step_below_curvature,
    result2_V_stays_near_cP,
    result2_within_hypotheses,
    section7_joint_kappa,
    section7_joint_rho,
    section7_kappa,
    section7_rho,
)
from ._runs import SECTION7_SIZES, section7_level, uniform_attention
from .closed_forms import (
    DELTA_DEFINITIONS,
    GAMMA_DEFINITIONS,
    Constants,
    Result2Setting,
    constants,
    distinct_constants,
    result1_c,
    result1_time_bound,
    result2_setting,
    zero_attention_loss,
)

CHECKS = (
    result1_time_within_bound,
    result1_perfect_reached,
    result1_loss_monotone,
    result1_gd_limit,
    result1_list_length_scaling,
    result1_c_monotone,
    result1_time_within_bound_iid,
    result1_perfect_reached_iid,
    result2_perfect_within_window,
    result2_V_stays_near_cP,
    result2_step_below_curvature,
    result2_within_hypotheses,
    section7_kappa,
    section7_rho,
    section7_joint_kappa,
    section7_joint_rho,
    hessian_lanczos_vs_dense,
)
"""The decision-list check functions, in the order they are reported."""


__all__ = [
    "CHECKS",
    "DELTA_DEFINITIONS",
    "GAMMA_DEFINITIONS",
    "SECTION7_SIZES",
    "Constants",
    "Result2Setting",
    "closed_forms",
    "constants",
    "distinct_constants",
    "result1_c",
    "result1_time_bound",
    "result2_setting",
    "section7_level",
    "uniform_attention",
    "zero_attention_loss",
] + [fn.__name__ for fn in CHECKS]
