"""The three trainings of the paper: gradient flow on `W` with `V = cP` (Result 1), gradient
descent on `(W, V)` (Result 2) and on `V` under uniform attention (the empirical claim of the
conclusion); and joint GD on `(W, V)` from a small random start (an exploratory variant of that
claim, recon).

Every function is pure and `vmap`-able over its array arguments (stacked tasks, constants `c`).
"""

from collections.abc import Callable

import diffrax
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

import dynamics

from ._constants import fixed_point_c
from ._criteria import certified, mu
from ._data import Population
from ._model import DecisionListModel, perfect, population_loss
from ._task import TaskArrays

FLOW_CONTROLLER = diffrax.PIDController(rtol=1e-6, atol=1e-9)
"""The default step-size controller of Result 1's flow (Tsit5 at rtol 1e-6, atol 1e-9)."""


def permutation_matrix(arrays: TaskArrays, dtype=jnp.float64) -> Float[Array, "L L"]:
    """`P` with `P[π(b), b] = 1`, from the task arrays (traceable)."""
    return jax.nn.one_hot(arrays.perm, arrays.perm.shape[0], dtype=dtype).T


def _result1_loss(
    arrays: TaskArrays, population: Population, c: Float[Array, ""]
) -> Callable[[Float[Array, "L L"]], Float[Array, ""]]:
    """`W -> 𝓛(W, cP)`, the loss of Result 1's flow."""
    V = c * permutation_matrix(arrays, population.weights.dtype)
    return lambda W: population_loss(DecisionListModel(W, V), population)


def _initial_velocity(arrays: TaskArrays, population: Population, c: Float[Array, ""]) -> Float[Array, "L L"]:
    """`g = −∇_W 𝓛(0, cP)`, the velocity of Result 1's flow at `W = 0`."""
    L = arrays.perm.shape[0]
    return -jax.grad(_result1_loss(arrays, population, c))(jnp.zeros((L, L), population.weights.dtype))


def direction_margin(
    W: Float[Array, "L L"], velocity: Float[Array, "L L"], arrays: TaskArrays
) -> Float[Array, ""]:
    """`μ(W)/‖W‖_F` (`μ` without its scale), and `μ(g)/‖g‖_F` at `W = 0` for `g = velocity`: the
    real-valued event of Result 1's flow.

    `μ(0) = 0` (every score ties) and `μ` is positively homogeneous (`μ(sW) = s μ(W)` for `s > 0`):
    along a flow `W(t) = t g + O(t²)` leaving 0 with velocity `g`, `μ(W(t))/‖W(t)‖_F → μ(g)/‖g‖_F`
    as `t → 0⁺`. The value at 0 is this limit, so the sign change where `μ` turns positive is seen
    from the start.

    **Arguments:** `W`; `velocity`: `g`; `arrays`: the task.

    **Returns:** the scale-free margin, of the sign of `μ(W)` (of `μ(g)` at `W = 0`).
    """

    def scaled(X):
        norm = jnp.linalg.norm(X)
        return mu(X, arrays) / jnp.where(norm > 0, norm, 1.0)

    return jnp.where(jnp.any(W != 0), scaled(W), scaled(velocity))


