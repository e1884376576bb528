"""Sampling sequences from the classes as the official generator does: i.i.d. classes,
i.i.d. tokens with replacement, by inverse CDF."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ._classes import ClassArrays, SequenceClasses, to_class_arrays
from ._model import Batch


class TokenBatch(eqx.Module):
    r"""A batch of sequences in position form.

    **Fields:**

    - `tokens`: the contextual tokens $x_1, \dots, x_{T-1}$.
    - `query`: the query token $x_T$.
    - `label`: the next token $x_{T+1}$.
    """

    tokens: Int[Array, "B T-1"]
    query: Int[Array, " B"]
    label: Int[Array, " B"]


def token_counts(tokens: Int[Array, "B T-1"], M: int) -> Int[Array, "B M"]:
    """Token counts N of each row of `tokens`.

    **Arguments:**

    - `tokens`: token ids in [0, M).
    - `M`: vocabulary size.

    **Returns:**

    Counts, shape (B, M); each row sums to T − 1.
    """
    return jax.vmap(lambda row: jnp.bincount(row, length=M))(tokens)


def _check_sizes(batch_size: int, T: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if T < 2:
        raise ValueError(f"T must be >= 2 (at least one contextual token), got {T}")


def _draw_classes(key: PRNGKeyArray, arrays: ClassArrays, batch_size: int) -> Int[Array, " B"]:
    """Each sample's class, i.i.d. from π by inverse CDF (batches are not balanced)."""
    u = jax.random.uniform(key, (batch_size,), dtype=arrays.class_cdf.dtype)
    return jnp.searchsorted(arrays.class_cdf, u, side="right")


def sample_tokens(
    key: PRNGKeyArray, classes: SequenceClasses | ClassArrays, batch_size: int, T: int
) -> TokenBatch:
    """Draw `batch_size` sequences of length T + 1 as in the official `Dataset2.generate`:
    each sample picks its class n i.i.d. from π (batches are not balanced), draws its
    T − 1 contextual tokens i.i.d. with replacement from P(· | n) by inverse CDF
    (`jnp.searchsorted` on the class's cumulative probabilities), and has query ψ(n) and
    label n. Works under `jit` / `vmap` with `classes` a [`tasks.scan_snap.ClassArrays`][].

    **Arguments:**

    - `key`: PRNG key.
    - `classes`: the sequence classes.
    - `batch_size`: B ≥ 1 (static).
    - `T`: position of the query token, ≥ 2 (static).

    **Returns:**

    A [`tasks.scan_snap.TokenBatch`][].
    """
    _check_sizes(batch_size, T)
    arrays = to_class_arrays(classes, None)
    key_class, key_tokens = jax.random.split(key)
    cls = _draw_classes(key_class, arrays, batch_size)
    u_tokens = jax.random.uniform(key_tokens, (batch_size, T - 1), dtype=arrays.cdf.dtype)
    tokens = jax.vmap(lambda cdf, u: jnp.searchsorted(cdf, u, side="right"))(arrays.cdf[cls], u_tokens)
    return TokenBatch(tokens=tokens, query=arrays.query[cls], label=arrays.next_token[cls])


_CHUNK = 16


def _count_below(u: Float[Array, "B N"], table: Float[Array, "B S"]) -> Int[Array, "B S"]:
    """#{t : u[b, t] < table[b, s]} for every (b, s).

    The N draws are padded to a multiple of `_CHUNK` with 2 (never below a table entry, which
    is at most 1) and summed chunk by chunk: on a CPU, XLA runs this two-stage sum about eight
    times faster than one sum over all N draws. The counts are int32 whatever JAX's default
    integer (int64 in float64 mode, which a GPU compiles many times slower here)."""
    B, N = u.shape
    padded = jnp.pad(u, ((0, 0), (0, -N % _CHUNK)), constant_values=2).reshape(B, -1, _CHUNK)
    below = padded[..., None] < table[:, None, None, :]
    return jnp.sum(jnp.sum(below, axis=2, dtype=jnp.int32), axis=1, dtype=jnp.int32)


