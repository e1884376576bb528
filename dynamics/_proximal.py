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
    """The proximal map of `threshold·‖·‖₁`: sign(x)·max(|x| − threshold, 0), entrywise."""
    t = jnp.asarray(threshold, x.dtype)
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - t, jnp.zeros((), x.dtype))


def project_columns(x: Float[Array, "rows cols"], column_sum=1.0) -> Float[Array, "rows cols"]:
    """Euclidean projection of every column onto the affine set {1ᵀc = column_sum}: add the same
    amount, (column_sum − 1ᵀc)/rows, to each entry of the column."""
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

    **Arguments:** `mask`: the leaves to centre (see [`Mask`][]).

    **Returns:** an `optax.GradientTransformation` (stateless).
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
    - `mask`: the leaves to treat (see [`Mask`][]); other leaves pass through.
    - `column_sum`: the target column sum of the re-projection, or `None` for none.

    **Returns:** an `optax.GradientTransformation` (stateless) whose `update` needs `params`.
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
