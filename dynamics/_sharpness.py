"""Sharpness along a run, against the edge of stability 2/η, and how far gradient descent drifts
from the gradient flow it discretises."""

import functools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, ArrayLike, Float, Int, PyTree

from ._compiled import one_program
from ._flow import Save, gradient_flow, ode_flow, save_with_carry
from ._hessian import hessian_max_eigenvalue, top_eigenpair
from ._normalized import normalized_gd
from ._rates import Rates, gd, scale_tree
from ._run import Run
from ._steps import AbstractSteps, NormalizedSteps
from ._train import saved_steps, train


def sharpness(
    loss: Callable[[PyTree], Float[Array, ""]], params: PyTree, *, num_iters: int = 20
) -> Float[Array, ""]:
    """The sharpness of `loss` at `params`: λ_max, the largest eigenvalue of its Hessian.

    Estimated by [`hessian_max_eigenvalue`][dynamics.landscape.hessian_max_eigenvalue] (Lanczos from a fixed
    random start, `num_iters` Hessian-vector products, exact once `num_iters` reaches the number of
    parameters). Cheap enough to be part of the `save` function of [`train`][], which then records it every
    `every` steps.

    **Arguments:**

    - `loss`: `params -> scalar`.
    - `params`: the point (any PyTree of float arrays).
    - `num_iters`: the Lanczos steps.

    **Returns:** λ_max, a scalar of the parameters' dtype.

    **Example:** L(θ) = ½ θᵀHθ has sharpness max eig(H) = 3 at every point:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> round(float(dynamics.landscape.sharpness(loss, jnp.array([1.0, -4.0]))), 8)
        3.0
    """
    return hessian_max_eigenvalue(loss, params, num_iters=num_iters)


def edge_of_stability_save(
    loss: Callable[[PyTree], Float[Array, ""]], step_size: float, *, every: int = 1, num_iters: int = 20
) -> Save:
    """A [`Save`][] for [`train`][] recording, every `every` steps, the loss and the sharpness
    against 2/η.

    Gradient descent with step size η is stable on a quadratic only where λ_max < 2/η (the edge of
    stability); the saved `sharpness_ratio` λ_max·η/2 is ≥ 1 where a run is past that edge.

    **Arguments:**

    - `loss`: `params -> scalar`, the loss being trained.
    - `step_size`: η, the step size of the run.
    - `every`: the save period in steps.
    - `num_iters`: the Lanczos steps of [`sharpness`][dynamics.landscape.sharpness].

    **Returns:** a [`Save`][] of `{"loss": L(θ), "sharpness": λ_max, "sharpness_ratio": λ_max·η/2}`
    every `every` steps.

    **Example:** GD with η = 0.5 on a quadratic of sharpness 3 is below the edge, 3 < 2/η = 4, so
    the ratio is 0.75; both modes shrink by |1 − λη| = ½ a step, so the loss by ¼:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> save = dynamics.landscape.edge_of_stability_save(loss, 0.5, every=2)
        >>> theta0 = jnp.array([1.0, 0.0])
        >>> run = dynamics.train(loss, theta0, dynamics.gd(0.5), num_steps=4, save=save)
        >>> [round(float(v), 8) for v in run.values["sharpness"]], float(run.values["sharpness_ratio"][0])
        ([3.0, 3.0, 3.0], 0.75)
        >>> [round(float(v), 6) for v in run.values["loss"]]
        [1.0, 0.0625, 0.003906]
    """
    losses = Save(every=every, fn=functools.partial(_loss_of_state, loss))
    return with_sharpness(losses, loss, step_size, num_iters=num_iters)


def _loss_of_state(loss, t, params: PyTree, args) -> dict[str, Float[Array, ""]]:
    return {"loss": loss(params)}


