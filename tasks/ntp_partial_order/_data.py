"""The data model of Huang, Liang and Yang (NeurIPS 2024): sentences, frequencies, the collocation,
query-dependent partial orders (Definition 1), token types and Assumptions 1-3 (see "Task and
model" on the ntp_partial_order page of the documentation)."""

import dataclasses
import itertools
from collections import Counter

import numpy as np


@dataclasses.dataclass(frozen=True)
class TokenTypes:
    """The token types of one query's order (Definition 1), each a sorted tuple of token indices.

    **Fields:** `optimal` (beats someone, beaten by nobody), `non_optimal` (beaten, beats
    nobody), `confused` (both), `non_comparable` (in no pair).
    """

    optimal: tuple[int, ...]
    non_optimal: tuple[int, ...]
    confused: tuple[int, ...]
    non_comparable: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A training set `D_0` of distinct sentences with next tokens and frequencies.

    **Fields:**

    - `vocab_size`: `|V|` (≥ 2); tokens are `0..|V|-1`.
    - `sentences`: the distinct sentences `X^(n)`, each a non-empty tuple of tokens; the last is
      the query.
    - `labels`: the next token `y_n` of each sentence.
    - `weights`: `π^(n)` (> 0, summing to 1); default uniform.
    - `names`: optional token names (e.g. `("S", "V", "O", "P")`).

    Only shapes and ranges are checked here; [`validate`][] checks Assumptions 1 and 3.
    """

    vocab_size: int
    sentences: tuple[tuple[int, ...], ...]
    labels: tuple[int, ...]
    weights: tuple[float, ...] = ()
    names: tuple[str, ...] = ()

    def __post_init__(self):
        if self.vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {self.vocab_size}")
        sentences = tuple(tuple(int(t) for t in s) for s in self.sentences)
        object.__setattr__(self, "sentences", sentences)
        object.__setattr__(self, "labels", tuple(int(y) for y in self.labels))
        if not sentences or len(self.labels) != len(sentences):
            raise ValueError(
                f"labels must hold one token per sentence (>= 1 sentence), got {len(self.labels)} labels "
                f"for {len(sentences)} sentences"
            )
        for n, s in enumerate(sentences):
            if not s or min(s) < 0 or max(s) >= self.vocab_size:
                raise ValueError(
                    f"sentence {n} must be non-empty with tokens in [0, {self.vocab_size}), got {s}"
                )
            if not 0 <= self.labels[n] < self.vocab_size:
                raise ValueError(
                    f"label of sentence {n} must be in [0, {self.vocab_size}), got {self.labels[n]}"
                )
        weights = tuple(float(w) for w in self.weights) or (1.0 / len(sentences),) * len(sentences)
        if len(weights) != len(sentences) or min(weights) <= 0 or abs(sum(weights) - 1.0) > 1e-12:
            raise ValueError("weights must be one positive number per sentence summing to 1")
        object.__setattr__(self, "weights", weights)
        if self.names and len(self.names) != self.vocab_size:
            raise ValueError(f"names must hold vocab_size={self.vocab_size} names, got {len(self.names)}")

    @property
    def num_sentences(self) -> int:
        """`N`, the number of distinct sentences (length-1 ones included)."""
        return len(self.sentences)

    @property
    def max_length(self) -> int:
        """`L_max`, the largest sentence length."""
        return max(len(s) for s in self.sentences)

    def name(self, token: int) -> str:
        """The token's name (its index when the dataset has no names)."""
        return self.names[token] if self.names else str(token)

    def collocation(self) -> np.ndarray:
        """The collocation `n(x)`, read from the length-1 samples: an int array of size `|V|`, −1
        where a token has no length-1 sample."""
        nxt = np.full(self.vocab_size, -1, dtype=np.int64)
        for s, y in zip(self.sentences, self.labels):
            if len(s) == 1:
                nxt[s[0]] = y
        return nxt

    def optimal_token(self, n: int) -> int:
        """`n⁻¹(y_n)`, the optimal token of sentence `n` (−1 if the label has no pre-image)."""
        hits = np.flatnonzero(self.collocation() == self.labels[n])
        return int(hits[0]) if hits.size else -1

    def relation(self, query: int) -> set[tuple[int, int]]:
        """The pairs `(x, x')` with `x ≻_q x'` (Definition 1) for `q = query`."""
        nxt = self.collocation()
        pairs = set()
        for s, y in zip(self.sentences, self.labels):
            if s[-1] != query:
                continue
            for x in set(s):
                for x2 in set(s):
                    if x != x2 and nxt[x] == y and nxt[x2] != y:
                        pairs.add((x, x2))
        return pairs

    def token_types(self, query: int) -> TokenTypes:
        """The token types under `query` (Definition 1)."""
        pairs = self.relation(query)
        winners, losers = {a for a, _ in pairs}, {b for _, b in pairs}
        return TokenTypes(
            optimal=tuple(sorted(winners - losers)),
            non_optimal=tuple(sorted(losers - winners)),
            confused=tuple(sorted(winners & losers)),
            non_comparable=tuple(sorted(set(range(self.vocab_size)) - winners - losers)),
        )

    def to_dict(self) -> dict:
        """JSON-ready description."""
        return {
            "vocab_size": self.vocab_size,
            "sentences": [list(s) for s in self.sentences],
            "labels": list(self.labels),
            "weights": list(self.weights),
            "names": list(self.names),
        }


@dataclasses.dataclass(frozen=True)
class QueryReport:
    """Per-query summary of a validated dataset: `|O_q|, |N_q|, |M_q|` and the Hall-type
    condition (derived) under which Proposition 2's closed form is the exact QP solution."""

    query: int
    num_optimal: int
    num_non_optimal: int
    num_non_comparable: int
    hall: bool


