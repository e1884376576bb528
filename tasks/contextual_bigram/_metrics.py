"""Line coordinates (Lemma C.1), the rounding 1→2 and normalisation 2→3 maps of Algorithm 1, the
population least-squares output layer and the Fig. 1 metrics."""

import jax.numpy as jnp
from jaxtyping import Array, Float

from ._data import Instance, k_p, k_q, mu_inner
from ._model import LinearSCB, population_loss


def line_coordinates(model: LinearSCB, inst: Instance) -> dict:
    """Projection onto the population lines (Lemma C.1, μ-weighted (recon)):
    β = ⟨V − μ1ᵀ, P̄⟩_μ / K_P, α = ⟨Q − 11ᵀ/T, Q̄*⟩_μ / K_Q, ΔV = V − μ1ᵀ − β P̄,
    ΔQ = Q − 11ᵀ/T − α Q̄*.

    **Returns:** dict with `alpha`, `beta`, `dV`, `dQ` (matrices), `dV_norm`, `dQ_norm` (μ-norms).
    """
    mu = inst.mu
    Pbar = inst.P - mu[:, None]
    one_t = jnp.asarray(1.0 / inst.T, mu.dtype)
    Qbar = inst.Q_star - one_t
    beta = mu_inner(model.V - mu[:, None], Pbar, mu) / k_p(inst)
    alpha = mu_inner(model.Q - one_t, Qbar, mu) / k_q(inst)
    dV = model.V - mu[:, None] - beta * Pbar
    dQ = model.Q - one_t - alpha * Qbar
    return dict(
        alpha=alpha,
        beta=beta,
        dV=dV,
        dQ=dQ,
        dV_norm=jnp.sqrt(mu_inner(dV, dV, mu)),
        dQ_norm=jnp.sqrt(mu_inner(dQ, dQ, mu)),
    )


def on_line(alpha, beta, inst: Instance) -> LinearSCB:
    """The point of the population lines (Eqn 7): V = μ1ᵀ + β P̄, Q = 11ᵀ/T + α Q̄*."""
    mu = inst.mu
    one_t = jnp.asarray(1.0 / inst.T, mu.dtype)
    return LinearSCB(V=mu[:, None] + beta * (inst.P - mu[:, None]), Q=one_t + alpha * (inst.Q_star - one_t))


def round_attention(Q: Float[Array, "T N"], theta) -> Float[Array, "T N"]:
    """Rounding 1→2 (between Stages 1 and 2 of Algorithm 1): zero the entries below `theta` in
    every column, then re-project the column onto {1ᵀq = 1} (every entry gets the same share of
    the deficit)."""
    kept = jnp.where(Q >= theta, Q, jnp.zeros((), Q.dtype))
    rows = jnp.asarray(Q.shape[0], Q.dtype)
    return kept + (1.0 - jnp.sum(kept, axis=0, keepdims=True)) / rows


def normalise_attention(Q: Float[Array, "T N"], theta) -> Float[Array, "T N"]:
    """Normalisation 2→3 (before Stage 3 of Algorithm 1, Appendix F):
    Q̂[t,k] = Q[t,k] 1{Q[t,k] ≥ θ} / Σ_s Q[s,k] 1{Q[s,k] ≥ θ} (a column with nothing above θ keeps
    its largest entry)."""
    keep = (Q >= theta) | (Q == jnp.max(Q, axis=0, keepdims=True))
    kept = jnp.where(keep, Q, jnp.zeros((), Q.dtype))
    return kept / jnp.sum(kept, axis=0, keepdims=True)


def least_squares_V(Q: Float[Array, "T N"], inst: Instance) -> Float[Array, "N N"]:
    """Population least squares in V for fixed Q with unit column sums (derived from the population loss):
    V_LS = μ1ᵀ + (c1/c2) P̄."""
    mu = inst.mu
    beta = mu_inner(Q, inst.Q_star, mu) / mu_inner(Q, Q, mu)
    return mu[:, None] + beta * (inst.P - mu[:, None])


def _cos(A, B):
    return jnp.sum(A * B) / (jnp.linalg.norm(A) * jnp.linalg.norm(B))


def metrics(model: LinearSCB, inst: Instance, theta3) -> dict:
    """The quantities of Fig. 1 and Appendix I: Frobenius distances to (P, Q⋆) before and after
    normalisation (Q̂ = normalise_attention(Q, θ₃), V̂ = V_LS(Q̂), an oracle diagnostic), raw and
    centred cosine similarities, line coordinates and distances to the lines, population loss.

    **Returns:** dict of scalars.
    """
    mu = inst.mu
    Q_hat = normalise_attention(model.Q, theta3)
    V_hat = least_squares_V(Q_hat, inst)
    one_t = jnp.asarray(1.0 / inst.T, mu.dtype)
    line = line_coordinates(model, inst)
    return dict(
        dist_V=jnp.linalg.norm(model.V - inst.P),
        dist_Q=jnp.linalg.norm(model.Q - inst.Q_star),
        dist_V_hat=jnp.linalg.norm(V_hat - inst.P),
        dist_Q_hat=jnp.linalg.norm(Q_hat - inst.Q_star),
        cos_V=_cos(model.V, inst.P),
        cos_Q=_cos(model.Q, inst.Q_star),
        cos_V_centred=_cos(model.V - mu[:, None], inst.P - mu[:, None]),
        cos_Q_centred=_cos(model.Q - one_t, inst.Q_star - one_t),
        alpha=line["alpha"],
        beta=line["beta"],
        dV_norm=line["dV_norm"],
        dQ_norm=line["dQ_norm"],
        loss=population_loss(model, inst),
        off_support=jnp.sum(jnp.where(inst.Q_star > 0, 0.0, jnp.abs(model.Q))),
    )
