"""Checks of Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023, arXiv 2305.16380): each
lemma's and theorem's formula held against a simulation of the level it is about (L0
mini-batch SGD, L1 population flow, L2 decoupled theory flow, L3 scalar model), and the two
claims of the real-text experiments (Figs. 7 and 10) on the bundled quick corpus.

[`CHECKS`][] lists the check functions in paper order; the registry runs them through
`theory.check_makers("scan_snap", CHECKS, full)`. Each is declared with `theory.claim` (its claim,
tolerance and provenance); a `sized` one takes `full: bool`, the paper's sizes (quick ones have fewer
draws, saves and steps), never a looser tolerance; the others
take no argument. Everything runs in float64 except the real-text training (float32, the
paper's). The closed forms the checks use are collected in
[`closed_forms`][].
"""

from . import closed_forms
from ._lemmas import (
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
from ._levels import levels_L0_to_L1, levels_L1_vs_L2
from ._text import fig7_attention_freezes, fig10_entropy_falls_with_lr
from ._theorems import (
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

CHECKS = (
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
    fig7_attention_freezes,
    fig10_entropy_falls_with_lr,
)


__all__ = [
    "CHECKS",
    "closed_forms",
    "fig7_attention_freezes",
    "fig10_entropy_falls_with_lr",
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
