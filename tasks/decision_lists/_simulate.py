"""The paper's trainings as simulations: Result 1's gradient flow on `W` ([`Result1Flow`][]),
Result 2's GD on `(W, V)` ([`Result2GD`][]), GD on `V` under uniform attention, the empirical
claim of the conclusion ([`UniformAttentionGD`][]), and joint GD on `(W, V)` from a small random
start ([`JointGD`][]).

Every level holds its random task as one field, `task`, a [`DecisionListsConfig`][] (`--set
task.L=12`). Every run draws its own task, `DecisionLists.random(seed)` with the run's integer seed
(on the host, before the runs' program), unless `task.seed` fixes one task for every run. The
population is the exact support of `D`; Result 2 may use a frozen Monte-Carlo sample instead.
"""

import dataclasses
import math
from types import MappingProxyType

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dynamics
from dynamics import Interval, OneOf, Require, dtype_param, param

from ._config import DecisionListsConfig
from ._constants import (
    DELTA_DEFINITIONS,
    GAMMA_DEFINITIONS,
    delta_gamma,
    distinct_gamma,
    result1_c,
    result1_time_bound,
)
from ._data import MAX_SUPPORT, make_population, sample_tokens, support
from ._dynamics import (
    joint_gd,
    permutation_matrix,
    perturbation,
    result1_flow,
    result1_time,
    result2_gd,
    result2_start,
    uniform_attention_gd,
)
from ._model import DecisionListModel, margins, population_loss
from ._task import TaskArrays


def _num_steps(default: int):
    return param(default, Interval(1), doc="GD steps")


def _every(default: int):
    return param(default, Interval(1), doc="save period in steps (divides num_steps)")


def _task(default: DecisionListsConfig | None = None):
    return param(
        DecisionListsConfig() if default is None else default,
        doc="the random task: L, n, M, the list lengths, its seed and D",
    )


def _along():
    return param(
        dynamics.Along(),
        doc="along.sharpness: the sharpness of the population loss and its ratio to 2/step at every "
        "save; along.flow: the gradient flow from the same start, its distance from GD at t = k·step",
    )


def _support_size(L: int, n: int, distribution: str) -> int:
    return math.comb(L, n) if distribution == "distinct" else L**n


_EXACT = Require(
    ("task.L", "task.n", "task.distribution"),
    lambda L, n, d: _support_size(L, n, d) <= MAX_SUPPORT,
    f"the exact population (C(L, n) or L^n sequences) must have at most {MAX_SUPPORT} sequences",
)
_SEED_HINT = "task.seed fixes one task for every seed: leave it unset to draw a task per seed"

_MU_LABEL = "score margin μ(W): least lead of list keys over later keys"
_ALONG_LABELS = {
    "sharpness": "top Hessian eigenvalue λmax of the population loss",
    "sharpness_ratio": "λmax·η/2, η the GD step (≥ 1 past the edge of stability)",
    "flow_distance": "distance ‖θ − θflow‖ from gradient flow at t = k·η",
    "flow_loss": "population loss along the gradient flow at t = k·η (nats)",
}
"""The labels of what `along` saves (`dynamics.Along`), for the levels of full-batch GD."""


def _exact_population(sim, arrays: TaskArrays):
    tokens, weights = support(sim.task.L, sim.task.n, sim.task.distribution)
    return make_population(arrays, tokens, weights, sim.float_dtype)


class _OnRandomTask(dynamics.AbstractSimulation):
    """A training on the paper's random task: each run's task is drawn on the host from the run's
    integer seed, before the runs' program (`task.run_arrays(seed)`), and read by `run` and
    `landscape` with `self.drawn(key)`."""

    task: eqx.AbstractVar[DecisionListsConfig]

    def draw(self, seed: int) -> TaskArrays:
        """The task of the run with integer seed `seed` (`DecisionListsConfig.run_arrays`)."""
        return self.task.run_arrays(seed)


