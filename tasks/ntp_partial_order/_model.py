"""The paper's reparameterised one-layer transformer (`W_kq = W_kᵀ W_q`, `W_ov = W_o W_v`), padded
batches and the exact losses."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ._data import Dataset


class Batch(eqx.Module):
    """A padded batch of variable-length sentences with their embeddings.

    **Fields:**

    - `tokens`: `(N, L)` token indices, left-aligned; padding holds token 0.
    - `mask`: `(N, L)`, True at real positions.
    - `lengths`: `(N,)` sentence lengths (the query sits at `lengths − 1`).
    - `labels`: `(N,)` next tokens.
    - `weights`: `(N,)` the `π^(n)` (0 for padding samples); the loss is `Σ weights · CE`.
    - `embeddings`: `(d, |V|)` orthonormal columns `E` (Assumption 2); the identity for one-hot.
    """

    tokens: Int[Array, "N L"]
    mask: Bool[Array, "N L"]
    lengths: Int[Array, " N"]
    labels: Int[Array, " N"]
    weights: Float[Array, " N"]
    embeddings: Float[Array, "d V"]


def make_batch(
    dataset: Dataset,
    *,
    dtype=jnp.float64,
    embeddings: np.ndarray | None = None,
    num_rows: int | None = None,
    length: int | None = None,
    collocation: bool = False,
) -> Batch:
    """The dataset (or its collocation) as a padded [`Batch`][].

    **Arguments:**

    - `dataset`: the [`Dataset`][].
    - `dtype`: float dtype of the weights and embeddings.
    - `embeddings`: `(d, |V|)` with orthonormal columns; default one-hot (`d = |V|`).
    - `num_rows`, `length`: pad to this many samples (weight 0) and positions, so that batches of
      several datasets of the same shape can be stacked; default the dataset's own.
    - `collocation`: only the length-1 samples, each with weight 1 (the stage-1 loss `L_0` is a
      sum over tokens, as in the paper's appendix).

    **Returns:** the [`Batch`][].
    """
    pairs = list(zip(dataset.sentences, dataset.labels, dataset.weights))
    if collocation:
        pairs = [(s, y, 1.0) for s, y, _ in pairs if len(s) == 1]
    rows = len(pairs) if num_rows is None else num_rows
    width = max(len(s) for s, _, _ in pairs) if length is None else length
    if rows < len(pairs) or width < max(len(s) for s, _, _ in pairs):
        raise ValueError(f"num_rows and length must be >= the dataset's ({len(pairs)}, {dataset.max_length})")
    tokens = np.zeros((rows, width), np.int32)
    mask = np.zeros((rows, width), bool)
    mask[:, 0] = True
    lengths, labels, weights = np.ones(rows, np.int32), np.zeros(rows, np.int32), np.zeros(rows)
    for n, (s, y, w) in enumerate(pairs):
        tokens[n, : len(s)], mask[n, : len(s)] = s, True
        lengths[n], labels[n], weights[n] = len(s), y, w
    E = np.eye(dataset.vocab_size) if embeddings is None else np.asarray(embeddings)
    if (
        E.ndim != 2
        or E.shape[1] != dataset.vocab_size
        or not np.allclose(E.T @ E, np.eye(E.shape[1]), atol=1e-10)
    ):
        raise ValueError(
            f"embeddings must be (d, {dataset.vocab_size}) with orthonormal columns (Assumption 2)"
        )
    return Batch(
        jnp.asarray(tokens),
        jnp.asarray(mask),
        jnp.asarray(lengths),
        jnp.asarray(labels),
        jnp.asarray(weights, dtype),
        jnp.asarray(E, dtype),
    )


class NTPModel(eqx.Module):
    """`T_θ(X) = softmax(W_ov X softmax(Xᵀ W_kq x_L))`, `θ = (W_ov, W_kq)`.

    **Fields:** `W_ov` `(|V|, d)` and `W_kq` `(d, d)`.
    """

    W_ov: Float[Array, "V d"]
    W_kq: Float[Array, "d d"]

    @classmethod
    def zeros(cls, vocab_size: int, dim: int | None = None, dtype=jnp.float64) -> "NTPModel":
        """Algorithm 1's initialisation `W_ov = 0, W_kq = 0` (`dim` defaults to `|V|`)."""
        dim = vocab_size if dim is None else dim
        return cls(jnp.zeros((vocab_size, dim), dtype), jnp.zeros((dim, dim), dtype))


def _embedded(batch: Batch) -> tuple[Float[Array, "N L d"], Float[Array, "N d"]]:
    X = jnp.moveaxis(batch.embeddings[:, batch.tokens], 0, -1)
    query = jnp.take_along_axis(X, (batch.lengths - 1)[:, None, None], axis=1)[:, 0]
    return X, query


def attention(model: NTPModel, batch: Batch) -> Float[Array, "N L"]:
    """`a(X) = softmax(Xᵀ W_kq x_L)` over the real positions (0 on padding)."""
    return jax.nn.softmax(_scores(model, batch), axis=-1)


@jax.custom_vjp
def attend(scores: Float[Array, "N L"], values: Float[Array, "N L V"]) -> Float[Array, "N V"]:
    """`Σ_l softmax(s)_l v_l` per sample, with a gradient that keeps its relative precision when
    the attention saturates.

    The gradient with respect to the scores is `a_l (g_l − Σ_m a_m g_m)` with `g_l = v_l · c` for
    the output cotangent `c`. Once the attention concentrates on a few positions, the bracket of
    those positions is a difference of nearly equal numbers, so the textbook formula loses all its
    digits when the other weights fall below about 1e-16 (stage 2 of Algorithm 1 past about 10⁴
    steps): it is computed here as `a_l Σ_m a_m (g_l − g_m)`, where equal values cancel exactly
    and the small weights multiply exact differences.

    **Arguments:**

    - `scores`: attention logits, `−inf` at padding.
    - `values`: the vector each position contributes.

    **Returns:** the attention-weighted sum of the values.

    **Example:**

    ```pycon
    >>> s = jnp.array([[0.0, -40.0]]); v = jnp.array([[[1.0], [0.0]]])
    >>> float(jax.grad(lambda s: attend(s, v)[0, 0])(s)[0, 1])  # −a_1 a_0 (g_0 − g_1)
    -4.24835...e-18

    ```
    """
    return jnp.einsum("nl,nlv->nv", jax.nn.softmax(scores, axis=-1), values)


def _attend_forward(scores, values):
    weights = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("nl,nlv->nv", weights, values), (weights, values)


def _attend_backward(residuals, cotangent):
    weights, values = residuals
    g = jnp.einsum("nlv,nv->nl", values, cotangent)
    spread = jnp.einsum("nm,nlm->nl", weights, g[:, :, None] - g[:, None, :])
    return weights * spread, weights[:, :, None] * cotangent[:, None, :]


attend.defvjp(_attend_forward, _attend_backward)


def _scores(model: NTPModel, batch: Batch) -> Float[Array, "N L"]:
    X, query = _embedded(batch)
    scores = jnp.einsum("nld,de,ne->nl", X, model.W_kq, query)
    return jnp.where(batch.mask, scores, -jnp.inf)


def logits(model: NTPModel, batch: Batch) -> Float[Array, "N V"]:
    """`z(X) = W_ov X a(X)` for every sample, through [`attend`][] (a gradient accurate when the
    attention saturates)."""
    X, _ = _embedded(batch)
    return attend(_scores(model, batch), jnp.einsum("vd,nld->nlv", model.W_ov, X))


def cross_entropy(z: Float[Array, "N V"], labels: Int[Array, " N"]) -> Float[Array, " N"]:
    """`logsumexp(z) − z_y`, computed as `softplus(logsumexp_{v≠y}(z_v − z_y))`.

    Stable where the target logit dominates: the value keeps its relative precision
    down to about 1e-300, and its gradient's target entry is `−Σ_{v≠y} softmax_v`, not `softmax_y − 1`
    (which rounds to 0 once the margin exceeds about 36 in float64).
    """
    target = jax.nn.one_hot(labels, z.shape[-1], dtype=bool)
    z_y = jnp.take_along_axis(z, labels[:, None], axis=-1)
    others = jax.nn.logsumexp(jnp.where(target, -jnp.inf, z - z_y), axis=-1)
    return jnp.logaddexp(jnp.zeros_like(others), others)


def loss(model: NTPModel, batch: Batch) -> Float[Array, ""]:
    """Eqn 1: `L(θ) = Σ_n π^(n) CE(z(X^(n)), y_n)`; with a collocation batch (weights 1, one
    token per sentence) this is the stage-1 loss `L_0(W_ov) = Σ_x CE(W_ov x, n(x))`."""
    return jnp.sum(batch.weights * cross_entropy(logits(model, batch), batch.labels))


def predict(model: NTPModel, sentence, embeddings: Float[Array, "d V"]) -> Float[Array, " V"]:
    """`T_θ(X)` for one sentence (a sequence of tokens; the last is the query)."""
    tokens = jnp.asarray(np.asarray(sentence, np.int32))[None]
    batch = Batch(
        tokens,
        jnp.ones(tokens.shape, bool),
        jnp.asarray([tokens.shape[1]], jnp.int32),
        jnp.zeros(1, jnp.int32),
        jnp.ones(1, embeddings.dtype),
        embeddings,
    )
    return jax.nn.softmax(logits(model, batch)[0])
