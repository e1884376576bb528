"""The task config [`NTPConfig`][] of every next-token-prediction simulation (its `task` field):
the recipe of its random datasets, their sizes and their padded shape."""

import dataclasses

from dynamics import Interval, OneOf, Require, check_params, param

from ._data import Dataset
from ._generate import RECIPES, RecipeA, RecipeB

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