class Result1Flow(_OnRandomTask):
    """Result 1: gradient flow `dW/dt = −∇_W 𝓛(W, cP)` from `W = 0` with `V ≡ cP`,
    `c = c_scale · 4n log(L)/δ`, on the exact population, up to `t1 = horizon · 4M/(log(L) γ)` (the
    paper's time bound); it stops at perfect classification (event `perfect`): where `μ(W)` turns
    positive, located by root finding, when `D = distinct`, `n ≥ 3` and `L − M ≥ n` (then `μ > 0`
    is equivalent; the run does not stop when `μ > 0` from the first instant); otherwise at the end
    of the solver step where every sequence, enumerated, is classified.

    Saves the population loss `loss` and `mu` = `μ(W)` at `t = 0` and at `num_saves − 1` log-spaced
    times from `first_save · t1` to `t1` (`inf` after the stop; τ is often 1e-5 to 1e-2 of the
    bound); with `save_W`, `W` itself too. With `stop_at_perfect` off, the run goes on to `t1`
    without the event. `final` holds `W` at the stop, `tau` (the first time of perfect
    classification, `inf` if not reached by `t1` or when `stop_at_perfect` is off; see `result1_time`:
    where `μ` decides, the root of `μ` located by the event itself, or 0 when the flow classifies
    perfectly for every `t > 0`; otherwise the end of the solver step where the enumerated test
    first held), `bound` (the time bound), `c`, `delta`,
    `gamma`, and `margin` (the smallest label margin over the population at the stop, enumerated:
    about 0 at a crossing of `μ`, whose `W` lies on the boundary of perfect classification; above
    `TAU_TIE` where the enumerated test stopped the run).

    **Example:** `dynamics.sweep(Result1Flow(), {"c_scale": [0.5, 1, 2]}, num_seeds=8)`.
    """

    task: DecisionListsConfig = _task(DecisionListsConfig(L=16))
    gamma_definition: str = param("joint", OneOf(*GAMMA_DEFINITIONS), doc="γ: joint or conditional on a ∈ s")
    delta_definition: str = param("gamma", OneOf(*DELTA_DEFINITIONS), doc="δ: γ, or min_a P(a ∈ s)")
    c_scale: float = param(1.0, Interval.positive(), doc="c in units of Result 1's 4n log(L)/δ", traced=True)
    horizon: float = param(
        1.0, Interval.positive(), doc="end time t1 in units of the bound 4M/(log(L) γ)", traced=True
    )
    num_saves: int = param(61, Interval(2), doc="saves: t = 0, then log-spaced up to t1")
    first_save: float = param(
        1e-7, Interval(0, 1, low_open=True, high_open=True), doc="the first positive save / t1", traced=True
    )
    max_steps: int = param(
        100_000, Interval(1), doc="the solver's step budget (a run that spends it stops with max_steps)"
    )
    stop_at_perfect: bool = param(True, doc="stop at perfect classification (off: run to t1, tau = inf)")
    save_W: bool = param(False, doc="also save W at every save (L² numbers per save)")
    dtype: str = dtype_param("float64")
    seed_hint = _SEED_HINT
    small = {"task.L": 8, "task.n": 3, "task.M": 2, "num_saves": 5}
    labels = MappingProxyType(
        {
            "loss": "population cross-entropy L(W, cP) (nats)",
            "mu": _MU_LABEL,
            "W": "attention score matrix W (L × L)",
        }
    )

    event_names = ("perfect",)
    requires = (_EXACT,)

    def run(self, key) -> dynamics.Run:
        dtype, task = self.float_dtype, self.task
        arrays = self.drawn(key)
        population = _exact_population(self, arrays)
        delta, gamma = delta_gamma(
            arrays, population, gamma_definition=self.gamma_definition, delta_definition=self.delta_definition
        )
        c = self.c_scale * result1_c(task.n, task.L, delta)
        bound = result1_time_bound(task.M, task.L, gamma)
        t1 = self.horizon * bound
        log_fractions = jnp.linspace(jnp.log(self.first_save), 0.0, self.num_saves - 1, dtype=dtype)
        save_ts = t1 * jnp.concatenate([jnp.zeros(1, dtype), jnp.exp(log_fractions)])
        mu_decides = task.distribution == "distinct" and task.n >= 3 and task.L - task.M >= task.n
        options = dict(
            t1=t1,
            save_ts=save_ts,
            mu_event=mu_decides,
            save=(lambda W: {"W": W}) if self.save_W else None,
            max_steps=self.max_steps,
        )
        if self.stop_at_perfect:
            tau, run = result1_time(arrays, population, c, **options)
        else:
            run = result1_flow(arrays, population, c, stop_at_perfect=False, **options)
            tau = jnp.asarray(jnp.inf, dtype)
        model = DecisionListModel(run.final, c * permutation_matrix(arrays, dtype))
        final = {
            "W": run.final,
            "tau": tau,
            "bound": bound,
            "c": c,
            "delta": delta,
            "gamma": gamma,
            "margin": jnp.min(margins(model, population)),
        }
        return dataclasses.replace(run, final=final)

    def landscape(self, key) -> dynamics.Landscape:
        """`W -> 𝓛(W, cP)` on the run's exact population, the loss its flow descends (`final["W"]`)."""
        arrays = self.drawn(key)
        population = _exact_population(self, arrays)
        delta, _ = delta_gamma(
            arrays, population, gamma_definition=self.gamma_definition, delta_definition=self.delta_definition
        )
        c = self.c_scale * result1_c(self.task.n, self.task.L, delta)
        V = c * permutation_matrix(arrays, self.float_dtype)
        return dynamics.Landscape(
            lambda W: population_loss(DecisionListModel(W, V), population), params=lambda final: final["W"]
        )