def sample(key: PRNGKeyArray, classes: SequenceClasses | ClassArrays, batch_size: int, T: int) -> Batch:
    r"""[`tasks.scan_snap.sample_tokens`][] in count form: the counts of exactly the tokens that
    `sample_tokens` draws with the same key, computed over each class's support.

    Token t of a sample of class n is `support[n, j]` with $j = \#\{s : F_s \le u_t\}$, F the
    inverse-CDF table over the support (`ClassArrays.support_cdf`) and u_t its uniform draw; the
    same token as the search over all M tokens. The count of support entry s is
    $\#\{t : u_t < F_s\} - \#\{t : u_t < F_{s-1}\}$. A batch therefore costs B (T − 1) S comparisons
    (S the largest support), with no search over the vocabulary and no per-token scatter; only
    the B S support counts are written into the (B, M) count array.

    **Arguments:**

    - `key`: PRNG key.
    - `classes`: the sequence classes.
    - `batch_size`: B ≥ 1 (static).
    - `T`: position of the query token, ≥ 2 (static).

    **Returns:**

    A [`tasks.scan_snap.Batch`][] with integer counts (B, M) summing to T − 1 per row.

    **Example:**

    ```pycon
    >>> import jax
    >>> from tasks.scan_snap import Dataset2, sample, sample_tokens, token_counts
    >>> classes = Dataset2.syn_small().build()
    >>> key = jax.random.PRNGKey(0)
    >>> batch = sample(key, classes, 4, 16)
    >>> tokens = sample_tokens(key, classes, 4, 16).tokens
    >>> bool((batch.counts == token_counts(tokens, classes.M)).all())
    True

    ```
    """
    _check_sizes(batch_size, T)
    arrays = to_class_arrays(classes, None)
    key_class, key_tokens = jax.random.split(key)
    cls = _draw_classes(key_class, arrays, batch_size)
    u_tokens = jax.random.uniform(key_tokens, (batch_size, T - 1), dtype=arrays.cdf.dtype)
    support_counts = jnp.diff(_count_below(u_tokens, arrays.support_cdf[cls]), axis=1, prepend=0)
    rows = jnp.arange(batch_size)[:, None]
    counts = jnp.zeros((batch_size, arrays.probs.shape[1]), support_counts.dtype)
    counts = counts.at[rows, arrays.support[cls]].add(support_counts)
    return Batch(counts=counts, query=arrays.query[cls], label=arrays.next_token[cls])


def sample_multinomial(
    key: PRNGKeyArray,
    classes: SequenceClasses | ClassArrays,
    batch_size: int,
    num_context: Float[Array, ""] | float,
) -> Batch:
    """Draw a batch in count form with the counts taken directly from
    Multinomial(T − 1, P(· | n)): the same law as [`tasks.scan_snap.sample`][] (the counts
    of T − 1 i.i.d. tokens), but with T − 1 a (possibly traced) number, so one compiled
    function serves every sequence length. Its cost grows with M, not with T: cheaper than
    `sample` for long sequences over a small vocabulary.

    **Arguments:**

    - `key`: PRNG key.
    - `classes`: the sequence classes.
    - `batch_size`: B ≥ 1 (static).
    - `num_context`: T − 1 ≥ 1, the number of contextual tokens.

    **Returns:**

    A [`tasks.scan_snap.Batch`][] with float counts (B, M) summing to T − 1 per row.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    arrays = to_class_arrays(classes, None)
    key_class, key_counts = jax.random.split(key)
    cls = _draw_classes(key_class, arrays, batch_size)
    dtype = arrays.probs.dtype
    n = jnp.asarray(num_context, dtype)
    counts = jax.random.multinomial(key_counts, n, arrays.probs[cls], dtype=dtype)
    return Batch(counts=counts, query=arrays.query[cls], label=arrays.next_token[cls])
