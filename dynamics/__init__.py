"""The engine: continuous flows, discrete training and many runs at once. Knows no paper.

- [`ode_flow`][], [`gradient_flow`][]: adaptive Diffrax integration, saving what a [`Save`][]
  names, with named stopping events ([`Event`][]: a boolean [`Predicate`][] or a
  [`Crossing`][] located by root finding).
- [`train`][] with the optax steps [`gd`][], [`heavy_ball`][], [`adam`][] and
  [`scale_by_group_rates`][]: discrete steps under `jax.lax.scan`; a training loop of one's own
  steps and saves through [`scan_with_saves`][], as `train` does.
- [`scale_columns`][], [`center_columns`][], [`proximal_l1`][] (with [`soft_threshold`][],
  [`project_columns`][]): column preconditioning, centring and an l1 proximal step with affine
  re-projection, on chosen leaves.
- [`normalized_gd`][], [`normalize_by_block`][]: normalized GD with one normalisation (and one
  step size) per parameter block; [`train_stages`][] with [`Stage`][]: train one block, then
  another, the others frozen, full-batch or on fresh mini-batches; [`solve_qp`][]: a convex
  QP (Clarabel) with its KKT residuals.
- [`run_many`][], [`grid`][], [`seed_keys`][]: `vmap` over seeds and grids, chunked and sharded;
  [`progress_inside`][]: progress bars inside long flows and scans ([`progress_over`][]: over
  pieces, with the time left, [`duration`][] in words); [`recording_compiles`][]
  ([`CompileStats`][]): the programs compiled, those loaded from the cache, and the seconds spent
  tracing, lowering and compiling.
- [`hessian_max_eigenvalue`][], [`hvp`][]: the largest Hessian eigenvalue from Hessian-vector
  products (Lanczos or power iteration), e.g. for a step size η ≤ 1/λ_max; [`top_eigenpair`][]:
  with its eigenvector, Lanczos started from a vector of one's own (the last one found).
- [`critical_point`][] ([`CriticalPoint`][], [`CriticalPointStatus`][]), [`hessian_spectrum`][]:
  Newton's method on the gradient polishes a starting point to the critical point near it, minimum
  or saddle, with the dense Hessian spectrum there, its index and an escape direction; the status
  says when there is none to find; [`phases`][] ([`Plateaus`][]) splits a saved run into plateaus
  and transitions in log-time, and [`plateau_saddles`][] ([`PlateauSaddles`][]) polishes each
  plateau to its saddle and measures how the run's escape lines up with the saddle's;
  [`sweep_phases`][] finds the plateaus of every run of a sweep at once (from the saved series
  that [`saved_series`][] names); [`sweep_saddles`][] polishes the state each run saved on each
  plateau to its saddle; [`sweep_critical_points`][] and [`sweep_sharpness`][] polish
  every run's final state to the critical point near it and take the sharpness there, from the
  loss a simulation declares as a function of its state ([`Landscape`][], [`has_landscape`][],
  [`require_landscape`][], [`num_params`][], [`CRITICAL_POINT_STATUSES`][]);
  [`add_to_store`][] adds such analyses to the sweep's store, with their checksums ([`drop_added`][]
  removes them).
- [`sharpness`][], [`edge_of_stability_save`][], [`with_sharpness`][], [`gd_flow_gap`][]
  ([`GDFlowGap`][]), [`with_flow_distance`][]: the top Hessian eigenvalue along a run against the
  edge of stability 2/η, and how far gradient descent drifts from the gradient flow; another
  optimiser's edge and flow by its steps ([`AbstractSteps`][]: [`NormalizedSteps`][],
  [`AdamSteps`][], [`ClippedSteps`][], [`ProjectedSteps`][]); [`Along`][] offers both as one
  setting of a discrete level;
  [`norm_growth`][] ([`NormGrowth`][]), [`direction_convergence`][]
  ([`DirectionConvergence`][]): how a run ends when the loss's infimum is at infinity, ‖θ‖
  growing as log t or as a power of t and θ/‖θ‖ settling on a direction.
- [`Run`][]: one run, a PyTree (its `final` state, saved `values`, how it stopped).
- [`AbstractSimulation`][] with fields declared by [`param`][] ([`Interval`][], [`OneOf`][]): one
  way of training one model as a validated config; [`sweep`][] runs a grid of its settings ×
  seeds ([`simulate`][]: seeds alone, a grid of one point) into one labelled dataset (how each
  run stopped in words: [`stop_reasons`][]), in memory or written block by block to a zarr
  store that resumes after a crash and splits into shards ([`sweep_progress`][],
  [`sweep_blocks`][], [`save_sweep`][], [`load_sweep`][], [`open_sweep`][] read lazily,
  [`remove_store`][], [`hold_store`][] from its first byte written to its last read). A store
  keeps the checksum of every file and the fingerprint of the code that made it
  ([`check_store`][], [`StoreReport`][]); [`shared_store`][] lets the pieces of one job make a
  sweep they share once.
- [`atomic_write`][], [`prepare_folder`][], [`prepare_file`][], [`describe_os_error`][],
  [`temporary_path`][], [`remove_stale_temporaries`][]: outputs written whole or not at all, output
  paths tried before any work, a file-system error in words, what killed writers left removed;
  [`parse_bytes`][] reads a size such as `16G`; [`kept_runs`][] and [`keep_run`][] keep the results
  of work done piece after piece as each piece ends, so that the work stopped half-way and made
  again does only the pieces left.
"""