def result1_flow(
    arrays: TaskArrays,
    population: Population,
    c: Float[Array, ""],
    *,
    t1: float,
    save_ts: Float[Array, " S"] | None = None,
    mu_event: bool = True,
    stop_at_perfect: bool = True,
    save: Callable[[Float[Array, "L L"]], dict] | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController = FLOW_CONTROLLER,
    max_steps: int = 100_000,
) -> dynamics.Run:
    """Result 1: `dW/dt = −∇_W 𝓛(W, cP)` from `W = 0`, integrated by Diffrax.

    Saves the population loss and `μ(W)` at `save_ts`; stops at perfect classification (event
    `perfect`) when `stop_at_perfect`.

    **Arguments:**

    - `arrays`, `population`: the task and its (exact) population.
    - `c`: the value scale, `V ≡ cP`.
    - `t1`, `save_ts`: the horizon and the save times.
    - `mu_event`: the event is the crossing where `μ(W)` turns positive (valid when
      `mu_criterion_applies`), located by root finding on [`direction_margin`][]: `t_stop` is that
      time and `final` the `W` there, on the boundary of perfect classification (`μ = 0`). When
      `μ(g) > 0` for the initial velocity `g = −∇_W 𝓛(0, cP)`, `μ(W(t)) > 0` for every small
      `t > 0` and there is no crossing: the event is off. Otherwise the event is the enumeration
      test `perfect` on the population, checked at the end of each solver step.
    - `stop_at_perfect`: whether the event stops the run.
    - `save`: extra saved functions of `W`, merged into the values.
    - `stepsize_controller`, `max_steps`: the settings of the Tsit5 solver.

    **Returns:** a `dynamics.Run` whose state is `W`; values `{"loss", "mu"}` and those of `save`.
    """
    loss = _result1_loss(arrays, population, c)
    V = c * permutation_matrix(arrays, population.weights.dtype)

    def is_perfect(W):
        return perfect(DecisionListModel(W, V), population)

    if mu_event:
        velocity = _initial_velocity(arrays, population, c)
        rising = mu(velocity, arrays) <= 0
        event = dynamics.Crossing(lambda W: jnp.where(rising, direction_margin(W, velocity, arrays), 1.0))
    else:
        event = is_perfect

    L = arrays.perm.shape[0]
    return dynamics.gradient_flow(
        loss,
        jnp.zeros((L, L), population.weights.dtype),
        t1=t1,
        save=dynamics.Save(
            ts=save_ts,
            fn=lambda t, W, args: {"loss": loss(W), "mu": mu(W, arrays)} | ({} if save is None else save(W)),
        ),
        events={"perfect": event} if stop_at_perfect else None,
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
    )


def result1_time(
    arrays: TaskArrays,
    population: Population,
    c: Float[Array, ""],
    *,
    t1: float,
    save_ts: Float[Array, " S"] | None = None,
    mu_event: bool = True,
    save: Callable[[Float[Array, "L L"]], dict] | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController = FLOW_CONTROLLER,
    max_steps: int = 100_000,
) -> tuple[Float[Array, ""], dynamics.Run]:
    """τ, the first time of perfect classification along Result 1's flow, from one
    integration stopped by the event of [`result1_flow`][].

    With `mu_event`, `τ = Run.t_stop`, the root of `μ(W(t))` where the event fired: exact up to the
    root finder's tolerance (100 machine epsilons) on the solver's dense interpolant; `τ = 0` when
    the initial velocity already ranks every list (`μ(−∇_W 𝓛(0, cP)) > 0`, then `μ(W(t)) > 0` for
    every small `t > 0`). Without it, `τ = Run.t_stop` is the end of the solver step where the
    enumerated test first held: an upper bound on the first time, within one step. `τ = inf` if
    the event did not fire by `t1`.

    **Arguments:** as [`result1_flow`][] (`save_ts`: the saves of the run, default `[0, t1]`; `save`:
    extra saved functions of `W`).

    **Returns:** `(τ, the run)`.
    """
    kwargs = dict(mu_event=mu_event, save=save, stepsize_controller=stepsize_controller, max_steps=max_steps)
    run = result1_flow(arrays, population, c, t1=t1, save_ts=save_ts, **kwargs)
    tau = jnp.where(run.event == 0, run.t_stop, jnp.inf)
    if mu_event:
        tau = jnp.where(mu(_initial_velocity(arrays, population, c), arrays) > 0, 0.0, tau)
    return tau, run


def result1_gd(
    arrays: TaskArrays, population: Population, c: Float[Array, ""], *, step: Float[Array, ""], num_steps: int
) -> dynamics.Run:
    """Gradient descent with step `step` on `W` (the explicit Euler scheme of Result 1's flow),
    stopped at the first step with `μ(W) > 0`. `t_stop · step` approximates the flow's time."""
    V = c * permutation_matrix(arrays, population.weights.dtype)
    L = arrays.perm.shape[0]
    return dynamics.train(
        lambda W: population_loss(DecisionListModel(W, V), population),
        jnp.zeros((L, L), population.weights.dtype),
        dynamics.gd(step),
        num_steps=num_steps,
        save=dynamics.Save(every=num_steps, fn=lambda step, W, args: mu(W, arrays)),
        events={"perfect": lambda W: mu(W, arrays) > 0},
    )


def perturbation(key: PRNGKeyArray, L: int, eps: Float[Array, ""], dtype=jnp.float64) -> Float[Array, "L L"]:
    """Result 2's `U = V_0 − cP`, entries i.i.d. Uniform[−ε/2, ε/2] (recon: the paper only asks
    `‖V_0 − cP‖_∞ ≤ ε/2`)."""
    return jax.random.uniform(key, (L, L), dtype, -eps / 2.0, eps / 2.0)


