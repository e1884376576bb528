"""The four Scan and Snap simulation levels as simulations: L0 mini-batch SGD (and its outcome
alone, the run of the Fig. 6 sweep), L1 the population flow, L2 the decoupled theory flow, L3 the
scalar model of Theorem 4. The defaults are the paper's. L0, L0_outcome, L1 and L2 hold their
synthetic task (the data set and its query tokens) as one field, `task` (a [`Synthetic`][])."""

from types import MappingProxyType

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dynamics
from dynamics import Interval, OneOf, Require, dtype_param, param

from ._config import Synthetic
from ._levels import OPTIMIZERS, population_flow, scalar_flow, sgd_run, theory_flow
from ._metrics import distinct_token_entropy, recall_at_threshold
from ._model import YZModel, population_loss
from ._text_train import TextSGD

INITS = ("zeros", "uniform")


def _task():
    return param(Synthetic(), doc="the synthetic task: dataset (syn_small or syn_medium) and num_last")


def _init():
    return param("zeros", OneOf(*INITS), doc="zeros (Y = Z = 0, the theory's) or uniform (U(±1/√M), Fig 6's)")


def _rate(name: str):
    return param(1.0, Interval.positive(), doc=f"learning rate {name}", traced=True)


def _momentum():
    return param(0.9, Interval(0, 1, high_open=True), doc="μ of the heavy ball")


def _T():
    return param(128, Interval(2), doc="length of the sampled sequences (L1 and L2 are its T → ∞ limit)")


def _batch_size():
    return param(128, Interval(1), doc="sequences per step")


def _num_steps():
    return param(100, Interval(1), doc="optimizer steps")


def _t1():
    return param(1000.0, Interval.positive(), doc="end time, in batch-1 SGD steps", traced=True)


def _num_saves():
    return param(51, Interval(2), doc="equally spaced saves on [0, t1]")


def _max_steps():
    return param(
        100_000, Interval(1), doc="the solver's step budget (a run that spends it stops with max_steps)"
    )


def _initial_model(init: str, key, M: int, dtype) -> YZModel:
    if init == "zeros":
        return YZModel.zeros(M, dtype=dtype)
    return YZModel.uniform(key, M, dtype=dtype)


def _save_ts(t1, num_saves: int, dtype):
    return jnp.linspace(0.0, t1, num_saves, dtype=dtype)