def with_sharpness(
    save: Save,
    loss: Callable[[PyTree], Float[Array, ""]],
    step_size: Rates | AbstractSteps = None,
    *,
    params: Callable[[PyTree], PyTree] | None = None,
    num_iters: int = 20,
) -> Save:
    """`save`, recording at each of its saves also the sharpness of `loss` at the run's state, and
    its ratio to the edge of stability 2/η.

    What a discrete level adds to its own saves to follow the sharpness along a run: the saves
    (times or period) and what `save` records stay as they are.

    **Arguments:**

    - `save`: what the run records already; its `fn` must return a dict (`None`: only the
      sharpness is recorded).
    - `loss`: `params -> scalar`, the loss whose Hessian is measured (for stochastic training,
      e.g. the population loss).
    - `step_size`: η, one step size (a number or a traced scalar) or one per parameter group
      (a [`Rates`][] prefix of the parameters, e.g. GD with [`gd`][]`(rates)`); or the steps of
      another optimiser ([`NormalizedSteps`][], [`AdamSteps`][]: the step sizes of the GD step with
      its edge, at each saved state and optimiser state; [`ProjectedSteps`][]: steps that keep to
      a subspace); `None`: no ratio is recorded.
    - `params`: `state -> params`, where the loss's parameters sit in the run's state; default:
      the state itself.
    - `num_iters`: the Lanczos steps of each sharpness. In training (a `save` with `every`),
      each Lanczos run starts from the top eigenvector the last save found
      ([`top_eigenpair`][dynamics.landscape.top_eigenpair]), so the estimate keeps converging along the run;
      at a flow's times, and at the first save, from a fixed random start
      ([`sharpness`][dynamics.landscape.sharpness]).

    **Returns:** a [`Save`][] whose records add `"sharpness"` (λ_max) and, with a step size,
    `"sharpness_ratio"`: λ_max·η/2 for one η, and for step sizes R per group λ_max(R¹ᐟ² H R¹ᐟ²)/2, the
    sharpness of the loss in the coordinates where that GD step is plain GD with step 1 (a second
    Lanczos run). GD is stable near a minimum only where the ratio is below 1: it is ≥ 1 past the
    edge of stability. For another optimiser R is its [`AbstractSteps.edge_rates`][]: η/‖∇L‖ for
    normalized GD (infinite where the gradient vanishes), (1 − β₁)η/((1 + β₁)P) per coordinate for
    Adam, so that the ratio is λ_max(P⁻¹H) against Adam's edge (2 + 2β₁)/((1 − β₁)η). For steps
    projected by Π onto a subspace, λ_max(Π R¹ᐟ² H R¹ᐟ² Π)/2.

    **Raises:** `TypeError`, when the run is traced, if `save.fn` does not return a dict.

    **Example:** GD at η = 0.5 on a quadratic of sharpness 3, saving the distance from the
    minimum every 2 steps:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> save = dynamics.Save(every=2, fn=lambda step, theta, args: {"norm": jnp.linalg.norm(theta)})
        >>> save = dynamics.landscape.with_sharpness(save, loss, 0.5)
        >>> run = dynamics.train(loss, jnp.array([1.0, 0.0]), dynamics.gd(0.5), num_steps=4, save=save)
        >>> sorted(run.values), [round(float(v), 8) for v in run.values["sharpness_ratio"]]
        (['norm', 'sharpness', 'sharpness_ratio'], [0.75, 0.75, 0.75])

    With a step per coordinate, R = diag(1, 0.1), R¹ᐟ² H R¹ᐟ² = [[2, √0.1], [√0.1, 0.2]] has top
    eigenvalue 1.1 + √0.91 = 2.0539, so the ratio is 1.0270:

        >>> steps = {"fast": 1.0, "slow": 0.1}
        >>> pair = lambda theta: loss(jnp.stack([theta["fast"], theta["slow"]]))
        >>> nothing = dynamics.Save(fn=lambda step, theta, args: {})
        >>> record = dynamics.landscape.with_sharpness(nothing, pair, steps)
        >>> state = {"fast": jnp.array(1.0), "slow": jnp.array(0.0)}
        >>> round(float(record.fn(0, state, None)["sharpness_ratio"]), 4)
        1.027

    Normalized GD with η = 0.5 at θ = (1, 0), where ∇L = Hθ = (2, 1): its step is GD's with
    step 0.5/‖(2, 1)‖ = 0.5/√5, so the ratio is 3·0.5/(2√5) = 0.3354:

        >>> nothing = dynamics.Save(fn=lambda step, theta, args: {})
        >>> record = dynamics.landscape.with_sharpness(nothing, loss, dynamics.NormalizedSteps(0.5))
        >>> round(float(record.fn(0, jnp.array([1.0, 0.0]), None)["sharpness_ratio"]), 4)
        0.3354
    """
    where = params or _itself
    if save.every is None and save.steps is None:
        fn = functools.partial(_record_sharpness, save.fn, loss, step_size, where, num_iters)
        return Save(ts=save.ts, fn=fn)
    start, inner = _extending(save)
    fn = functools.partial(_record_warm_sharpness, inner, loss, step_size, where, num_iters)
    carry = functools.partial(_no_vectors_yet, start, where)
    return Save(fn=fn, every=save.every, steps=save.steps, carry=carry)


