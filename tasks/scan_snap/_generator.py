"""The official synthetic generator `Dataset2` (`decoder_only.py`) of the Scan and Snap code."""

import dataclasses
import math

import numpy as np

from ._classes import SequenceClasses


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float | np.floating) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


@dataclasses.dataclass(frozen=True)
class Dataset2:
    """Config of the official generator (spec §3.3).

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

    **Fields:**

    - `num_last`: number of query tokens, >= 1.
    - `num_next_per_last`: classes (next tokens) per query token, >= 1.
    - `num_common`: common tokens shared by every class, >= 0.
    - `num_common_per_last`: common tokens shared by the classes of one query, >= 0.
    - `num_unique_per_next`: distinct tokens per class, >= 0.
    - `common_unnormalized_prob`: > 0.
    - `unique_unnormalized_min`: > 0.
    - `unique_unnormalized_max`: >= `unique_unnormalized_min`.

    Every class needs at least one contextual token.

    **Raises:**

    `ValueError` naming the field and the allowed range.
    """

    num_last: int
    num_next_per_last: int
    num_common: int
    num_common_per_last: int
    num_unique_per_next: int
    common_unnormalized_prob: float = 1.0
    unique_unnormalized_min: float = 0.1
    unique_unnormalized_max: float = 1.0

    def __post_init__(self):
        _check_int("num_last", self.num_last, 1)
        _check_int("num_next_per_last", self.num_next_per_last, 1)
        _check_int("num_common", self.num_common, 0)
        _check_int("num_common_per_last", self.num_common_per_last, 0)
        _check_int("num_unique_per_next", self.num_unique_per_next, 0)
        if self.num_common + self.num_common_per_last + self.num_unique_per_next < 1:
            raise ValueError(
                "num_common + num_common_per_last + num_unique_per_next must be >= 1 "
                "(every class needs a contextual token), got 0"
            )
        _check_positive("common_unnormalized_prob", self.common_unnormalized_prob)
        _check_positive("unique_unnormalized_min", self.unique_unnormalized_min)
        _check_positive("unique_unnormalized_max", self.unique_unnormalized_max)
        if self.unique_unnormalized_max < self.unique_unnormalized_min:
            raise ValueError(
                f"unique_unnormalized_max must be >= unique_unnormalized_min = "
                f"{self.unique_unnormalized_min}, got {self.unique_unnormalized_max}"
            )

    @classmethod
    def syn_small(cls) -> "Dataset2":
        """Syn-Small (Figs. 4-5, spec §6.2): K = 2 classes with their own query tokens,
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
        """Syn-Medium (Figs. 6, 11, 12, spec §6.3): two classes per query token,
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
