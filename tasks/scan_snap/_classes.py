"""Sequence classes s_n = (P(l | n), ψ(n), n): the ground truth of a task instance (Sec. 3.2)."""

import dataclasses
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

_SUM_TOL = 1e-9


def _inverse_cdf(probs: np.ndarray) -> np.ndarray:
    """Cumulative sums of the rows of `probs`, with every entry from a row's last
    positive-probability entry onwards set to exactly 1, so that `searchsorted(cdf, u,
    side="right")` with u ∈ [0, 1) never returns a zero-probability index."""
    cdf = np.cumsum(probs, axis=-1)
    size = probs.shape[-1]
    last_positive = size - 1 - np.argmax(probs[..., ::-1] > 0, axis=-1)
    cdf[np.arange(size) >= last_positive[..., None]] = 1.0
    return cdf


def _support_tables(probs: np.ndarray, full_cdf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's positive-probability tokens and the inverse-CDF table over them, padded to
    the largest support. The table holds the entries of `full_cdf = _inverse_cdf(probs)` at the
    support tokens, so an inverse-CDF draw over the support picks the same token as one over all
    M tokens; a padding entry repeats the row's last support token with table value 1, so it is
    never drawn."""
    positive = probs > 0
    size = int(positive.sum(axis=-1).max())
    tokens = np.zeros((probs.shape[0], size), dtype=np.int64)
    cdf = np.ones((probs.shape[0], size))
    for n, row in enumerate(positive):
        ids = np.flatnonzero(row)
        tokens[n] = np.concatenate([ids, np.full(size - len(ids), ids[-1])])
        cdf[n, : len(ids)] = full_cdf[n, ids]
    return tokens, cdf


def _distribution(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    array = np.array(value, dtype=np.float64)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} entries must be finite and in [0, 1]")
    sums = array.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > _SUM_TOL):
        raise ValueError(f"{name} must sum to 1 (within {_SUM_TOL}) along its last axis, got sums {sums}")
    return array


def _tokens(name: str, value: Any, K: int, M: int) -> np.ndarray:
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.shape != (K,):
        raise ValueError(f"{name} must have shape (K,) = ({K},), got {array.shape}")
    if np.any(array < 0) or np.any(array >= M):
        raise ValueError(f"{name} entries must be token ids in [0, M) = [0, {M}), got {array}")
    return array.astype(np.int64)


class ClassArrays(eqx.Module):
    """The data of a [`tasks.scan_snap.SequenceClasses`][] as JAX arrays, so that samplers,
    losses and metrics can take it as an argument under `jit` / `vmap`.

    Built by [`tasks.scan_snap.SequenceClasses.arrays`][].

    **Fields:**

    - `probs`: P(l | n), row n = the contextual distribution of class n.
    - `cdf`: row-wise inverse-CDF table of `probs` (ends at exactly 1 on the last
        token of each support).
    - `query`: ψ(n), the query token $x_T$ of class n.
    - `next_token`: the label token $x_{T+1} = n$ of class n.
    - `class_probs`: π_n, the probability of drawing class n.
    - `class_cdf`: inverse-CDF table of `class_probs`.
    - `dt_mask`: `dt_mask[n, l]` is true iff l ∈ G_DT(n) (a distinct token of class n).
    - `support`: the tokens with P(l | n) > 0 of each class, padded to the largest support
        by repeating the class's last support token.
    - `support_cdf`: the entries of `cdf` at `support` (1 on the padding): the inverse-CDF
        table of a draw over the support only.
    """

    probs: Float[Array, "K M"]
    cdf: Float[Array, "K M"]
    query: Int[Array, " K"]
    next_token: Int[Array, " K"]
    class_probs: Float[Array, " K"]
    class_cdf: Float[Array, " K"]
    dt_mask: Bool[Array, "K M"]
    support: Int[Array, "K S"]
    support_cdf: Float[Array, "K S"]


@dataclasses.dataclass(frozen=True, eq=False)
class SequenceClasses:
    """K sequence classes over a vocabulary of M tokens (Sec. 3.2).

    Class n draws its T − 1 contextual tokens i.i.d. from P(· | n), puts the query token
    ψ(n) at position T and has next token (label) n. Arrays are copied and made read-only.

    **Fields:**

    - `probs`: (K, M) array, row n = P(l | n); rows are nonnegative and sum to 1.
    - `query`: (K,) integer array, ψ(n) ∈ [0, M).
    - `next_token`: (K,) integer array of distinct token ids in [0, M).
    - `class_probs`: (K,) distribution π over classes; `None` means uniform (Theorem 1).

    **Raises:**

    `ValueError` naming the field and the allowed range when an input is invalid.
    """

    probs: np.ndarray
    query: np.ndarray
    next_token: np.ndarray
    class_probs: np.ndarray | None = None

    def __post_init__(self):
        probs = np.array(self.probs, dtype=np.float64)
        if probs.ndim != 2:
            raise ValueError(f"probs must be a (K, M) array, got shape {probs.shape}")
        K, M = probs.shape
        if K < 1:
            raise ValueError(f"probs must have K >= 1 rows (classes), got K = {K}")
        if M < 2:
            raise ValueError(f"probs must have M >= 2 columns (tokens), got M = {M}")
        probs = _distribution("probs", probs, (K, M))
        query = _tokens("query", self.query, K, M)
        next_token = _tokens("next_token", self.next_token, K, M)
        if len(np.unique(next_token)) != K:
            raise ValueError(
                f"next_token entries must be distinct (a class is indexed by its next token), "
                f"got {next_token}"
            )
        if self.class_probs is None:
            class_probs = np.full(K, 1.0 / K)
        else:
            class_probs = _distribution("class_probs", self.class_probs, (K,))
        for name, value in [
            ("probs", probs),
            ("query", query),
            ("next_token", next_token),
            ("class_probs", class_probs),
        ]:
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    @property
    def K(self) -> int:
        """Number of classes."""
        return self.probs.shape[0]

    @property
    def M(self) -> int:
        """Vocabulary size."""
        return self.probs.shape[1]

    def omega(self, token: int) -> np.ndarray:
        """Ω(l) = {n : P(l | n) > 0} for l = `token`, as sorted class indices."""
        return np.flatnonzero(self.probs[:, token] > 0)

    def omega_sizes(self) -> np.ndarray:
        """|Ω(l)| for every token l, shape (M,): 1 for a distinct token, > 1 for a common one."""
        return np.sum(self.probs > 0, axis=0)

    def distinct_mask(self) -> np.ndarray:
        """(K, M) boolean mask, entry (n, l) true iff l ∈ G_DT(n)."""
        return (self.probs > 0) & (self.omega_sizes() == 1)[None, :]

    def distinct_tokens(self, n: int) -> np.ndarray:
        """G_DT(n): the distinct tokens of class n (|Ω(l)| = 1), sorted."""
        return np.flatnonzero(self.distinct_mask()[n])

    def common_tokens(self) -> np.ndarray:
        """G_CT: the common tokens (|Ω(l)| > 1), sorted."""
        return np.flatnonzero(self.omega_sizes() > 1)

    def queries(self) -> np.ndarray:
        """The distinct query tokens, sorted."""
        return np.unique(self.query)

    def classes_of_query(self, m: int) -> np.ndarray:
        r"""$\psi^{-1}(m)$: indices of the classes whose query token is m."""
        return np.flatnonzero(self.query == m)

    def arrays(self, dtype: Any = None) -> ClassArrays:
        """The classes as JAX arrays for use inside `jit` / `vmap`.

        **Arguments:**

        - `dtype`: floating dtype of the probability arrays; `None` gives JAX's default
            float (float64 when x64 is enabled, else float32).

        **Returns:**

        A [`tasks.scan_snap.ClassArrays`][].
        """
        cdf = _inverse_cdf(self.probs)
        support, support_cdf = _support_tables(self.probs, cdf)
        return ClassArrays(
            probs=jnp.asarray(self.probs, dtype=dtype),
            cdf=jnp.asarray(cdf, dtype=dtype),
            query=jnp.asarray(self.query, dtype=jnp.int32),
            next_token=jnp.asarray(self.next_token, dtype=jnp.int32),
            class_probs=jnp.asarray(self.class_probs, dtype=dtype),
            class_cdf=jnp.asarray(_inverse_cdf(self.class_probs), dtype=dtype),
            dt_mask=jnp.asarray(self.distinct_mask()),
            support=jnp.asarray(support, dtype=jnp.int32),
            support_cdf=jnp.asarray(support_cdf, dtype=dtype),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (for trajectory metadata)."""
        return {
            "K": self.K,
            "M": self.M,
            "probs": self.probs.tolist(),
            "query": self.query.tolist(),
            "next_token": self.next_token.tolist(),
            "class_probs": self.class_probs.tolist(),
        }


def to_class_arrays(classes: SequenceClasses | ClassArrays, dtype: Any) -> ClassArrays:
    """`classes` as a [`tasks.scan_snap.ClassArrays`][] (converted with `dtype` if needed)."""
    if isinstance(classes, SequenceClasses):
        return classes.arrays(dtype)
    return classes