def _itself(state: PyTree) -> PyTree:
    return state


def _extending(save: Save) -> tuple[Callable[[PyTree], PyTree], Callable[..., tuple[PyTree, PyTree]]]:
    """`save_with_carry` of a training save that `with_sharpness` or `with_flow_distance`
    extends: one without a function records nothing of its own (an empty dict)."""
    if save.fn is None and save.carry is None:
        save = Save(every=save.every, steps=save.steps, fn=_nothing)
    return save_with_carry(save)


def _nothing(t, state, args) -> dict:
    return {}


def _record_sharpness(fn, loss, step_size, params, num_iters, t, state, args) -> dict:
    """A save of `with_sharpness` at a flow's times: each Lanczos run from the random start."""
    record = {} if fn is None else fn(t, state, args)
    return _add_sharpness(record, loss, step_size, params(state), num_iters, args, None)[0]


def _no_vectors_yet(start, params, state: PyTree) -> tuple[PyTree, dict]:
    """The carry of a warm-started `with_sharpness` at the first save: the carry of the save it
    extends, and zero vectors, so that the first Lanczos runs start from the random start alone."""
    zeros = jnp.zeros_like(ravel_pytree(params(state))[0])
    return start(state), {"top": zeros, "scaled": zeros}


def _record_warm_sharpness(inner, loss, step_size, params, num_iters, t, state, args, carry):
    """A save of `with_sharpness` in training: each Lanczos run starts from the last save's top
    eigenvector, and hands its own to the next save."""
    kept, vectors = carry
    record, kept = inner(t, state, args, kept)
    record, vectors = _add_sharpness(record, loss, step_size, params(state), num_iters, args, vectors)
    return record, (kept, vectors)


def _add_sharpness(record, loss, step_size, point, num_iters, args, vectors) -> tuple[dict, dict | None]:
    """`record` with the sharpness at `point` (and its ratio to the edge of `step_size`), and the
    Ritz vectors found, Lanczos started from `vectors` (`None`: from the random start)."""
    if not isinstance(record, dict):
        raise TypeError(
            f"with_sharpness adds to the dict a save function returns, got {type(record).__name__}"
        )
    # The barrier keeps the compiler from sharing work between the record and the Lanczos runs on
    # the same loss, which can change the record's values by a rounding.
    record, point = jax.lax.optimization_barrier((record, point))
    found = None if vectors is None else dict(vectors)
    top = _top(loss, point, num_iters, found, "top")
    record = record | {"sharpness": top}
    if step_size is None:
        return record, found
    project = None
    if isinstance(step_size, AbstractSteps):  # in training, `args` is the optimiser's state
        project = step_size.edge_projection()
        step_size = step_size.edge_rates(loss, point, args)
    if project is None and _is_one_rate(step_size):
        record["sharpness_ratio"] = top * step_size / 2
        return record, found
    if project is None:
        scaled, start = _rate_scaled(loss, point, step_size)
    else:
        scaled, start = _projected(loss, point, step_size, project)
    record["sharpness_ratio"] = _top(scaled, start, num_iters, found, "scaled") / 2
    return record, found


