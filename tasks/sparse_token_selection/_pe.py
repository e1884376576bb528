"""Positional encodings: one-hot (Definition 2), near-orthogonal (Definition 3) and the
stochastic samplers of Definition 5, each returning an `(m_E, T)` matrix whose columns are e₁, …, e_T;
the one-hot families' draws also as their slots ([`SlotPE`][])."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ._config import STSConfig


def onehot_pe(T: int, *, dtype=jnp.float64) -> Float[Array, "T T"]:
    """Definition 2: e_i = ê_i, E = I_T."""
    return jnp.eye(T, dtype=dtype)


def dictionary_onehot_pe(
    key: PRNGKeyArray, T: int, N: int, rho: float = 1.0, *, dtype=jnp.float64
) -> Float[Array, "N T"]:
    r"""`dictionary_onehot`: $e_i = \rho\, \hat{e}_{\pi(i)} \in \mathbb{R}^N$ for a uniformly random injective
    π: [T] → [N]."""
    slots = jax.random.permutation(key, N)[:T]
    return jnp.asarray(rho, dtype) * jax.nn.one_hot(slots, N, dtype=dtype).T


class SlotPE(eqx.Module):
    r"""A one-hot PE stored as its slots: column i of E is
    $\rho\, \hat{e}_{\mathrm{slots}[i]} \in \mathbb{R}^N$. It stands in for the dense `(N, T)` matrix
    wherever the model reads E (the `onehot` and `dictionary_onehot` families), at O(T) cost per
    product instead of O(N T).

    **Fields:**

    - `slots`: `(T,)` distinct integers in [0, N) (a leading batch axis in a [`Batch`][]).
    - `rho`: the PE norm ρ (static).
    - `N`: the number of slots m_E (static).

    **Example:**

    ```pycon
    >>> import jax.numpy as jnp
    >>> E = SlotPE(jnp.array([2, 0]), rho=1.0, N=3)
    >>> E.dense()
    Array([[0., 1.],
           [0., 0.],
           [1., 0.]], dtype=float32)
    >>> E.combine(jnp.array([1.0, 2.0], dtype=jnp.float32))  # E @ w
    Array([2., 0., 1.], dtype=float32)

    ```
    """

    slots: Int[Array, " T"]
    rho: float = eqx.field(static=True)
    N: int = eqx.field(static=True)

    def combine(self, w: Float[Array, " T"]) -> Float[Array, " N"]:
        r"""$E w = \rho \sum_i w_i \hat{e}_{\mathrm{slots}[i]}$."""
        return jnp.zeros((self.N,), w.dtype).at[self.slots].add(jnp.asarray(self.rho, w.dtype) * w)

    def scores(self, u: Float[Array, " N"]) -> Float[Array, " T"]:
        """Eᵀ u = ρ u[slots]."""
        return jnp.asarray(self.rho, u.dtype) * u[self.slots]

    def dense(self, *, dtype=jnp.float32) -> Float[Array, "N T"]:
        """The `(N, T)` matrix E."""
        return jnp.asarray(self.rho, dtype) * jax.nn.one_hot(self.slots, self.N, dtype=dtype).T


ONEHOT_FAMILIES = ("onehot", "dictionary_onehot")
"""The PE families whose draws [`sample_slots`][] returns as a [`SlotPE`][]."""


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
    """`iid_sphere`: columns i.i.d. uniform on the sphere of radius ρ in ℝᵐ (near-orthogonal only)."""
    g = jax.random.normal(key, (m, T), dtype)
    return jnp.asarray(rho, dtype) * g / jnp.linalg.norm(g, axis=0, keepdims=True)


def near_orthogonal_pe(key: PRNGKeyArray, n: int, m: int, *, dtype=jnp.float64) -> Float[Array, "m n"]:
    r"""Definition 3, near-orthogonal PE (recon): n unit vectors in ℝᵐ drawn uniformly on the sphere; their
    coherence $\max_{i \neq j} |\langle e_i, e_j \rangle|$ is at most $\delta = \sqrt{6 \ln n / m}$ with
    probability ≥ 1 − 1/n (sub-Gaussian tail 2 exp(−m δ²/2) and a union bound over pairs)."""
    return iid_sphere_pe(key, n, m, 1.0, dtype=dtype)


def coherence(E: Float[Array, "m n"]) -> Float[Array, ""]:
    r"""$\delta(E) = \max_{i \neq j} |\langle e_i, e_j \rangle| / (\lVert e_i \rVert \lVert e_j \rVert)$."""
    unit = E / jnp.linalg.norm(E, axis=0, keepdims=True)
    gram = unit.T @ unit
    return jnp.max(jnp.abs(gram - jnp.diag(jnp.diagonal(gram))))


def selection_scores(E: Float[Array, "m T"], y: Float[Array, " T"]) -> Float[Array, " T"]:
    r"""$\langle e_j, s_y \rangle$ for every position j, with $s_y = \sum_{i \in y} e_i$ (the selection
    margin for coherence δ: ≥ ρ²(1 − (q−1)δ) inside y, ≤ ρ² q δ outside)."""
    return E.T @ (E @ y)


def _check_served(config: STSConfig, T: int) -> None:
    if T > config.lengths_served:
        raise ValueError(
            f"length {T} exceeds the lengths the PE serves (max_length = {config.lengths_served})"
        )


def sample_pe(
    config: STSConfig, key: PRNGKeyArray, T: int | None = None, *, dtype=jnp.float64
) -> Float[Array, "m_E T"]:
    """One PE matrix for length `T` (default `config.T`) under `config`: a fresh draw from `key` for
    stochastic PE, the frozen draw (seed `config.pe_seed`, `key` unused) for `fixed_pe` and `onehot`.

    **Raises:** `ValueError` if `T` exceeds what the PE serves.
    """
    T = config.T if T is None else T
    _check_served(config, T)
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


def sample_slots(config: STSConfig, key: PRNGKeyArray, T: int | None = None) -> SlotPE:
    """[`sample_pe`][]'s draw for a one-hot family as a [`SlotPE`][]: the same matrix from the same
    `key` (`sample_slots(...).dense()` equals `sample_pe(...)`).

    **Raises:** `ValueError` for a PE outside [`ONEHOT_FAMILIES`][] or a `T` the PE does not serve.
    """
    T = config.T if T is None else T
    if config.pe_sampler not in ONEHOT_FAMILIES:
        raise ValueError(f"slots exist only for the PE families {ONEHOT_FAMILIES}, got {config.pe_sampler!r}")
    _check_served(config, T)
    if config.pe_sampler == "onehot" or config.fixed_pe:
        slots = jnp.arange(T)
    else:
        slots = jax.random.permutation(key, config.m_E)[:T]
    return SlotPE(slots, float(config.rho), config.m_E)
