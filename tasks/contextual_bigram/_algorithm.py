"""Algorithm 1 of the paper: preconditioned projected proximal gradient descent in three stages
with rounding steps, the Stage-1 switch by a fixed τ₁ or by the oracle criterion; the SGD
baselines of Fig. 1; the transfer-learning initialisation of Theorem 4.1.

Algorithm 1 runs its stages with `dynamics.train_stages` (the rounding 1→2 and the normalisation
2→3 are the `prepare` maps of Stages 2 and 3), the SGD baselines with `dynamics.train`. Every run
is a pure function of `(instance, key, config)`, so `dynamics.run_many` batches seeds. The config
is the simulation that describes the run ([`Algorithm1`][] or [`SGD`][]): only its training fields
are read, the instance is an argument."""

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, Int, PRNGKeyArray

import dynamics

from ._data import Instance
from ._metrics import least_squares_V, line_coordinates, metrics, normalise_attention, round_attention
from ._model import (
    LinearSCB,
    batch_loss,
    expected_preconditioned,
    population_loss,
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


def preconditioned_step(mu, eta, lam=0.0) -> optax.GradientTransformation:
    """One step of Eqns 4-6 as an optax chain: columns scaled by 1/μ, centred, −η, then the l1
    proximal step with threshold η λ and re-projection onto unit column sums on Q.

    **Arguments:** `mu` (N,); `eta`; `lam` (λ ≥ 0).

    **Returns:** an `optax.GradientTransformation` for [`LinearSCB`][] parameters, or for a block of
    them (`None` where a block is frozen, as in a `dynamics.Stage`).
    """
    inv = 1.0 / mu
    return optax.chain(
        dynamics.scale_columns(LinearSCB(V=inv, Q=inv)),
        dynamics.center_columns(),
        dynamics.gd(eta),
        dynamics.proximal_l1(eta * lam, mask=LinearSCB(V=False, Q=True), column_sum=1.0),
    )


def preconditioned_steps(mu, eta, like: LinearSCB) -> dynamics.ProjectedSteps:
    """The steps of [`preconditioned_step`][] as the sharpness ratio sees them: step size η/μ_j
    for column j of V and Q, projected onto centred columns (so that every column sum is kept).
    The l1 proximal step is left out: it is nonexpansive, so it keeps a step stable that is
    stable without it.

    **Arguments:** `mu` (N,); `eta`; `like`: a model of the run's shapes.

    **Returns:** a `dynamics.ProjectedSteps`.
    """
    rates = jax.tree.map(lambda leaf: jnp.broadcast_to(eta / mu, leaf.shape), like)
    return dynamics.ProjectedSteps(rates, _centre_columns)


def _centre_columns(tangent: LinearSCB) -> LinearSCB:
    return jax.tree.map(lambda leaf: leaf - jnp.mean(leaf, axis=0, keepdims=True), tangent)


def _q_min(inst: Instance) -> Float[Array, ""]:
    """The smallest non-zero weight of Q⋆."""
    Qs = inst.Q_star
    return jnp.min(jnp.where(Qs > 0, Qs, jnp.asarray(jnp.inf, Qs.dtype)))


def sparsity(inst: Instance) -> Int[Array, ""]:
    """Q: the largest support of a column of Q⋆ (an integer array; traceable, the instance may be
    an argument of a batched run)."""
    return jnp.max(jnp.sum(inst.Q_star > 0, axis=0))


def _theta3(inst: Instance, c_f) -> Float[Array, ""]:
    """Normalisation threshold 2→3: θ₃ = c_f / Q, in the instance's dtype."""
    return c_f / sparsity(inst).astype(inst.Q_star.dtype)


def theta1(inst: Instance, alpha, fraction=0.5):
    """Rounding threshold 1→2 (recon): 1/T + fraction · α · (q_min − 1/T)."""
    one_t = 1.0 / inst.T
    return one_t + fraction * alpha * (_q_min(inst) - one_t)


def round_1_2(model: LinearSCB, inst: Instance, fraction=0.5) -> LinearSCB:
    """The rounding 1→2 of Algorithm 1 at `model`: [`round_attention`][] with θ₁ from the α of
    `model` (see [`theta1`][]); V is kept."""
    alpha = line_coordinates(model, inst)["alpha"]
    return LinearSCB(V=model.V, Q=round_attention(model.Q, theta1(inst, alpha, fraction)))


def stage3_least_squares(model: LinearSCB, inst: Instance, theta3) -> LinearSCB:
    """Stage 3 as the experiments run it (an oracle): the normalisation 2→3 of Q with threshold
    `theta3`, then the population least-squares V for it."""
    Q_hat = normalise_attention(model.Q, theta3)
    return LinearSCB(V=least_squares_V(Q_hat, inst), Q=Q_hat)


def _sampler(inst: Instance, cfg: "Algorithm1"):
    def draw(k):
        return sample(k, inst, cfg.batch)

    return draw


def _stage1(inst: Instance, key, cfg: "Algorithm1") -> dynamics.Stage:
    """Stage 1 (λ = 0, step η₁): `tau1` steps, or at most `stage1_max_steps` stopped by the oracle
    switch (`stage1_rule` of (α, β) reaches δ₁)."""
    if cfg.switch == "oracle":
        reduce = jnp.minimum if cfg.stage1_rule == "min" else jnp.maximum

        def signal(p):
            line = line_coordinates(p, inst)
            return reduce(line["alpha"], line["beta"]) >= cfg.delta1

        steps, events = cfg.stage1_max_steps, {"signal": signal}
    else:
        steps, events = cfg.tau1, None
    return dynamics.Stage(
        batch_loss,
        preconditioned_step(inst.mu, cfg.eta1),
        True,
        num_steps=steps,
        save=dynamics.Save(every=steps),
        events=events,
        sample=_sampler(inst, cfg),
        key=key,
    )


def run_stage1(inst: Instance, key: PRNGKeyArray, cfg: "Algorithm1", init: LinearSCB | None = None):
    """Stage 1 of Algorithm 1 alone (λ = 0, step η₁, batch B): fixed `tau1` steps or the oracle switch.

    **Arguments:** `inst`; `key` (data stream); `cfg`: an [`Algorithm1`][] (its Stage-1 fields);
    `init` (default V₀ = μ1ᵀ, Q₀ = 11ᵀ/T).

    **Returns:** `(model, tau1)`: the parameters at the switch (before rounding) and the step count.
    """
    (run,) = dynamics.train_stages(scratch_init(inst) if init is None else init, [_stage1(inst, key, cfg)])
    return run.final, run.t_stop


def _later_stages(inst: Instance, key, cfg: "Algorithm1", theta3, round_first: bool) -> list[dynamics.Stage]:
    """Stage 2 (λ, η₂, metrics saved every `every` steps or at `log_saves` log-spaced steps),
    entered through the rounding 1→2 when `round_first` (θ₁ from the α it starts at); with
    `stage3="gd"`, Stage 3 (η₃, on V only), entered through the normalisation 2→3."""
    k2, k3 = jax.random.split(key)
    draw = _sampler(inst, cfg)

    def normalise_2_3(p):
        return LinearSCB(V=p.V, Q=normalise_attention(p.Q, theta3))

    save = cfg.along.save(
        dynamics.training_save(
            lambda step, p, args: metrics(p, inst, theta3),
            num_steps=cfg.stage2_steps,
            every=cfg.every,
            log_saves=cfg.log_saves,
        ),
        lambda p: population_loss(p, inst),
        None,  # the flow alongside is refused: Stage 2's start is only known once Stage 1 has run
        preconditioned_steps(inst.mu, cfg.eta2, like=scratch_init(inst)),
        num_steps=cfg.stage2_steps,
    )
    stages = [
        dynamics.Stage(
            batch_loss,
            preconditioned_step(inst.mu, cfg.eta2, cfg.lam),
            True,
            num_steps=cfg.stage2_steps,
            save=save,
            sample=draw,
            key=k2,
            prepare=(lambda p: round_1_2(p, inst, cfg.theta1_fraction)) if round_first else None,
        )
    ]
    if cfg.stage3 == "gd":
        stages.append(
            dynamics.Stage(
                batch_loss,
                preconditioned_step(inst.mu, cfg.eta3),
                LinearSCB(V=True, Q=False),
                num_steps=cfg.stage3_steps,
                save=dynamics.Save(every=cfg.stage3_steps),
                sample=draw,
                key=k3,
                prepare=normalise_2_3,
            )
        )
    return stages


def _outcome(inst: Instance, cfg: "Algorithm1", theta3, start: LinearSCB, runs: list[dynamics.Run]) -> dict:
    """The results of Stages 2-3 (`runs`, from `start`); the `least_squares` Stage 3 is applied here."""
    run2 = runs[0]
    model2 = run2.final
    if cfg.stage3 == "least_squares":
        final = stage3_least_squares(model2, inst, theta3)
    else:
        final = runs[-1].final
    return dict(
        alpha_after_stage1=line_coordinates(start, inst)["alpha"],
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
    theta3 = _theta3(inst, cfg.c_f)
    stages = [_stage1(inst, k1, cfg), *_later_stages(inst, k2, cfg, theta3, cfg.round_after_stage1)]
    run1, *later = dynamics.train_stages(scratch_init(inst) if init is None else init, stages)
    return dict(
        tau1=run1.t_stop,
        stage1_metrics=metrics(run1.final, inst, theta3),
        **_outcome(inst, cfg, theta3, run1.final, later),
    )


def run_sgd(inst: Instance, key: PRNGKeyArray, cfg: "SGD") -> dict:
    """The SGD baselines of Fig. 1: `vanilla` = plain SGD on (V, Q) (no preconditioning,
    projection or prox); `projected` = preconditioned projected SGD with λ = 0 throughout. Same
    initialisation as Algorithm 1.

    **Arguments:** `inst`, `key` (data stream), `cfg`: an [`SGD`][] (`kind`, `eta`, `batch`,
    `num_steps`, `every`, `c_f`, `along`: what else to record of the population loss, with the
    step size `eta` for `vanilla`).

    **Returns:** dict: `curves` (metrics every `every` steps, or at `log_saves` log-spaced steps),
    `steps`, `final_metrics`,
    `final_model`, `stop` and `t_stop` (a `dynamics` stop code and the step it stopped at: NaN
    divergence freezes the run).
    """
    theta3 = _theta3(inst, cfg.c_f)
    vanilla = cfg.kind == "vanilla"
    opt = dynamics.gd(cfg.eta) if vanilla else preconditioned_step(inst.mu, cfg.eta)
    start = scratch_init(inst)
    save = cfg.along.save(
        dynamics.training_save(
            lambda step, p, args: metrics(p, inst, theta3),
            num_steps=cfg.num_steps,
            every=cfg.every,
            log_saves=cfg.log_saves,
        ),
        lambda p: population_loss(p, inst),
        start,
        cfg.eta if vanilla else None,
        num_steps=cfg.num_steps,
    )
    run = dynamics.train(
        batch_loss,
        start,
        opt,
        num_steps=cfg.num_steps,
        key=key,
        sample=lambda k: sample(k, inst, cfg.batch),
        save=save,
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
    """Transfer initialisation (Theorem 4.1; details recon): V₀ = μ1ᵀ + δ(Ṽ − μ1ᵀ), Q₀ = 11ᵀ/T,
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
    return round_1_2(model, inst, theta1_fraction) if round_theta1 else model


def run_later_stages(
    inst: Instance, start: LinearSCB, key: PRNGKeyArray, cfg: "Algorithm1", round_first: bool = True
) -> dict:
    """Algorithm 1 from Stage 2: (the rounding 1→2 when `round_first`, θ₁ from the α of `start`),
    Stage 2, the normalisation 2→3 and Stage 3, from `start`: e.g. the end of Stage 1 on the
    population lines, `on_line(δ₁, δ₁, inst)`, to study Stages 2-3 apart from Stage 1.

    **Arguments:** `inst`; `start`; `key` (data stream); `cfg`: an [`Algorithm1`][] (its Stage 2-3
    fields); `round_first`.

    **Returns:** like [`run_algorithm`][] without `tau1` and `stage1_metrics`.
    """
    theta3 = _theta3(inst, cfg.c_f)
    runs = dynamics.train_stages(start, _later_stages(inst, key, cfg, theta3, round_first))
    return _outcome(inst, cfg, theta3, start, runs)


def run_transfer(inst: Instance, V_pre, key: PRNGKeyArray, cfg: "Algorithm1", **transfer) -> dict:
    """Transfer learning (Thm 4.1): [`transfer_init`][] then Algorithm 1 from Stage 2 (no Stage 1).

    **Arguments:** `inst`; `V_pre` (N, N) the pre-trained output layer; `key`; `cfg`: an
    [`Algorithm1`][] (its Stage 2-3 fields); `transfer`: keyword arguments of [`transfer_init`][].

    **Returns:** like [`run_algorithm`][] without `tau1`.
    """
    k0, k1 = jax.random.split(key)
    return run_later_stages(inst, transfer_init(inst, V_pre, k0, **transfer), k1, cfg, round_first=False)