from ._along import Along
from ._batch import grid, run_many, seed_keys
from ._compile_log import CompileStats, recording_compiles
from ._ending import DirectionConvergence, NormGrowth, direction_convergence, norm_growth
from ._files import (
    atomic_write,
    describe_os_error,
    prepare_file,
    prepare_folder,
    remove_stale_temporaries,
    temporary_path,
)
from ._flow import Crossing, Event, Predicate, Save, gradient_flow, loss_below, ode_flow
from ._grid import POINT_DIM, grid_from_record
from ._hessian import hessian_max_eigenvalue, hvp, top_eigenpair
from ._integrity import StoreReport, check_store
from ._kept_runs import keep_run, kept_runs
from ._landscape import critical_point, hessian_spectrum
from ._landscape_result import CriticalPoint, CriticalPointStatus
from ._normalized import normalize_by_block, normalized_gd
from ._params import (
    Interval,
    OneOf,
    ParamInfo,
    Require,
    check_params,
    dtype_param,
    every_divides,
    from_setting_values,
    is_config,
    log_saves_param,
    param,
    params,
    parse_settings,
    setting_values,
    settings,
    with_settings,
)
from ._phases import Plateaus, PlateauSaddles, check_phase_settings, phases, plateau_saddles
from ._preflight import DEFAULT_MAX_BYTES, MAX_SEED, parse_bytes
from ._progress import duration, progress_inside, progress_over
from ._proximal import Mask, center_columns, project_columns, proximal_l1, scale_columns, soft_threshold
from ._qp import QPSolution, kkt_residuals, solve_qp
from ._rates import Rates, adam, gd, heavy_ball, scale_by_group_rates, scale_tree
from ._refine import REFINE_SCALES, Outcome, check_refine_settings, refine_sweep
from ._run import Run, StopReason, all_finite, stop_reason
from ._shared import SHARED_RUNS, shared_store
from ._sharpness import (
    GDFlowGap,
    edge_of_stability_save,
    gd_flow_gap,
    sharpness,
    with_flow_distance,
    with_sharpness,
)
from ._simulation import AbstractSimulation, Landscape, has_landscape, key_seed, seed_key
from ._stages import Stage, train_stages
from ._steps import AbstractSteps, AdamSteps, ClippedSteps, NormalizedSteps, ProjectedSteps
from ._store import SAVE_DIM, SEED_DIM, hold_store, remove_store
from ._store_add import add_to_store, drop_added
from ._sweep import (
    load_sweep,
    open_sweep,
    save_sweep,
    simulate,
    stop_reasons,
    sweep,
    sweep_blocks,
    sweep_progress,
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
from ._train import log_spaced_steps, saved_steps, scan_with_saves, train, training_save

__all__ = [
    "AbstractSteps",
    "AdamSteps",
    "ClippedSteps",
    "NormalizedSteps",
    "ProjectedSteps",
    "Along",
    "AbstractSimulation",
    "CompileStats",
    "recording_compiles",
    "Landscape",
    "has_landscape",
    "DEFAULT_MAX_BYTES",
    "MAX_SEED",
    "StoreReport",
    "atomic_write",
    "check_store",
    "keep_run",
    "kept_runs",
    "describe_os_error",
    "parse_bytes",
    "duration",
    "prepare_file",
    "prepare_folder",
    "remove_stale_temporaries",
    "remove_store",
    "hold_store",
    "temporary_path",
    "Crossing",
    "CriticalPoint",
    "CriticalPointStatus",
    "DirectionConvergence",
    "Event",
    "GDFlowGap",
    "NormGrowth",
    "SAVE_DIM",
    "Save",
    "SEED_DIM",
    "Interval",
    "OneOf",
    "ParamInfo",
    "PlateauSaddles",
    "Plateaus",
    "Require",
    "load_sweep",
    "open_sweep",
    "param",
    "params",
    "parse_settings",
    "from_setting_values",
    "is_config",
    "setting_values",
    "settings",
    "with_settings",
    "save_sweep",
    "key_seed",
    "seed_key",
    "simulate",
    "stop_reasons",
    "sweep",
    "sweep_blocks",
    "sweep_progress",
    "Mask",
    "Predicate",
    "QPSolution",
    "Rates",
    "Run",
    "Stage",
    "StopReason",
    "adam",
    "all_finite",
    "center_columns",
    "check_params",
    "critical_point",
    "direction_convergence",
    "dtype_param",
    "edge_of_stability_save",
    "gd",
    "gd_flow_gap",
    "with_sharpness",
    "with_flow_distance",
    "gradient_flow",
    "grid",
    "heavy_ball",
    "hessian_max_eigenvalue",
    "hessian_spectrum",
    "hvp",
    "kkt_residuals",
    "loss_below",
    "norm_growth",
    "normalize_by_block",
    "normalized_gd",
    "phases",
    "plateau_saddles",
    "check_phase_settings",
    "sweep_phases",
    "sweep_critical_points",
    "refine_sweep",
    "check_refine_settings",
    "Outcome",
    "REFINE_SCALES",
    "POINT_DIM",
    "grid_from_record",
    "sweep_saddles",
    "add_to_store",
    "drop_added",
    "sweep_sharpness",
    "require_landscape",
    "num_params",
    "CRITICAL_POINT_STATUSES",
    "shared_store",
    "SHARED_RUNS",
    "saved_series",
    "ode_flow",
    "project_columns",
    "progress_inside",
    "progress_over",
    "proximal_l1",
    "run_many",
    "scale_by_group_rates",
    "scale_columns",
    "scale_tree",
    "seed_keys",
    "sharpness",
    "soft_threshold",
    "solve_qp",
    "scan_with_saves",
    "saved_steps",
    "log_spaced_steps",
    "training_save",
    "log_saves_param",
    "every_divides",
    "stop_reason",
    "top_eigenpair",
    "train",
    "train_stages",
]
