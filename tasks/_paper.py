"""What a paper's task package declares about the paper, once: the rest of attnflow finds it there."""

import contextlib
import contextvars
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping

import dynamics

_CHOSEN: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "attnflow_data", default=None
)
"""The data directories chosen for the current context, by their options' variable names."""


@dataclasses.dataclass(frozen=True)
class DataOption:
    """A directory of data a paper's figures and checks can read instead of their bundled default
    (the command line's `--data DIR`).

    **Fields:**

    - `describe`: what the directory holds, for `--help` and the docs.
    - `check`: `directory -> None`, raising `ValueError` (one line) when it does not hold that.
    - `env`: the environment variable in which a user may name the directory instead (read, never
      written: the command line passes `--data` to the figures and checks as an argument).
    """

    describe: str
    check: Callable[[str], None]
    env: str

    @contextlib.contextmanager
    def using(self, directory: str | os.PathLike | None) -> Iterator[None]:
        """Within the block (in this thread), the paper's figures and checks read `directory`
        ([`DataOption.directory`][]); `None` changes nothing.

        **Raises:** `ValueError` from `check`, before the block runs.
        """
        if directory is None:
            yield
            return
        self.check(str(directory))
        chosen = os.path.abspath(os.path.expanduser(directory))
        token = _CHOSEN.set({**(_CHOSEN.get() or {}), self.env: chosen})
        try:
            yield
        finally:
            _CHOSEN.reset(token)

    def directory(self) -> str | None:
        """The directory the paper's figures and checks read: the innermost
        [`DataOption.using`][]'s, else the variable `env` where the user set it, else `None` (the
        bundled default)."""
        return (_CHOSEN.get() or {}).get(self.env) or os.environ.get(self.env) or None


@dataclasses.dataclass(frozen=True)
class PaperInfo:
    """A paper as a unit, declared once, as `PAPER`, in its package `tasks/<name>/__init__.py`.

    The command line, the report and the docs find every paper by scanning `tasks` for these; a
    paper's checks are `theory.<name>.CHECKS` and its figures `figures.<name>.FIGURES`, found by
    the same name. Nothing else lists the papers. A paper in a package of its own declares its
    module, holding `PAPER`, `CHECKS` and `FIGURES`, in the entry-point group `attnflow.papers`.

    **Fields:**

    - `name`: its one name: the package's name, the prefix of its figures and checks, and what
      the command line calls it.
    - `title`: authors, title and venue.
    - `levels`: level name → a final `dynamics.AbstractSimulation` class; the first is the default.
    - `label`: a short name for menus (default: `name`).
    - `data`: the [`DataOption`][] of its figures and checks, or `None`.
    - `cost`: the seconds its quick `"checks"` and its quick `"figures"` take, and its
      `"full checks"` (`attnflow verify --full`), measured on two cores: `attnflow reproduce`
      starts the longest pieces first, and a command's estimate of the time left weighs the
      pieces by them. Where a piece of a command declares no full cost, the command weighs every
      piece by its quick cost.

    **Example:**

        >>> import dynamics
        >>> import tasks
        >>> class Still(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         raise NotImplementedError
        >>> info = tasks.PaperInfo("toy", "A toy paper", {"flow": Still}, cost={"checks": 1.0})
        >>> info.default_level, info.label, info.cost["checks"]
        ('flow', 'toy', 1.0)
    """

    name: str
    title: str
    levels: Mapping[str, type[dynamics.AbstractSimulation]]
    label: str = ""
    data: DataOption | None = None
    cost: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not self.label:
            object.__setattr__(self, "label", self.name)
        if not self.levels:
            raise ValueError(f"paper {self.name!r} must declare at least one level")
        for level, cls in self.levels.items():
            if not (isinstance(cls, type) and issubclass(cls, dynamics.AbstractSimulation)):
                raise ValueError(
                    f"level {level!r} of paper {self.name!r} is not a dynamics.AbstractSimulation"
                )

    @property
    def default_level(self) -> str:
        """The level `simulate` and `sweep` use when none is named: the first."""
        return next(iter(self.levels))
