"""Per-parameter-group rates: the `R` in dθ/dt = −R ⊙ ∇L(θ) and the learning rates of discrete steps."""

from typing import Any

import jax
import jax.numpy as jnp
import optax
from jaxtyping import PyTree

Rates = Any
"""`None` (every rate is 1), one scalar for every leaf, or a PyTree that is a prefix of the
parameters' PyTree with a scalar (or a broadcastable array) at each of its leaves — e.g. a model
of the same class whose array fields hold the rates of those fields."""


def scale_tree(rates: Rates, tree: PyTree, sign: float = 1.0) -> PyTree:
    """Multiply each leaf of `tree` by `sign` times its group's rate.

    **Arguments:**

    - `rates`: see [`Rates`][]; a prefix of `tree`.
    - `tree`: the PyTree to scale (gradients or updates).
    - `sign`: +1 or −1.

    **Returns:** a PyTree like `tree`; each leaf keeps its dtype.

    **Example:** the right-hand side −R ⊙ g of a gradient flow with rate 0.5 for `a`, 2 for `b`:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> grads = {"a": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)}
        >>> scaled = dynamics._rates.scale_tree({"a": 0.5, "b": 2.0}, grads, sign=-1.0)
        >>> scaled["a"].tolist(), scaled["b"].tolist(), scaled["b"].dtype
        ([-0.5, -1.0], -6.0, dtype('float64'))
    """
    if rates is None:
        return jax.tree.map(lambda g: sign * g, tree)

    def scale_group(rate, group):
        return jax.tree.map(lambda g: sign * jnp.asarray(rate, g.dtype) * g, group)

    return jax.tree.map(scale_group, rates, tree)


def scale_by_group_rates(rates: Rates) -> optax.GradientTransformation:
    """Multiply updates by −rate, one rate per parameter group.

    The per-group counterpart of `optax.scale_by_learning_rate` (which takes one rate for all
    parameters). Rates may be traced values, so a whole training run can be differentiated
    with respect to them.

    **Arguments:**

    - `rates`: see [`Rates`][].

    **Returns:** an `optax.GradientTransformation`.

    **Example:** the last link of an optax chain, here after clipping, with a learning rate per
    group:

        >>> import jax.numpy as jnp
        >>> import optax
        >>> import dynamics
        >>> grads = {"a": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)}
        >>> optimizer = optax.chain(optax.clip(2.0), dynamics.scale_by_group_rates({"a": 0.5, "b": 0.25}))
        >>> updates, _ = optimizer.update(grads, optimizer.init(grads))
        >>> updates["a"].tolist(), updates["b"].tolist()
        ([-0.5, -1.0], -0.5)
    """

    def update(updates, params=None):
        del params
        return scale_tree(rates, updates, sign=-1.0)

    return optax.stateless(update)


def gd(rates: Rates) -> optax.GradientTransformation:
    """Plain (stochastic) gradient descent p ← p − η g with a rate per group.

    **Example:** 10 steps of GD with η = 0.1 on L(θ) = ½‖θ‖² give θ₁₀ = 0.9¹⁰ θ₀:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * jnp.sum(theta**2)
        >>> run = dynamics.train(loss, jnp.array([1.0, -2.0]), dynamics.gd(0.1), num_steps=10)
        >>> [round(float(x), 6) for x in run.final], round(0.9**10, 6)
        ([0.348678, -0.697357], 0.348678)
    """
    return scale_by_group_rates(rates)


def heavy_ball(rates: Rates, momentum: float = 0.9) -> optax.GradientTransformation:
    """Heavy-ball momentum in the PyTorch form: v ← μ v + g; p ← p − η v (v₀ = 0, no dampening).

    **Arguments:**

    - `rates`: the learning rates η, one per group (see [`Rates`][]).
    - `momentum`: μ ∈ [0, 1).

    **Returns:** an `optax.GradientTransformation`.

    **Example:** on L(θ) = ½θ² from θ₀ = 1 with η = 0.1, μ = 0.9: v₁ = 1, θ₁ = 0.9; then
    v₂ = 0.9 + 0.9, θ₂ = 0.72:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta**2
        >>> run = dynamics.train(loss, jnp.array(1.0), dynamics.heavy_ball(0.1, 0.9), num_steps=2)
        >>> [round(float(theta), 8) for theta in run.values]
        [1.0, 0.9, 0.72]
    """
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    return optax.chain(optax.trace(decay=momentum), scale_by_group_rates(rates))


def adam(rates: Rates, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> optax.GradientTransformation:
    """Adam (PyTorch defaults) with a learning rate per group: p ← p − η m̂ / (√v̂ + ε).

    **Example:** Adam's first step moves every coordinate by about η, whatever its gradient's
    scale:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * jnp.sum(theta**2)
        >>> run = dynamics.train(loss, jnp.array([1.0, 100.0]), dynamics.adam(0.01), num_steps=1)
        >>> [round(float(x), 6) for x in run.final]
        [0.99, 99.99]
    """
    return optax.chain(
        _standard_promotion(optax.scale_by_adam(b1=b1, b2=b2, eps=eps)), scale_by_group_rates(rates)
    )


def _standard_promotion(inner: optax.GradientTransformation) -> optax.GradientTransformation:
    """Run `inner` under JAX's standard dtype promotion: optax mixes its integer step count with
    float decay rates, which strict promotion (used in the tests) rejects."""

    def init(params):
        with jax.numpy_dtype_promotion("standard"):
            return inner.init(params)

    def update(updates, state, params=None):
        with jax.numpy_dtype_promotion("standard"):
            return inner.update(updates, state, params)

    return optax.GradientTransformation(init, update)
