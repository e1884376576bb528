"""The decision-list task: a permutation π of the vocabulary and one list per token, drawn at
random by the task config of every simulation ([`DecisionListsConfig`][]).

The permutation, the lists, the sequence length and the sampling distribution are the paper's
objects (paper); the random generator and the distribution `D` are ours (recon; see "Task and
model" on the decision_lists page of the documentation).
"""

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int

from dynamics import Interval, OneOf, Require, check_params, param

DISTRIBUTIONS = ("distinct", "iid")
"""`distinct` (default): uniformly random ordered n-tuples of distinct tokens; `iid`: i.i.d. uniform
tokens (both recon: the paper does not give `D`)."""


class TaskArrays(eqx.Module):
    """The task as arrays (stackable over tasks with the same `L` and `M`, so `vmap`-able).

    **Fields:**

    - `perm`: π as an `(L,)` int array, `perm[b] = π(b)`.
    - `lists`: `(L, M)` int array, row `a` = `L_a = (a_1, …, a_m)` padded with `a` after `a_m`.
    - `lengths`: `(L,)` int array, `m_a`.
    """

    perm: Int[Array, " L"]
    lists: Int[Array, "L M"]
    lengths: Int[Array, " L"]


def _lists_fit(lists, perm, M) -> bool:
    """One list per token, `lists[a]` of length in [1, M], of distinct tokens in [0, L), ending in a."""
    L = len(perm)
    return len(lists) == L and all(
        1 <= len(entries) <= M
        and entries[-1] == a
        and len(set(entries)) == len(entries)
        and all(0 <= b < L for b in entries)
        for a, entries in enumerate(lists)
    )


@dataclasses.dataclass(frozen=True)
class DecisionLists:
    """A decision-list task: vocabulary `L = len(perm)`, sequence length `n`, list bound `M`.

    **Fields:**

    - `perm`: π, `perm[b] = π(b)`, a permutation of `0..L−1`.
    - `lists`: `lists[a]` = `L_a`, distinct tokens, `1 ≤ len ≤ M`, ending in `a`.
    - `n`: the sequence length, `2 ≤ n ≤ L`.
    - `M`: the largest list length, `1 ≤ M ≤ L`.
    - `distribution`: one of [`DISTRIBUTIONS`][] (the sampling distribution `D`, recon).

    **Raises:** `ValueError` naming the field, the value and what is allowed when the task is
    invalid.
    """

    perm: tuple[int, ...]
    lists: tuple[tuple[int, ...], ...]
    n: int = param(allowed=Interval(2), doc="the sequence length n (<= L)")
    M: int = param(allowed=Interval(1), doc="the largest list length M (<= L)")
    distribution: str = param("distinct", OneOf(*DISTRIBUTIONS), doc="the sampling distribution D")

    requires = (
        Require(("perm",), lambda perm: len(perm) >= 2, "L = len(perm) must be >= 2"),
        Require(
            ("perm",),
            lambda perm: sorted(perm) == list(range(len(perm))),
            "perm must be a permutation of 0..L-1",
        ),
        Require(("M", "perm"), lambda M, perm: M <= len(perm), "M must be <= L = len(perm)"),
        Require(("n", "perm"), lambda n, perm: n <= len(perm), "n must be <= L = len(perm)"),
        Require(
            ("lists", "perm", "M"),
            _lists_fit,
            "lists must hold one list per token a, of length in [1, M], of distinct tokens in [0, L), "
            "ending in a",
        ),
    )

    def __post_init__(self):
        check_params(self)

    @property
    def L(self) -> int:
        """The vocabulary size (= the embedding dimension d)."""
        return len(self.perm)

    @classmethod
    def random(
        cls,
        seed: int,
        *,
        L: int,
        n: int,
        M: int,
        fixed_m: int | None = None,
        distribution: str = "distinct",
    ) -> "DecisionLists":
        """The task generator (recon: the paper gives none): π uniform; `m_a ~ U{1..M}` (or `fixed_m`
        for every token); `a_1..a_{m−1}` distinct, uniform from `[L] ∖ {a}`; `a_m = a`.

        **Arguments:** `seed`: NumPy seed; `L`, `n`, `M`: sizes; `fixed_m`: one list length for all
        tokens (in `[1, M]`); `distribution`: see [`DISTRIBUTIONS`][].

        **Returns:** the task.
        """
        if not 1 <= M <= L:
            raise ValueError(f"M must lie in [1, L] = [1, {L}], got M={M}")
        if fixed_m is not None and not 1 <= fixed_m <= M:
            raise ValueError(f"fixed_m must lie in [1, M] = [1, {M}], got {fixed_m}")
        rng = np.random.default_rng(seed)
        perm = tuple(int(b) for b in rng.permutation(L))
        lists = []
        for a in range(L):
            m = fixed_m if fixed_m is not None else int(rng.integers(1, M + 1))
            others = rng.choice(np.delete(np.arange(L), a), size=m - 1, replace=False)
            lists.append(tuple(int(b) for b in others) + (a,))
        return cls(perm=perm, lists=tuple(lists), n=n, M=M, distribution=distribution)

    def permutation_matrix(self, dtype=jnp.float64) -> Array:
        """`P` with `P[π(b), b] = 1` (so `P e_b = e_{π(b)}`: the orientation under which
        `V = cP` maps attention on `b` to the label `π(b)`, derived)."""
        P = np.zeros((self.L, self.L))
        P[np.asarray(self.perm), np.arange(self.L)] = 1.0
        return jnp.asarray(P, dtype)

    def arrays(self, width: int | None = None) -> TaskArrays:
        """The task as [`TaskArrays`][], lists padded to `width` columns (default `M`; a larger
        width lets tasks with different `M` share one array shape, e.g. to `vmap` over them)."""
        width = self.M if width is None else width
        if width < self.M:
            raise ValueError(f"width must be >= M = {self.M}, got {width}")
        padded = [list(entries) + [a] * (width - len(entries)) for a, entries in enumerate(self.lists)]
        return TaskArrays(
            perm=jnp.asarray(self.perm, jnp.int32),
            lists=jnp.asarray(padded, jnp.int32),
            lengths=jnp.asarray([len(e) for e in self.lists], jnp.int32),
        )

    def support_size(self) -> int:
        """The number of sequences enumerated by the exact population: `C(L, n)` under `distinct`
        (order does not matter), `L^n` under `iid`."""
        return math.comb(self.L, self.n) if self.distribution == "distinct" else self.L**self.n

    def describe(self) -> dict:
        """The task as JSON-ready metadata."""
        return {
            "L": self.L,
            "n": self.n,
            "M": self.M,
            "distribution": self.distribution,
            "perm": list(self.perm),
            "lists": [list(e) for e in self.lists],
        }


def stack_arrays(tasks: list[DecisionLists]) -> TaskArrays:
    """[`TaskArrays`][] of several tasks with the same `L`, stacked on a leading axis (lists
    padded to the largest `M`)."""
    if len({t.L for t in tasks}) != 1:
        raise ValueError("tasks must share L to be stacked")
    width = max(t.M for t in tasks)
    arrays = [t.arrays(width) for t in tasks]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *arrays)
