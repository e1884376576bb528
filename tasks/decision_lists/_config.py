"""The task config [`DecisionListsConfig`][] of every decision-list simulation (its `task` field):
the random task a run draws, its sizes and its sampling distribution."""

import dataclasses

from dynamics import Interval, OneOf, Require, check_params, param

from ._task import DISTRIBUTIONS, DecisionLists, TaskArrays


@dataclasses.dataclass(frozen=True)
class DecisionListsConfig:
    """The random decision-list task of a simulation, every field checked on construction: every
    simulation of this paper holds one as its `task` field (`--set task.L=12`, `--grid task.M=2,3`).

    **Fields:**

    - `L`: the vocabulary size (= the embedding dimension), `L ≥ 2`.
    - `n`: the sequence length, `2 ≤ n ≤ L`.
    - `M`: the largest list length, `1 ≤ M ≤ L`.
    - `fixed_m`: one list length for every token (`1 ≤ fixed_m ≤ M`); `None`: `m_a ~ U{1..M}`.
    - `seed`: the NumPy seed of one task for every run; `None`: each run draws the task of its own
      integer seed.
    - `distribution`: the sampling distribution `D`, one of [`DISTRIBUTIONS`][] (recon).

    **Raises:** `ValueError` naming the class, the field and its value when a field or a condition
    between them does not hold.

    **Example:**

        >>> import dynamics
        >>> from tasks.decision_lists import DecisionLists, DecisionListsConfig, UniformAttentionGD
        >>> task = DecisionListsConfig(L=6, n=3, M=2, seed=0)
        >>> task.draw() == DecisionLists.random(0, L=6, n=3, M=2)
        True
        >>> sim = dynamics.with_settings(UniformAttentionGD(), {"task.L": 6, "task.n": 3, "task.M": 2})
        >>> sim.task
        DecisionListsConfig(L=6, n=3, M=2, fixed_m=None, seed=None, distribution='distinct')
        >>> DecisionListsConfig(L=6, n=8)
        Traceback (most recent call last):
        ...
        ValueError: DecisionListsConfig: n must be at most L, got n=8, L=6
    """

    L: int = param(10, Interval(2), doc="vocabulary size L (= the embedding dimension)")
    n: int = param(4, Interval(2), doc="sequence length n (at most L)")
    M: int = param(3, Interval(1), doc="the largest list length M (at most L)")
    fixed_m: int | None = param(
        None, Interval(1), doc="one list length for every token (at most M); none: m_a ~ U{1..M}"
    )
    seed: int | None = param(
        None, Interval(0), doc="the NumPy seed of one task for every run; none: each run's own seed"
    )
    distribution: str = param(
        "distinct", OneOf(*DISTRIBUTIONS), doc="D: distinct tokens in random order, or iid tokens"
    )

    requires = (
        Require(("n", "L"), lambda n, L: n <= L, "n must be at most L"),
        Require(("M", "L"), lambda M, L: M <= L, "M must be at most L"),
        Require(("fixed_m", "M"), lambda m, M: m is None or m <= M, "fixed_m must be at most M"),
    )

    def __post_init__(self):
        check_params(self)

    def draw(self, seed: int | None = None) -> DecisionLists:
        """The task of NumPy seed `seed` (default: the field `seed`), [`DecisionLists.random`][].

        **Raises:** `ValueError` when neither `seed` nor the field `seed` is given.
        """
        seed = self.seed if seed is None else seed
        if seed is None:
            raise ValueError("DecisionListsConfig.draw needs a seed: the argument or the field seed")
        return DecisionLists.random(
            seed, L=self.L, n=self.n, M=self.M, fixed_m=self.fixed_m, distribution=self.distribution
        )

    def run_arrays(self, seed: int) -> TaskArrays:
        """The task of the run with integer seed `seed` as [`TaskArrays`][] (drawn on the host,
        lists `M` wide): the task of the field `seed` where it is set (one task for every run),
        else [`DecisionLists.random`][] of `seed`. What every simulation of this paper draws for
        a run.

        **Arguments:** `seed`: the run's integer seed.
        """
        return self.draw(seed if self.seed is None else self.seed).arrays()
