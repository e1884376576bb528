"""The ways of training the sparse contextual bigram learner as simulations: `algorithm1` (Algorithm 1
on mini-batches), `sgd` (the SGD baselines of Fig. 1) and `population_ode` (the (α, β) ODE of
Eqn 8 on the population lines).

Every simulation trains on one random SCB instance, held as its `task` field: an [`SCBConfig`][],
`random_instance(instance_seed, N, Q, T)` (`--set task.T=200`). The instance is drawn on the host
(rejection sampling until Assumption 2.1 holds), the same for every run, so its settings are
static, never traced; the run's PRNG key draws only the mini-batch stream. The defaults are the
default instance of the checks and figures and settings of the experiments that the paper does not
give (recon)."""

from types import MappingProxyType

import diffrax
import equinox as eqx
import jax.numpy as jnp

import dynamics
from dynamics import Interval, OneOf, Require, dtype_param, param

from ._algorithm import SGD_KINDS, STAGE1_RULES, STAGE3_MODES, SWITCHES, run_algorithm, run_sgd
from ._config import SCBConfig
from ._data import Instance, k_p, k_q
from ._metrics import on_line
from ._model import population_loss
from ._population import line_flow

_METRIC_LABELS = MappingProxyType(
    {
        "alpha": "α, μ-projection of Q onto the line 11ᵀ/T + α(Q* − 11ᵀ/T)",
        "beta": "β, μ-projection of V onto the line μ1ᵀ + β(P − μ1ᵀ)",
        "cos_Q": "cosine similarity of Q and Q* (Frobenius)",
        "cos_Q_centred": "cosine of Q − 11ᵀ/T and Q* − 11ᵀ/T (Frobenius)",
        "cos_V": "cosine similarity of V and P (Frobenius)",
        "cos_V_centred": "cosine of V − μ1ᵀ and P − μ1ᵀ (Frobenius)",
        "dQ_norm": "μ-norm ‖ΔQ‖ of Q's residual off the α line",
        "dV_norm": "μ-norm ‖ΔV‖ of V's residual off the β line",
        "dist_Q": "distance ‖Q − Q*‖ (Frobenius)",
        "dist_Q_hat": "distance ‖Q̂ − Q*‖, Q̂ = Q cut below θ₃ and renormalised",
        "dist_V": "distance ‖V − P‖ (Frobenius)",
        "dist_V_hat": "distance ‖V̂ − P‖, V̂ = least-squares V for Q̂",
        "loss": "population squared loss ½E‖one-hot(x_o) − f(X)‖²",
        "off_support": "total |Q| off the support of Q* (all columns)",
    }
)
"""The labels of the metrics of [`metrics`][], which `Algorithm1` and `SGD` save (and
`PopulationODE` three of)."""

_SHARPNESS_LABEL = "top eigenvalue of the population loss's Hessian"


def _task():
    return param(SCBConfig(), doc="the SCB instance: instance_seed, vocabulary N, sparsity Q, context T")


class _OnInstance(dynamics.AbstractSimulation):
    """A simulation on the random instance of its `task`."""

    task: eqx.AbstractVar[SCBConfig]

    def instance(self) -> Instance:
        """The SCB instance of every run, `task.instance(dtype)` (built once per setting).

        **Raises:** `ValueError` when no instance satisfying Assumption 2.1 is found (e.g. N
        above about 20, where K_P falls below its floor 0.05).
        """
        return self.task.instance(self.dtype)


