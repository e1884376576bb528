"""Two generators of random realizable datasets (recon: the paper draws its dataset at random
with |V| = 20 but gives no generator; see "Task and model" on the ntp_partial_order page of the
documentation), and the dataset settings of a simulation, [`NTPConfig`][], which picks one."""

import dataclasses

import numpy as np

from dynamics import Interval, OneOf, Require, check_params, param

from ._data import Dataset, validate

_PROBABILITY = Interval(0, 1)
RECIPES = ("B", "A")
"""The dataset recipes by letter: [`RecipeB`][] (the default) and [`RecipeA`][]."""


@dataclasses.dataclass(frozen=True)
class RecipeB:
    """Recipe B (recon; the default): every query gets an optimal set `O_q` and a
    non-optimal set `N_q`; each sentence holds one optimal token and some non-optimal ones.

    **Fields:** `vocab_size`, `max_length` `L_max`, `min_sentences` `s_q`, `rho`, `k_max`,
    `m_max`, `p_incl`, `c_max`, `complete`; `dynamics.params(RecipeB)` lists what each allows and
    means. `k_max + m_max` must be <= `vocab_size`.
    """

    vocab_size: int = param(20, Interval(3), doc="vocabulary size V")
    max_length: int = param(6, Interval(2), doc="the longest sentence L_max")
    min_sentences: int = param(3, Interval(1), doc="the fewest sentences s_q per query")
    rho: float = param(0.25, _PROBABILITY, doc="probability that O_q = {q}")
    k_max: int = param(3, Interval(1), doc="the largest optimal set O_q")
    m_max: int = param(4, Interval(1), doc="the largest non-optimal set N_q")
    p_incl: float = param(0.5, _PROBABILITY, doc="probability that a non-optimal token joins a sentence")
    c_max: int = param(2, Interval(1), doc="the most copies of the optimal token in a sentence")
    complete: bool = param(
        False, doc="every pair of O_q × N_q co-occurs, which makes Proposition 2's closed form exact"
    )

    requires = (
        Require(
            ("k_max", "m_max", "vocab_size"),
            lambda k, m, V: k + m <= V,
            "k_max + m_max must be <= vocab_size",
        ),
    )

    def __post_init__(self):
        check_params(self)

    def build(self, seed: int | np.random.Generator) -> Dataset:
        """Draw a dataset (deterministic given `seed`) and validate it.

        **Returns:** the [`Dataset`][] (uniform `π`).
        """
        rng = np.random.default_rng(seed)
        V = self.vocab_size
        nxt = rng.permutation(V)
        sentences = {(x,): int(nxt[x]) for x in range(V)}
        for q in range(V):
            others = rng.permutation(np.delete(np.arange(V), q))
            if rng.random() < self.rho:
                m = int(rng.integers(1, self.m_max + 1))
                optimal, non_optimal = [q], [int(x) for x in others[:m]]
            else:
                k, m = int(rng.integers(1, self.k_max + 1)), int(rng.integers(1, self.m_max + 1))
                optimal, non_optimal = (
                    [int(x) for x in others[:k]],
                    [q] + [int(x) for x in others[k : k + m - 1]],
                )
            made, seen, pairs = 0, set(), set()
            wanted = set(optimal) | set(non_optimal)
            for _ in range(1000):
                if (
                    made >= self.min_sentences
                    and seen >= wanted
                    and (not self.complete or len(pairs) == len(optimal) * len(non_optimal))
                ):
                    break
                o = optimal[made] if made < len(optimal) else int(rng.choice(optimal))
                if q in non_optimal:
                    rest = [x for x in non_optimal if x != q and rng.random() < self.p_incl]
                    chosen = [q] + rest
                else:
                    chosen = [x for x in non_optimal if rng.random() < self.p_incl]
                    if not chosen:
                        chosen = [int(rng.choice(non_optimal))]
                c_o = int(rng.integers(1, self.c_max + 1))
                multiset = [o] * c_o
                for x in chosen:
                    multiset += [x] * int(rng.integers(1, c_o + 1))
                if len(multiset) > self.max_length:
                    continue
                multiset.remove(q)
                body = [int(multiset[i]) for i in rng.permutation(len(multiset))]
                sentence = (*body, q)
                if sentence in sentences:
                    continue
                sentences[sentence] = int(nxt[o])
                made += 1
                seen |= set(sentence)
                pairs |= {(o, x) for x in chosen}
        keys = list(sentences)
        dataset = Dataset(V, tuple(keys), tuple(sentences[s] for s in keys))
        validate(dataset)
        return dataset


