"""The official synthetic generator `Dataset2` (`decoder_only.py`) of the Scan and Snap code."""

import dataclasses

import numpy as np

from dynamics import Interval, Require, check_params, param

from ._classes import SequenceClasses


@dataclasses.dataclass(frozen=True)
class Dataset2:
    """Config of the official generator (`Dataset2` in the paper's `decoder_only.py`).

    K = `num_last` · `num_next_per_last` classes. Token ids (0-based) are contiguous
    blocks, in this order:
    `[global CTs: num_common] [per-query CTs: num_common_per_last × num_last]
    [DTs: num_unique_per_next × K] [query tokens: num_last] [next tokens: K]`,
    and M is the total (query and next tokens belong to the vocabulary).
    Class k = m · `num_next_per_last` + j is the j-th next token of query m: its query
    token is the m-th query id, its next token the k-th next id, its DTs the k-th DT block.
    Unnormalised probabilities: `common_unnormalized_prob` on every global CT and on the
    CTs of its query, `linspace(unique_unnormalized_min, unique_unnormalized_max,
    num_unique_per_next)` on its DTs (increasing with token id); then normalised.

    **Fields:** `num_last`, `num_next_per_last`, `num_common`, `num_common_per_last`,
    `num_unique_per_next` (required), `common_unnormalized_prob`, `unique_unnormalized_min`,
    `unique_unnormalized_max`; `dynamics.params(Dataset2)` lists what each allows and means.
    Every class needs at least one contextual token, and `unique_unnormalized_max >=
    unique_unnormalized_min`.

    **Raises:**

    `ValueError` naming the field, the value and what is allowed.
    """

    num_last: int = param(allowed=Interval(1), doc="number of query tokens")
    num_next_per_last: int = param(allowed=Interval(1), doc="classes (next tokens) per query token")
    num_common: int = param(allowed=Interval(0), doc="common tokens shared by every class")
    num_common_per_last: int = param(
        allowed=Interval(0), doc="common tokens shared by the classes of one query"
    )
    num_unique_per_next: int = param(allowed=Interval(0), doc="distinct tokens per class")
    common_unnormalized_prob: float = param(
        1.0, Interval.positive(), doc="unnormalised probability of every common token"
    )
    unique_unnormalized_min: float = param(
        0.1, Interval.positive(), doc="unnormalised probability of a class's first distinct token"
    )
    unique_unnormalized_max: float = param(
        1.0, Interval.positive(), doc="unnormalised probability of a class's last distinct token"
    )

    requires = (
        Require(
            ("num_common", "num_common_per_last", "num_unique_per_next"),
            lambda *counts: sum(counts) >= 1,
            "num_common + num_common_per_last + num_unique_per_next must be >= 1 "
            "(every class needs a contextual token)",
        ),
        Require(
            ("unique_unnormalized_min", "unique_unnormalized_max"),
            lambda low, high: high >= low,
            "unique_unnormalized_max must be >= unique_unnormalized_min",
        ),
    )

    def __post_init__(self):
        check_params(self)

    @classmethod
    def syn_small(cls) -> "Dataset2":
        """Syn-Small (Figs. 4-5, the official README command): K = 2 classes with their own query tokens,
        tokens 0-9 common, 10-19 and 20-29 distinct, M = 34."""
        return cls(
            num_last=2,
            num_next_per_last=1,
            num_common=10,
            num_common_per_last=0,
            num_unique_per_next=10,
        )

    @classmethod
    def syn_medium(cls, num_last: int) -> "Dataset2":
        """Syn-Medium (Figs. 6, 11, 12, the official sweep): two classes per query token,
        K = 2 `num_last`, M = 10 + 10K + `num_last` + K (33, 79, 125, 240 for
        `num_last` = 1, 3, 5, 10)."""
        return cls(
            num_last=num_last,
            num_next_per_last=2,
            num_common=10,
            num_common_per_last=0,
            num_unique_per_next=10,
        )

    @property
    def K(self) -> int:
        """Number of classes, `num_last` · `num_next_per_last`."""
        return self.num_last * self.num_next_per_last

    @property
    def M(self) -> int:
        """Vocabulary size, including the query and next tokens."""
        return (
            self.num_common
            + self.num_common_per_last * self.num_last
            + self.num_unique_per_next * self.K
            + self.num_last
            + self.K
        )

    def build(self) -> SequenceClasses:
        """The sequence classes, with uniform class probabilities.

        **Returns:**

        A [`tasks.scan_snap.SequenceClasses`][] with K classes over M tokens.
        """
        per_last_offset = self.num_common
        unique_offset = per_last_offset + self.num_common_per_last * self.num_last
        last_offset = unique_offset + self.num_unique_per_next * self.K
        next_offset = last_offset + self.num_last
        unique_probs = np.linspace(
            self.unique_unnormalized_min, self.unique_unnormalized_max, self.num_unique_per_next
        )
        probs = np.zeros((self.K, self.M))
        query = np.zeros(self.K, dtype=np.int64)
        for k in range(self.K):
            m = k // self.num_next_per_last
            per_last_start = per_last_offset + m * self.num_common_per_last
            unique_start = unique_offset + k * self.num_unique_per_next
            probs[k, : self.num_common] = self.common_unnormalized_prob
            probs[k, per_last_start : per_last_start + self.num_common_per_last] = (
                self.common_unnormalized_prob
            )
            probs[k, unique_start : unique_start + self.num_unique_per_next] = unique_probs
            query[k] = last_offset + m
        probs /= probs.sum(axis=1, keepdims=True)
        return SequenceClasses(probs=probs, query=query, next_token=next_offset + np.arange(self.K))
