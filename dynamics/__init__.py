"""The engine: continuous flows, discrete training and many runs at once. Knows no paper.

- [`ode_flow`][], [`gradient_flow`][]: adaptive Diffrax integration, saving what a [`Save`][]
  names, with named stopping events (a boolean predicate of the state, or a [`Crossing`][]
  located by root finding).
- [`train`][] with the optax steps [`gd`][], [`heavy_ball`][], [`adam`][] and
  [`scale_by_group_rates`][]: discrete steps under `jax.lax.scan`; a training loop of one's own
  steps and saves through [`scan_with_saves`][], as `train` does.
- [`scale_columns`][], [`center_columns`][], [`proximal_l1`][]: column preconditioning, centring
  and an l1 proximal step with affine re-projection, on chosen leaves.
- [`normalized_gd`][]: normalized GD with one normalisation (and one step size) per parameter
  block; [`train_stages`][] with [`Stage`][]: train one block, then
  another, the others frozen, full-batch or on fresh mini-batches.
- [`run_many`][], [`grid`][], [`seed_keys`][]: `vmap` over seeds and grids, chunked and sharded;
  [`progress_inside`][]: progress bars inside long flows and scans ([`progress_over`][]: over
  pieces, with the time left, [`duration`][] in words); [`recording_compiles`][]
  ([`CompileStats`][]): the programs compiled, those loaded from the cache, and the seconds spent
  tracing, lowering and compiling.
- [`landscape`][dynamics.landscape], a wing with its own front door: Hessians, critical points
  and saddles, sharpness and the edge of stability, plateaus and phases, how a run ends, and
  their analyses of every run of a sweep, and the refinement of a phase boundary over one or two
  settings, from the loss a simulation declares as a function of its state ([`Landscape`][]),
  added to the sweep's store with their checksums
  by [`add_to_store`][dynamics.store.add_to_store]. Another optimiser's edge of stability and flow
  come from its steps ([`AbstractSteps`][]: [`NormalizedSteps`][],
  [`AdamSteps`][], [`ClippedSteps`][], [`ProjectedSteps`][]); [`Along`][] offers both as one
  setting of a discrete level.
- [`Run`][]: one run, a PyTree (its `final` state, saved `values`, how it stopped).
- [`AbstractSimulation`][] with fields declared by [`param`][] ([`Interval`][], [`OneOf`][]): one
  way of training one model as a validated config; [`sweep`][] runs a grid of its settings ×
  seeds ([`simulate`][]: seeds alone, a grid of one point) into one labelled dataset (how each
  run stopped in words: [`stop_reasons`][]), in memory or written block by block to a zarr
  store that resumes after a crash and splits into shards; [`load_sweep`][] reads one
  (`dynamics.store` saves one and opens one lazily).
- [`store`][dynamics.store], a wing with its own front door: how a store is kept and trusted (the
  checksum of every file and the fingerprint of the code that made it, its locks and shards),
  the runs and analyses kept beside it, runs shared by the pieces of one job, outputs written
  whole or not at all, and the checks made before any work.
"""

from . import landscape, store
from ._along import Along
from ._batch import grid, run_many, seed_keys
from ._compile_log import CompileStats, recording_compiles
from ._flow import Crossing, Save, gradient_flow, loss_below, ode_flow
from ._normalized import normalized_gd
from ._params import (
    Interval,
    OneOf,
    Require,
    check_params,
    dtype_param,
    every_divides,
    from_setting_values,
    log_saves_param,
    param,
    params,
    parse_settings,
    settings,
    with_settings,
)
from ._progress import duration, progress_inside, progress_over
from ._proximal import center_columns, proximal_l1, scale_columns
from ._rates import Rates, adam, gd, heavy_ball, scale_by_group_rates
from ._run import Run, StopReason, all_finite, stop_reason
from ._simulation import AbstractSimulation, Landscape, seed_key
from ._stages import Stage, train_stages
from ._steps import AbstractSteps, AdamSteps, ClippedSteps, NormalizedSteps, ProjectedSteps
from ._sweep import (
    load_sweep,
    simulate,
    stop_reasons,
    sweep,
)
from ._train import log_spaced_steps, scan_with_saves, train, training_save

__all__ = [
    "landscape",
    "store",
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
    "duration",
    "Crossing",
    "Save",
    "Interval",
    "OneOf",
    "Require",
    "load_sweep",
    "param",
    "params",
    "parse_settings",
    "from_setting_values",
    "settings",
    "with_settings",
    "seed_key",
    "simulate",
    "stop_reasons",
    "sweep",
    "Rates",
    "Run",
    "Stage",
    "StopReason",
    "adam",
    "all_finite",
    "center_columns",
    "check_params",
    "dtype_param",
    "gd",
    "gradient_flow",
    "grid",
    "heavy_ball",
    "loss_below",
    "normalized_gd",
    "ode_flow",
    "progress_inside",
    "progress_over",
    "proximal_l1",
    "run_many",
    "scale_by_group_rates",
    "scale_columns",
    "seed_keys",
    "scan_with_saves",
    "log_spaced_steps",
    "training_save",
    "log_saves_param",
    "every_divides",
    "stop_reason",
    "train",
    "train_stages",
]