@dataclasses.dataclass(frozen=True)
class RecipeA:
    """Recipe A (recon): prefix-closed rollouts of a ground truth with a random ranking per
    query; a sample is kept only while the orders stay free of confused tokens and Assumption 3
    holds.

    **Fields:** `vocab_size`, `max_length` `L_max` (`dynamics.params(RecipeA)` lists what they
    allow).
    """

    vocab_size: int = param(20, Interval(2), doc="vocabulary size V")
    max_length: int = param(6, Interval(1), doc="the longest rollout L_max")

    def __post_init__(self):
        check_params(self)

    def build(self, seed: int | np.random.Generator) -> Dataset:
        """Draw a dataset (deterministic given `seed`) and validate it.

        **Returns:** the [`Dataset`][] (uniform `π` over the accepted samples).
        """
        rng = np.random.default_rng(seed)
        V = self.vocab_size
        nxt = rng.permutation(V)
        rank = np.stack([rng.permutation(V) for _ in range(V)])  # rank[q, x]: higher is preferred

        def rule(prefix):
            if len(prefix) == 1:
                return int(nxt[prefix[0]])
            return int(nxt[max(set(prefix), key=lambda x: rank[prefix[-1], x])])

        winners = [set() for _ in range(V)]
        losers = [set() for _ in range(V)]
        samples: dict[tuple[int, ...], int] = {}
        trajectories = {x: [x] for x in range(V)}
        alive = set(range(V))
        for _length in range(1, self.max_length + 1):
            for start in rng.permutation(V):
                start = int(start)
                if start not in alive:
                    continue
                prefix = tuple(trajectories[start])
                y = rule(prefix)
                q = prefix[-1]
                o = int(np.flatnonzero(nxt == y)[0])
                beaten = set(prefix) - {o}
                counts = [prefix.count(x) for x in beaten]
                confused = (o in losers[q]) or bool(beaten & winners[q])
                if confused or (counts and max(counts) > prefix.count(o)):
                    alive.discard(start)
                    continue
                if beaten:
                    winners[q].add(o)
                losers[q] |= beaten
                samples[prefix] = y
                trajectories[start].append(y)
        keys = list(samples)
        dataset = Dataset(V, tuple(keys), tuple(samples[s] for s in keys))
        validate(dataset)
        return dataset


_B_VOCAB = RecipeB.k_max + RecipeB.m_max


@dataclasses.dataclass(frozen=True)
class NTPConfig:
    """The random datasets a simulation trains on: the recipe and its sizes, and the padded shape
    that lets the datasets of many seeds run in one compiled call; every field is checked on
    construction.

    **Fields:** `recipe` (one of [`RECIPES`][]: B, query-wise orders, or A, prefix closed),
    `vocab_size` `|V| = d` (one-hot embeddings; Recipe B needs at least `k_max + m_max` = 7),
    `max_length` `L_max`, `complete` (Recipe B only), `max_sentences` (the padded number of samples;
    none: `vocab_size × max_length`); `dynamics.params(NTPConfig)` lists their defaults, allowed
    values and meaning. The defaults are the paper's |V| = 20 with Recipe B and `L_max` = 6. The
    recipe's other fields keep [`RecipeB`][]'s defaults.

    **Example:**

        >>> from tasks.ntp_partial_order import NTPConfig
        >>> task = NTPConfig(recipe="A", vocab_size=6)
        >>> task.generator()
        RecipeA(vocab_size=6, max_length=6)
        >>> task.num_rows
        36
        >>> task.dataset(0) == task.generator().build(0)
        True
    """

    recipe: str = param(
        "B", OneOf(*RECIPES), doc="dataset recipe: B (query-wise orders) or A (prefix closed)"
    )
    vocab_size: int = param(20, Interval(3), doc="|V| = d (one-hot embeddings)")
    max_length: int = param(6, Interval(2), doc="L_max, the longest sentence the recipe draws")
    complete: bool = param(False, doc="Recipe B: every pair of O_q × N_q co-occurs (Proposition 2 exact)")
    max_sentences: int | None = param(
        None,
        Interval(1),
        doc="samples per padded dataset (none: vocab_size × max_length); a dataset with more is refused",
    )

    requires = (
        Require(
            ("recipe", "vocab_size"),
            lambda r, v: r == "A" or v >= _B_VOCAB,
            f"Recipe B needs vocab_size >= k_max + m_max = {_B_VOCAB}",
        ),
        Require(("recipe", "complete"), lambda r, c: r == "B" or not c, "complete applies to Recipe B only"),
    )

    def __post_init__(self):
        check_params(self)

    def generator(self) -> RecipeA | RecipeB:
        """The dataset recipe these settings pick, with its sizes."""
        if self.recipe == "A":
            return RecipeA(self.vocab_size, self.max_length)
        return RecipeB(self.vocab_size, self.max_length, complete=self.complete)

    def dataset(self, seed: int) -> Dataset:
        """The dataset of integer seed `seed` (validated by the recipe)."""
        return self.generator().build(seed)

    @property
    def num_rows(self) -> int:
        """The padded number of samples per dataset: `max_sentences`, or `vocab_size × max_length`."""
        return self.vocab_size * self.max_length if self.max_sentences is None else self.max_sentences