def _is_one_rate(rates: Rates) -> bool:
    """Whether `rates` is one step size for every parameter (a number or a scalar array), rather
    than a PyTree of them per group or per coordinate."""
    return jax.tree_util.treedef_is_leaf(jax.tree.structure(rates)) and jnp.ndim(rates) == 0


def _projected(
    loss, point: PyTree, rates: Rates, project
) -> tuple[Callable[[PyTree], Float[Array, ""]], PyTree]:
    """φ ↦ L(θ + Π R¹ᐟ² φ) and φ = 0: its Hessian there is Π R¹ᐟ² H R¹ᐟ² Π."""
    root = jax.tree.map(jnp.sqrt, rates)

    def scaled(phi: PyTree) -> Float[Array, ""]:
        return loss(jax.tree.map(jnp.add, point, project(scale_tree(root, phi))))

    return scaled, jax.tree.map(jnp.zeros_like, point)


def _top(loss, point, num_iters: int, vectors: dict | None, name: str) -> Float[Array, ""]:
    """λ_max at `point`: Lanczos from the random start when `vectors` is `None`, else from
    `vectors[name]`, which then becomes the Ritz vector found."""
    if vectors is None:
        return sharpness(loss, point, num_iters=num_iters)
    top, vectors[name] = _warm_pair(loss, point, num_iters, vectors[name])
    return top


def _warm_pair(loss, point, num_iters: int, last: Float[Array, " n"]):
    """λ_max at `point` and its Ritz vector, Lanczos started from `last`, kept in `last`'s dtype
    (the carry of a scan keeps one dtype). A vector that is not finite (a Hessian that overflowed)
    is handed on as zeros, so that the next save starts from the random start again."""
    top, vector = top_eigenpair(
        loss, point, num_iters=num_iters, start=last.astype(ravel_pytree(point)[0].dtype)
    )
    vector = jnp.where(jnp.all(jnp.isfinite(vector)), vector, jnp.zeros_like(vector))
    return top, vector.astype(last.dtype)


def _rate_scaled(loss, point: PyTree, rates: Rates) -> tuple[Callable[[PyTree], Float[Array, ""]], PyTree]:
    r"""$\varphi \mapsto L(R^{1/2} \varphi)$ and $\varphi = R^{-1/2} \theta$, where GD with step sizes $R$ on
    $\theta$ is GD with step 1 on $\varphi$: its sharpness there is $\lambda_{\max}(R^{1/2} H R^{1/2})$."""
    root = jax.tree.map(jnp.sqrt, rates)

    def scaled(phi: PyTree) -> Float[Array, ""]:
        return loss(scale_tree(root, phi))

    inverse_root = jax.tree.map(lambda r: 1 / r, root)
    return scaled, scale_tree(inverse_root, point)