def result2_start(
    arrays: TaskArrays,
    population: Population,
    U: Float[Array, "L L"],
    *,
    n: int,
    delta: Float[Array, ""],
    eps: Float[Array, ""],
    eta_scale: Float[Array, ""] = 1.0,
    num_iters: int = 100,
) -> dict[str, Array]:
    """Result 2's start from `W_0 = 0`, `V_0 = cP + U` (traceable): `c` the fixed point of
    `c = 10 n² 𝓛_0/δ + 4εn` ([`fixed_point_c`][]), `λ_max` of the Hessian of the population loss
    in `(W, V)` at the start (Lanczos, `num_iters` Hessian-vector products), the step
    `η = eta_scale/λ_max` (the paper asks `η ≤ 1/λ_max`) and the end of the window `T = ⌊ε/(2η)⌋`.

    **Arguments:** the task, the population, the perturbation `U`; `n`, `δ`, `ε`; `eta_scale`;
    `num_iters`.

    **Returns:** a dict: `c`, `c_iterations`, `c_converged`, `V0`, `loss0` (`𝓛_0`), `lambda_max`,
    `eta`, `T`.
    """
    P = permutation_matrix(arrays, U.dtype)
    W0 = jnp.zeros_like(U)

    def loss_at(V):
        return population_loss(DecisionListModel(W0, V), population)

    c, iterations, converged = fixed_point_c(lambda c: loss_at(c * P + U), n=n, delta=delta, eps=eps)
    V0 = c * P + U
    lam = dynamics.landscape.hessian_max_eigenvalue(
        lambda model: population_loss(model, population), DecisionListModel(W0, V0), num_iters=num_iters
    )
    eta = eta_scale / lam
    return {
        "c": c,
        "c_iterations": iterations,
        "c_converged": converged,
        "V0": V0,
        "loss0": loss_at(V0),
        "lambda_max": lam,
        "eta": eta,
        "T": jnp.floor(eps / (2.0 * eta)),
    }


def result2_metrics(
    arrays: TaskArrays, population: Population, c: Float[Array, ""], n: int, exact: bool
) -> Callable[[DecisionListModel], dict[str, Array]]:
    """What Result 2's GD saves: loss, `μ(W)`, perfect classification (enumerated when `exact`,
    else the certificate `certified`), `‖V − cP‖_max`, `max |∇_V 𝓛|` (at most 1, derived) and
    the model itself (for re-estimating `λ_max` along the run)."""
    P = permutation_matrix(arrays, population.weights.dtype)

    def loss(model):
        return population_loss(model, population)

    def metrics(model):
        grad_V = jax.grad(loss)(model).V
        good = perfect(model, population) if exact else certified(model.W, model.V, c, P, n, arrays)
        return {
            "loss": loss(model),
            "mu": mu(model.W, arrays),
            "perfect": good,
            "dist_cP": jnp.max(jnp.abs(model.V - c * P)),
            "grad_V_max": jnp.max(jnp.abs(grad_V)),
            "model": model,
        }

    return metrics


def _descend(
    loss, start, step, *, num_steps: int, save: dynamics.Save, along: dynamics.Along | None, events=None
) -> dynamics.Run:
    """Full-batch GD on `loss` from `start` at step `step`, recording `save` and what `along` asks."""
    if along is not None:
        save = along.save(save, loss, start, step, num_steps=num_steps)
    return dynamics.train(loss, start, dynamics.gd(step), num_steps=num_steps, save=save, events=events)


def result2_gd(
    arrays: TaskArrays,
    population: Population,
    V0: Float[Array, "L L"],
    c: Float[Array, ""],
    n: int,
    *,
    eta: Float[Array, ""],
    num_steps: int,
    every: int = 1,
    log_saves: int | None = None,
    exact: bool = True,
    stop_at_perfect: bool = False,
    along: dynamics.Along | None = None,
) -> dynamics.Run:
    """Result 2: full-batch GD on `(W, V)` from `W = 0`, `V = V0`, step `eta`.

    **Arguments:** the task, the population, `V0`, `c` (for the metrics), `n`; `eta`;
    `num_steps`, `every` (or `log_saves` log-spaced saves); `exact`: enumerate (exact population)
    or certify (sample);
    `stop_at_perfect`: stop at the first perfectly classifying step (event `perfect`; not with
    the flow alongside, which runs all `num_steps`); `along`: what else to record (`dynamics.Along`).

    **Returns:** a `dynamics.Run` of [`DecisionListModel`][]s with the metrics of [`result2_metrics`][].
    """
    if stop_at_perfect and along is not None and along.flow:
        raise ValueError("result2_gd: the flow alongside runs all num_steps; set stop_at_perfect=False")
    metrics = result2_metrics(arrays, population, c, n, exact)
    L = arrays.perm.shape[0]
    return _descend(
        lambda model: population_loss(model, population),
        DecisionListModel(jnp.zeros((L, L), V0.dtype), V0),
        eta,
        num_steps=num_steps,
        save=dynamics.training_save(
            lambda step, p, args: metrics(p), num_steps=num_steps, every=every, log_saves=log_saves
        ),
        along=along,
        events={"perfect": lambda model: metrics(model)["perfect"]} if stop_at_perfect else None,
    )


