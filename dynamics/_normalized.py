"""Normalized gradient descent with one normalisation per parameter block (optax normalizes globally)."""

import jax
import jax.numpy as jnp
import optax
from jaxtyping import PyTree

from ._rates import Rates, scale_by_group_rates


def block_norm(group: PyTree) -> jax.Array | None:
    """The Frobenius norm of the leaves of `group` together; `None` where it has none."""
    leaves = jax.tree.leaves(group)
    if not leaves:
        return None
    return jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in leaves))


def normalize_by_block(blocks: Rates = None) -> optax.GradientTransformation:
    """Divide each parameter block's update by that block's Frobenius norm.

    A block is the sub-PyTree found under one leaf of `blocks`, a prefix of the parameters'
    PyTree (the same structure as per-group rates, see `Rates`). A block whose gradient is
    exactly zero is left at zero (nothing is divided by 0), so the step it produces is 0.

    **Arguments:**

    - `blocks`: `None` (every leaf is its own block), a scalar (the whole PyTree is one block,
      which is optax's global normalisation), or a prefix PyTree whose leaves mark the blocks;
      its leaf values are ignored.

    **Returns:** an `optax.GradientTransformation` producing unit-norm updates per block.

    **Example:** every leaf its own block, then the whole PyTree as one block:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> grads = {"a": jnp.array([3.0, 0.0]), "b": jnp.array([0.0, 4.0])}
        >>> per_leaf = dynamics._normalized.normalize_by_block()
        >>> updates, _ = per_leaf.update(grads, per_leaf.init(grads))
        >>> {name: u.tolist() for name, u in updates.items()}
        {'a': [1.0, 0.0], 'b': [0.0, 1.0]}
        >>> whole = dynamics._normalized.normalize_by_block(1.0)
        >>> updates, _ = whole.update(grads, whole.init(grads))
        >>> {name: [round(float(x), 8) for x in u] for name, u in updates.items()}
        {'a': [0.6, 0.0], 'b': [0.0, 0.8]}
    """

    def normalize(group):
        norm = block_norm(group)
        if norm is None:
            return group

        def one(g):
            safe = jnp.where(norm > 0, norm, jnp.ones_like(norm))
            return jnp.where(norm > 0, g / safe, jnp.zeros_like(g))

        return jax.tree.map(one, group)

    def update(updates, params=None):
        del params
        if blocks is None:
            return jax.tree.map(normalize, updates)
        return jax.tree.map(lambda _, group: normalize(group), blocks, updates)

    return optax.stateless(update)


def normalized_gd(rates: Rates = None) -> optax.GradientTransformation:
    """Normalized gradient descent per block: `p_b ← p_b − η_b g_b / ‖g_b‖` for every block `b`.

    Each block moves by exactly its step size `η_b` (Frobenius norm of the change) unless its
    gradient is 0, in which case it does not move. This is Algorithm 1's update of Huang, Liang
    and Yang (NeurIPS 2024) when one block is trained at a time.

    **Arguments:**

    - `rates`: the step sizes, one per block; also define the blocks (see
      `normalize_by_block`). `None`: every leaf is a block with step 1.

    **Returns:** an `optax.GradientTransformation`.

    **Example:** each block moves by exactly its step size, however large its gradient:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import optax
        >>> import dynamics
        >>> params = {"a": jnp.array([3.0, 4.0]), "b": jnp.array([1.0, 0.0])}
        >>> loss = lambda p: jnp.sum(p["a"] ** 2) + 100.0 * jnp.sum(p["b"] ** 2)
        >>> optimizer = dynamics.normalized_gd({"a": 0.1, "b": 0.5})
        >>> updates, _ = optimizer.update(jax.grad(loss)(params), optimizer.init(params))
        >>> {name: round(float(jnp.linalg.norm(u)), 8) for name, u in updates.items()}
        {'a': 0.1, 'b': 0.5}
        >>> [round(float(x), 8) for x in optax.apply_updates(params, updates)["a"]]
        [2.94, 3.92]
    """
    return optax.chain(normalize_by_block(rates), scale_by_group_rates(rates))