class GDFlowGap(eqx.Module):
    r"""Gradient descent and the gradient flow from one start, compared at matching times.

    GD step k is compared with the flow at time t = kη. Every field is an array, so results can
    be `vmap`ped over starting points (each field then gains a leading axis).

    **Fields:**

    - `steps`: the GD steps compared, 0, every, 2·every, …, num_steps.
    - `times`: the flow times `steps`·η.
    - `distance`: ‖θ_GD(k) − θ_flow(kη)‖, the Euclidean norm over all leaves, per save.
    - `gd_loss`, `flow_loss`: the loss of each, per save.
    - `gd_stop`, `flow_stop`: the [`StopReason`][] of each run. Unless both are `completed` the
      comparison is not meaningful: a diverging GD run is frozen at its last finite parameters, and
      a flow out of solver steps saves `inf` after it stopped.

    **Example:** on $L(\theta) = \tfrac12\theta^2$ with $\eta = 0.1$ the gap at step $k$ is
    $(e^{-k\eta} - 0.9^k)\,\lvert\theta_0\rvert$; a `vmap` over two starts gives one row per start:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta**2
        >>> gap = lambda start: dynamics.landscape.gd_flow_gap(loss, start, 0.1, num_steps=10, every=10)
        >>> gaps = jax.vmap(gap)(jnp.array([1.0, -2.0]))
        >>> gaps.steps.tolist(), [[round(float(d), 6) for d in row] for row in gaps.distance]
        ([[0, 10], [0, 10]], [[0.0, 0.019201], [0.0, 0.038402]])
        >>> gaps.gd_stop.tolist(), gaps.flow_stop.tolist()
        ([0, 0], [0, 0])
    """

    steps: Int[Array, " T"]
    times: Float[Array, " T"]
    distance: Float[Array, " T"]
    gd_loss: Float[Array, " T"]
    flow_loss: Float[Array, " T"]
    gd_stop: Int[Array, ""]
    flow_stop: Int[Array, ""]


_SET_BY_GAP = ("rates", "t0", "t1", "save", "events")
"""The arguments of [`gradient_flow`][] that [`gd_flow_gap`][dynamics.landscape.gd_flow_gap] sets itself."""


def gd_flow_gap(
    loss: Callable[[PyTree], Float[Array, ""]],
    params: PyTree,
    step_size: float | Float[ArrayLike, ""],
    *,
    num_steps: int,
    every: int,
    **flow_kwargs,
) -> GDFlowGap:
    r"""How far full-batch gradient descent with step size η drifts from the gradient flow.

    GD is explicit Euler on dθ/dt = −∇L(θ) with time step η: [`train`][] with [`gd`][]`(η)` and
    [`gradient_flow`][] run from the same `params`, saved at steps 0, every, …, num_steps and at
    the flow times kη. The gap is O(η) at a fixed time. Jits and `vmap`s over starting points (and
    over η).

    **Arguments:**

    - `loss`: `params -> scalar`, full batch.
    - `params`: the common start θ₀ (any PyTree of float arrays).
    - `step_size`: η, one step size for all parameters.
    - `num_steps`: the GD steps, a multiple of `every`; the flow runs to num_steps·η.
    - `every`: compare every `every` steps.
    - `**flow_kwargs`: passed on to [`gradient_flow`][] (e.g. `stepsize_controller`, `solver`,
      `max_steps`); the flow's own error must be well below the gap to measure it.

    **Returns:** a [`GDFlowGap`][dynamics.landscape.GDFlowGap].

    **Raises:** `ValueError` if `flow_kwargs` sets `rates`, `t0`, `t1`, `save` or `events`, or
    (from [`train`][]) if `num_steps` is not a positive multiple of `every`.

    **Example:** on $L(\theta) = \tfrac12\theta^2$ with $\eta = 0.1$, GD gives $\theta_k = 0.9^k \theta_0$ and
    the flow $\theta_0 e^{-k\eta}$: at $k = 10$ the gap is $e^{-1} - 0.9^{10} = 0.019201$, at $k = 20$
    $e^{-2} - 0.9^{20} = 0.013759$ (float64):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta**2
        >>> gap = dynamics.landscape.gd_flow_gap(loss, jnp.array(1.0), 0.1, num_steps=20, every=10)
        >>> gap.steps.tolist(), [round(float(t), 8) for t in gap.times]
        ([0, 10, 20], [0.0, 1.0, 2.0])
        >>> [round(float(d), 6) for d in gap.distance]
        [0.0, 0.019201, 0.013759]
        >>> [round(float(v), 6) for v in gap.gd_loss], [round(float(v), 6) for v in gap.flow_loss]
        ([0.5, 0.060788, 0.00739], [0.5, 0.067668, 0.009158])
    """
    return _gd_flow_gap(loss, params, jnp.asarray(step_size), num_steps=num_steps, every=every, **flow_kwargs)


