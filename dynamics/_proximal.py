"""Column-wise optax steps for matrices whose columns live on an affine set {1ᵀx = s}: column
preconditioning, column centring (projection onto the tangent space), and an l1 proximal step
(soft threshold) followed by re-projection onto the affine set.

Each transformation acts on chosen leaves only. A *mask* is `None` (every array leaf), a
predicate `(path, leaf) -> bool`, or a PyTree prefix of the parameters with a `bool` at each of
its leaves (e.g. a model of the same class whose fields hold `True`/`False`).
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, PyTree

Mask = None | Callable[[Any, Any], bool] | PyTree
"""Which leaves a transformation touches: see the module docstring."""


def _leaf_mask(mask: Mask, tree: PyTree) -> PyTree:
    """A PyTree of Python bools with the structure of `tree`."""
    if mask is None:
        return jax.tree.map(lambda _: True, tree)
    if callable(mask) and jax.tree_util.treedef_is_leaf(jax.tree.structure(mask)):
        return jax.tree_util.tree_map_with_path(lambda path, x: bool(mask(path, x)), tree)
    return jax.tree.map(lambda m, sub: jax.tree.map(lambda _: bool(m), sub), mask, tree)


def _apply(mask: Mask, fn: Callable, tree: PyTree, *others: PyTree) -> PyTree:
    flags = _leaf_mask(mask, tree)
    return jax.tree.map(lambda m, x, *rest: fn(x, *rest) if m else x, flags, tree, *others)


def soft_threshold(x: Float[Array, "..."], threshold) -> Float[Array, "..."]:
    """The proximal map of `threshold·‖·‖₁`: sign(x)·max(|x| − threshold, 0), entrywise.

    **Example:**

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> dynamics._proximal.soft_threshold(jnp.array([-2.0, 0.5, 3.0]), 1.0).tolist()
        [-1.0, 0.0, 2.0]
    """
    t = jnp.asarray(threshold, x.dtype)
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - t, jnp.zeros((), x.dtype))


def project_columns(x: Float[Array, "rows cols"], column_sum=1.0) -> Float[Array, "rows cols"]:
    """Euclidean projection of every column onto the affine set {1ᵀc = column_sum}: add the same
    amount, (column_sum − 1ᵀc)/rows, to each entry of the column.

    **Example:** columns summing to 0.5 and 2 moved onto column sums of 1:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> from dynamics._proximal import project_columns
        >>> projected = project_columns(jnp.array([[0.5, 1.0], [0.0, 1.0]]), column_sum=1.0)
        >>> projected.tolist(), projected.sum(axis=0).tolist()
        ([[0.75, 0.5], [0.25, 0.5]], [1.0, 1.0])
    """
    rows = jnp.asarray(x.shape[0], x.dtype)
    deficit = jnp.asarray(column_sum, x.dtype) - jnp.sum(x, axis=0, keepdims=True)
    return x + deficit / rows


def scale_columns(scales: PyTree) -> optax.GradientTransformation:
    """Multiply column j of each chosen update by `scales[j]` (right-multiplication by diag(s)):
    the importance-weighting preconditioner g ↦ g D⁻¹ when s = 1/μ.

    **Arguments:**

    - `scales`: a PyTree prefix of the parameters with a 1-D array (one entry per column) or
      `None` (leave unchanged) at each of its leaves.

    **Returns:** an `optax.GradientTransformation` (stateless).

    **Example:** halve the second column of `W`'s update, leave `b`'s alone:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> grads = {"W": jnp.ones((2, 2)), "b": jnp.ones(2)}
        >>> transform = dynamics.scale_columns({"W": jnp.array([1.0, 0.5]), "b": None})
        >>> updates, _ = transform.update(grads, transform.init(grads))
        >>> updates["W"].tolist(), updates["b"].tolist()
        ([[1.0, 0.5], [1.0, 0.5]], [1.0, 1.0])
    """

    def update(updates, params=None):
        del params

        def scale_group(s, group):
            if s is None:
                return group
            return jax.tree.map(lambda g: g * jnp.asarray(s, g.dtype), group)

        return jax.tree.map(scale_group, scales, updates, is_leaf=lambda x: x is None)

    return optax.stateless(update)


def center_columns(mask: Mask = None) -> optax.GradientTransformation:
    """Subtract each column's mean from the chosen updates, g ↦ (I − 11ᵀ/rows) g: the projection
    onto the tangent space of {1ᵀx = s}, so additive steps keep every column sum.

    **Arguments:** `mask`: the leaves to centre (see `Mask`).

    **Returns:** an `optax.GradientTransformation` (stateless).

    **Example:** gradient descent that keeps the column sums of `W` (and moves `b` freely):

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import optax
        >>> import dynamics
        >>> params = {"W": jnp.array([[0.5, 0.5], [0.5, 0.5]]), "b": jnp.zeros(2)}
        >>> loss = lambda p: jnp.sum(p["W"][0] ** 2) + jnp.sum((p["b"] - 1.0) ** 2)
        >>> optimizer = optax.chain(dynamics.center_columns({"W": True, "b": False}), dynamics.gd(0.1))
        >>> updates, _ = optimizer.update(jax.grad(loss)(params), optimizer.init(params))
        >>> new = optax.apply_updates(params, updates)
        >>> [[round(float(x), 8) for x in row] for row in new["W"]]
        [[0.45, 0.45], [0.55, 0.55]]
        >>> [round(float(x), 8) for x in new["W"].sum(axis=0)], [round(float(x), 8) for x in new["b"]]
        ([1.0, 1.0], [0.2, 0.2])
    """

    def update(updates, params=None):
        del params
        return _apply(mask, lambda g: g - jnp.mean(g, axis=0, keepdims=True), updates)

    return optax.stateless(update)


def proximal_l1(threshold, mask: Mask = None, column_sum=None) -> optax.GradientTransformation:
    """An l1 proximal step with affine re-projection, as the last link of a chain.

    With `u` the incoming (already scaled, signed) update and `p` the parameters, the outgoing
    update is `prox(p + u) − p` where `prox(z) = project_columns(soft_threshold(z, threshold))`
    (the re-projection is skipped when `column_sum` is `None`); so `optax.apply_updates` lands
    on the proximal point. For the objective f + λ‖·‖₁ with step η use `threshold = η λ`.

    **Arguments:**

    - `threshold`: the soft-threshold level (≥ 0; a scalar, possibly traced).
    - `mask`: the leaves to treat (see `Mask`); other leaves pass through.
    - `column_sum`: the target column sum of the re-projection, or `None` for none.

    **Returns:** an `optax.GradientTransformation` (stateless) whose `update` needs `params`.

    **Example:** a proximal gradient step with η = 0.1 and λ = 2 (so `threshold = 0.2`): the
    small entry becomes 0; with `column_sum=1.0` the columns are then moved back onto sum 1:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import optax
        >>> import dynamics
        >>> W = jnp.array([[0.6, 0.1], [0.4, 0.9]])
        >>> loss = lambda W: 0.5 * jnp.sum((W - 0.5) ** 2)
        >>> def step(optimizer):
        ...     updates, _ = optimizer.update(jax.grad(loss)(W), optimizer.init(W), W)
        ...     return optax.apply_updates(W, updates)
        >>> sparse = step(optax.chain(dynamics.gd(0.1), dynamics.proximal_l1(0.2)))
        >>> [[round(float(x), 4) for x in row] for row in sparse]
        [[0.39, 0.0], [0.21, 0.66]]
        >>> new = step(optax.chain(dynamics.gd(0.1), dynamics.proximal_l1(0.2, column_sum=1.0)))
        >>> [[round(float(x), 4) for x in row] for row in new]
        [[0.59, 0.17], [0.41, 0.83]]
        >>> [round(float(x), 8) for x in new.sum(axis=0)]
        [1.0, 1.0]
    """

    def prox(u, p):
        z = soft_threshold(p + u, threshold)
        if column_sum is not None:
            z = project_columns(z, column_sum)
        return z - p

    def update(updates, params=None):
        if params is None:
            raise ValueError("proximal_l1 needs params: call update(updates, state, params)")
        return _apply(mask, prox, updates, params)

    return optax.stateless(update)
