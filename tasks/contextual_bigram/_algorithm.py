"""Algorithm 1 of the paper: preconditioned projected proximal gradient descent in three stages
with rounding steps, the Stage-1 switch by a fixed τ₁ or by the oracle criterion; the SGD
baselines of Fig. 1; the transfer-learning initialisation of Theorem 4.1.

Every run is a pure function of `(instance, key, config)` built on `dynamics.train`, so
`dynamics.run_many` batches seeds. The config is the simulation that describes the run
([`Algorithm1`][] or [`SGD`][]): only its training fields are read, the instance is an argument."""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from ._simulate import SGD, Algorithm1

SWITCHES = ("oracle", "fixed")
STAGE1_RULES = ("min", "max")
STAGE3_MODES = ("least_squares", "gd", "none")
SGD_KINDS = ("vanilla", "projected")


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
    """Rounding threshold 1→2 ([RECON]): 1/T + fraction · α · (q_min − 1/T)."""
    one_t = 1.0 / inst.T
    return one_t + fraction * alpha * (_q_min(inst) - one_t)


def _stage1(inst: Instance, model: LinearSCB, key, cfg: "Algorithm1"):
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


def run_stage1(inst: Instance, key: PRNGKeyArray, cfg: "Algorithm1", init: LinearSCB | None = None):
    """Stage 1 of Algorithm 1 alone (λ = 0, step η₁, batch B): fixed `tau1` steps or the oracle switch.

    **Arguments:** `inst`; `key` (data stream); `cfg`: an [`Algorithm1`][] (its Stage-1 fields);
    `init` (default V₀ = μ1ᵀ, Q₀ = 11ᵀ/T).

    **Returns:** `(model, tau1)`: the parameters at the switch (before rounding) and the step count.
    """
    return _stage1(inst, scratch_init(inst) if init is None else init, key, cfg)


def _after_stage1(
    inst: Instance, model: LinearSCB, key, cfg: "Algorithm1", theta3, round_first: bool
) -> dict:
    """Rounding 1→2 (when `round_first`), Stage 2 (with metrics), normalisation 2→3 and Stage 3."""
    k2, k3 = jax.random.split(key)
    alpha1 = line_coordinates(model, inst)["alpha"]
    if round_first:
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
        t_stop=run2.t_stop,
    )


def run_algorithm(
    inst: Instance, key: PRNGKeyArray, cfg: "Algorithm1", init: LinearSCB | None = None
) -> dict:
    """Algorithm 1 from scratch (or from `init`): Stage 1 (λ = 0, η₁), rounding 1→2, Stage 2
    (λ, η₂), normalisation 2→3, Stage 3.

    **Arguments:** `inst`; `key` (data stream); `cfg`: an [`Algorithm1`][] (its training fields);
    `init` (default V₀ = μ1ᵀ, Q₀ = 11ᵀ/T).

    **Returns:** dict: `tau1` (Stage 1 length), `stage1_metrics`, `curves` (metrics every `every`
    steps of Stage 2, at steps `tau1 + stage2_steps`), `stage2_metrics` / `stage2_model` (before
    normalisation), `final_metrics` / `final_model` (after Stage 3), `alpha_after_stage1`, `stop`
    and `t_stop` (the `dynamics` stop code and stop step of Stage 2).
    """
    k1, k2 = jax.random.split(key)
    model = scratch_init(inst) if init is None else init
    theta3 = cfg.c_f / sparsity(inst)
    model1, tau1 = _stage1(inst, model, k1, cfg)
    out = _after_stage1(inst, model1, k2, cfg, theta3, cfg.round_after_stage1)
    return dict(tau1=tau1, stage1_metrics=metrics(model1, inst, theta3), **out)


def run_sgd(inst: Instance, key: PRNGKeyArray, cfg: "SGD") -> dict:
    """The SGD baselines of Fig. 1: `vanilla` = plain SGD on (V, Q) (no preconditioning,
    projection or prox); `projected` = preconditioned projected SGD with λ = 0 throughout. Same
    initialisation as Algorithm 1.

    **Arguments:** `inst`, `key` (data stream), `cfg`: an [`SGD`][] (`kind`, `eta`, `batch`,
    `num_steps`, `every`, `c_f`).

    **Returns:** dict: `curves` (metrics every `every` steps), `steps`, `final_metrics`,
    `final_model`, `stop` and `t_stop` (a `dynamics` stop code and the step it stopped at: NaN
    divergence freezes the run).
    """
    theta3 = cfg.c_f / sparsity(inst)
    opt = dynamics.gd(cfg.eta) if cfg.kind == "vanilla" else preconditioned_step(inst.mu, cfg.eta)
    run = dynamics.train(
        batch_loss,
        scratch_init(inst),
        opt,
        num_steps=cfg.num_steps,
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
        t_stop=run.t_stop,
    )


def related_transition(inst: Instance, mix: float = 0.5):
    """A pre-training transition sharing μ (the setting of Theorem 4.1): (1 − mix) P + mix R with R the
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
    """Transfer initialisation (Theorem 4.1, [RECON] details): V₀ = μ1ᵀ + δ(Ṽ − μ1ᵀ), Q₀ = 11ᵀ/T,
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


def run_transfer(inst: Instance, V_pre, key: PRNGKeyArray, cfg: "Algorithm1", **transfer) -> dict:
    """Transfer learning (Thm 4.1): [`transfer_init`][] then Algorithm 1 from Stage 2 (no Stage 1).

    **Arguments:** `inst`; `V_pre` (N, N) the pre-trained output layer; `key`; `cfg`: an
    [`Algorithm1`][] (its Stage 2-3 fields); `transfer`: keyword arguments of [`transfer_init`][].

    **Returns:** like [`run_algorithm`][] without `tau1`.
    """
    k0, k1 = jax.random.split(key)
    model = transfer_init(inst, V_pre, k0, **transfer)
    theta3 = cfg.c_f / sparsity(inst)
    return _after_stage1(inst, model, k1, cfg, theta3, round_first=False)
