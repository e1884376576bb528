"""Metrics of the figures: attention entropy on distinct tokens (Fig. 6) and recall
curves (Figs. 11-12)."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Scalar

from ._classes import ClassArrays, SequenceClasses, to_class_arrays
from ._model import YZModel


def _class_average(values: Float[Array, "... K"], arrays: ClassArrays) -> Float[Array, "..."]:
    """Mean over the classes that have at least one distinct token."""
    has_dt = jnp.any(arrays.dt_mask, axis=-1).astype(values.dtype)
    return jnp.sum(values * has_dt, axis=-1) / jnp.sum(has_dt)


def distinct_token_entropy(model: YZModel, classes: SequenceClasses | ClassArrays) -> Scalar:
    r"""Average entropy of c_n on the distinct tokens (Fig. 6): for each class,
    $p_l \propto P(l \mid n)\, e^{z_{\psi(n), l}}$ over l ∈ G_DT(n) only, renormalised (Eqn 5
    restricted);
    H_n = −Σ_l p_l ln p_l in nats; averaged over the classes (those with G_DT(n) ≠ ∅).

    **Arguments:**

    - `model`: the Y/Z model.
    - `classes`: the sequence classes (a [`tasks.scan_snap.ClassArrays`][] inside `jit`).

    **Returns:**

    The average entropy; 2.1513 at Z = 0 on Syn-Medium (p ∝ linspace(0.1, 1, 10)).
    """
    arrays = to_class_arrays(classes, model.Z.dtype)
    z = model.Z[arrays.query]
    probs = arrays.probs.astype(z.dtype)
    mask = arrays.dt_mask
    has_dt = jnp.any(mask, axis=-1, keepdims=True)
    log_scores = jnp.where(mask, jnp.log(jnp.where(mask, probs, 1.0)) + z, -jnp.inf)
    log_p = jax.nn.log_softmax(jnp.where(has_dt, log_scores, 0.0), axis=-1)
    # log p = −inf off the distinct tokens: zero it before p · log p, or its gradient is NaN.
    log_p = jnp.where(mask, log_p, 0.0)
    entropy = -jnp.sum(jnp.exp(log_p) * log_p * mask.astype(log_p.dtype), axis=-1)
    return _class_average(entropy, arrays)


def recall_at_threshold(
    model: YZModel, classes: SequenceClasses | ClassArrays, taus: Float[ArrayLike, " S"]
) -> Float[Array, " S"]:
    r"""Recall of the distinct tokens at attention thresholds τ (Figs. 11-12):
    $a = \operatorname{softmax}(z_{\psi(n)})$ over all M tokens (uniform = 1/M); recall of class n =
    fraction of G_DT(n) with a_l > τ; averaged over the classes (those with G_DT(n) ≠ ∅). Which vector is
    thresholded and how it is averaged is our reading of the figures (recon).

    **Arguments:**

    - `model`: the Y/Z model.
    - `classes`: the sequence classes (a [`tasks.scan_snap.ClassArrays`][] inside `jit`).
    - `taus`: thresholds, shape (S,).

    **Returns:**

    The recall at each threshold, shape (S,).
    """
    arrays = to_class_arrays(classes, model.Z.dtype)
    attention = jax.nn.softmax(model.Z[arrays.query], axis=-1)
    taus = jnp.asarray(taus, dtype=attention.dtype)
    mask = arrays.dt_mask
    num_dt = jnp.maximum(jnp.sum(mask, axis=-1, dtype=attention.dtype), 1)

    def recall_above(tau: Scalar) -> Float[Array, " K"]:
        return jnp.sum((attention > tau) & mask, axis=-1, dtype=attention.dtype) / num_dt

    # One threshold at a time: the counts are exact either way, but a batched model's
    # (runs, S, K, M) comparison fuses on a GPU into one kernel that takes a minute to compile.
    recall = jax.lax.map(recall_above, taus)
    return _class_average(recall, arrays)
