"""The task configs of the simulation levels (their `task` field): [`Synthetic`][], which of the
paper's synthetic data sets the synthetic levels learn, and [`Corpus`][], the text of the real-text
level."""

import dataclasses
import os

from dynamics import Interval, OneOf, check_params, param

from ._classes import SequenceClasses
from ._generator import Dataset2
from ._text_data import QUICK, WIKITEXT_VARIANTS, TextCorpus, check_corpus_source, load_corpus

DATASETS = ("syn_small", "syn_medium")
"""The paper's two synthetic data sets: Syn-Small (Figs. 4-5) and Syn-Medium (Figs. 6, 11, 12)."""


@dataclasses.dataclass(frozen=True)
class Synthetic:
    """The synthetic task of the levels L0, L0_outcome, L1 and L2: which of the paper's sequence
    classes the model learns, built by the official generator ([`Dataset2`][]). Every synthetic
    level holds one as its `task` field (`--set task.dataset=syn_medium --set task.num_last=3`).

    **Fields:**

    - `dataset`: `syn_small` ([`Dataset2.syn_small`][]: K = 2, M = 34) or `syn_medium`
      ([`Dataset2.syn_medium`][]: two classes per query token).
    - `num_last`: the query tokens of Syn-Medium (the paper: 1, 3, 5, 10); Syn-Small has its own
      (2) and ignores it.

    **Raises:** `ValueError` naming the field, the value and what is allowed.

    **Example:**

        >>> from tasks import scan_snap
        >>> task = scan_snap.Synthetic(dataset="syn_medium", num_last=3)
        >>> task.generator().M, task.classes().K
        (79, 6)
        >>> scan_snap.Synthetic().generator().M
        34
    """

    dataset: str = param(
        "syn_small", OneOf(*DATASETS), doc="syn_small (Figs 4-5) or syn_medium (Figs 6, 11, 12)"
    )
    num_last: int = param(1, Interval(1), doc="query tokens of syn_medium (the paper: 1, 3, 5, 10)")

    def __post_init__(self):
        check_params(self)

    def generator(self) -> Dataset2:
        """The generator's config: `Dataset2.syn_small()` or `Dataset2.syn_medium(num_last)`."""
        return Dataset2.syn_small() if self.dataset == "syn_small" else Dataset2.syn_medium(self.num_last)

    def classes(self) -> SequenceClasses:
        """The sequence classes of the task ([`Dataset2.build`][])."""
        return self.generator().build()


@dataclasses.dataclass(frozen=True)
class Corpus:
    """The task of the real-text level ([`TextSGD`][]): next-token prediction on the corpus it names,
    held as the level's `task` field (`--set task.source=~/data/wikitext-2 --set task.max_lines=2000`).

    **Fields:**

    - `source`: `quick` (the bundled public-domain text, [`quick_corpus`][]) or a WikiText
      directory (`wikitext-2` or `wikitext-103`).
    - `wikitext_variant`: which WikiText files a directory is read from, `tokens` (`wiki.*.tokens`,
      torchtext's) or `raw` ([`WIKITEXT_VARIANTS`][]).
    - `max_lines`: keep the first lines of each split (`None`: all).

    A directory must hold its three files when the config is built; the quick corpus's package
    (the `text` extra) is checked by [`Corpus.check`][], which a simulation holding the corpus
    runs when it is built.

    **Raises:** `ValueError` naming the field, the value and what is allowed.

    **Example:** the first 200 lines of each split of the quick corpus:

        >>> from tasks import scan_snap
        >>> corpus = scan_snap.Corpus(max_lines=200).load()
        >>> corpus.name, corpus.vocab.tokens[0]
        ('quick', '<unk>')
    """

    source: str = param(QUICK, doc="quick (bundled public-domain text) or a WikiText directory")
    wikitext_variant: str = param(
        "tokens", OneOf(*WIKITEXT_VARIANTS), doc="WikiText files: tokens (wiki.*.tokens, torchtext's) or raw"
    )
    max_lines: int | None = param(None, Interval(1), doc="keep the first lines of each split (none: all)")

    def __post_init__(self):
        check_params(self)
        if self.source != QUICK:
            self.check()

    def check(self) -> None:
        """Raise a `ValueError` naming `Corpus.source` before any work unless the corpus can be read:
        `quick` needs its package, a directory its three WikiText files of `wikitext_variant`."""
        try:
            check_corpus_source(os.path.expanduser(self.source), self.wikitext_variant)
        except (ValueError, ImportError) as err:
            raise ValueError(f"Corpus.source must be 'quick' or a WikiText directory: {err}") from None

    def load(self) -> TextCorpus:
        """The corpus, read and tokenized once per process ([`load_corpus`][]).

        **Returns:** a [`TextCorpus`][].
        """
        return load_corpus(os.path.expanduser(self.source), self.wikitext_variant, self.max_lines)
