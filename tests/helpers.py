"""Helpers shared by the tests."""

import jax
import numpy as np


def tree_allclose(x, y, *, rtol=1e-10, atol=1e-12) -> bool:
    """True when two PyTrees have the same structure and all leaves are close."""
    leaves_x, tree_x = jax.tree_util.tree_flatten(x)
    leaves_y, tree_y = jax.tree_util.tree_flatten(y)
    if tree_x != tree_y:
        return False
    return all(
        np.shape(a) == np.shape(b) and np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
        for a, b in zip(leaves_x, leaves_y)
    )
