"""Optimisers whose step is a gradient-descent step of some other step size at each state: their
edge of stability, and the flow they discretise."""

import abc
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, PyTree

from ._normalized import block_norm
from ._rates import Rates, scale_tree


class AbstractSteps(eqx.Module):
    """An optimiser's steps as seen by the sharpness ratio
    ([`with_sharpness`][dynamics.landscape.with_sharpness]): at each state, the step sizes R of the
    gradient-descent step that has the optimiser's edge of stability, so that it is stable near a minimum
    only while λ_max(R¹ᐟ² H R¹ᐟ²) < 2.

    Plain GD needs none of this (its step sizes are R); a subclass says what R is for another
    optimiser, given the loss, the parameters and the optimiser's state at a save of
    [`train`][] (which hands that state to the save function as its `args`).

    **Example:** heavy-ball momentum μ ([`heavy_ball`][]) is stable on a quadratic while
    λη < 2(1 + μ): GD's edge at step η/(1 + μ). On a quadratic of sharpness 3 with η = 0.5 and
    μ = 0.9 the ratio is 3·0.5/(2·1.9) = 0.3947:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class MomentumSteps(dynamics.AbstractSteps):
        ...     rate: float
        ...     momentum: float
        ...
        ...     def edge_rates(self, loss, params, opt_state):
        ...         return self.rate / (1 + self.momentum)
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> nothing = dynamics.Save(every=2, fn=lambda *_: {})
        >>> save = dynamics.landscape.with_sharpness(nothing, loss, MomentumSteps(0.5, 0.9))
        >>> run = dynamics.train(loss, jnp.ones(2), dynamics.heavy_ball(0.5, 0.9), num_steps=2, save=save)
        >>> [round(float(r), 4) for r in run.values["sharpness_ratio"]]
        [0.3947, 0.3947]
    """

    @abc.abstractmethod
    def edge_rates(
        self, loss: Callable[[PyTree], Float[Array, ""]], params: PyTree, opt_state: PyTree
    ) -> Rates:
        """The step sizes R at `params`: a [`Rates`][] prefix of the parameters, or a PyTree
        like them with one step size per coordinate."""

    def edge_projection(self) -> Callable[[PyTree], PyTree] | None:
        """The projection Π onto the directions the steps move in, when they keep to a subspace
        (e.g. centred columns, for steps that keep column sums): the ratio is then
        λ_max(Π R¹ᐟ² H R¹ᐟ² Π)/2. `None` (the default): the steps move in every direction."""
        return None


class NormalizedSteps(AbstractSteps):
    """Normalized gradient descent with step sizes `rates` ([`normalized_gd`][]): block b moves by
    η_b along its gradient, the GD step of step size η_b/‖∇_b L‖ at the state it starts from
    (one η: η/‖∇L‖). Its flow is the normalized flow dθ_b/dt = −η_b ∇_b L/‖∇_b L‖, the gradient
    flow's path at normalized GD's speed ([`with_flow_distance`][dynamics.landscape.with_flow_distance]).

    **Fields:** `rates`: the step sizes, one per block (see `normalize_by_block`).

    **Example:** at θ = (1, 0) on ½θᵀHθ the gradient is (2, 1), so a normalized step of 0.5 is
    GD's with step 0.5/√5:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> step = dynamics.NormalizedSteps(0.5).edge_rates(loss, jnp.array([1.0, 0.0]), None)
        >>> round(float(step), 6), round(0.5 / 5**0.5, 6)
        (0.223607, 0.223607)
    """

    rates: Rates

    def edge_rates(self, loss, params, opt_state) -> Rates:
        grads = jax.grad(loss)(params)
        if jax.tree_util.treedef_is_leaf(jax.tree.structure(self.rates)):
            return self.rates / block_norm(grads)
        return jax.tree.map(lambda rate, block: rate / block_norm(block), self.rates, grads)


class AdamSteps(AbstractSteps):
    """Adam with learning rates `rates` ([`adam`][]): with its preconditioner P held, an Adam step
    is heavy-ball momentum β₁ on the loss preconditioned by P, stable while λ_max(P⁻¹H) <
    (2 + 2β₁)/((1 − β₁)η), 38/η at β₁ = 0.9: the adaptive edge of stability (Cohen et al., 2022).
    That is GD's edge with step sizes R = (1 − β₁)η / ((1 + β₁)P), where P = (1 − β₁ᵗ)(√v̂ + ε)
    is the preconditioner of the step to be taken from the state: its second moment
    v = β₂v + (1 − β₂)g² after t steps, bias-corrected v̂ = v/(1 − β₂ᵗ).

    v and t are read from the `optax.scale_by_adam` state inside the optimiser's state.

    **Fields:** `rates`, `b1`, `b2`, `eps`: those of [`adam`][].

    **Example:** one coordinate of curvature 2 at θ = 1 before the first step: g = 2, v̂ = 4,
    P = (1 − 0.9)(2 + 10⁻⁸), so R = 0.1·0.1/(1.9·0.2) = 0.026316:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: theta**2
        >>> theta = jnp.array(1.0)
        >>> state = dynamics.adam(0.1).init(theta)
        >>> round(float(dynamics.AdamSteps(0.1).edge_rates(loss, theta, state)), 6)
        0.026316
    """

    rates: Rates
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def edge_rates(self, loss, params, opt_state) -> Rates:
        adam = _adam_state(opt_state)
        grads = jax.grad(loss)(params)
        dtype = jnp.result_type(*jax.tree.leaves(params))
        t = (adam.count + 1).astype(dtype)
        first, second = 1 - jnp.power(self.b1, t), 1 - jnp.power(self.b2, t)

        def preconditioner(v, g):
            return first * (jnp.sqrt((self.b2 * v + (1 - self.b2) * g**2) / second) + self.eps)

        factor = (1 - self.b1) / (1 + self.b1)
        inverse = jax.tree.map(lambda v, g: factor / preconditioner(v, g), adam.nu, grads)
        return scale_tree(self.rates, inverse)


