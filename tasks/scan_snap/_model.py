"""The reparameterised one-layer transformer (Y, Z) of Sec. 3.1, its losses and gradients."""

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray, Real, Scalar

from ._classes import ClassArrays, SequenceClasses, to_class_arrays


class Batch(eqx.Module):
    """A batch of sequences in count form.

    **Fields:**

    - `counts`: N ∈ ℕᴹ per sequence, N_l = #{t ≤ T − 1 : x_t = l} (query excluded).
    - `query`: the query token $x_T$.
    - `label`: the next token $x_{T+1}$.
    """

    counts: Real[Array, "B M"]
    query: Int[Array, " B"]
    label: Int[Array, " B"]


class YZModel(eqx.Module):
    """The Y/Z model (Sec. 3.1, Eqn 15): Y = U W_Vᵀ Uᵀ, Z = U W_Q W_Kᵀ Uᵀ / √d as free
    (M, M) parameters.

    `Y[l, k]` is the output logit of token k from contextual token l (row = input,
    column = output). `Z[m, l]` = $z_{ml}$ is the attention logit of key token l under
    query token m; z_m := row m. Output logits Yᵀ LN(Xᵀ b_T), LN(x) = x / ‖x‖₂.
    All methods treat one sequence; batch with `jax.vmap`.

    **Fields:**

    - `Y`: decoder (token-pair) logits, shape (M, M).
    - `Z`: attention logits, shape (M, M).
    """

    Y: Float[Array, "M M"]
    Z: Float[Array, "M M"]

    @classmethod
    def zeros(cls, M: int, dtype: Any = float) -> "YZModel":
        """Y(0) = Z(0) = 0, the paper's initial condition (Lemma 1).

        **Arguments:**

        - `M`: vocabulary size, ≥ 2.
        - `dtype`: floating dtype of the parameters.

        **Returns:**

        The model.
        """
        if M < 2:
            raise ValueError(f"M must be >= 2, got {M}")
        return cls(Y=jnp.zeros((M, M), dtype=dtype), Z=jnp.zeros((M, M), dtype=dtype))

    @classmethod
    def uniform(cls, key: PRNGKeyArray, M: int, dtype: Any = float) -> "YZModel":
        """Every entry of Y and Z i.i.d. U(−1/√M, 1/√M): PyTorch's `nn.Linear` default,
        used by the Fig. 6 sweep (`zero_init=false`).

        **Arguments:**

        - `key`: PRNG key.
        - `M`: vocabulary size, ≥ 2.
        - `dtype`: floating dtype of the parameters.

        **Returns:**

        The model.
        """
        if M < 2:
            raise ValueError(f"M must be >= 2, got {M}")
        bound = 1.0 / math.sqrt(M)
        key_y, key_z = jax.random.split(key)
        return cls(
            Y=jax.random.uniform(key_y, (M, M), dtype=dtype, minval=-bound, maxval=bound),
            Z=jax.random.uniform(key_z, (M, M), dtype=dtype, minval=-bound, maxval=bound),
        )

    @property
    def M(self) -> int:
        """Vocabulary size."""
        return self.Y.shape[0]

    def attention_output(self, counts: Real[Array, " M"], query: Int[Array, ""] | int) -> Float[Array, " M"]:
        r"""$X^T b_T = (N \circ e^{z_m}) / (N^T e^{z_m})$, $m = x_T$ (exact: without positional
        encoding Xᵀ b_T depends on the sequence only through its token counts N), computed
        with the maximum of z_m over the present tokens (N_l > 0) subtracted.

        **Arguments:**

        - `counts`: token counts N of the T − 1 contextual positions (the query position
            is masked out, so it is not counted); at least one count must be positive.
            Nonnegative real weights are accepted too (e.g. N = P(· | n) gives Eqn 5).
        - `query`: the query token x_T.

        **Returns:**

        The attention output, a probability vector over the M tokens.
        """
        z = self.Z[query]
        counts = counts.astype(z.dtype)
        present = counts > 0
        shift = jax.lax.stop_gradient(jnp.max(jnp.where(present, z, -jnp.inf)))
        weights = counts * jnp.exp(jnp.where(present, z - shift, 0.0))
        return weights / jnp.sum(weights)

    def attention_output_from_tokens(
        self, tokens: Int[Array, " T-1"], query: Int[Array, ""] | int
    ) -> Float[Array, " M"]:
        r"""$X^T b_T$ in the position form of Eqn 1: $b_{tT} = \operatorname{softmax}_t(z_{x_T, x_t})$ over
        the T − 1 contextual positions (the query attends not to itself),
        $X^T b_T = \sum_t b_{tT} e_{x_t}$.

        **Arguments:**

        - `tokens`: the contextual tokens $x_1, \dots, x_{T-1}$.
        - `query`: the query token $x_T$.

        **Returns:**

        The attention output; equal to `attention_output` of the token counts.
        """
        b = jax.nn.softmax(self.Z[query, tokens])
        return jnp.zeros(self.M, dtype=b.dtype).at[tokens].add(b)

    def logits(self, counts: Real[Array, " M"], query: Int[Array, ""] | int) -> Float[Array, " M"]:
        """Output logits Yᵀ LN(Xᵀ b_T) over all M tokens (Eqn 15).

        **Arguments:**

        - `counts`: token counts of the contextual positions (see `attention_output`).
        - `query`: the query token x_T.

        **Returns:**

        The M logits; the prediction is their softmax α.
        """
        v = self.attention_output(counts, query)
        return self.Y.T @ (v / jnp.linalg.norm(v))