class Algorithm1(_OnInstance):
    """Algorithm 1 (preconditioned projected proximal GD in three stages) on fresh mini-batches.

    From V₀ = μ1ᵀ, Q₀ = 11ᵀ/T with batches of `batch` examples: Stage 1 (λ = 0, step η₁) until the
    oracle switch (`stage1_rule` of (α, β) reaches `delta1`, at most `stage1_max_steps` steps) or
    for `tau1` steps; rounding 1→2 with θ₁ = 1/T + `theta1_fraction`·α·(q_min − 1/T); Stage 2
    (step η₂, l1 weight λ, proximal and projected); normalisation 2→3 with θ₃ = c_f / Q; Stage 3:
    population least squares in V (the experiments' oracle), `stage3_steps` preconditioned steps on
    V, or nothing. Every hyper-parameter default is a reconstruction (recon): the paper's values
    were lost. It is also the config that [`run_algorithm`][], [`run_stage1`][] and
    [`run_transfer`][] read.

    **Saves:** the metrics of [`metrics`][] (distances and cosines to (P, Q⋆), line coordinates,
    population `loss`, off-support mass) every `every` Stage-2 steps (or at `log_saves` log-spaced
    Stage-2 steps), at the total step count
    τ₁ + Stage-2 step. `final`: `model` and `metrics` after Stage 3, `stage2_model` and
    `stage2_metrics` before normalisation, `stage1_metrics` at the switch, `tau1` and
    `alpha_after_stage1`. `stop`, `t_stop` are those of Stage 2 (`t_stop` counted from step 0).
    With `along.sharpness` also, at every Stage-2 save, `sharpness` (λ_max of the population
    loss's Hessian) and `sharpness_ratio`: λ_max(Π R¹ᐟ² H R¹ᐟ² Π)/2 for Stage 2's steps, R = η₂/μ
    per column and Π the centring of the columns (`preconditioned_steps`; ≥ 1 past their edge).

    **Example:** `dynamics.simulate(Algorithm1(switch="fixed", tau1=20), num_seeds=8)`.
    """

    task: SCBConfig = _task()
    batch: int = param(256, Interval(1), doc="mini-batch size B of every stage")
    eta1: float = param(0.5, Interval.positive(), doc="Stage-1 step η₁", traced=True)
    eta2: float = param(0.05, Interval.positive(), doc="Stage-2 step η₂", traced=True)
    lam: float = param(1e-4, Interval(0), doc="l1 weight λ of Stage 2 (soft threshold η₂ λ)", traced=True)
    switch: str = param(
        "oracle",
        OneOf(*SWITCHES),
        doc="end of Stage 1: oracle (when (α, β) reach delta1) or fixed (tau1 steps)",
    )
    tau1: int = param(20, Interval(1), doc="Stage-1 steps with switch=fixed")
    stage1_max_steps: int = param(200, Interval(1), doc="most Stage-1 steps with switch=oracle")
    delta1: float = param(0.2, Interval.positive(), doc="level δ₁ of the oracle switch", traced=True)
    stage1_rule: str = param(
        "min", OneOf(*STAGE1_RULES), doc="the oracle switch waits for min or max of (α, β) >= delta1"
    )
    round_after_stage1: bool = param(True, doc="apply the rounding 1→2 after Stage 1")
    theta1_fraction: float = param(
        0.5, Interval.positive(), doc="rounding threshold θ₁ = 1/T + fraction·α·(q_min − 1/T)", traced=True
    )
    stage2_steps: int = param(4000, Interval(1), doc="Stage-2 steps")
    every: int = param(100, Interval(1), doc="save period in Stage-2 steps (divides stage2_steps)")
    log_saves: int | None = dynamics.log_saves_param()
    c_f: float = param(0.1, Interval.positive(), doc="normalisation 2→3 threshold θ₃ = c_f / Q", traced=True)
    stage3: str = param(
        "least_squares",
        OneOf(*STAGE3_MODES),
        doc="Stage 3: least_squares (population V_LS, an oracle), gd (steps on V) or none",
    )
    eta3: float = param(0.05, Interval.positive(), doc="Stage-3 step η₃ with stage3=gd", traced=True)
    stage3_steps: int = param(500, Interval(1), doc="Stage-3 steps with stage3=gd")
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="along.sharpness: Stage 2's population sharpness and its ratio to the edge of its "
        "preconditioned projected steps at every save (along.flow: refused)",
    )
    dtype: str = dtype_param("float64")

    requires = (
        dynamics.every_divides("stage2_steps"),
        Require(
            ("along.flow",),
            lambda flow: not flow,
            "along.flow needs the run's start, and Stage 2 starts where Stage 1's switch and the "
            "rounding leave it",
        ),
    )
    labels = MappingProxyType(
        {
            **_METRIC_LABELS,
            "sharpness": _SHARPNESS_LABEL,
            "sharpness_ratio": "λ_max(Π√R H √R Π)/2, R = η₂/μ (≥ 1: past the edge)",
        }
    )
    small = {"task.T": 8, "batch": 16, "stage1_max_steps": 10, "stage2_steps": 20, "every": 10}

    def run(self, key) -> dynamics.Run:
        out = run_algorithm(self.instance(), key, self)
        final = dict(
            model=out["final_model"],
            metrics=out["final_metrics"],
            stage2_model=out["stage2_model"],
            stage2_metrics=out["stage2_metrics"],
            stage1_metrics=out["stage1_metrics"],
            tau1=out["tau1"],
            alpha_after_stage1=out["alpha_after_stage1"],
        )
        t_stop = out["tau1"] + out["t_stop"]
        return dynamics.Run(
            ts=out["tau1"] + out["stage2_steps"],
            values=out["curves"],
            final=final,
            stop=out["stop"],
            event=jnp.array(-1),
            t_stop=t_stop,
            num_steps=t_stop,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of the model `(V, Q)` after Stage 3 (`final["model"]`; its loss is
        `final["metrics"]["loss"]`, while the saved `loss` is Stage 2's). No step size: the stages
        have their own steps, preconditioning and projections."""
        del key
        inst = self.instance()
        return dynamics.Landscape(
            lambda model: population_loss(model, inst), params=lambda final: final["model"]
        )


class SGD(_OnInstance):
    """The SGD baselines of Fig. 1 on fresh mini-batches, vanilla or preconditioned and projected.

    From V₀ = μ1ᵀ, Q₀ = 11ᵀ/T: `vanilla` is plain SGD on (V, Q) (no preconditioning, projection or
    prox), `projected` is preconditioned projected SGD with λ = 0. A diverging run freezes at its
    last finite parameters (`stop` = nonfinite). It is also the config that [`run_sgd`][] reads.

    **Saves:** the metrics of [`metrics`][] every `every` steps (or at `log_saves` log-spaced
    steps); `final`: `model` and `metrics`.
    With `along.sharpness` also `sharpness` (λ_max of the population loss's Hessian) and, for
    `vanilla`, `sharpness_ratio` (λ_max·η/2, ≥ 1 past the edge of stability); with `along.flow`
    (`vanilla` only) `flow_distance` from the population gradient flow started at the same point, at
    t = k·η, and `flow_loss` (`dynamics.Along`).

    **Example:** `dynamics.sweep(SGD(), {"eta": [0.05, 0.5]}, num_seeds=8)`.
    """

    task: SCBConfig = _task()
    kind: str = param("vanilla", OneOf(*SGD_KINDS), doc="vanilla SGD or projected (preconditioned, λ = 0)")
    eta: float = param(0.05, Interval.positive(), doc="step size η", traced=True)
    batch: int = param(256, Interval(1), doc="mini-batch size B")
    num_steps: int = param(4000, Interval(1), doc="SGD steps")
    every: int = param(100, Interval(1), doc="save period in steps (divides num_steps)")
    log_saves: int | None = dynamics.log_saves_param()
    c_f: float = param(
        0.1, Interval.positive(), doc="threshold θ₃ = c_f / Q of the normalised metrics", traced=True
    )
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="along.sharpness: the population loss's sharpness (and for vanilla its ratio to 2/η) at every "
        "save; along.flow (vanilla): the population flow from the same start, its distance at t = k·η",
    )
    dtype: str = dtype_param("float64")

    requires = (
        dynamics.every_divides(),
        dynamics.Along.flow_needs("kind", "vanilla", "vanilla SGD"),
    )
    labels = MappingProxyType(
        {
            **_METRIC_LABELS,
            "sharpness": _SHARPNESS_LABEL,
            "sharpness_ratio": "sharpness × η/2 (≥ 1: past the edge of stability)",
            "flow_distance": "distance ‖θ − θ_flow‖ from the population flow at t = kη",
            "flow_loss": "population loss of the gradient flow at t = kη",
        }
    )
    small = {"task.T": 8, "batch": 16, "num_steps": 20, "every": 10}

    def run(self, key) -> dynamics.Run:
        out = run_sgd(self.instance(), key, self)
        return dynamics.Run(
            ts=out["steps"],
            values=out["curves"],
            final=dict(model=out["final_model"], metrics=out["final_metrics"]),
            stop=out["stop"],
            event=jnp.array(-1),
            t_stop=out["t_stop"],
            num_steps=out["t_stop"],
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of the model `(V, Q)` (`final["model"]`), of which the mini-batch
        losses are unbiased estimates; the step size `eta` where `kind` is `vanilla` (none for the
        preconditioned, projected steps)."""
        del key
        inst = self.instance()
        return dynamics.Landscape(
            lambda model: population_loss(model, inst),
            params=lambda final: final["model"],
            step_size=(lambda final: self.eta) if self.kind == "vanilla" else None,
        )


class PopulationODE(_OnInstance):
    """The population ODE of Eqn 8 for the line coordinates (α, β).

    Population GD from the scratch initialisation stays on the two lines V = μ1ᵀ + β P̄,
    Q = 11ᵀ/T + α Q̄* (Eqn 7); Eqn 8 is its flow, with the instance's K_P, K_Q and T. Integrated
    from (`alpha0`, `beta0`) with Diffrax (Dopri8); time t = η × (population steps).
    Deterministic: every seed gives the same run.

    **Saves:** `alpha`, `beta` and the population `loss` at that point of the lines, at
    `num_saves` equally spaced times on [0, t1]; `final`: (α, β) at t1.

    **Example:** `dynamics.sweep(PopulationODE(), {"alpha0": [-0.1, 0.0, 0.1]}, num_seeds=1)`.
    """

    task: SCBConfig = _task()
    alpha0: float = param(0.0, doc="initial attention-line coordinate α₀ (0: the uniform Q₀)", traced=True)
    beta0: float = param(0.0, doc="initial output-line coordinate β₀ (0: V₀ = μ1ᵀ)", traced=True)
    t1: float = param(100.0, Interval.positive(), doc="end time (η × population steps)", traced=True)
    num_saves: int = param(101, Interval(2), doc="equally spaced saves on [0, t1]")
    rtol: float = param(1e-10, Interval.positive(), doc="relative tolerance of the step-size controller")
    atol: float = param(1e-12, Interval.positive(), doc="absolute tolerance of the step-size controller")
    max_steps: int = param(
        100_000, Interval(1), doc="the solver's step budget (a run that spends it stops with max_steps)"
    )
    dtype: str = dtype_param("float64")
    seed_hint = "the population ODE has no randomness: sweep alpha0 or beta0 instead"
    labels = MappingProxyType({name: _METRIC_LABELS[name] for name in ("alpha", "beta", "loss")})
    small = {"task.T": 8, "t1": 5.0, "num_saves": 3}

    def run(self, key) -> dynamics.Run:
        del key
        inst = self.instance()
        dtype = self.float_dtype

        def save(y):
            on = on_line(y[0], y[1], inst)
            return {"alpha": y[0], "beta": y[1], "loss": population_loss(on, inst)}

        return line_flow(
            jnp.stack([jnp.asarray(self.alpha0, dtype), jnp.asarray(self.beta0, dtype)]),
            (k_p(inst), k_q(inst), jnp.asarray(self.task.T, dtype)),
            jnp.linspace(0.0, self.t1, self.num_saves, dtype=dtype),
            save=save,
            stepsize_controller=diffrax.PIDController(rtol=self.rtol, atol=self.atol),
            max_steps=self.max_steps,
        )


SIMULATIONS = {"algorithm1": Algorithm1, "sgd": SGD, "population_ode": PopulationODE}
"""The ways of training of the sparse contextual bigram paper by level name (the first is the default)."""