def _adam_state(opt_state: PyTree) -> optax.ScaleByAdamState:
    """The one `optax.ScaleByAdamState` in an optimiser's state."""

    def is_adam(node) -> bool:
        return isinstance(node, optax.ScaleByAdamState)

    found = [node for node in jax.tree.leaves(opt_state, is_leaf=is_adam) if is_adam(node)]
    if len(found) != 1:
        raise ValueError(
            f"AdamSteps reads the state of one Adam (optax.scale_by_adam) from the optimiser's state, "
            f"found {len(found)}: train with dynamics.adam"
        )
    return found[0]


class ProjectedSteps(AbstractSteps):
    r"""Gradient descent with fixed step sizes $R$ whose step is projected onto a subspace,
    $\theta \leftarrow \theta - \Pi R \nabla L(\theta)$, e.g. preconditioned steps that keep the column
    sums of a matrix ($\Pi$ centres each column, [`center_columns`][]). $\Pi$ must be an orthogonal
    projection that commutes with $R$ (a step size per column commutes with centring the columns). On
    that subspace the step is GD's with step 1 in the coordinates $\varphi = R^{-1/2} \theta$, so it is
    stable near a minimum only while $\lambda_{\max}(\Pi R^{1/2} H R^{1/2} \Pi) < 2$.

    **Fields:**

    - `rates`: R, a [`Rates`][] prefix of the parameters or one step size per coordinate.
    - `project`: Π, `tangent -> tangent` on PyTrees like the parameters.

    **Example:** GD with step 0.5 that keeps θ₁ + θ₂ on ½θᵀHθ, H = diag(1, 3): the directions it
    moves in are (1, −1)/√2, where the curvature is (1 + 3)/2 = 2, so the ratio is 2·0.5/2 = 0.5
    (without the projection it would be 3·0.5/2 = 0.75):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * (theta[0] ** 2 + 3 * theta[1] ** 2)
        >>> centre = lambda tangent: tangent - jnp.mean(tangent)
        >>> record = dynamics.landscape.with_sharpness(
        ...     dynamics.Save(fn=lambda *_: {}), loss, dynamics.ProjectedSteps(0.5, centre)
        ... )
        >>> round(float(record.fn(0, jnp.array([1.0, 0.0]), None)["sharpness_ratio"]), 8)
        0.5
    """

    rates: Rates
    project: Callable[[PyTree], PyTree]

    def edge_rates(self, loss, params, opt_state) -> Rates:
        return self.rates

    def edge_projection(self) -> Callable[[PyTree], PyTree]:
        return self.project


class ClippedSteps(AbstractSteps):
    """Gradient descent with step sizes R after clipping the gradient to global norm c
    (`optax.clip_by_global_norm`, or PyTorch's `clip_grad_norm_` with its ε): the step is GD's
    with step sizes R·min(1, c/(‖∇L‖ + ε)) at the state it starts from, so far from a minimum
    (a gradient longer than c) a clipped step is a normalized one.

    **Fields:**

    - `rates`: R, a [`Rates`][] prefix of the parameters (one step size per parameter group).
    - `max_norm`: c.
    - `eps`: ε, added to the norm (0 for optax, 10⁻⁶ for PyTorch).

    **Example:** at θ = (1, 0) on ½θᵀHθ the gradient is (2, 1), of norm √5 > 1: clipped to norm 1,
    a step of 0.5 is GD's with step 0.5/√5; near the minimum, where the gradient is short, it is
    GD's with step 0.5:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> steps = dynamics.ClippedSteps(0.5, max_norm=1.0)
        >>> round(float(steps.edge_rates(loss, jnp.array([1.0, 0.0]), None)), 6), round(0.5 / 5**0.5, 6)
        (0.223607, 0.223607)
        >>> float(steps.edge_rates(loss, jnp.array([0.01, 0.0]), None))
        0.5
    """

    rates: Rates
    max_norm: float
    eps: float = 0.0

    def edge_rates(self, loss, params, opt_state) -> Rates:
        norm = block_norm(jax.grad(loss)(params))
        scale = jnp.minimum(self.max_norm / (norm + self.eps), 1.0)
        return jax.tree.map(lambda rate: rate * scale, self.rates)