def cross_entropy(model: YZModel, batch: Batch) -> Scalar:
    """Mean cross-entropy −J over a batch (Eqn 15; PyTorch `CrossEntropyLoss` mean).

    **Arguments:**

    - `model`: the Y/Z model.
    - `batch`: a [`tasks.scan_snap.Batch`][] (any object with `counts`, `query`, `label`).

    **Returns:**

    −(1/B) Σ_i log α_i[label_i].
    """
    logits = jax.vmap(model.logits)(batch.counts, batch.query)
    log_alpha = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_alpha, batch.label[:, None], axis=-1))


def lemma1_update(
    model: YZModel,
    tokens: Int[Array, " T-1"],
    query: Int[Array, ""] | int,
    label: Int[Array, ""] | int,
) -> tuple[Float[Array, "M M"], Float[Array, "M M"]]:
    r"""Lemma 1 (Eqns 3-4): the gradient-ascent direction on J for one sequence, η_Y = η_Z = 1,
    evaluated literally from the paper's matrices:

        Ẏ = LN(X^T b_T) (x_{T+1} − α)^T                                        (Eqn 3)
        Ż = x_T (x_{T+1} − α)^T Y^T [P^⊥_{X^T b_T} / ||X^T b_T||_2] X^T diag(b_T) X   (Eqn 4)

    with X the (T − 1, M) one-hot matrix of the contextual tokens, b_T = softmax(X Zᵀ x_T)
    and α = softmax(Yᵀ LN(Xᵀ b_T)). Equals the gradient of J = −cross-entropy; the row
    sums are conserved, Ẏ 1 = Ż 1 = 0.

    **Arguments:**

    - `model`: the Y/Z model.
    - `tokens`: the contextual tokens $x_1, \dots, x_{T-1}$.
    - `query`: the query token $x_T$.
    - `label`: the next token $x_{T+1}$.

    **Returns:**

    `(Y_dot, Z_dot)`, each (M, M); only row `query` of `Z_dot` is nonzero.
    """
    M, dtype = model.M, model.Y.dtype
    X = jax.nn.one_hot(tokens, M, dtype=dtype)
    x_query = jax.nn.one_hot(query, M, dtype=dtype)
    x_next = jax.nn.one_hot(label, M, dtype=dtype)
    b = jax.nn.softmax(X @ model.Z.T @ x_query)
    v = X.T @ b
    norm = jnp.linalg.norm(v)
    alpha = jax.nn.softmax(model.Y.T @ (v / norm))
    error = x_next - alpha
    projection = jnp.eye(M, dtype=dtype) - jnp.outer(v, v) / norm**2
    Y_dot = jnp.outer(v / norm, error)
    Z_dot = jnp.outer(x_query, error) @ model.Y.T @ (projection / norm) @ (X.T @ (b[:, None] * X))
    return Y_dot, Z_dot


def class_attention(model: YZModel, classes: SequenceClasses | ClassArrays) -> Float[Array, "K M"]:
    r"""Per-token attention in the long-sequence limit (Eqn 5, Lemma 2):
    $c_n = \tilde{c}_n / \sum_l \tilde{c}_{l|n}$, $\tilde{c}_{l|n} = P(l \mid n)\, e^{z_{\psi(n), l}}$;
    $X^T b_T \to c_n$ as T → ∞.

    **Arguments:**

    - `model`: the Y/Z model.
    - `classes`: the sequence classes (a [`tasks.scan_snap.ClassArrays`][] inside `jit`).

    **Returns:**

    c, shape (K, M), row n = c_n (zero off the support of class n).
    """
    arrays = to_class_arrays(classes, model.Z.dtype)
    z = model.Z[arrays.query]
    probs = arrays.probs.astype(z.dtype)
    support = probs > 0
    log_scores = jnp.where(support, jnp.log(jnp.where(support, probs, 1.0)) + z, -jnp.inf)
    return jax.nn.softmax(log_scores, axis=-1)


