"""Positional encodings: one-hot (Definition 2), near-orthogonal (Definition 3) and the
stochastic samplers of Definition 5, each returning an `(m_E, T)` matrix whose columns are e_1..e_T."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._config import STSConfig


def onehot_pe(T: int, *, dtype=jnp.float64) -> Float[Array, "T T"]:
    """Definition 2: e_i = ê_i, E = I_T."""
    return jnp.eye(T, dtype=dtype)


def dictionary_onehot_pe(
    key: PRNGKeyArray, T: int, N: int, rho: float = 1.0, *, dtype=jnp.float64
) -> Float[Array, "N T"]:
    """`dictionary_onehot`: e_i = ρ ê_{π(i)} ∈ R^N for a uniformly random injective π: [T] → [N]."""
    slots = jax.random.permutation(key, N)[:T]
    return jnp.asarray(rho, dtype) * jax.nn.one_hot(slots, N, dtype=dtype).T


def padded_onehot_pe(T: int, N: int, rho: float = 1.0, *, dtype=jnp.float64) -> Float[Array, "N T"]:
    """Fixed `dictionary_onehot` (π(i) = i): the standard one-hot padded to N slots, times ρ."""
    return jnp.asarray(rho, dtype) * jnp.eye(N, T, dtype=dtype)


def haar_orthonormal_pe(
    key: PRNGKeyArray, T: int, m: int, rho: float = 1.0, *, dtype=jnp.float64
) -> Float[Array, "m T"]:
    """`haar_orthonormal`: the first T columns of a Haar-random orthogonal m × m matrix, times ρ
    (QR of a Gaussian matrix with the signs of R's diagonal fixed)."""
    g = jax.random.normal(key, (m, T), dtype)
    Q, R = jnp.linalg.qr(g)
    return jnp.asarray(rho, dtype) * Q * jnp.sign(jnp.diagonal(R))[None, :]


def iid_sphere_pe(
    key: PRNGKeyArray, T: int, m: int, rho: float = 1.0, *, dtype=jnp.float64
) -> Float[Array, "m T"]:
    """`iid_sphere`: columns i.i.d. uniform on the sphere of radius ρ in R^m (near-orthogonal only)."""
    g = jax.random.normal(key, (m, T), dtype)
    return jnp.asarray(rho, dtype) * g / jnp.linalg.norm(g, axis=0, keepdims=True)


def near_orthogonal_pe(key: PRNGKeyArray, n: int, m: int, *, dtype=jnp.float64) -> Float[Array, "m n"]:
    """Definition 3, near-orthogonal PE (recon): n unit vectors in R^m drawn uniformly on the sphere; their
    coherence max_{i≠j} |<e_i, e_j>| is at most δ = sqrt(6 ln n / m) with probability >= 1 − 1/n
    (sub-Gaussian tail 2 exp(−m δ²/2) and a union bound over pairs)."""
    return iid_sphere_pe(key, n, m, 1.0, dtype=dtype)


def coherence(E: Float[Array, "m n"]) -> Float[Array, ""]:
    """δ(E) = max_{i ≠ j} |<e_i, e_j>| / (||e_i|| ||e_j||)."""
    unit = E / jnp.linalg.norm(E, axis=0, keepdims=True)
    gram = unit.T @ unit
    return jnp.max(jnp.abs(gram - jnp.diag(jnp.diagonal(gram))))


def selection_scores(E: Float[Array, "m T"], y: Float[Array, " T"]) -> Float[Array, " T"]:
    """<e_j, s_y> for every position j, with s_y = Σ_{i∈y} e_i (the selection margin for
    coherence δ: >= ρ²(1 − (q−1)δ) inside y, <= ρ² q δ outside)."""
    return E.T @ (E @ y)


def sample_pe(
    config: STSConfig, key: PRNGKeyArray, T: int | None = None, *, dtype=jnp.float64
) -> Float[Array, "m_E T"]:
    """One PE matrix for length `T` (default `config.T`) under `config`: a fresh draw from `key` for
    stochastic PE, the frozen draw (seed `config.pe_seed`, `key` unused) for `fixed_pe` and `onehot`.

    **Raises:** `ValueError` if `T` exceeds what the PE serves.
    """
    T = config.T if T is None else T
    if T > config.lengths_served:
        raise ValueError(
            f"length {T} exceeds the lengths the PE serves (max_length = {config.lengths_served})"
        )
    sampler, m, rho = config.pe_sampler, config.m_E, config.rho
    if sampler == "onehot":
        return jnp.asarray(rho, dtype) * onehot_pe(T, dtype=dtype)
    if config.fixed_pe:
        if sampler == "dictionary_onehot":
            return padded_onehot_pe(T, m, rho, dtype=dtype)
        key = jax.random.PRNGKey(config.pe_seed)
        T_draw = config.lengths_served
    else:
        T_draw = T
    draw = {"dictionary_onehot": dictionary_onehot_pe, "haar_orthonormal": haar_orthonormal_pe}.get(
        sampler, iid_sphere_pe
    )
    return draw(key, T_draw, m, rho, dtype=dtype)[:, :T]
