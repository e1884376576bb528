"""The Gaussian-noise surrogate of mini-batch Algorithm 1 (Appendix I): the exact expected
preconditioned gradient plus Gaussian noise with the per-sample gradient covariance / B."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import dynamics

from ._instance import Instance
from ._model import LinearSCB, expected_preconditioned, precondition, sample, sample_gradients


def probe_gradients(model: LinearSCB, inst: Instance, key, probes: int) -> LinearSCB:
    """`probes` per-sample preconditioned gradients at `model` (leading axis = probe)."""
    b = sample(key, inst, probes)
    grads = jax.vmap(sample_gradients, in_axes=(None, 0, 0, 0))(model, b.context, b.last, b.label)
    return jax.vmap(precondition, in_axes=(0, None))(grads, inst.mu)


def surrogate_noise(
    model: LinearSCB, inst: Instance, key, *, batch: int, probes: int, covariance: str = "full"
) -> LinearSCB:
    """A draw of ξ ~ N(0, Σ(θ)/B), Σ = the per-sample covariance of the preconditioned gradient
    estimated from `probes` per-sample gradients at θ (recon).

    `covariance="full"`: ξ = Σ_m z_m (G_m − Ḡ) / √(M B) with z ~ N(0, I_M) (exactly the empirical
    covariance, correlations included); `"diagonal"`: independent entries with the empirical
    per-entry variances. Columns stay centred (every G_m has centred columns).

    **Raises:** `ValueError` for another `covariance`.
    """
    k1, k2 = jax.random.split(key)
    G = probe_gradients(model, inst, k1, probes)
    dtype = inst.mu.dtype
    scale = jnp.asarray(1.0 / np.sqrt(batch), dtype)
    if covariance == "full":
        z = jax.random.normal(k2, (probes,), dtype)
        norm = jnp.asarray(1.0 / np.sqrt(probes), dtype)
        return jax.tree.map(lambda g: scale * norm * jnp.tensordot(z, g - jnp.mean(g, axis=0), axes=1), G)
    if covariance == "diagonal":
        leaves, tree = jax.tree.flatten(G)
        keys = jax.random.split(k2, len(leaves))
        noise = [jnp.std(g, axis=0) * jax.random.normal(k, g.shape[1:], dtype) for g, k in zip(leaves, keys)]
        noise = [x - jnp.mean(x, axis=0, keepdims=True) for x in noise]
        return jax.tree.unflatten(tree, [scale * x for x in noise])
    raise ValueError(f"covariance must be 'full' or 'diagonal', got {covariance!r}")


def surrogate_stage(
    inst: Instance, model: LinearSCB, key, *, eta, lam, batch, steps, probes=512, covariance="full"
) -> LinearSCB:
    """Gaussian-noise surrogate of mini-batch Algorithm 1 (Appendix I; details recon):
    θ ← prox(θ − η (E G(θ) + ξ)), ξ from [`surrogate_noise`][] re-estimated every step, then the
    l1 prox with threshold η λ and re-projection on Q. Lets B be far larger than a real batch.

    **Returns:** the final [`LinearSCB`][].
    """
    prox = dynamics.proximal_l1(eta * lam, mask=LinearSCB(V=False, Q=True), column_sum=1.0)

    def step(p, k):
        noise = surrogate_noise(p, inst, k, batch=batch, probes=probes, covariance=covariance)
        u = jax.tree.map(lambda g, n: -eta * (g + n), expected_preconditioned(p, inst), noise)
        u, _ = prox.update(u, optax.EmptyState(), p)
        return jax.tree.map(jnp.add, p, u), None

    final, _ = jax.lax.scan(step, model, jax.random.split(key, steps))
    return final
