"""Labels, the exact population over the support of `D`, and sampled populations."""

import itertools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ._task import DecisionLists, TaskArrays

MAX_SUPPORT = 2_000_000
"""The largest support enumerated by [`exact_population`][]."""


class Population(eqx.Module):
    """A weighted set of labelled sequences: the exact support of `D` or a frozen sample.

    **Fields:**

    - `tokens`: `(K, n)` int, one sequence per row.
    - `labels`: `(K, n)` int, the label of every position.
    - `weights`: `(K,)` float, summing to 1 (probabilities under `D`, or `1/K` for a sample).
    """

    tokens: Int[Array, "K n"]
    labels: Int[Array, "K n"]
    weights: Float[Array, " K"]


def labels(arrays: TaskArrays, tokens: Int[Array, " n"]) -> Int[Array, " n"]:
    """The label of every position of one sequence: `π(a_j)` for the token `a` at that position,
    with `a_j` the first entry of `L_a` present in the sequence (the label-determining token).

    **Arguments:** `arrays`: the task; `tokens`: one sequence.

    **Returns:** the `(n,)` labels.
    """
    rows = arrays.lists[tokens]  # (n, M): the list of the token at each position
    present = jnp.any(rows[:, :, None] == tokens[None, None, :], axis=-1)  # (n, M)
    first = jnp.argmax(present, axis=1)  # a_m = a is always present
    determining = jnp.take_along_axis(rows, first[:, None], axis=1)[:, 0]
    return arrays.perm[determining]


def label_determining(arrays: TaskArrays, tokens: Int[Array, " n"]) -> Int[Array, " n"]:
    """The index `k` (0-based) in `L_a` of the label-determining token of every position."""
    rows = arrays.lists[tokens]
    return jnp.argmax(jnp.any(rows[:, :, None] == tokens[None, None, :], axis=-1), axis=1)


def make_population(arrays: TaskArrays, tokens, weights, dtype=jnp.float64) -> Population:
    """Label `tokens` (`(K, n)`) with the task and wrap them with their `weights` (`(K,)`)."""
    tokens = jnp.asarray(tokens, jnp.int32)
    return Population(
        tokens=tokens,
        labels=jax.vmap(labels, in_axes=(None, 0))(arrays, tokens),
        weights=jnp.asarray(weights, dtype),
    )


def support(L: int, n: int, distribution: str) -> tuple[np.ndarray, np.ndarray]:
    """The support of `D` with its probabilities (recon: the paper does not give `D`).

    Under `distinct` the per-sequence loss does not depend on the order of positions
    (derived: the model is permutation-equivariant), so the support is the `C(L, n)` subsets,
    each in increasing order, with equal weight. Under `iid` it is all `L^n` sequences.

    **Returns:** `(tokens (K, n) int32, weights (K,) float64)`.

    **Raises:** `ValueError` when the support exceeds [`MAX_SUPPORT`][] (use [`sampled_population`][]).
    """
    size = math.comb(L, n) if distribution == "distinct" else L**n
    if size > MAX_SUPPORT:
        raise ValueError(f"the support has {size} sequences (> {MAX_SUPPORT}); use a sampled population")
    if distribution == "distinct":
        tokens = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(L), n)), np.int32)
    else:
        tokens = np.indices((L,) * n, dtype=np.int32).reshape(n, -1).T.ravel()
    tokens = tokens.reshape(size, n)
    return tokens, np.full(size, 1.0 / size)


def exact_population(task: DecisionLists, dtype=jnp.float64) -> Population:
    """Every sequence of the support of `D`, labelled, with its probability."""
    tokens, weights = support(task.L, task.n, task.distribution)
    return make_population(task.arrays(), tokens, weights, dtype)


def sample_tokens(key: PRNGKeyArray, L: int, n: int, distribution: str, batch: int) -> Int[Array, "batch n"]:
    """`batch` sequences drawn from `D`: distinct tokens in uniformly random order, or i.i.d. tokens."""
    if distribution == "distinct":
        keys = jax.random.split(key, batch)
        return jax.vmap(lambda k: jax.random.permutation(k, L)[:n])(keys).astype(jnp.int32)
    return jax.random.randint(key, (batch, n), 0, L, dtype=jnp.int32)


def sampled_population(
    task: DecisionLists, key: PRNGKeyArray, size: int = 2**14, dtype=jnp.float64
) -> Population:
    """A frozen Monte-Carlo population: `size` sequences drawn once from `D`, weights `1/size`
    (recon, for supports too large to enumerate)."""
    tokens = sample_tokens(key, task.L, task.n, task.distribution, size)
    return make_population(task.arrays(), tokens, np.full(size, 1.0 / size), dtype)


def event_probabilities(arrays: TaskArrays, population: Population) -> Float[Array, "L M"]:
    """`p_{a,k} = P_{s∼D}(a ∈ s, a_k ∈ s, a_1..a_{k−1} ∉ s)` under the population's weights
    (the query `a` is present and `a_k` is its label-determining token; the events that define
    `γ` and `δ`, recon).

    **Returns:** `(L, M)`; entries past `m_a` are 0.
    """
    L, M = arrays.lists.shape
    present = jnp.any(jax.nn.one_hot(population.tokens, L, dtype=jnp.bool_), axis=1)  # (K, L)
    in_list = present[:, arrays.lists]  # (K, L, M)
    before = jnp.cumsum(in_list.astype(jnp.int32), axis=2) - in_list.astype(jnp.int32)  # earlier present
    hit = present[:, :, None] & in_list & (before == 0)
    valid = jnp.arange(M, dtype=jnp.int32)[None, :] < arrays.lengths[:, None]
    return jnp.where(
        valid, jnp.einsum("k,kam->am", population.weights, hit.astype(population.weights.dtype)), 0.0
    )


def distinct_event_probabilities(task: DecisionLists) -> np.ndarray:
    """The closed form of `p_{a,k}` under `distinct` (derived):
    `C(L−k−1, n−2)/C(L, n)` for `k < m_a` and `C(L−m_a, n−1)/C(L, n)` for `k = m_a` (1-based `k`).

    **Returns:** `(L, M)` float64; entries past `m_a` are 0.
    """
    L, n, total = task.L, task.n, math.comb(task.L, task.n)
    p = np.zeros((L, task.M))
    for a, entries in enumerate(task.lists):
        m = len(entries)
        for k in range(1, m):
            p[a, k - 1] = math.comb(L - k - 1, n - 2) / total
        p[a, m - 1] = math.comb(L - m, n - 1) / total
    return p


def presence_probabilities(L: int, population: Population) -> Float[Array, " L"]:
    """`P_{s∼D}(b ∈ s)` for every token `b` of a vocabulary of size `L`."""
    present = jnp.any(jax.nn.one_hot(population.tokens, L, dtype=jnp.bool_), axis=1)
    return population.weights @ present.astype(population.weights.dtype)