def _population_terms(model: YZModel, arrays: ClassArrays) -> tuple[Float[Array, "K M"], Float[Array, "K M"]]:
    """f_n = c_n / ‖c_n‖₂ and log α_n = log softmax(Yᵀ f_n), rows n = 1..K."""
    c = class_attention(model, arrays)
    f = c / jnp.linalg.norm(c, axis=-1, keepdims=True)
    return f, jax.nn.log_softmax(f @ model.Y, axis=-1)


def population_loss(model: YZModel, classes: SequenceClasses | ClassArrays) -> Scalar:
    r"""Population (T → ∞) loss L = −Σ_n π_n log α_n[n], α_n = softmax(Yᵀ f_n),
    $f_n = \tilde{c}_n / \lVert \tilde{c}_n \rVert_2$, $\tilde{c}_n = P(\cdot \mid n) \circ e^{z_{\psi(n)}}$
    (Lemma 2; the loss of level L1).

    **Arguments:**

    - `model`: the Y/Z model.
    - `classes`: the sequence classes (a [`tasks.scan_snap.ClassArrays`][] inside `jit`).

    **Returns:**

    The scalar loss; ln M at Y = 0.
    """
    arrays = to_class_arrays(classes, model.Y.dtype)
    _, log_alpha = _population_terms(model, arrays)
    log_alpha_next = jnp.take_along_axis(log_alpha, arrays.next_token[:, None], axis=-1)[:, 0]
    return -jnp.sum(arrays.class_probs.astype(log_alpha.dtype) * log_alpha_next)


def population_gradient_formula(
    model: YZModel, classes: SequenceClasses | ClassArrays
) -> tuple[Float[Array, "M M"], Float[Array, "M M"]]:
    r"""Closed form of the descent direction (−∂L/∂Y, −∂L/∂Z) of `population_loss`: the
    expectation of Lemma 1 (Eqns 3-4) under Lemma 2 (the vector field of level L1), with unit rates:

        Ẏ   = Σ_n π_n f_n (e_n − α_n)^T
        ż_m = Σ_{n ∈ ψ^{-1}(m)} π_n diag(f_n) P^⊥_{f_n} Y (e_n − α_n),   ż_m = row m of Ż.

    Derivation: ∂(−log α_n[n]) / ∂(Yᵀ f_n) = α_n − e_n gives Ẏ; for Z,
    $f_n = \tilde{c}_n / \lVert \tilde{c}_n \rVert$ has Jacobian $P^\perp_{f_n} / \lVert \tilde{c}_n \rVert$
    in $\tilde{c}_n$, and $\partial \tilde{c}_n / \partial z_{\psi(n)} = \operatorname{diag}(\tilde{c}_n)$, so
    $\operatorname{diag}(\tilde{c}_n) P^\perp_{f_n} / \lVert \tilde{c}_n \rVert =
    \operatorname{diag}(f_n) P^\perp_{f_n}$: there is no leftover $1 / \lVert \tilde{c}_n \rVert$.
    This is Eqn 4 with Xᵀ diag(b_T) X = diag(Xᵀ b_T) → diag(c_n) and
    diag(c_n) / ‖c_n‖ = diag(f_n) (Lemma 2; the step from Eqn 4 to Eqn 10).

    **Arguments:**

    - `model`: the Y/Z model.
    - `classes`: the sequence classes (a [`tasks.scan_snap.ClassArrays`][] inside `jit`).

    **Returns:**

    `(Y_dot, Z_dot)`, each (M, M), equal to −∇ `population_loss`.
    """
    arrays = to_class_arrays(classes, model.Y.dtype)
    f, log_alpha = _population_terms(model, arrays)
    pi = arrays.class_probs.astype(f.dtype)[:, None]
    error = jax.nn.one_hot(arrays.next_token, model.M, dtype=f.dtype) - jnp.exp(log_alpha)
    Y_dot = (pi * f).T @ error
    g = error @ model.Y.T
    projected = g - jnp.sum(f * g, axis=-1, keepdims=True) * f
    Z_dot = jnp.zeros_like(model.Z).at[arrays.query].add(pi * f * projected)
    return Y_dot, Z_dot
