"""Algorithm 1 (spec §3): preconditioned projected proximal gradient descent in three stages
with rounding steps, stage switching by a fixed τ₁ or by the oracle criterion; the SGD
baselines (spec §3.7); the transfer-learning initialisation (spec §3.6).

Every run is a pure function of `(instance, key, config)` built on `dynamics.train`, so
`dynamics.run_many` batches seeds."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import PRNGKeyArray

import dynamics

from ._instance import Instance
from ._metrics import least_squares_V, line_coordinates, metrics, normalise_attention, round_attention
from ._model import (
    LinearSCB,
    batch_loss,
    expected_preconditioned,
    precondition,
    sample,
    sample_gradients,
    scratch_init,
)

SWITCHES = ("oracle", "fixed")
STAGE1_RULES = ("min", "max")
STAGE3_MODES = ("least_squares", "gd", "none")
SGD_KINDS = ("vanilla", "projected")


@dataclasses.dataclass(frozen=True)
class AlgorithmConfig:
    """Hyper-parameters of Algorithm 1. Every value is [RECON]/[UNKNOWN] (spec §5 suggested
    defaults, not the paper's), except the structure of the stages.

    **Fields:**

    - `batch`: mini-batch size B, one for all stages (as in the experiments).
    - `eta1`, `eta2`: step sizes of Stage 1 and Stage 2.
    - `lam`: the l1 weight λ of Stage 2 (threshold η₂ λ).
    - `switch`: `"oracle"` (stop Stage 1 when the `stage1_rule` of (α, β) reaches `delta1`, at most
      `stage1_max_steps` steps) or `"fixed"` (Stage 1 lasts `tau1` steps).
    - `round_after_stage1`: apply rounding 1→2 with θ₁ = 1/T + `theta1_fraction`·α·(q_min − 1/T).
    - `stage2_steps`: Stage 2 length; metrics are saved every `every` steps.
    - `c_f`: θ₃ = c_f / Q of the normalisation 2→3.
    - `stage3`: `"least_squares"` (the experiments: V = V_LS(Q̂), an oracle), `"gd"` (`stage3_steps`
      preconditioned steps on V only with `eta3`), or `"none"` (no normalisation).
    """

    batch: int = 256
    eta1: float = 0.5
    eta2: float = 0.05
    lam: float = 1e-4
    switch: str = "oracle"
    tau1: int = 20
    stage1_max_steps: int = 200
    delta1: float = 0.2
    stage1_rule: str = "min"
    round_after_stage1: bool = True
    theta1_fraction: float = 0.5
    stage2_steps: int = 4000
    every: int = 100
    c_f: float = 0.1
    stage3: str = "least_squares"
    eta3: float = 0.05
    stage3_steps: int = 500

    def __post_init__(self):
        positive = ("batch", "tau1", "stage1_max_steps", "stage2_steps", "every", "stage3_steps")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eta1", "eta2", "eta3", "delta1", "c_f", "theta1_fraction"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        if self.stage2_steps % self.every:
            raise ValueError(f"stage2_steps={self.stage2_steps} must be a multiple of every={self.every}")
        for name, allowed in (("switch", SWITCHES), ("stage1_rule", STAGE1_RULES), ("stage3", STAGE3_MODES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")


def preconditioned_step(mu, eta, lam=0.0, *, train_V=True, train_Q=True) -> optax.GradientTransformation:
    """One step of Eqns 4-6 as an optax chain: columns scaled by 1/μ, centred, −η, then the l1
    proximal step with threshold η λ and re-projection onto unit column sums on Q.

    **Arguments:** `mu` (N,); `eta`; `lam` (λ ≥ 0); `train_V`, `train_Q`: freeze a block (rate 0).

    **Returns:** an `optax.GradientTransformation` for [`LinearSCB`][] parameters.
    """
    inv = 1.0 / mu
    rates = LinearSCB(V=eta if train_V else 0.0, Q=eta if train_Q else 0.0)
    return optax.chain(
        dynamics.scale_columns(LinearSCB(V=inv, Q=inv)),
        dynamics.center_columns(),
        dynamics.gd(rates),
        dynamics.proximal_l1(eta * lam, mask=LinearSCB(V=False, Q=train_Q), column_sum=1.0),
    )


def _q_min(inst: Instance) -> float:
    Qs = np.asarray(inst.Q_star)
    return float(Qs[Qs > 0].min())


def sparsity(inst: Instance) -> int:
    """Q: the largest support of a column of Q*."""
    return int((np.asarray(inst.Q_star) > 0).sum(axis=0).max())


def theta1(inst: Instance, alpha, fraction=0.5):
    """Rounding threshold 1→2 (spec §3.5, [RECON]): 1/T + fraction · α · (q_min − 1/T)."""
    one_t = 1.0 / inst.T
    return one_t + fraction * alpha * (_q_min(inst) - one_t)


def _stage1(inst: Instance, model: LinearSCB, key, cfg: AlgorithmConfig):
    def draw(k):
        return sample(k, inst, cfg.batch)

    opt = preconditioned_step(inst.mu, cfg.eta1)
    if cfg.switch == "oracle":
        reduce = jnp.minimum if cfg.stage1_rule == "min" else jnp.maximum

        def signal(p):
            line = line_coordinates(p, inst)
            return reduce(line["alpha"], line["beta"]) >= cfg.delta1

        steps, events = cfg.stage1_max_steps, {"signal": signal}
    else:
        steps, events = cfg.tau1, None
    run = dynamics.train(
        batch_loss, model, opt, num_steps=steps, every=steps, key=key, sample=draw, events=events
    )
    return run.final, run.t_stop


def run_stage1(inst: Instance, key: PRNGKeyArray, cfg: AlgorithmConfig, init: LinearSCB | None = None):
    """Stage 1 of Algorithm 1 alone (λ = 0, step η₁, batch B): fixed `tau1` steps or the oracle switch.

    **Returns:** `(model, tau1)`: the parameters at the switch (before rounding) and the step count.
    """
    return _stage1(inst, scratch_init(inst) if init is None else init, key, cfg)


def _after_stage1(inst: Instance, model: LinearSCB, key, cfg: AlgorithmConfig, theta3) -> dict:
    """Rounding 1→2, Stage 2 (with metrics), normalisation 2→3 and Stage 3."""
    k2, k3 = jax.random.split(key)
    alpha1 = line_coordinates(model, inst)["alpha"]
    if cfg.round_after_stage1:
        model = LinearSCB(V=model.V, Q=round_attention(model.Q, theta1(inst, alpha1, cfg.theta1_fraction)))

    def draw(k):
        return sample(k, inst, cfg.batch)

    run2 = dynamics.train(
        batch_loss,
        model,
        preconditioned_step(inst.mu, cfg.eta2, cfg.lam),
        num_steps=cfg.stage2_steps,
        every=cfg.every,
        key=k2,
        sample=draw,
        save=lambda p: metrics(p, inst, theta3),
    )
    model2 = run2.final
    if cfg.stage3 == "none":
        final = model2
    else:
        Q_hat = normalise_attention(model2.Q, theta3)
        if cfg.stage3 == "least_squares":
            final = LinearSCB(V=least_squares_V(Q_hat, inst), Q=Q_hat)
        else:
            run3 = dynamics.train(
                batch_loss,
                LinearSCB(V=model2.V, Q=Q_hat),
                preconditioned_step(inst.mu, cfg.eta3, train_Q=False),
                num_steps=cfg.stage3_steps,
                every=cfg.stage3_steps,
                key=k3,
                sample=draw,
            )
            final = run3.final
    return dict(
        alpha_after_stage1=alpha1,
        curves=run2.values,
        stage2_steps=run2.ts,
        stage2_model=model2,
        stage2_metrics=metrics(model2, inst, theta3),
        final_model=final,
        final_metrics=metrics(final, inst, theta3),
        stop=run2.stop,
    )


def run_algorithm(
    inst: Instance, key: PRNGKeyArray, cfg: AlgorithmConfig, init: LinearSCB | None = None
) -> dict:
    """Algorithm 1 from scratch (or from `init`): Stage 1 (λ = 0, η₁), rounding 1→2, Stage 2
    (λ, η₂), normalisation 2→3, Stage 3.

    **Arguments:** `inst`; `key` (data stream); `cfg`; `init` (default V₀ = μ1ᵀ, Q₀ = 11ᵀ/T).

    **Returns:** dict: `tau1` (Stage 1 length), `stage1_metrics`, `curves` (metrics every `every`
    steps of Stage 2, at steps `tau1 + stage2_steps`), `stage2_metrics` / `stage2_model` (before
    normalisation), `final_metrics` / `final_model` (after Stage 3), `alpha_after_stage1`.
    """
    k1, k2 = jax.random.split(key)
    model = scratch_init(inst) if init is None else init
    theta3 = cfg.c_f / sparsity(inst)
    model1, tau1 = _stage1(inst, model, k1, cfg)
    out = _after_stage1(inst, model1, k2, cfg, theta3)
    return dict(tau1=tau1, stage1_metrics=metrics(model1, inst, theta3), **out)


def run_sgd(
    inst: Instance, key: PRNGKeyArray, eta, cfg: AlgorithmConfig, kind: str = "vanilla", num_steps=None
) -> dict:
    """The SGD baselines (spec §3.7): `vanilla` = plain SGD on (V, Q) (no preconditioning,
    projection or prox); `projected` = preconditioned projected SGD with λ = 0 throughout. Same
    initialisation and batch as Algorithm 1.

    **Arguments:** `inst`, `key`, `eta`, `cfg` (batch, every, stage2_steps, c_f); `kind`;
    `num_steps` (default `cfg.stage2_steps`; a multiple of `cfg.every`).

    **Returns:** dict: `curves` (metrics every `every` steps), `steps`, `final_metrics`,
    `final_model`, `stop` (a `dynamics` stop code: NaN divergence freezes the run).
    """
    if kind not in SGD_KINDS:
        raise ValueError(f"kind must be one of {SGD_KINDS}, got {kind!r}")
    num_steps = cfg.stage2_steps if num_steps is None else num_steps
    theta3 = cfg.c_f / sparsity(inst)
    opt = dynamics.gd(eta) if kind == "vanilla" else preconditioned_step(inst.mu, eta)
    run = dynamics.train(
        batch_loss,
        scratch_init(inst),
        opt,
        num_steps=num_steps,
        every=cfg.every,
        key=key,
        sample=lambda k: sample(k, inst, cfg.batch),
        save=lambda p: metrics(p, inst, theta3),
    )
    return dict(
        curves=run.values,
        steps=run.ts,
        final_metrics=metrics(run.final, inst, theta3),
        final_model=run.final,
        stop=run.stop,
    )


def related_transition(inst: Instance, mix: float = 0.5):
    """A pre-training transition sharing μ (spec §3.6 setting): (1 − mix) P + mix R with R the
    time reversal R[i, j] = P[j, i] μ_i / μ_j (column-stochastic, R μ = μ)."""
    R = inst.P.T * inst.mu[:, None] / inst.mu[None, :]
    return (1.0 - mix) * inst.P + mix * R


def transfer_init(
    inst: Instance,
    V_pre,
    key: PRNGKeyArray | None,
    *,
    delta: float = 0.3,
    eta0: float = 10.0,
    batch0: int | None = 1024,
    round_theta1: bool = True,
    theta1_fraction: float = 0.5,
) -> LinearSCB:
    """Transfer initialisation (spec §3.6, [RECON] details): V₀ = μ1ᵀ + δ(Ṽ − μ1ᵀ), Q₀ = 11ᵀ/T,
    one preconditioned step on Q only with step η₀ (λ = 0), on a batch of `batch0` examples (the
    population step when `batch0` is `None`: α₁ = η₀ β₀ K_P exactly), then rounding 1→2.

    **Returns:** the [`LinearSCB`][] to start Stage 2 from.
    """
    mu = inst.mu
    V0 = mu[:, None] + delta * (jnp.asarray(V_pre, mu.dtype) - mu[:, None])
    model = LinearSCB(V=V0, Q=jnp.full((inst.T, inst.N), 1.0 / inst.T, mu.dtype))
    if batch0 is None:
        G = expected_preconditioned(model, inst)
    else:
        b = sample(key, inst, batch0)
        grads = jax.vmap(sample_gradients, in_axes=(None, 0, 0, 0))(model, b.context, b.last, b.label)
        G = precondition(jax.tree.map(lambda g: jnp.mean(g, axis=0), grads), mu)
    model = LinearSCB(V=V0, Q=model.Q - eta0 * G.Q)
    if round_theta1:
        alpha1 = line_coordinates(model, inst)["alpha"]
        model = LinearSCB(V=V0, Q=round_attention(model.Q, theta1(inst, alpha1, theta1_fraction)))
    return model


def run_transfer(inst: Instance, V_pre, key: PRNGKeyArray, cfg: AlgorithmConfig, **transfer) -> dict:
    """Transfer learning (Thm 4.1): [`transfer_init`][] then Algorithm 1 from Stage 2 (no Stage 1).

    **Returns:** like [`run_algorithm`][] without `tau1`.
    """
    k0, k1 = jax.random.split(key)
    model = transfer_init(inst, V_pre, k0, **transfer)
    theta3 = cfg.c_f / sparsity(inst)
    cfg2 = dataclasses.replace(cfg, round_after_stage1=False)
    return _after_stage1(inst, model, k1, cfg2, theta3)