class Result2GD(_OnRandomTask):
    """Result 2: full-batch GD on `(W, V)` from `W = 0`, `V_0 = cP + U` (`U` uniform in
    `[−ε/2, ε/2]`, drawn from the run's key), `c` the fixed point of `c = 10 n² 𝓛_0/δ + 4εn`, with
    step `η = eta_scale/λ_max` (`λ_max` of the Hessian in `(W, V)` at the start, Lanczos). The paper
    asks for a perfectly classifying step `t ≤ T = ⌊ε/(2η)⌋` and `‖V_t − cP‖_max ≤ ε` up to `T`.

    The population is the exact support of `D = distinct` (`δ = γ` enumerated, perfect
    classification enumerated), or with `population_size = K` a frozen sample of `K` sequences
    drawn from the run's key (`δ = γ` in closed form, perfect classification certified by
    `certified`): the sample makes the paper's large settings (e.g. `L = 40, n = 30, M = 2,
    eps = 4.1`, inside the hypotheses) affordable.

    Saves every `every` steps (or at `log_saves` log-spaced steps): `loss`, `mu` = `μ(W)`,
    `perfect`, `dist_cP` = `‖V − cP‖_max` and `grad_V_max` = `max |∇_V 𝓛|`. `final` holds the
    `model`, `c`, `c_iterations`, `c_converged`, `loss0` (`𝓛_0`), `lambda_max`, `eta`, `T` and
    `delta` (= `γ`).
    With `along.sharpness` it saves also `sharpness` (λ_max of the population loss's Hessian) and
    `sharpness_ratio` (λ_max·η/2, ≥ 1 past the edge of stability); with `along.flow`,
    `flow_distance` (from the gradient flow started at the same point, at t = k·η) and `flow_loss`
    (`dynamics.Along`).
    """

    task: DecisionListsConfig = param(
        DecisionListsConfig(),
        doc="the random task: L, n, M, the list lengths and its seed; D distinct (Result 2's)",
    )
    eps: float = param(1.0, Interval.positive(), doc="ε: V_0 = cP + U with |U| ≤ ε/2 entrywise", traced=True)
    eta_scale: float = param(1.0, Interval.positive(), doc="η in units of 1/λ_max at the start", traced=True)
    population_size: int | None = param(
        None, Interval(1), doc="none: the exact support of D; K: a frozen sample of K sequences"
    )
    num_steps: int = _num_steps(4000)
    every: int = _every(1)
    log_saves: int | None = dynamics.log_saves_param()
    stop_at_perfect: bool = param(False, doc="stop at the first perfect (or certified) step")
    along: dynamics.Along = _along()
    dtype: str = dtype_param("float64")
    seed_hint = _SEED_HINT
    small = {"task.L": 6, "task.n": 3, "task.M": 2, "num_steps": 20, "every": 5}
    labels = MappingProxyType(
        {
            "loss": "population cross-entropy L(W, V) (nats)",
            "mu": _MU_LABEL,
            "perfect": "perfect classification (1 = yes; certified if sampled)",
            "dist_cP": "largest entry distance ‖V − cP‖max",
            "grad_V_max": "largest entry of the gradient |∇V L| (at most 1)",
            **_ALONG_LABELS,
        }
    )

    event_names = ("perfect",)
    requires = (
        Require(
            ("task.distribution",),
            lambda distribution: distribution == "distinct",
            "Result 2 is stated for D = distinct: the task's distribution must be distinct",
        ),
        dynamics.every_divides(),
        Require(
            ("along.flow", "stop_at_perfect"),
            lambda flow, stop: not (flow and stop),
            "the flow alongside runs all num_steps: along.flow needs stop_at_perfect off",
        ),
        Require(
            ("task.L", "task.n", "population_size"),
            lambda L, n, K: K is not None or math.comb(L, n) <= MAX_SUPPORT,
            f"the exact population (C(L, n) sequences) must have at most {MAX_SUPPORT} sequences;"
            " set population_size for a sample",
        ),
    )

    def run(self, key) -> dynamics.Run:
        dtype = self.float_dtype
        arrays = self.drawn(key)
        exact = self.population_size is None
        if exact:
            population = _exact_population(self, arrays)
            delta, _ = delta_gamma(arrays, population)
            key_U = key
        else:
            key_population, key_U = jax.random.split(key)
            K = self.population_size
            tokens = sample_tokens(key_population, self.task.L, self.task.n, "distinct", K)
            population = make_population(arrays, tokens, np.full(K, 1.0 / K), dtype)
            delta = distinct_gamma(arrays.lengths, self.task.n, self.task.M, dtype)
        U = perturbation(key_U, self.task.L, self.eps, dtype)
        start = result2_start(
            arrays, population, U, n=self.task.n, delta=delta, eps=self.eps, eta_scale=self.eta_scale
        )
        run = result2_gd(
            arrays,
            population,
            start["V0"],
            start["c"],
            self.task.n,
            eta=start["eta"],
            num_steps=self.num_steps,
            every=self.every,
            log_saves=self.log_saves,
            exact=exact,
            stop_at_perfect=self.stop_at_perfect,
            along=self.along,
        )
        values = {name: value for name, value in run.values.items() if name != "model"}
        final = {"model": run.final, "delta": delta} | {k: v for k, v in start.items() if k != "V0"}
        return dataclasses.replace(run, values=values, final=final)

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of `(W, V)` (`final["model"]`) on the run's population, exact or
        sampled, at the step size `final["eta"]`."""
        arrays = self.drawn(key)
        if self.population_size is None:
            population = _exact_population(self, arrays)
        else:
            key_population, _ = jax.random.split(key)
            K = self.population_size
            tokens = sample_tokens(key_population, self.task.L, self.task.n, "distinct", K)
            population = make_population(arrays, tokens, np.full(K, 1.0 / K), self.float_dtype)
        return dynamics.Landscape(
            lambda model: population_loss(model, population),
            params=lambda final: final["model"],
            step_size=lambda final: final["eta"],
        )


class UniformAttentionGD(_OnRandomTask):
    """The conclusion's empirical claim: uniform attention (`W ≡ 0`), full-batch GD on `V` from
    `V_0 = init_std · N(0, 1)` (drawn from the run's key; `V_0 = 0` by default) on the exact
    population. The paper reports that `V` moves toward `P`; our acceptance (recon) is `κ` reaching 1
    and `ρ > 0.5` at the end.

    Saves every `every` steps (or at `log_saves` log-spaced steps): `loss`, `kappa` = `κ(V)` (the
    fraction of columns whose argmax is `π(b)`) and `rho` = `ρ(V)` (the cosine of `V` and `P`,
    columns centred). `final` holds `V`.
    With `along.sharpness` it saves also `sharpness` (λ_max of the population loss's Hessian) and
    `sharpness_ratio` (λ_max·η/2, ≥ 1 past the edge of stability); with `along.flow`,
    `flow_distance` (from the gradient flow started at the same point, at t = k·η) and `flow_loss`
    (`dynamics.Along`).
    """

    task: DecisionListsConfig = _task()
    step: float = param(1.0, Interval.positive(), doc="GD step size", traced=True)
    init_std: float = param(0.0, Interval(0), doc="standard deviation of V_0's entries", traced=True)
    num_steps: int = _num_steps(2000)
    every: int = _every(10)
    log_saves: int | None = dynamics.log_saves_param()
    along: dynamics.Along = _along()
    dtype: str = dtype_param("float64")
    seed_hint = _SEED_HINT
    small = {"task.L": 6, "task.n": 3, "task.M": 2, "num_steps": 40, "every": 10}
    labels = MappingProxyType(
        {
            "loss": "population cross-entropy L(0, V) (nats)",
            "kappa": "κ(V): fraction of columns of V with argmax at π(b)",
            "rho": "ρ(V): cosine of V and P, columns centred",
            **_ALONG_LABELS,
        }
    )

    requires = (_EXACT, dynamics.every_divides())

    def run(self, key) -> dynamics.Run:
        arrays = self.drawn(key)
        population = _exact_population(self, arrays)
        V0 = self.init_std * jax.random.normal(key, (self.task.L, self.task.L), self.float_dtype)
        run = uniform_attention_gd(
            arrays,
            population,
            V0,
            step=self.step,
            num_steps=self.num_steps,
            every=self.every,
            log_saves=self.log_saves,
            along=self.along,
        )
        return dataclasses.replace(run, final={"V": run.final})

    def landscape(self, key) -> dynamics.Landscape:
        """`V -> 𝓛(0, V)` on the run's exact population (`final["V"]`), at the step size `step`."""
        population = _exact_population(self, self.drawn(key))
        W = jnp.zeros((self.task.L, self.task.L), self.float_dtype)
        return dynamics.Landscape(
            lambda V: population_loss(DecisionListModel(W, V), population),
            params=lambda final: final["V"],
            step_size=lambda final: self.step,
        )


class JointGD(_OnRandomTask):
    """Joint full-batch GD on `(W, V)` from a small random start, `W_0` and `V_0` with i.i.d.
    `N(0, init_std²)` entries drawn from the run's key, on the exact population (the exploratory
    variant of the uniform-attention claim, recon: does `V` still move toward `P` while `W` learns
    the lists?).

    Saves every `every` steps (or at `log_saves` log-spaced steps): `loss`, `mu` = `μ(W)`, `kappa` =
    `κ(V)`, `rho` = `ρ(V)` and `perfect` (every sequence classified perfectly, enumerated). `final`
    is the model.
    With `along.sharpness` it saves also `sharpness` (λ_max of the population loss's Hessian) and
    `sharpness_ratio` (λ_max·η/2, ≥ 1 past the edge of stability); with `along.flow`,
    `flow_distance` (from the gradient flow started at the same point, at t = k·η) and `flow_loss`
    (`dynamics.Along`).
    """

    task: DecisionListsConfig = _task()
    step: float = param(1.0, Interval.positive(), doc="GD step size", traced=True)
    init_std: float = param(
        0.01, Interval(0), doc="standard deviation of the entries of W_0, V_0", traced=True
    )
    num_steps: int = _num_steps(2000)
    every: int = _every(10)
    log_saves: int | None = dynamics.log_saves_param()
    along: dynamics.Along = _along()
    dtype: str = dtype_param("float64")
    seed_hint = _SEED_HINT
    small = {"task.L": 6, "task.n": 3, "task.M": 2, "num_steps": 40, "every": 10}
    labels = MappingProxyType(
        {
            "loss": "population cross-entropy L(W, V) (nats)",
            "mu": _MU_LABEL,
            "kappa": "κ(V): fraction of columns of V with argmax at π(b)",
            "rho": "ρ(V): cosine of V and P, columns centred",
            "perfect": "perfect classification (1 = yes), enumerated",
            **_ALONG_LABELS,
        }
    )

    requires = (_EXACT, dynamics.every_divides())

    def run(self, key) -> dynamics.Run:
        arrays = self.drawn(key)
        population = _exact_population(self, arrays)
        key_W, key_V = jax.random.split(key)
        shape, dtype = (self.task.L, self.task.L), self.float_dtype
        model0 = DecisionListModel(
            self.init_std * jax.random.normal(key_W, shape, dtype),
            self.init_std * jax.random.normal(key_V, shape, dtype),
        )
        return joint_gd(
            arrays,
            population,
            model0,
            step=self.step,
            num_steps=self.num_steps,
            every=self.every,
            log_saves=self.log_saves,
            along=self.along,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of `(W, V)` on the run's exact population (the final state), at the
        step size `step`."""
        population = _exact_population(self, self.drawn(key))
        return dynamics.Landscape(
            lambda model: population_loss(model, population), step_size=lambda final: self.step
        )


SIMULATIONS = {
    "result1_flow": Result1Flow,
    "result2_gd": Result2GD,
    "section7_gd": UniformAttentionGD,
    "joint_gd": JointGD,
}
"""The decision-list trainings by level name (the first is the default)."""