@one_program
def _gd_flow_gap(loss, params, step_size, *, num_steps, every, **flow_kwargs) -> GDFlowGap:
    """[`gd_flow_gap`][dynamics.landscape.gd_flow_gap] with η an array, so that a new step size does not
    compile anew."""

    def with_loss(t, p: PyTree, args) -> tuple[PyTree, Float[Array, ""]]:
        return p, loss(p)

    descent = train(loss, params, gd(step_size), num_steps=num_steps, save=Save(every=every, fn=with_loss))
    flow = _flow_at_steps(loss, params, step_size, np.arange(0, num_steps + 1, every), **flow_kwargs)
    (gd_params, gd_loss), (flow_params, flow_loss) = descent.values, flow.values
    squares = jax.tree.map(
        lambda a, b: jnp.sum(((a - b) ** 2).reshape(a.shape[0], -1), axis=1), gd_params, flow_params
    )
    return GDFlowGap(
        steps=descent.ts,
        times=descent.ts.astype(step_size.dtype) * step_size,
        distance=jnp.sqrt(sum(jax.tree.leaves(squares))),
        gd_loss=gd_loss,
        flow_loss=flow_loss,
        gd_stop=descent.stop,
        flow_stop=flow.stop,
    )


def _flow_at_steps(
    loss: Callable[[PyTree], Float[Array, ""]],
    start: PyTree,
    step_size: Rates,
    saved: np.ndarray,
    /,
    **flow_kwargs,
) -> Run:
    """The gradient flow dθ/dt = −R ∇L(θ) from `start`, R = `step_size`, with time counted in steps of GD with
    step sizes R (GD is explicit Euler on it with time step 1), saving `(θ, L(θ))` at the steps
    `saved` (increasing, the last where the flow ends). With [`NormalizedSteps`][] η, the
    normalized flow dθ_b/dt = −η_b ∇_b L/‖∇_b L‖ per block b, which normalized GD discretises the
    same way (the gradient flow's path at the speed of normalized GD's steps).

    **Raises:** `ValueError` if `flow_kwargs` sets `rates`, `t0`, `t1`, `save` or `events`, or
    for the steps of an optimiser that discretises no flow (Adam).
    """
    if clashes := sorted(set(_SET_BY_GAP) & flow_kwargs.keys()):
        raise ValueError(f"the flow alongside gradient descent sets {clashes} itself")
    normalized = isinstance(step_size, NormalizedSteps)
    if isinstance(step_size, AbstractSteps) and not normalized:
        raise ValueError(
            f"{type(step_size).__name__}: that optimiser discretises no flow to follow alongside"
        )
    dtype = jnp.result_type(*jax.tree.leaves(start))
    steps = jnp.asarray(saved, dtype)
    save = Save(ts=steps, fn=lambda t, p, args: (p, loss(p)))
    if not normalized:
        return gradient_flow(loss, start, rates=step_size, t1=steps[-1], save=save, **flow_kwargs)
    direction = normalized_gd(step_size.rates)
    state = direction.init(start)
    grad = jax.grad(loss)

    def normalized_field(t, theta, args) -> PyTree:
        return direction.update(grad(theta), state)[0]

    return ode_flow(normalized_field, start, t1=steps[-1], save=save, **flow_kwargs)