def column_argmax_agreement(V: Float[Array, "L L"], arrays: TaskArrays) -> Float[Array, ""]:
    """`κ(V) = (1/L) #{b : argmax_r V[r, b] = π(b)}` (our measure of the uniform-attention claim,
    recon)."""
    return jnp.mean((jnp.argmax(V, axis=0).astype(arrays.perm.dtype) == arrays.perm).astype(V.dtype))


def centred_cosine(V: Float[Array, "L L"], P: Float[Array, "L L"]) -> Float[Array, ""]:
    """`ρ(V) = cos(V − 1 1ᵀ V / L, P − J / L)`: columns centred, since the output softmax ignores
    a constant added to a column (recon). 0 when `V` has constant columns (e.g. `V = 0`)."""
    Vc = V - jnp.mean(V, axis=0, keepdims=True)
    Pc = P - jnp.mean(P, axis=0, keepdims=True)
    norm = jnp.linalg.norm(Vc) * jnp.linalg.norm(Pc)
    return jnp.where(norm > 0, jnp.sum(Vc * Pc) / jnp.where(norm > 0, norm, 1.0), 0.0)


def uniform_attention_gd(
    arrays: TaskArrays,
    population: Population,
    V0: Float[Array, "L L"],
    *,
    step: Float[Array, ""],
    num_steps: int,
    every: int = 1,
    log_saves: int | None = None,
    along: dynamics.Along | None = None,
) -> dynamics.Run:
    """The uniform-attention claim of the conclusion: `W ≡ 0`, full-batch GD on `V` from `V0`; saves the loss,
    `κ(V)` and `ρ(V)` every `every` steps (or at `log_saves` log-spaced steps), and what `along`
    asks (`dynamics.Along`)."""
    L = arrays.perm.shape[0]
    W = jnp.zeros((L, L), V0.dtype)
    P = permutation_matrix(arrays, V0.dtype)
    return _descend(
        lambda V: population_loss(DecisionListModel(W, V), population),
        V0,
        step,
        num_steps=num_steps,
        along=along,
        save=dynamics.training_save(
            lambda step, V, args: {
                "loss": population_loss(DecisionListModel(W, V), population),
                "kappa": column_argmax_agreement(V, arrays),
                "rho": centred_cosine(V, P),
            },
            num_steps=num_steps,
            every=every,
            log_saves=log_saves,
        ),
    )


def joint_gd(
    arrays: TaskArrays,
    population: Population,
    model0: DecisionListModel,
    *,
    step: Float[Array, ""],
    num_steps: int,
    every: int = 1,
    log_saves: int | None = None,
    along: dynamics.Along | None = None,
) -> dynamics.Run:
    """Full-batch GD on `(W, V)` jointly from `model0` (e.g. a small random start: the exploratory
    variant of the uniform-attention claim); saves the loss, `μ(W)`, `κ(V)`, `ρ(V)` and perfect classification
    (enumerated, exact when the population is the support of `D`) every `every` steps (or at
    `log_saves` log-spaced steps), and what `along` asks (`dynamics.Along`).

    **Returns:** a `dynamics.Run` of [`DecisionListModel`][]s.
    """
    P = permutation_matrix(arrays, model0.V.dtype)

    def loss(model):
        return population_loss(model, population)

    return _descend(
        loss,
        model0,
        step,
        num_steps=num_steps,
        along=along,
        save=dynamics.training_save(
            lambda step, model, args: {
                "loss": loss(model),
                "mu": mu(model.W, arrays),
                "kappa": column_argmax_agreement(model.V, arrays),
                "rho": centred_cosine(model.V, P),
                "perfect": perfect(model, population),
            },
            num_steps=num_steps,
            every=every,
            log_saves=log_saves,
        ),
    )
