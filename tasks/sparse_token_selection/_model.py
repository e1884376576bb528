"""The models: the one-layer transformer f = V Z softmax(Zᵀ W z_q) (theory model at zero init,
practical model at random init), its ground truth (W⋆, V⋆) and the FCN baseline, all recon (see
"Task and model" on the sparse_token_selection page of the documentation)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._config import STSConfig
from ._pe import SlotPE


def _pe_combine(E: Float[Array, "m T"] | SlotPE, w: Float[Array, " T"]) -> Float[Array, " m"]:
    """E w, the PE columns weighted by w (a scatter for a [`SlotPE`][])."""
    return E.combine(w) if isinstance(E, SlotPE) else E @ w


def _pe_scores(E: Float[Array, "m T"] | SlotPE, u: Float[Array, " m"]) -> Float[Array, " T"]:
    """Eᵀ u, each PE column's product with u (a gather for a [`SlotPE`][])."""
    return E.scores(u) if isinstance(E, SlotPE) else E.T @ u


class STSTransformer(eqx.Module):
    """Single-head one-layer attention (recon): `f(X, y; W, V) = V Z softmax(Z^T W z_q)` with
    `Z = [X; E]`, `z_q = [x_query; s_y]`, `s_y = E 1_y`; no scaling, residual, MLP, LayerNorm or
    biases. `E` is a dense `(m_E, T)` matrix or, for the one-hot families, a [`SlotPE`][]; Z is
    never formed: the products with it are taken block by block, those with E as a gather and a
    scatter for a `SlotPE` (O(T) instead of O(m_E T)).

    **Fields:**

    - `W`: `(D, D)` attention matrix, blocks `[[W_XX, W_XE], [W_EX, W_EE]]`.
    - `V`: `(d, D)` value matrix, blocks `[V_X, V_E]`.
    - `d`: token dimension (static).
    - `keys`: `tokens` (keys/values are the T columns of Z) or `tokens_and_query` (`[Z, z_q]`).
    """

    W: Float[Array, "D D"]
    V: Float[Array, "d D"]
    d: int = eqx.field(static=True)
    keys: str = eqx.field(static=True, default="tokens")

    def scores(
        self,
        X: Float[Array, "d T"],
        y: Float[Array, " T"],
        E: Float[Array, "m T"] | SlotPE,
        x_query: Float[Array, " d"],
    ) -> tuple[Float[Array, " K"], Float[Array, " D"]]:
        """The attention scores `Z^T W z_q` over the keys, and the query `z_q`."""
        z_q = jnp.concatenate([x_query, _pe_combine(E, y)])
        u = self.W @ z_q
        scores = X.T @ u[: self.d] + _pe_scores(E, u[self.d :])
        if self.keys == "tokens_and_query":
            scores = jnp.append(scores, z_q @ u)
        return scores, z_q

    def read(
        self,
        X: Float[Array, "d T"],
        E: Float[Array, "m T"] | SlotPE,
        z_q: Float[Array, " D"],
        p: Float[Array, " K"],
    ) -> Float[Array, " D"]:
        """The keys weighted by the attention `p`: `Z p` (plus `p_query z_q` for `tokens_and_query`)."""
        T = X.shape[1]
        read = jnp.concatenate([X @ p[:T], _pe_combine(E, p[:T])])
        if self.keys == "tokens_and_query":
            read = read + p[T] * z_q
        return read

    def attention(
        self,
        X: Float[Array, "d T"],
        y: Float[Array, " T"],
        E: Float[Array, "m T"] | SlotPE,
        x_query: Float[Array, " d"],
    ) -> Float[Array, " K"]:
        """softmax(Zᵀ W z_q) over the keys."""
        return jax.nn.softmax(self.scores(X, y, E, x_query)[0])

    def __call__(
        self,
        X: Float[Array, "d T"],
        y: Float[Array, " T"],
        E: Float[Array, "m T"] | SlotPE,
        x_query: Float[Array, " d"],
    ) -> Float[Array, " d"]:
        """The prediction of STS_q(X, y) for one example."""
        scores, z_q = self.scores(X, y, E, x_query)
        return self.V @ self.read(X, E, z_q, jax.nn.softmax(scores))


def zero_init(config: STSConfig, *, dtype=jnp.float64) -> STSTransformer:
    r"""$W(0) = 0_{D \times D}$, $V(0) = 0_{d \times D}$ (Theorem 1's initialisation)."""
    D = config.D
    return STSTransformer(jnp.zeros((D, D), dtype), jnp.zeros((config.d, D), dtype), config.d, config.keys)


def random_init(config: STSConfig, key: PRNGKeyArray, *, dtype=jnp.float64) -> STSTransformer:
    """The practical model's init (Fig. 3; σ_0 is recon): every entry N(0, σ_0²),
    σ_0 = `config.init_scale`."""
    kw, kv = jax.random.split(key)
    s = jnp.asarray(config.init_scale, dtype)
    D = config.D
    W = s * jax.random.normal(kw, (D, D), dtype)
    V = s * jax.random.normal(kv, (config.d, D), dtype)
    return STSTransformer(W, V, config.d, config.keys)


