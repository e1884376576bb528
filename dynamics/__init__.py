"""The engine: continuous flows, discrete training and many runs at once. Knows no paper.

- [`ode_flow`][], [`gradient_flow`][]: adaptive Diffrax integration with saves, saved
  functions of the state, and stopping events.
- [`train`][] with the optax steps [`gd`][], [`heavy_ball`][], [`adam`][] and
  [`scale_by_group_rates`][]: discrete steps under `jax.lax.scan`.
- [`run_many`][], [`grid`][], [`seed_keys`][]: `vmap` over seeds and grids, chunked and sharded.
- [`Run`][] (one run, a PyTree) and [`Trajectory`][] (many runs on disk).
"""

from ._batch import SEEDS_AXIS, grid, run_many, seed_keys
from ._flow import Predicate, gradient_flow, loss_below, ode_flow
from ._rates import Rates, adam, gd, heavy_ball, scale_by_group_rates, scale_tree
from ._run import STOP_REASONS, Run, all_finite, stop_reason
from ._train import train
from ._trajectory import Trajectory, save_npz_atomic

__all__ = [
    "SEEDS_AXIS",
    "STOP_REASONS",
    "Predicate",
    "Rates",
    "Run",
    "Trajectory",
    "adam",
    "all_finite",
    "gd",
    "gradient_flow",
    "grid",
    "heavy_ball",
    "loss_below",
    "ode_flow",
    "run_many",
    "save_npz_atomic",
    "scale_by_group_rates",
    "scale_tree",
    "seed_keys",
    "stop_reason",
    "train",
]
