"""The Gaussian-noise surrogate of mini-batch Algorithm 1 (Appendix I): the exact expected
preconditioned gradient plus Gaussian noise with the per-sample gradient covariance / B."""

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
import optax

import dynamics

from ._algorithm import _theta3, round_1_2, stage3_least_squares
from ._data import Instance
from ._metrics import metrics
from ._model import LinearSCB, expected_preconditioned, precondition, sample, sample_gradients

if TYPE_CHECKING:
    from ._simulate import Algorithm1


def probe_gradients(model: LinearSCB, inst: Instance, key, probes: int) -> LinearSCB:
    """`probes` per-sample preconditioned gradients at `model` (leading axis = probe)."""
    b = sample(key, inst, probes)
    grads = jax.vmap(sample_gradients, in_axes=(None, 0, 0, 0))(model, b.context, b.last, b.label)
    return jax.vmap(precondition, in_axes=(0, None))(grads, inst.mu)


def surrogate_noise(
    model: LinearSCB, inst: Instance, key, *, batch: int, probes: int, covariance: str = "full"
) -> LinearSCB:
    """A draw of ξ ∼ N(0, Σ(θ)/B), Σ = the per-sample covariance of the preconditioned gradient
    estimated from `probes` per-sample gradients at θ (recon).

    `covariance="full"`: ξ = Σ_m z_m (G_m − Ḡ) / √(M B) with z ∼ N(0, I_M) (exactly the empirical
    covariance, correlations included); `"diagonal"`: independent entries with the empirical
    per-entry variances. Columns stay centred (every G_m has centred columns). Over the draw of the
    probes the full form's covariance is (M − 1)/M · Σ/B for any M = `probes`: more probes only
    bring a single draw closer to Gaussian.

    **Raises:** `ValueError` for another `covariance`.
    """
    k1, k2 = jax.random.split(key)
    G = probe_gradients(model, inst, k1, probes)
    dtype = inst.mu.dtype
    scale = jnp.asarray(1.0 / np.sqrt(float(batch)), dtype)
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


def run_later_stages_surrogate(
    inst: Instance, start: LinearSCB, key, cfg: "Algorithm1", probes: int = 64
) -> dict:
    """Algorithm 1 from Stage 2 with the Gaussian-noise surrogate in place of mini-batches, as the
    paper's Appendix I runs larger N: the rounding 1→2 (θ₁ from the α of `start`),
    `cfg.stage2_steps` steps of [`surrogate_stage`][] at batch `cfg.batch` (step η₂, l1 weight λ,
    full covariance from `probes` per-sample gradients per step), then the normalisation 2→3 and
    the population least-squares V (Stage 3 `least_squares`). A step costs `probes` per-sample
    gradients whatever the batch B it stands for.

    **Arguments:** `inst`; `start`; `key`; `cfg`: an [`Algorithm1`][] (its Stage 2-3 fields);
    `probes`.

    **Returns:** dict: `stage2_model`, `stage2_metrics` (before the normalisation),
    `final_model`, `final_metrics` (after Stage 3), as [`run_later_stages`][] names them.

    **Raises:** `ValueError` unless `cfg.stage3` is `"least_squares"`.
    """
    if cfg.stage3 != "least_squares":
        raise ValueError(f"the surrogate runs Stage 3 as least_squares only, got stage3={cfg.stage3!r}")
    theta3 = _theta3(inst, cfg.c_f)
    model2 = surrogate_stage(
        inst,
        round_1_2(start, inst, cfg.theta1_fraction),
        key,
        eta=cfg.eta2,
        lam=cfg.lam,
        batch=cfg.batch,
        steps=cfg.stage2_steps,
        probes=probes,
    )
    final = stage3_least_squares(model2, inst, theta3)
    return dict(
        stage2_model=model2,
        stage2_metrics=metrics(model2, inst, theta3),
        final_model=final,
        final_metrics=metrics(final, inst, theta3),
    )
