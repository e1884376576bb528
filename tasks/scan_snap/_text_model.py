"""The transformer of the WikiText experiments (Sec. 6.6, Figs. 7 and 10) in the original
parameterisation, as the paper's code builds it after the PyTorch word-language-model tutorial:
token embedding × √d_model, sinusoidal positional encoding, post-LN `nn.TransformerEncoderLayer`s
with a causal mask (the diagonal allowed), a linear decoder with bias.

Every module treats one sequence of T tokens; batch with `jax.vmap`. Dropout is on when a PRNG
key is given (training) and off without one (evaluation), at the places PyTorch puts it: after
the positional encoding, on the attention weights, after the attention's output projection,
after the FFN's ReLU and after its second linear map.
"""

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

ENTROPY_EPS = 1e-8
"""The ε of the paper's attention entropy −Σ a log(a + ε)."""


def _keep_masks(key: PRNGKeyArray | None, rate: float, shapes: list[tuple[int, ...]]) -> list[Array | None]:
    """The keep masks of several dropout sites (True with probability 1 − rate), drawn in one call
    (one random-bits computation to compile instead of one per site); `None`s without a key or at
    rate 0."""
    if key is None or rate == 0.0:
        return [None] * len(shapes)
    sizes = [math.prod(shape) for shape in shapes]
    keep = jax.random.bernoulli(key, 1.0 - rate, (sum(sizes),))
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    return [keep[o : o + n].reshape(shape) for o, n, shape in zip(offsets, sizes, shapes)]


def _dropout(x: Array, rate: float, keep: Array | None) -> Array:
    """Inverted dropout (`torch.nn.Dropout`): zero the entries outside `keep`, scale the rest by
    1/(1 − rate); the identity without a mask."""
    if keep is None:
        return x
    return jnp.where(keep, x / (1.0 - rate), jnp.zeros((), x.dtype))


def _uniforms(key: PRNGKeyArray, blocks: list[tuple[tuple[int, ...], float]], dtype: Any) -> list[Array]:
    """Independent U(−b, b) arrays of the given (shape, b), cut from one draw (one random-bits
    computation to compile instead of one per array)."""
    sizes = [math.prod(shape) for shape, _ in blocks]
    draw = jax.random.uniform(key, (sum(sizes),), dtype, minval=-1.0, maxval=1.0)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    return [bound * draw[o : o + n].reshape(shape) for o, n, (shape, bound) in zip(offsets, sizes, blocks)]


class Linear(eqx.Module):
    """An affine map x Wᵀ + b on the last axis (`torch.nn.Linear`'s layout).

    **Fields:** `weight` (out, in), `bias` (out,).
    """

    weight: Float[Array, "out in"]
    bias: Float[Array, " out"]

    def __call__(self, x: Float[Array, "... in"]) -> Float[Array, "... out"]:
        return x @ self.weight.T + self.bias


def _linear(layer: Linear, x: Float[Array, "T d_in"]) -> Float[Array, "T d_out"]:
    return layer(x)


def _layer_norm(norm: eqx.nn.LayerNorm, x: Float[Array, "T d"]) -> Float[Array, "T d"]:
    return jax.vmap(norm)(x)