def hall_condition(dataset: Dataset, query: int) -> bool:
    """The Hall-type condition (derived): for every subset `S ⊆ O_q`,
    `|neighbours(S)| · k ≥ |S| · m` in the bipartite graph `o — x` iff `o ≻_q x` (`k = |O_q|`,
    `m = |N_q|`). True for a query with no pair."""
    types = dataset.token_types(query)
    pairs = dataset.relation(query)
    k, m = len(types.optimal), len(types.non_optimal)
    for size in range(1, k + 1):
        for subset in itertools.combinations(types.optimal, size):
            neighbours = {b for a, b in pairs if a in subset}
            if len(neighbours) * k < size * m:
                return False
    return True


def _has_cycle(pairs: set[tuple[int, int]], vocab_size: int) -> tuple[int, ...]:
    """Tokens on a cycle of the relation (empty when acyclic), by transitive closure."""
    reach = np.zeros((vocab_size, vocab_size), dtype=bool)
    for a, b in pairs:
        reach[a, b] = True
    for k in range(vocab_size):
        reach |= reach[:, k : k + 1] & reach[k : k + 1, :]
    return tuple(int(i) for i in np.flatnonzero(np.diag(reach)))


def validate(dataset: Dataset) -> list[QueryReport]:
    """Check Assumptions 1 and 3 of the paper; Assumption 2 holds by construction of the
    embeddings (one-hot or orthonormal, see `Batch`).

    **Arguments:** `dataset`: the [`Dataset`][].

    **Returns:** one [`QueryReport`][] per token.

    **Raises:** `ValueError` naming the sample, the query, the tokens and the assumption broken:
    a sentence with two labels (not a function), no or a non-injective collocation
    (Assumption 1(i)), a label whose pre-image is not in its sentence (realizability), a cyclic
    order or a confused token (Assumption 1(ii)), or an optimal token outnumbered by a
    non-optimal one (Assumption 3).
    """
    nm = dataset.name
    seen: dict[tuple[int, ...], int] = {}
    for n, (s, y) in enumerate(zip(dataset.sentences, dataset.labels)):
        if s in seen and dataset.labels[seen[s]] != y:
            raise ValueError(
                f"sample {n} ({' '.join(map(nm, s))}): the sentence has two labels, "
                f"{nm(dataset.labels[seen[s]])} and {nm(y)} (the samples must be a function)"
            )
        seen.setdefault(s, n)
    colloc = [(s[0], y) for s, y in zip(dataset.sentences, dataset.labels) if len(s) == 1]
    if not colloc:
        raise ValueError("Assumption 1(i) broken: no collocation (the dataset has no length-1 sample)")
    images = Counter(y for _, y in colloc)
    for y, count in images.items():
        if count > 1:
            xs = [nm(x) for x, yy in colloc if yy == y]
            raise ValueError(
                f"Assumption 1(i) broken: the collocation is not injective, tokens {xs} all map to {nm(y)}"
            )
    for n, (s, y) in enumerate(zip(dataset.sentences, dataset.labels)):
        o = dataset.optimal_token(n)
        text = " ".join(map(nm, s))
        if o < 0:
            raise ValueError(
                f"Assumption 1(i) broken: sample {n} ({text} -> {nm(y)}): "
                f"no collocation maps a token to {nm(y)}"
            )
        if o not in s:
            raise ValueError(
                f"sample {n} ({text} -> {nm(y)}) is not realizable: its optimal token "
                f"{nm(o)} = n^-1({nm(y)}) "
                "is not in the sentence (Assumption 1)"
            )
        counts = Counter(s)
        for x, c in counts.items():
            if x != o and c > counts[o]:
                raise ValueError(
                    f"Assumption 3 broken: sample {n} ({text}, query {nm(s[-1])}): non-optimal token {nm(x)} "
                    f"occurs {c} times, the optimal token {nm(o)} only {counts[o]}"
                )
    reports = []
    for q in range(dataset.vocab_size):
        pairs = dataset.relation(q)
        cycle = _has_cycle(pairs, dataset.vocab_size)
        if cycle:
            raise ValueError(
                f"Assumption 1(ii) broken: the order of query {nm(q)} is not well defined, tokens "
                f"{[nm(x) for x in cycle]} lie on a cycle"
            )
        types = dataset.token_types(q)
        if types.confused:
            x = types.confused[0]
            beats = sorted(nm(b) for a, b in pairs if a == x)
            beaten = sorted(nm(a) for a, b in pairs if b == x)
            raise ValueError(
                f"Assumption 1(ii) broken: under query {nm(q)} token {nm(x)} is confused: it beats {beats} "
                f"and is beaten by {beaten}"
            )
        reports.append(
            QueryReport(
                q,
                len(types.optimal),
                len(types.non_optimal),
                len(types.non_comparable),
                hall_condition(dataset, q),
            )
        )
    return reports


def svop() -> Dataset:
    """Example 1 of the paper: tokens S, V, O, P = 0..3, training strings SVOP, VOP,
    OPP, PSV with all their prefixes: 9 distinct samples, each with π = 1/9."""
    S, V, O, P = range(4)  # noqa: E741 - the paper's token names
    samples = [
        ((S,), V),
        ((S, V), O),
        ((S, V, O), P),
        ((V,), O),
        ((V, O), P),
        ((O,), P),
        ((O, P), P),
        ((P,), S),
        ((P, S), V),
    ]
    return Dataset(4, tuple(s for s, _ in samples), tuple(y for _, y in samples), names=("S", "V", "O", "P"))
