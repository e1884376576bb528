"""The two random realizable datasets of spec §3 (our recipes; the paper gives none)."""

import dataclasses

import numpy as np

from ._data import Dataset, validate


def _positive(name: str, value: int, low: int = 1) -> None:
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")


@dataclasses.dataclass(frozen=True)
class RecipeB:
    """Recipe B (spec §3.1, the default): every query gets an optimal set `O_q` and a
    non-optimal set `N_q`; each sentence holds one optimal token and some non-optimal ones.

    **Fields:** `vocab_size` (>= 3), `max_length` `L_max` (>= 2), `min_sentences` `s_q` (>= 1),
    `rho` (probability that `O_q = {q}`, in [0, 1]), `k_max`, `m_max` (>= 1), `p_incl` (in
    [0, 1]), `c_max` (>= 1), `complete` (every pair of `O_q × N_q` co-occurs, which makes
    Proposition 2's closed form exact).
    """

    vocab_size: int = 20
    max_length: int = 6
    min_sentences: int = 3
    rho: float = 0.25
    k_max: int = 3
    m_max: int = 4
    p_incl: float = 0.5
    c_max: int = 2
    complete: bool = False

    def __post_init__(self):
        _positive("vocab_size", self.vocab_size, 3)
        _positive("max_length", self.max_length, 2)
        for name in ("min_sentences", "k_max", "m_max", "c_max"):
            _positive(name, getattr(self, name))
        for name in ("rho", "p_incl"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.k_max + self.m_max > self.vocab_size:
            raise ValueError(
                f"k_max + m_max must be <= vocab_size={self.vocab_size}, got {self.k_max + self.m_max}"
            )

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
    """Recipe A (spec §3.2): prefix-closed rollouts of a ground truth with a random ranking per
    query; a sample is kept only while the orders stay free of confused tokens and Assumption 3
    holds.

    **Fields:** `vocab_size` (>= 2), `max_length` `L_max` (>= 1).
    """

    vocab_size: int = 20
    max_length: int = 6

    def __post_init__(self):
        _positive("vocab_size", self.vocab_size, 2)
        _positive("max_length", self.max_length)

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
