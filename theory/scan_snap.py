"""Checks of Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023, arXiv 2305.16380): each
lemma's and theorem's formula held against a simulation of the level it is about (spec §5:
L0 mini-batch SGD, L1 population flow, L2 decoupled theory flow, L3 scalar model).

[`checks`][] lists them; every check is a module-level function `name(quick) -> Check`
(defined in `_scan_snap_lemmas`, `_scan_snap_theorems` and `_scan_snap_levels`). `quick`
shrinks the simulations (fewer draws, saves and steps), never a tolerance. Everything runs
in float64.
"""

from collections.abc import Callable

from ._check import Check, check_makers
from ._scan_snap_lemmas import (
    lemma1_autograd,
    lemma1_row_sums,
    lemma2_hoeffding,
    lemma2_rate,
    lemma5_continuous,
    lemma5_discrete,
    lemma6_closed_form,
    lemma7_gap,
    lemma9_early,
    lemma9_late,
)
from ._scan_snap_levels import levels_L0_to_L1, levels_L1_vs_L2
from ._scan_snap_sims import PAPER
from ._scan_snap_theorems import (
    theorem1_backprop_gradient,
    theorem1_xi_positive,
    theorem2_fates_L1,
    theorem2_fates_L2,
    theorem3_eqn11_L1,
    theorem3_eqn11_L1_eta_z_1,
    theorem3_eqn11_L2,
    theorem3_eqn12_L2,
    theorem4_B_closed_form,
    theorem4_early_regime,
    theorem4_fixed_nu_invariance,
    theorem4_late_regime,
    theorem4_late_regime_t0,
    theorem4_snap_scaling,
)

_CHECKS = (
    lemma1_autograd,
    lemma1_row_sums,
    lemma2_rate,
    lemma2_hoeffding,
    lemma5_discrete,
    lemma5_continuous,
    lemma6_closed_form,
    lemma7_gap,
    lemma9_early,
    lemma9_late,
    theorem1_backprop_gradient,
    theorem1_xi_positive,
    theorem2_fates_L1,
    theorem2_fates_L2,
    theorem3_eqn11_L2,
    theorem3_eqn12_L2,
    theorem3_eqn11_L1,
    theorem3_eqn11_L1_eta_z_1,
    theorem4_B_closed_form,
    theorem4_early_regime,
    theorem4_late_regime_t0,
    theorem4_late_regime,
    theorem4_fixed_nu_invariance,
    theorem4_snap_scaling,
    levels_L1_vs_L2,
    levels_L0_to_L1,
)


def checks(quick: bool) -> list[Callable[[], Check]]:
    """The Scan and Snap checks, as zero-argument makers named after their check.

    **Arguments:** `quick`: smaller simulations (same tolerances).

    **Returns:** one maker per check, in paper order.

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`): the tolerances
    reach 1e-12.
    """
    return check_makers(PAPER, _CHECKS, quick)


__all__ = [
    "PAPER",
    "checks",
    "lemma1_autograd",
    "lemma1_row_sums",
    "lemma2_rate",
    "lemma2_hoeffding",
    "lemma5_discrete",
    "lemma5_continuous",
    "lemma6_closed_form",
    "lemma7_gap",
    "lemma9_early",
    "lemma9_late",
    "theorem1_backprop_gradient",
    "theorem1_xi_positive",
    "theorem2_fates_L1",
    "theorem2_fates_L2",
    "theorem3_eqn11_L2",
    "theorem3_eqn12_L2",
    "theorem3_eqn11_L1",
    "theorem3_eqn11_L1_eta_z_1",
    "theorem4_B_closed_form",
    "theorem4_early_regime",
    "theorem4_late_regime_t0",
    "theorem4_late_regime",
    "theorem4_fixed_nu_invariance",
    "theorem4_snap_scaling",
    "levels_L1_vs_L2",
    "levels_L0_to_L1",
]