def from_blocks(
    config: STSConfig, W_EE: Float[Array, "m m"], V_X: Float[Array, "d d"], *, dtype=jnp.float64
) -> STSTransformer:
    """The transformer whose only non-zero blocks are W_EE and V_X (the reparameterisation of
    Definition 4 (recon): `f = V_X X softmax(E^T W_EE s_y)` when x_query = 0)."""
    d, D = config.d, config.D
    W = jnp.zeros((D, D), dtype).at[d:, d:].set(jnp.asarray(W_EE, dtype))
    V = jnp.zeros((d, D), dtype).at[:, :d].set(jnp.asarray(V_X, dtype))
    return STSTransformer(W, V, d, config.keys)


def definition4_part(model: STSTransformer) -> STSTransformer:
    """The model with every block but W_EE and V_X set to zero: the reparameterised model of
    Definition 4 (recon), `f = V_X X softmax(E^T W_EE s_y)` when x_query = 0. Training
    `loss(definition4_part(m), batch)` trains only those two blocks (the others get zero gradient).
    """
    d = model.d
    W = jnp.zeros_like(model.W).at[d:, d:].set(model.W[d:, d:])
    V = jnp.zeros_like(model.V).at[:, :d].set(model.V[:, :d])
    return eqx.tree_at(lambda m: (m.W, m.V), model, (W, V))


def centring(n: int, *, dtype=jnp.float64) -> Float[Array, "n n"]:
    """M_n = I_n − (1/n) 1 1ᵀ."""
    return jnp.eye(n, dtype=dtype) - jnp.full((n, n), 1.0 / n, dtype)


def from_scalars(config: STSConfig, gamma, a, *, dtype=jnp.float64) -> STSTransformer:
    """A point of Lemma B's invariant set (derived): `W_EE = a M` ($M = M_{m_E}$ for the one-hot families,
    $I_{m_E}$ for the rotation-invariant ones), `V = [γ I_d, 0]`."""
    M = pe_block_direction(config, dtype=dtype)
    return from_blocks(
        config, jnp.asarray(a, dtype) * M, jnp.asarray(gamma, dtype) * jnp.eye(config.d, dtype=dtype)
    )


def to_scalars(config: STSConfig, model: STSTransformer) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """(γ, a) of the point of Lemma B's invariant set nearest `model` (derived): γ = tr(V_X)/d and
    a = ⟨W_EE, M⟩/‖M‖_F², the inverse of [`from_scalars`][] on that set."""
    d = config.d
    M = pe_block_direction(config, dtype=model.W.dtype)
    gamma = jnp.trace(model.V[:, :d]) / d
    a = jnp.vdot(model.W[d:, d:], M) / jnp.vdot(M, M)
    return gamma, a


def pe_block_direction(config: STSConfig, *, dtype=jnp.float64) -> Float[Array, "m m"]:
    """The direction of W_EE on the invariant set (Lemma B, derived): $M_{m_E}$ for `onehot` and
    `dictionary_onehot` (permutation symmetry), $I_{m_E}$ for `haar_orthonormal`, `iid_sphere`
    (rotation invariance) and for frozen non-dictionary PE."""
    if config.pe_sampler in ("onehot", "dictionary_onehot"):
        return centring(config.m_E, dtype=dtype)
    return jnp.eye(config.m_E, dtype=dtype)


def ground_truth(config: STSConfig, *, centred: bool = False, dtype=jnp.float64) -> STSTransformer:
    """The ground truth (W⋆, V⋆) of Figs. 1 and 3 (exact matrices recon):
    `W⋆ = [[0, 0], [0, I_{m_E}]]` (or `[[0, 0], [0, M_{m_E}]]` when `centred`, the exact GD limit
    direction for one-hot PE), `V⋆ = [I_d, 0]`."""
    m = config.m_E
    block = centring(m, dtype=dtype) if centred else jnp.eye(m, dtype=dtype)
    return from_blocks(config, block, jnp.eye(config.d, dtype=dtype), dtype=dtype)


def cosine(A: Array, B: Array) -> Float[Array, ""]:
    """cos(A, B) = ⟨A, B⟩_F / (‖A‖_F ‖B‖_F) (0 when either is 0)."""
    num = jnp.vdot(A, B)
    den = jnp.linalg.norm(A) * jnp.linalg.norm(B)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1), jnp.zeros((), num.dtype))


def direction_cosines(model: STSTransformer, config: STSConfig) -> dict[str, Float[Array, ""]]:
    """`cos(W, W⋆)` with the identity and the centred W⋆, and `cos(V, V⋆)` (Fig. 1 right)."""
    star = ground_truth(config, dtype=model.W.dtype)
    centred = ground_truth(config, centred=True, dtype=model.W.dtype)
    return {
        "cos_W": cosine(model.W, star.W),
        "cos_W_centred": cosine(model.W, centred.W),
        "cos_V": cosine(model.V, star.V),
    }


class FCN(eqx.Module):
    """The fully-connected baseline (recon): a ReLU MLP with hidden widths (m, m) on
    vec(X) ⊕ 1_y; its first layer has width m."""

    mlp: eqx.nn.MLP

    def __init__(self, d: int, T: int, width: int, key: PRNGKeyArray, *, depth: int = 2, dtype=jnp.float64):
        self.mlp = eqx.nn.MLP(T * d + T, d, width, depth, activation=jax.nn.relu, key=key, dtype=dtype)

    def __call__(
        self,
        X: Float[Array, "d T"],
        y: Float[Array, " T"],
        E: Float[Array, "m T"],
        x_query: Float[Array, " d"],
    ) -> Float[Array, " d"]:
        """The prediction for one example (`E`, `x_query` unused)."""
        del E, x_query
        return self.mlp(jnp.concatenate([X.T.reshape(-1), y]))
