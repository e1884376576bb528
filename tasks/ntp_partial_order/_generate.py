"""Two generators of random realizable datasets (recon: the paper draws its dataset at random
with |V| = 20 but gives no generator; see "Task and model" on the ntp_partial_order page of the
documentation); a simulation's task config, [`NTPConfig`][], picks one."""

import dataclasses

import numpy as np

from dynamics import Interval, Require, check_params, param

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
    means. `k_max + m_max` must be ≤ `vocab_size`.
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