def with_flow_distance(
    save: Save,
    loss: Callable[[PyTree], Float[Array, ""]],
    start: PyTree,
    step_size: Rates,
    *,
    num_steps: int,
    params: Callable[[PyTree], PyTree] | None = None,
    **flow_kwargs,
) -> Save:
    r"""`save`, recording at each of its saves also how far the run is from the gradient flow of
    `loss` started at the same point.

    A GD step with step sizes R is one explicit Euler step of dθ/dt = −R ∇L(θ) with time step 1:
    the run's state at step k is compared with that flow at time t = k. The flow is integrated
    first, once, saved at the steps of `save`; gradient descent then runs once, as it would
    without it. For stochastic training (`loss` the population loss) the distance holds the
    mini-batch noise as well as the discretisation.

    **Arguments:**

    - `save`: what the run records, with its period `every`; its `fn` must return a dict.
    - `loss`: `params -> scalar`, the loss whose flow is followed (for stochastic training, the
      population loss).
    - `start`: the run's starting parameters θ₀.
    - `step_size`: η, one step size or one per parameter group (a [`Rates`][] prefix), as in
      [`gd`][]; or [`NormalizedSteps`][]: the run is normalized GD, one explicit Euler step of the
      normalized flow dθ_b/dt = −η_b ∇_b L/‖∇_b L‖ per block b (the gradient flow's path at
      normalized GD's speed), the flow then followed.
    - `num_steps`: the run's steps; the flow runs to t = num_steps.
    - `params`: `state -> params`, where the parameters sit in the run's state; default: the
      state itself.
    - `**flow_kwargs`: passed on to [`gradient_flow`][] (e.g. `stepsize_controller`, `solver`,
      `max_steps`), or to [`ode_flow`][] for normalized GD.

    **Returns:** a [`Save`][] whose records add `"flow_distance"`, ‖θ(k) − θ_flow(k)‖ (the
    Euclidean norm over all leaves), and `"flow_loss"`, L(θ_flow(k)). A flow that runs out of
    solver steps saves `inf` from there on, so its distances are `inf`.

    **Raises:** `ValueError` if `save` has save times `ts` instead of a period, if `flow_kwargs`
    sets `rates`, `t0`, `t1`, `save` or `events`, or for Adam's steps, which follow no flow;
    `TypeError`, when the run is traced, if `save.fn` does not return a dict.

    **Example:** GD with $\eta = 0.1$ on $L(\theta) = \tfrac12\theta^2$ gives $\theta_k = 0.9^k \theta_0$, the
    flow $\theta_0 e^{-k\eta}$: at step 10 they are $e^{-1} - 0.9^{10} = 0.019201$ apart (the same gap
    as [`gd_flow_gap`][dynamics.landscape.gd_flow_gap]'s example):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta**2
        >>> start = jnp.array(1.0)
        >>> save = dynamics.landscape.with_flow_distance(
        ...     dynamics.Save(every=10, fn=lambda step, theta, args: {}), loss, start, 0.1, num_steps=20
        ... )
        >>> run = dynamics.train(loss, start, dynamics.gd(0.1), num_steps=20, save=save)
        >>> [round(float(d), 6) for d in run.values["flow_distance"]]
        [0.0, 0.019201, 0.013759]
    """
    if save.ts is not None:
        raise ValueError(
            "the flow alongside compares with a discrete run: save with every=... or steps=..., not ts"
        )
    saved = saved_steps(save, num_steps)
    where = params or _itself
    flow = _flow_at_steps(loss, where(start), step_size, saved, **flow_kwargs)
    start, inner = _extending(save)
    fn = functools.partial(_record_flow_distance, inner, flow.values, jnp.asarray(saved), where)
    return Save(fn=fn, every=save.every, steps=save.steps, carry=start)


def _record_flow_distance(fn, flow_values, saved, params, step, state, args, carry):
    record, carry = fn(step, state, args, carry)
    if not isinstance(record, dict):
        raise TypeError(
            f"with_flow_distance adds to the dict a save function returns, got {type(record).__name__}"
        )
    at = jnp.searchsorted(saved, step)  # this save's place among the saved steps
    flow_params, flow_loss = jax.tree.map(lambda values: values[at], flow_values)
    squares = jax.tree.map(lambda a, b: jnp.sum((a - b) ** 2), params(state), flow_params)
    distance = jnp.sqrt(sum(jax.tree.leaves(squares)))
    return record | {"flow_distance": distance, "flow_loss": flow_loss}, carry
