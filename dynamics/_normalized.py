"""Normalized gradient descent with one normalisation per parameter block (optax normalizes globally)."""

import jax
import jax.numpy as jnp
import optax
from jaxtyping import PyTree

from ._rates import Rates, scale_by_group_rates


def _block_norm(group: PyTree) -> jax.Array | None:
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
    """

    def normalize(group):
        norm = _block_norm(group)
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
      [`normalize_by_block`][]). `None`: every leaf is a block with step 1.

    **Returns:** an `optax.GradientTransformation`.
    """
    return optax.chain(normalize_by_block(rates), scale_by_group_rates(rates))
