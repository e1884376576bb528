"""The landscape a run moves through, and how it moves: Hessians, critical points, sharpness,
phases, endings, and their analyses of every run of a sweep. The engine (`dynamics`) runs; this
wing reads what it ran.

- [`hessian_max_eigenvalue`][], [`hvp`][]: the largest Hessian eigenvalue from Hessian-vector
  products (Lanczos or power iteration), e.g. for a step size η ≤ 1/λ_max; [`top_eigenpair`][]:
  with its eigenvector, Lanczos started from a vector of one's own (the last one found).
- [`critical_point`][] ([`CriticalPoint`][], [`CriticalPointStatus`][]), [`hessian_spectrum`][]:
  Newton's method on the gradient polishes a starting point to the critical point near it, minimum
  or saddle, with the dense Hessian spectrum there, its index and an escape direction; the status
  says when there is none to find.
- [`phases`][] ([`Plateaus`][], [`check_phase_settings`][]) splits a saved run into plateaus and
  transitions in log-time, and [`plateau_saddles`][] ([`PlateauSaddles`][]) polishes each plateau
  to its saddle and measures how the run's escape lines up with the saddle's.
- [`sharpness`][], [`edge_of_stability_save`][], [`with_sharpness`][], [`gd_flow_gap`][]
  ([`GDFlowGap`][]), [`with_flow_distance`][]: the top Hessian eigenvalue along a run against the
  edge of stability 2/η, and how far gradient descent drifts from the gradient flow (another
  optimiser's by its steps, `dynamics.AbstractSteps`; `dynamics.Along` offers both as one setting
  of a discrete level).
- [`norm_growth`][] ([`NormGrowth`][]), [`direction_convergence`][] ([`DirectionConvergence`][]):
  how a run ends when the loss's infimum is at infinity, ‖θ‖ growing as log t or as a power of t
  and θ/‖θ‖ settling on a direction.
- [`refine_sweep`][] ([`Outcome`][], [`check_refine_settings`][]) finds where an outcome of the
  runs changes over one or two settings (a phase boundary), splitting the intervals or cells
  where it changes round after round, each round one sweep.
- Over a sweep: [`sweep_phases`][] finds the plateaus of every run at once (from the saved series
  that [`saved_series`][] names); [`sweep_saddles`][] polishes the state each run saved on each
  plateau to its saddle; [`sweep_critical_points`][] and [`sweep_sharpness`][] polish every run's
  final state to the critical point near it and take the sharpness there, from the loss a
  simulation declares as a function of its state (`dynamics.Landscape`;
  [`require_landscape`][], [`num_params`][], [`CRITICAL_POINT_STATUSES`][]).

**Example:** the saddle of x² − y² at the origin, polished from near it:

    >>> import jax
    >>> jax.config.update("jax_enable_x64", True)
    >>> import jax.numpy as jnp
    >>> from dynamics import landscape
    >>> found = landscape.critical_point(lambda p: p[0] ** 2 - p[1] ** 2, jnp.array([0.1, -0.2]))
    >>> landscape.CriticalPointStatus(int(found.status)).name, int(found.index)
    ('converged', 1)
"""

from ._ending import DirectionConvergence, NormGrowth, direction_convergence, norm_growth
from ._hessian import hessian_max_eigenvalue, hvp, top_eigenpair
from ._landscape import critical_point, hessian_spectrum
from ._landscape_result import CriticalPoint, CriticalPointStatus
from ._phases import Plateaus, PlateauSaddles, check_phase_settings, phases, plateau_saddles
from ._refine import Outcome, check_refine_settings, refine_sweep
from ._sharpness import (
    GDFlowGap,
    edge_of_stability_save,
    gd_flow_gap,
    sharpness,
    with_flow_distance,
    with_sharpness,
)
from ._sweep_landscape import (
    CRITICAL_POINT_STATUSES,
    num_params,
    require_landscape,
    sweep_critical_points,
    sweep_saddles,
    sweep_sharpness,
)
from ._sweep_phases import saved_series, sweep_phases

__all__ = [
    "CRITICAL_POINT_STATUSES",
    "CriticalPoint",
    "CriticalPointStatus",
    "DirectionConvergence",
    "GDFlowGap",
    "NormGrowth",
    "Outcome",
    "PlateauSaddles",
    "Plateaus",
    "check_phase_settings",
    "check_refine_settings",
    "critical_point",
    "direction_convergence",
    "edge_of_stability_save",
    "gd_flow_gap",
    "hessian_max_eigenvalue",
    "hessian_spectrum",
    "hvp",
    "norm_growth",
    "num_params",
    "phases",
    "plateau_saddles",
    "refine_sweep",
    "require_landscape",
    "saved_series",
    "sharpness",
    "sweep_critical_points",
    "sweep_phases",
    "sweep_saddles",
    "sweep_sharpness",
    "top_eigenpair",
    "with_flow_distance",
    "with_sharpness",
]