def causal_mask(T: int) -> Array:
    """The mask of `generate_square_subsequent_mask`: query t attends to keys s ≤ t (True where
    allowed), shape (T, T).

    **Example:**

        >>> from tasks import scan_snap
        >>> scan_snap.causal_mask(3).astype(int).tolist()
        [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    return jnp.tril(jnp.ones((T, T), bool))


def positional_encoding(T: int, d_model: int, dtype: Any = jnp.float32) -> Float[Array, "T d_model"]:
    """The tutorial's `PositionalEncoding` table: PE[t, 2i] = sin(t ω_i), PE[t, 2i + 1] = cos(t ω_i),
    ω_i = exp(−2i ln(10000) / d_model).

    **Arguments:** `T`: positions; `d_model`: an even width; `dtype`: of the table.

    **Returns:** shape (T, d_model).

    **Example:**

        >>> from tasks import scan_snap
        >>> pe = scan_snap.positional_encoding(2, 4)
        >>> [round(float(v), 3) for v in pe[1]]
        [0.841, 0.54, 0.01, 1.0]
    """
    if d_model % 2:
        raise ValueError(f"d_model must be even for the sinusoidal encoding, got {d_model}")
    position = jnp.arange(T, dtype=dtype)[:, None]
    div_term = jnp.exp(jnp.arange(0, d_model, 2, dtype=dtype) * (-math.log(10000.0) / d_model))
    angles = position * div_term
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(T, d_model)


def attention_entropy(attention: Float[Array, "... T S"], eps: float = ENTROPY_EPS) -> Float[Array, "... T"]:
    """The entropy of each query row of an attention map, −Σ_s a_ts log(a_ts + ε) with ε = 10⁻⁸, in
    nats: the paper's code averages it over rows (and sequences) for Fig. 10.

    **Arguments:** `attention`: rows that sum to 1 over the last axis; `eps`: ε.

    **Returns:** one entropy per row, shape `attention.shape[:-1]`.

    **Example:** a causal uniform map over T = 4: row t has entropy ln(t + 1), so eᴴ counts the
    positions it attends to:

        >>> import jax.numpy as jnp
        >>> from tasks import scan_snap
        >>> mask = scan_snap.causal_mask(4).astype(float)
        >>> uniform = mask / mask.sum(axis=1, keepdims=True)
        >>> [round(float(v), 6) for v in jnp.exp(scan_snap.attention_entropy(uniform))]
        [1.0, 2.0, 3.0, 4.0]
    """
    return -jnp.sum(attention * jnp.log(attention + eps), axis=-1)


def attention_change_rate(
    attention: Float[Array, "S ... T T"], steps: Int[Array, " S"]
) -> Float[Array, " S-1"]:
    """How fast an attention map moves between saves: for each pair of consecutive saves, the
    mean over query rows of ‖a_t(k+1) − a_t(k)‖₁, divided by the steps between them. A row's
    ‖·‖₁ lies in [0, 2] (2: it moved all its weight), so the rate is the fraction of the weight a
    row moves per step, times 2. The measure of the "freeze" of Fig. 7: the attention has frozen
    when this rate has fallen far below its early value.

    **Arguments:** `attention`: the saved maps, axis 0 the saves (any axes between, e.g. heads,
    are averaged with the rows); `steps`: the step of each save, increasing.

    **Returns:** one rate per interval between saves.

    **Example:** a map that moves all its weight once in 10 steps, then stays:

        >>> import jax.numpy as jnp
        >>> from tasks import scan_snap
        >>> eye, flip = jnp.eye(2), jnp.eye(2)[::-1]
        >>> rates = scan_snap.attention_change_rate(jnp.stack([eye, flip, flip]), jnp.array([0, 10, 20]))
        >>> [round(float(r), 6) for r in rates]
        [0.2, 0.0]
    """
    moved = jnp.sum(jnp.abs(jnp.diff(attention, axis=0)), axis=-1)
    per_save = jnp.mean(moved.reshape(moved.shape[0], -1), axis=-1)
    return per_save / jnp.diff(jnp.asarray(steps)).astype(per_save.dtype)


class SelfAttention(eqx.Module):
    """Causal multi-head self-attention with PyTorch's `nn.MultiheadAttention` parameters and
    initialisation: packed `in_proj_weight` (3d, d) xavier-uniform, `in_proj_bias` 0, `out_proj`
    a linear map with PyTorch's default weight init and bias 0. Scores are (q/√d_head)·k with q, k, v
    the rows of x W_inᵀ + b_in split in three, then in `num_heads` heads of d/num_heads.

    **Fields:** `in_proj_weight`, `in_proj_bias`, `out_proj` (a `Linear`), `num_heads`.
    """

    in_proj_weight: Float[Array, "3d d"]
    in_proj_bias: Float[Array, " 3d"]
    out_proj: Linear
    num_heads: int = eqx.field(static=True)

    def __init__(self, d_model: int, num_heads: int, *, key: PRNGKeyArray, dtype: Any = jnp.float32):
        if d_model % num_heads:
            raise ValueError(f"num_heads must divide d_model, got d_model={d_model}, num_heads={num_heads}")
        xavier = math.sqrt(6.0 / (d_model + 3 * d_model))  # xavier-uniform on (3d, d)
        in_proj, out_proj = _uniforms(
            key, [((3 * d_model, d_model), xavier), ((d_model, d_model), 1.0 / math.sqrt(d_model))], dtype
        )
        self.in_proj_weight = in_proj
        self.in_proj_bias = jnp.zeros(3 * d_model, dtype)
        self.out_proj = Linear(out_proj, jnp.zeros(d_model, dtype))
        self.num_heads = num_heads

    def __call__(
        self,
        x: Float[Array, "T d"],
        dropout: float = 0.0,
        *,
        key: PRNGKeyArray | None = None,
        keep: Array | None = None,
    ) -> tuple[Float[Array, "T d"], Float[Array, "H T T"]]:
        """**Arguments:** `x`: the sequence; `dropout`: the rate on the attention weights (with a
        `key`, or with `keep`, a mask of the weights to keep, drawn by the caller).

        **Returns:** `(output, attention)`: the projected output and the attention weights per
        head (before dropout), each row summing to 1 over keys s ≤ t.
        """
        T, d = x.shape
        head = d // self.num_heads
        qkv = x @ self.in_proj_weight.T + self.in_proj_bias
        q, k, v = (part.reshape(T, self.num_heads, head).transpose(1, 0, 2) for part in jnp.split(qkv, 3, -1))
        scores = (q * (1.0 / math.sqrt(head))) @ k.transpose(0, 2, 1)
        attention = jax.nn.softmax(jnp.where(causal_mask(T), scores, -jnp.inf), axis=-1)
        if keep is None:
            (keep,) = _keep_masks(key, dropout, [attention.shape])
        weights = _dropout(attention, dropout, keep)
        out = (weights @ v).transpose(1, 0, 2).reshape(T, d)
        return _linear(self.out_proj, out), attention


class EncoderLayer(eqx.Module):
    """One post-LN `nn.TransformerEncoderLayer` (ReLU, `norm_first=False`):
    x ← LN₁(x + Drop(SA(x))), x ← LN₂(x + Drop(W₂ Drop(ReLU(W₁ x + b₁)) + b₂)), with PyTorch's
    initialisation (linear maps U(±1/√fan_in) for weights and biases, LayerNorms 1 and 0, ε = 10⁻⁵).

    **Fields:** `self_attn` ([`SelfAttention`][]), `linear1` (d → d_hid), `linear2` (d_hid → d),
    `norm1`, `norm2`.
    """

    self_attn: SelfAttention
    linear1: Linear
    linear2: Linear
    norm1: eqx.nn.LayerNorm
    norm2: eqx.nn.LayerNorm

    def __init__(
        self, d_model: int, num_heads: int, d_hid: int, *, key: PRNGKeyArray, dtype: Any = jnp.float32
    ):
        attn_key, ffn_key = jax.random.split(key)
        self.self_attn = SelfAttention(d_model, num_heads, key=attn_key, dtype=dtype)
        b1, b2 = 1.0 / math.sqrt(d_model), 1.0 / math.sqrt(d_hid)  # PyTorch: U(±1/√fan_in)
        w1, c1, w2, c2 = _uniforms(
            ffn_key, [((d_hid, d_model), b1), ((d_hid,), b1), ((d_model, d_hid), b2), ((d_model,), b2)], dtype
        )
        self.linear1 = Linear(w1, c1)
        self.linear2 = Linear(w2, c2)
        self.norm1 = eqx.nn.LayerNorm(d_model, eps=1e-5, dtype=dtype)
        self.norm2 = eqx.nn.LayerNorm(d_model, eps=1e-5, dtype=dtype)

    def mask_shapes(self, T: int) -> list[tuple[int, ...]]:
        """The shapes of the four dropout sites on T positions: attention weights, attention
        output, FFN hidden, FFN output."""
        d_hid, d = self.linear1.weight.shape
        return [(self.self_attn.num_heads, T, T), (T, d), (T, d_hid), (T, d)]

    def __call__(
        self,
        x: Float[Array, "T d"],
        dropout: float = 0.0,
        *,
        key: PRNGKeyArray | None = None,
        keep: list[Array | None] | None = None,
    ) -> tuple[Float[Array, "T d"], Float[Array, "H T T"]]:
        """**Arguments:** `x`: the sequence; `dropout`: the rate; `key` (dropout on) or `keep`: the
        four keep masks of `mask_shapes`, drawn by the caller.

        **Returns:** `(output, attention)`, the attention per head as [`SelfAttention`][] gives it.
        """
        if keep is None:
            keep = _keep_masks(key, dropout, self.mask_shapes(x.shape[0]))
        attended, attention = self.self_attn(x, dropout, keep=keep[0])
        x = _layer_norm(self.norm1, x + _dropout(attended, dropout, keep[1]))
        hidden = _dropout(jax.nn.relu(_linear(self.linear1, x)), dropout, keep[2])
        x = _layer_norm(self.norm2, x + _dropout(_linear(self.linear2, hidden), dropout, keep[3]))
        return x, attention


class TextTransformer(eqx.Module):
    """The model of the WikiText experiments (the paper's `TransformerModel`): logits =
    Dec(Enc_L ∘ … ∘ Enc_1(Drop(√d_model E[x] + PE))), with E, Dec initialised U(±0.1), the
    decoder's bias 0, and `num_layers` [`EncoderLayer`][]s that start as copies of one (as
    `nn.TransformerEncoder` deep-copies its layer).

    **Fields:** `embedding` (V, d), `layers`, `decoder` (a `Linear` d → V), `dropout`,
    `positional` (add the sinusoidal encoding; the paper's `use_pos`).

    **Example:** a 2-layer model on 5 tokens; the attention of each layer is causal:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> from tasks import scan_snap
        >>> key = jax.random.PRNGKey(0)
        >>> model = scan_snap.TextTransformer.init(key, 50, d_model=8, d_hid=16, num_layers=2)
        >>> logits, attentions = model(jnp.array([1, 4, 2, 2, 7]), return_attention=True)
        >>> logits.shape, len(attentions), attentions[0].shape
        ((5, 50), 2, (1, 5, 5))
        >>> bool(jnp.all(jnp.triu(attentions[1][0], 1) == 0)), bool(jnp.allclose(attentions[1].sum(-1), 1))
        (True, True)
    """

    embedding: Float[Array, "V d"]
    layers: tuple[EncoderLayer, ...]
    decoder: Linear
    dropout: float = eqx.field(static=True)
    positional: bool = eqx.field(static=True)

    @classmethod
    def init(
        cls,
        key: PRNGKeyArray,
        vocab_size: int,
        *,
        d_model: int = 200,
        num_heads: int = 1,
        d_hid: int = 200,
        num_layers: int = 1,
        dropout: float = 0.2,
        positional: bool = True,
        dtype: Any = jnp.float32,
    ) -> "TextTransformer":
        """The paper's initialisation (its `decoder_wiki.yaml` defaults: d_model = d_hid = 200, one
        head, one layer, dropout 0.2).

        **Arguments:**

        - `key`: PRNG key.
        - `vocab_size`: V.
        - `d_model`, `num_heads`, `d_hid`, `num_layers`: the widths and depth (`num_heads`
          divides `d_model`, which is even).
        - `dropout`: the rate at every dropout site, in [0, 1).
        - `positional`: add the sinusoidal positional encoding.
        - `dtype`: the parameters' floating dtype.

        **Returns:** the model.
        """
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        if d_model % 2:
            raise ValueError(f"d_model must be even for the sinusoidal encoding, got {d_model}")
        outer_key, layer_key = jax.random.split(key)
        layer = EncoderLayer(d_model, num_heads, d_hid, key=layer_key, dtype=dtype)
        embedding, decoder = _uniforms(outer_key, [((vocab_size, d_model), 0.1)] * 2, dtype)
        return cls(
            embedding=embedding,
            layers=(layer,) * num_layers,
            decoder=Linear(decoder, jnp.zeros(vocab_size, dtype)),
            dropout=float(dropout),
            positional=bool(positional),
        )

    @property
    def d_model(self) -> int:
        """The model width d."""
        return self.embedding.shape[1]

    @property
    def vocab_size(self) -> int:
        """V."""
        return self.embedding.shape[0]

    def __call__(
        self, tokens: Int[Array, " T"], *, key: PRNGKeyArray | None = None, return_attention: bool = False
    ) -> Float[Array, "T V"] | tuple[Float[Array, "T V"], tuple[Float[Array, "H T T"], ...]]:
        """The next-token logits of one sequence.

        **Arguments:**

        - `tokens`: token indices, shape (T,).
        - `key`: turns dropout on (training); without it the pass is deterministic (evaluation).
        - `return_attention`: also return every layer's attention weights.

        **Returns:** the logits, shape (T, V); with `return_attention`, `(logits, attentions)`,
        one (num_heads, T, T) map per layer, before dropout.
        """
        T = tokens.shape[0]
        shapes = [(T, self.d_model)] if self.positional else []
        for layer in self.layers:
            shapes += layer.mask_shapes(T)
        keep = _keep_masks(key, self.dropout, shapes)
        x = self.embedding[tokens] * math.sqrt(self.d_model)
        if self.positional:
            x = _dropout(x + positional_encoding(T, self.d_model, x.dtype), self.dropout, keep.pop(0))
        attentions = []
        for i, layer in enumerate(self.layers):
            x, attention = layer(x, self.dropout, keep=keep[4 * i : 4 * i + 4])
            attentions.append(attention)
        logits = _linear(self.decoder, x)
        return (logits, tuple(attentions)) if return_attention else logits