class SGD(dynamics.AbstractSimulation):
    """L0: mini-batch SGD / heavy-ball momentum / Adam on freshly sampled sequences (the official
    code's setting, Fig 6). Saves the population loss, the distinct-token entropy and the class
    attention every `every` steps (or at `log_saves` log-spaced steps).

    With `along.sharpness` it saves also `sharpness` (λ_max of the population loss's Hessian) and,
    for `sgd` and `momentum`, `sharpness_ratio` (≥ 1 past the edge of stability: λ_max(R¹ᐟ²HR¹ᐟ²)/2
    with the two rates R, over 1 + μ for momentum); with `along.flow` (`sgd` only) `flow_distance`
    from L1's flow started at the same point, at t = k, and `flow_loss` (`dynamics.Along`).

    **Example:** `dynamics.simulate(SGD(task=Synthetic(dataset="syn_medium"), init="uniform"), num_seeds=64)`.
    """

    task: Synthetic = _task()
    init: str = _init()
    eta_y: float = _rate("η_Y of the decoder Y")
    eta_z: float = _rate("η_Z of the attention Z")
    optimizer: str = param("momentum", OneOf(*OPTIMIZERS), doc="sgd, momentum (PyTorch heavy ball) or adam")
    momentum: float = _momentum()
    T: int = _T()
    batch_size: int = _batch_size()
    num_steps: int = _num_steps()
    every: int = param(2, Interval(1), doc="save period in steps (divides num_steps)")
    log_saves: int | None = dynamics.log_saves_param()
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="along.sharpness: the population loss's sharpness and its ratio to the optimizer's edge of "
        "stability at every save; along.flow (sgd): L1's flow from the same start, its distance at t = k",
    )
    dtype: str = dtype_param("float32")

    requires = (
        dynamics.every_divides(),
        dynamics.Along.flow_needs("optimizer", "sgd", "plain SGD"),
    )
    loss_name = "population_loss"
    labels = MappingProxyType(
        {
            "population_loss": "population (T → ∞) cross-entropy loss (nats)",
            "dt_entropy": "attention entropy on distinct tokens, class mean (nats)",
            "sharpness": "sharpness λ_max of the population loss's Hessian",
            "sharpness_ratio": "sharpness / the optimizer's edge of stability",
            "flow_distance": "distance ‖(Y, Z) − L1 flow‖ at t = step",
            "flow_loss": "population loss of L1's flow at t = step (nats)",
        }
    )
    small = {"num_steps": 4, "every": 2, "T": 8, "batch_size": 4}

    def run(self, key) -> dynamics.Run:
        classes = self.task.classes()
        init_key, data_key = jax.random.split(key)
        return sgd_run(
            data_key,
            _initial_model(self.init, init_key, classes.M, self.float_dtype),
            classes.arrays(self.float_dtype),
            T=self.T,
            batch_size=self.batch_size,
            num_steps=self.num_steps,
            every=self.every,
            eta_y=self.eta_y,
            eta_z=self.eta_z,
            log_saves=self.log_saves,
            method=self.optimizer,
            momentum=self.momentum,
            along=self.along,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of the model `(Y, Z)` (the final state), the loss it saves as
        `population_loss` (no step size: the two groups have their own rates, and momentum
        or Adam change the edge of stability)."""
        classes = self.task.classes().arrays(self.float_dtype)
        return dynamics.Landscape(lambda model: population_loss(model, classes))


RECALL_TAU_RANGES = {1: (0.028, 0.038), 3: (0.012, 0.016), 5: (0.0075, 0.0105), 10: (0.0040, 0.0050)}
"""The threshold ranges of the recall curves of Figs. 11-12 (the paper's x-axes), per `num_last`."""


class SGDOutcome(dynamics.AbstractSimulation):
    """L0 as the Fig. 6 sweep runs it: mini-batch SGD with heavy-ball momentum on Syn-Medium from
    the random init U(±1/√M), keeping only how the attention ends: the final distinct-token
    entropy ([`distinct_token_entropy`][]) and the final recall curve ([`recall_at_threshold`][]
    at [`SGDOutcome.taus`][]), no series.

    The key of seed s is split into (init key, mini-batch key), as [`SGD`][] does: with
    `dynamics.sweep(..., seed=1)` seed s plays the official sweep's `seed=s`, the same for every
    rate pair, as the official code reuses its seeds across the grid. η_Y = η_Z · `ratio`.

    **Example:** the paper's sweep (Fig. 6, seeds 1-10), from the command line
    `attnflow sweep scan_snap --level L0_outcome --grid task.num_last=1,3,5,10 --grid
    eta_z=0.5,1,2,3 --grid ratio=1,2,5,10 --seed 1 --seeds 10 --out fig6`.
    """

    task: Synthetic = param(
        Synthetic(dataset="syn_medium"),
        doc="the synthetic task: Syn-Medium (the sweep's and the recall thresholds'), its num_last",
    )
    eta_z: float = _rate("η_Z of the attention Z")
    ratio: float = param(
        1.0, Interval.positive(), doc="η_Y/η_Z (η_Y of the decoder is η_Z · ratio)", traced=True
    )
    momentum: float = _momentum()
    T: int = _T()
    batch_size: int = _batch_size()
    num_steps: int = _num_steps()
    num_taus: int = param(41, Interval(2), doc="points of the recall curve")
    dtype: str = dtype_param("float32")

    small = {"num_steps": 4, "T": 8, "batch_size": 4, "num_taus": 5}
    requires = (
        Require(
            ("task.dataset",),
            lambda dataset: dataset == "syn_medium",
            "the Fig. 6 sweep runs on Syn-Medium: task.dataset must be syn_medium",
        ),
    )

    def taus(self) -> np.ndarray:
        """The thresholds of the recall curve: `num_taus` points over
        `RECALL_TAU_RANGES[task.num_last]` (over [0.85/M, 1.25/M] for a `num_last` the paper does
        not plot)."""
        num_last = self.task.num_last
        M = self.task.generator().M
        return np.linspace(*RECALL_TAU_RANGES.get(num_last, (0.85 / M, 1.25 / M)), self.num_taus)

    def run(self, key) -> dynamics.Run:
        classes = self.task.classes().arrays(self.float_dtype)
        init_key, data_key = jax.random.split(key)
        run = sgd_run(
            data_key,
            YZModel.uniform(init_key, classes.probs.shape[1], self.float_dtype),
            classes,
            T=self.T,
            batch_size=self.batch_size,
            num_steps=self.num_steps,
            every=self.num_steps,
            eta_y=self.eta_z * self.ratio,
            eta_z=self.eta_z,
            momentum=self.momentum,
            save=lambda model: (),
        )
        # Measured on the class arrays as computed at run time, as when they are arguments of the
        # compiled call: XLA would otherwise fold their own terms (log π) at compile time, in
        # another rounding, and the Fig. 6 table would move in its last bits.
        classes, taus = jax.lax.optimization_barrier((classes, jnp.asarray(self.taus(), self.float_dtype)))
        outcome = {
            "entropy": distinct_token_entropy(run.final, classes),
            "recall": recall_at_threshold(run.final, classes, taus),
        }
        return eqx.tree_at(lambda r: r.final, run, outcome)


class PopulationFlow(dynamics.AbstractSimulation):
    """L1: gradient flow of the population (T → ∞) loss, Lemma 2, with rates η_Y and η_Z; saves
    as [`SGD`][] does, at `num_saves` equally spaced times."""

    task: Synthetic = _task()
    init: str = _init()
    eta_y: float = _rate("η_Y of the decoder Y")
    eta_z: float = _rate("η_Z of the attention Z")
    t1: float = _t1()
    num_saves: int = _num_saves()
    max_steps: int = _max_steps()
    dtype: str = dtype_param("float64")
    seed_hint = "from init=zeros the flow is deterministic: set init=uniform for a random start"
    loss_name = "population_loss"
    labels = MappingProxyType(
        {
            "population_loss": "population (T → ∞) cross-entropy loss (nats)",
            "dt_entropy": "attention entropy on distinct tokens, class mean (nats)",
        }
    )
    small = {"t1": 5.0, "num_saves": 3}

    def run(self, key) -> dynamics.Run:
        classes = self.task.classes()
        init_key, _ = jax.random.split(key)
        dtype = self.float_dtype
        return population_flow(
            _initial_model(self.init, init_key, classes.M, dtype),
            classes.arrays(dtype),
            eta_y=self.eta_y,
            eta_z=self.eta_z,
            t1=self.t1,
            save_ts=_save_ts(self.t1, self.num_saves, dtype),
            max_steps=self.max_steps,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of the model `(Y, Z)` (the final state), the loss it saves as
        `population_loss`, and the flow descends."""
        classes = self.task.classes().arrays(self.float_dtype)
        return dynamics.Landscape(lambda model: population_loss(model, classes))


class TheoryFlow(dynamics.AbstractSimulation):
    """L2: the decoupled theory flow of Eqn 10 with the Eqn 9 gradient, state (Z, B_n)."""

    task: Synthetic = _task()
    init: str = _init()
    eta_y: float = _rate("η_Y (enters through γ(t))")
    eta_z: float = _rate("η_Z of the attention Z")
    t1: float = _t1()
    num_saves: int = _num_saves()
    class_weighted: bool = param(False, doc="multiply each class's term by π_n")
    max_steps: int = _max_steps()
    dtype: str = dtype_param("float64")
    seed_hint = "from init=zeros the flow is deterministic: set init=uniform for a random start"
    small = {"t1": 5.0, "num_saves": 3}

    def run(self, key) -> dynamics.Run:
        classes = self.task.classes()
        init_key, _ = jax.random.split(key)
        dtype = self.float_dtype
        return theory_flow(
            _initial_model(self.init, init_key, classes.M, dtype).Z,
            classes.arrays(dtype),
            eta_y=self.eta_y,
            eta_z=self.eta_z,
            t1=self.t1,
            save_ts=_save_ts(self.t1, self.num_saves, dtype),
            class_weighted=self.class_weighted,
            max_steps=self.max_steps,
        )


class ScalarFlow(dynamics.AbstractSimulation):
    """L3: the scalar phase-transition model of Theorem 4 (z of the common token and B_n) from
    z(0) = B(0) = 0; deterministic, so every seed gives the same run."""

    M: int = param(1000, Interval(2), doc="vocabulary size")
    K: int = param(10, Interval(1), doc="number of classes")
    eta_y: float = _rate("η_Y (enters through γ(t))")
    eta_z: float = _rate("η_Z")
    C0: float = param(1.0, Interval.positive(), doc="C_0 of Theorem 4", traced=True)
    t1: float = _t1()
    num_saves: int = _num_saves()
    rtol: float = param(1e-8, Interval.positive(), doc="relative tolerance of the step-size controller")
    atol: float = param(1e-10, Interval.positive(), doc="absolute tolerance of the step-size controller")
    max_steps: int = _max_steps()
    dtype: str = dtype_param("float64")
    seed_hint = "the scalar model has no randomness: sweep its rates or C0 instead"
    labels = MappingProxyType(
        {
            "z": "attention logit z of the common token",
            "B": "growth exponent B_n = η_Z ∫ ξ_n dt (Eqn 12)",
        }
    )
    small = {"t1": 5.0, "num_saves": 3}

    def run(self, key) -> dynamics.Run:
        del key
        return scalar_flow(
            M=self.M,
            K=self.K,
            eta_y=self.eta_y,
            eta_z=self.eta_z,
            C0=self.C0,
            t1=self.t1,
            save_ts=_save_ts(self.t1, self.num_saves, self.float_dtype),
            dtype=self.float_dtype,
            stepsize_controller=diffrax.PIDController(rtol=self.rtol, atol=self.atol),
            max_steps=self.max_steps,
        )


SIMULATIONS = {
    "L0": SGD,
    "L0_outcome": SGDOutcome,
    "L1": PopulationFlow,
    "L2": TheoryFlow,
    "L3": ScalarFlow,
    "text": TextSGD,
}
"""The levels of Scan and Snap by name."""
