"""The registry of papers, found by scanning `tasks` for the papers' declarations
(`tasks.<paper>.PAPER`, a `tasks.PaperInfo`), with each paper's checks (`theory.<paper>.CHECKS`) and
figures (`figures.<paper>.FIGURES`), and in the installed packages' entry points (group
`attnflow.papers`: a paper of one's own, in a package of its own); read by every command (`verify`,
`simulate`, `sweep`, `list`, `figures`, `reproduce`, `check`). No list of papers is written
anywhere else."""

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import os
import pkgutil
import sys
import traceback
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import dynamics
import tasks
import theory

from . import _catalog, _names
from ._names import first_paragraph, level_named, nearest, paper_named, refuse_class_name_as_paper
from ._sources import installed_papers

__all__ = [
    "Figure",
    "Paper",
    "all_figures",
    "catalog",
    "catalog_of",
    "checks_named",
    "first_paragraph",
    "level_record",
    "load_simulation",
    "loaded",
    "nearest",
    "paper",
    "papers",
    "with_data",
]

Figure = Callable[[Path, bool], list[Path]]
"""A figure: `(out_dir, full) -> files written` (PNG, PDF and the JSON data behind them)."""


@dataclasses.dataclass(frozen=True)
class Paper:
    """One paper as a unit: what its task package declares, with its checks and figures.

    **Fields:**

    - `info`: the declaration, `tasks.<name>.PAPER` (name, title, levels, data option, cost).
    - `checks`: the check functions, in order (`theory.<name>.CHECKS`; see
      `theory.check_makers`), empty when the paper has none.
    - `figures`: figure name -> [`Figure`][] (`figures.<name>.FIGURES`), each name beginning with
      the paper's.
    """

    info: tasks.PaperInfo
    checks: tuple[Callable[..., theory.Check], ...]
    figures: Mapping[str, Figure]

    @property
    def name(self) -> str:
        """Its one name: the folder in `tasks/`, `theory/` and `figures/`, the prefix of its
        figures and the name the command line knows it by."""
        return self.info.name

    @property
    def title(self) -> str:
        """Authors, title and venue."""
        return self.info.title

    @property
    def simulations(self) -> Mapping[str, type[dynamics.AbstractSimulation]]:
        """Level name -> a final `dynamics.AbstractSimulation` class; the first is the default."""
        return self.info.levels

    @property
    def default_level(self) -> str:
        """The level `simulate` and `sweep` use when none is named."""
        return self.info.default_level

    def figures_showing(self, check: str) -> list[str]:
        """The figures of the paper that draw `check`'s compared quantity (as each declares in
        `figures.caption(..., checks=...)`), in the paper's order."""
        return [name for name, draw in self.figures.items() if check in getattr(draw, "checks", ())]

    def simulation(self, level: str | None = None) -> type[dynamics.AbstractSimulation]:
        """The simulation class of `level` (default: [`Paper.default_level`][]).

        **Raises:** `ValueError` naming the paper's levels when `level` is not one of them.
        """
        return self.simulations[level_named(self.name, level, catalog_of({self.name: self}))]

    def data_directory(self, data: str | None = None) -> str | None:
        """The data directory the paper's figures and checks read given `--data` `data`: `data`
        where the paper has a data option, else the one its user set
        (`tasks.DataOption.directory`); `None` for the bundled default or no option."""
        if self.info.data is None:
            return None
        with self.reading(data):
            return self.info.data.directory()

    def reading(self, data: str | None) -> contextlib.AbstractContextManager:
        """A context in which the paper's figures and checks read the data directory `data`
        (`tasks.DataOption.using`; nothing changes for `None` or a paper without a data option)."""
        if self.info.data is None or data is None:
            return contextlib.nullcontext()
        return self.info.data.using(data)

    def run_checks(
        self,
        *,
        full: bool,
        progress: Callable[[str], None] | None = None,
        only: Collection[str] | None = None,
        keep: Path | None = None,
        data: str | None = None,
    ) -> list[theory.Check]:
        """Run the checks of the paper (at the paper's sizes when `full`, else quick ones; the
        tolerances are the same): every one, or those named in `only`.

        With `keep`, each check is kept in `keep/<paper>` as it ends, and a check kept there by an
        earlier call of the same code, sizes and data is taken instead of run (see
        `attnflow._kept_checks`): a run stopped half-way and made again runs only the checks left.

        **Returns:** the [`theory.Check`][]s in the paper's order.

        **Raises:** `ValueError` naming a check of `only` that the paper does not have.
        """
        chosen = self.checks
        if only is not None:
            known = [fn.__name__ for fn in self.checks]
            unknown = [name for name in only if name not in known]
            if unknown:
                raise ValueError(f"{self.name} has no check {', '.join(map(repr, unknown))}")
            chosen = tuple(fn for fn in self.checks if fn.__name__ in only)
        makers = theory.check_makers(self.name, chosen, full)
        with self.reading(data):
            if keep is None:
                return theory.run_checks(makers, progress)
            from ._kept_checks import checks_key, run_keeping

            key = checks_key(self.name, full, self.data_directory())  # `data`, checked once above
            return run_keeping(makers, Path(keep) / self.name, key, progress)


@functools.cache
def papers() -> dict[str, Paper]:
    """Every paper by name, in alphabetical order: each package of `tasks` that declares `PAPER`,
    and each paper an installed package declares in the entry-point group `attnflow.papers`
    (`NAME = "MODULE"`, the module holding `PAPER`, `CHECKS` and `FIGURES`). Imports every paper;
    [`loaded`][] imports one.

    **Raises:** `ValueError` when a declaration's name is not its package's (or its entry point's),
    a figure's name does not begin with its paper's, a figure names a check its paper does not
    have, an installed paper cannot be loaded, or two papers have one name.
    """
    registry = {}
    for module in sorted(pkgutil.iter_modules(tasks.__path__), key=lambda m: m.name):
        if module.ispkg and not module.name.startswith("_"):
            found = _built_in(module.name)
            if found is not None:
                registry[module.name] = found
    for entry in installed_papers():
        if entry.name in registry:
            raise ValueError(f"{_installed_where(entry)}: attnflow has a paper of that name already")
        registry[entry.name] = _installed(entry)
    return dict(sorted(registry.items()))


def loaded(name: str) -> Paper:
    """The paper declared under `name` (its exact name), with only that paper's modules imported:
    a command that runs one paper's checks or figures imports no other (about 0.8 s less on two
    cores). The same paper as `papers()[name]`.

    **Raises:** `KeyError` when no paper is declared under `name` (find a paper by any of its names
    with [`paper`][]); `ValueError` as [`papers`][] for that paper's declaration.
    """
    if papers.cache_info().currsize:
        return papers()[name]
    if name.isidentifier() and not name.startswith("_"):
        found = _built_in(name)
        if found is not None:
            return found
    for entry in installed_papers():
        if entry.name == name:
            return _installed(entry)
    raise KeyError(name)


def _built_in(name: str) -> Paper | None:
    """The paper of the package `tasks.<name>`, or `None` where there is no such package or it
    declares no `PAPER`."""
    spec = importlib.util.find_spec(f"tasks.{name}")
    if spec is None or spec.submodule_search_locations is None:
        return None
    info = getattr(importlib.import_module(f"tasks.{name}"), "PAPER", None)
    if not isinstance(info, tasks.PaperInfo):
        return None
    checks = _declared(f"theory.{info.name}", "CHECKS", ())
    figures = _declared(f"figures.{info.name}", "FIGURES", {})
    return _paper(info, name, f"tasks.{name}", checks, figures)


def _installed_where(entry) -> str:
    """The paper an installed package declares in `entry`, in words."""
    return f"the paper {entry.name!r} that {_distribution(entry)} declares ({entry.value})"


def _installed(entry) -> Paper:
    """The paper an installed package declares in the entry point `entry`.

    **Raises:** `ValueError` when it cannot be loaded or holds no `PAPER`, or as [`_paper`][]."""
    where = _installed_where(entry)
    try:
        module = entry.load()
    except Exception as err:  # noqa: BLE001 -- whatever the package raised while it was imported
        raise ValueError(f"cannot load {where}: {type(err).__name__}: {err}") from None
    info = getattr(module, "PAPER", None)
    if not isinstance(info, tasks.PaperInfo):
        raise ValueError(f"{where}: {entry.value} holds no PAPER (a tasks.PaperInfo)")
    checks, figures = getattr(module, "CHECKS", ()), getattr(module, "FIGURES", {})
    return _paper(info, entry.name, where, checks, figures)


def _paper(info: tasks.PaperInfo, name: str, where: str, checks, figures) -> Paper:
    """The [`Paper`][] of a declaration found under `name` (described as `where`).

    **Raises:** `ValueError` when the declaration's name is not `name`, a figure's name does not
    begin with the paper's, or a figure names a check the paper does not have."""
    if info.name != name:
        raise ValueError(f"{where} declares the paper {info.name!r}: a paper is named after its package")
    misnamed = [figure for figure in figures if not figure.startswith(f"{info.name}_")]
    if misnamed:
        raise ValueError(f"figures of {info.name} must be named {info.name}_...: {', '.join(misnamed)}")
    known = {check.__name__ for check in checks}
    unknown = [
        f"{figure} names {name!r}"
        for figure, draw in figures.items()
        for name in getattr(draw, "checks", ())
        if name not in known
    ]
    if unknown:
        raise ValueError(f"figures of {info.name} name checks it does not have: {'; '.join(unknown)}")
    return Paper(info, tuple(checks), dict(figures))


def _distribution(entry) -> str:
    """The installed package an entry point comes from, in words."""
    return f"the package {entry.dist.name!r}" if entry.dist is not None else "an installed package"


def _declared(module_name: str, attribute: str, default):
    """`module_name.attribute`, or `default` when there is no such module."""
    if importlib.util.find_spec(module_name) is None:
        return default
    return getattr(importlib.import_module(module_name), attribute, default)


def catalog() -> dict:
    """The papers as data ([`catalog_of`][] format): where it needs no import, the one this process
    has read or the one kept for these sources (`attnflow._catalog.known_catalog`); else read from
    the code, importing every paper, and kept for the next command."""
    known = _catalog.known_catalog()
    if known is not None:
        return known
    made = catalog_of(papers())
    _catalog.keep(made)
    return made


def with_data(among: Iterable[str] | None = None) -> list[str]:
    """The papers of `among` (default every paper), in that order, that have a data option
    (`tasks.PaperInfo.data`), found in the [`catalog`][] without importing any of them."""
    found = catalog()["papers"]
    return [name for name in (found if among is None else among) if found[name]["data"] is not None]


def paper(name: str) -> Paper:
    """The paper called `name`, looked up in the papers' [`catalog`][] and imported alone
    ([`loaded`][]).

    **Raises:** `ValueError` listing the known papers when there is none of that name (naming the
    paper `name` belongs to, where it is a figure or a check).
    """
    return loaded(paper_named(name, catalog()))


def _paper_record(paper: Paper) -> dict:
    return {
        "title": paper.title,
        "default_level": paper.default_level,
        "levels": {level: level_record(cls) for level, cls in paper.simulations.items()},
        "checks": {fn.__name__: fn.declaration.claim for fn in paper.checks},
        "figures": {name: first_paragraph(draw.__doc__) for name, draw in paper.figures.items()},
        "data": None if paper.info.data is None else paper.info.data.describe,
    }


def level_record(cls) -> dict:
    """A simulation class as `attnflow list` prints it: `path`, `summary` (the first paragraph of
    its docstring), `fields` (each setting's `name`, `default` as written, `type`, `traced`,
    `allowed` in words and `doc`) and `small` (its first-try settings, as text)."""
    import dataclasses

    fields = [
        {
            "name": info.name,
            "default": "(required)" if info.default is dataclasses.MISSING else repr(info.default),
            "type": info.type.__name__,
            "traced": bool(info.traced),
            "allowed": info.describe_allowed(),
            "doc": info.doc,
        }
        for info in cls.params()
    ]
    small = {key: str(value) for key, value in cls.small.items()}
    return {"path": cls.path(), "summary": first_paragraph(cls.__doc__), "fields": fields, "small": small}


def catalog_of(registry: Mapping[str, Paper]) -> dict:
    """The papers of `registry` as data, as `attnflow list` prints them (and `attnflow._catalog`
    keeps them).

    **Returns:** `{"papers": {name: record}}` in the registry's order; a record holds `title`,
    `default_level`, `levels` (level -> [`level_record`][]), `checks` (name -> claim), `figures`
    (name -> the first paragraph of its docstring) and `data` (what `--data` must hold, or `None`).
    """
    return {"papers": {name: _paper_record(paper) for name, paper in registry.items()}}


def checks_named(names: Iterable[str], among: Iterable[str] | None = None) -> dict[str, list[str]]:
    """The papers that hold the checks called `names`: paper -> the names among its checks (see
    `attnflow._names.checks_named`; `among`: the papers to look in, default every paper).

    **Example:**

        >>> from attnflow.papers import checks_named
        >>> checks_named(["lemma2_rate"])
        {'scan_snap': ['lemma2_rate']}
    """
    return _names.checks_named(names, among, catalog())


def all_figures() -> dict[str, Figure]:
    """Every figure of every paper by name."""
    return {name: fig for p in papers().values() for name, fig in p.figures.items()}


def load_simulation(target: str, level: str | None = None) -> type[dynamics.AbstractSimulation]:
    """The simulation class named by `target`: a paper's name (with `level`), or
    `package.module:ClassName` of any final subclass of `dynamics.AbstractSimulation` (a user's own,
    found in the working directory or on the Python path).

    **Raises:** `ValueError` saying what is wrong: an unknown paper or level, a module that does
    not import, a missing class, or a class that is not a simulation.
    """
    if ":" not in target:
        refuse_class_name_as_paper(target, catalog())
        return paper(target).simulation(level)
    if level is not None:
        raise ValueError(f"--level applies to a paper, not to a class ({target})")
    module_name, _, class_name = target.partition(":")
    module = _import_users_module(module_name, target)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ValueError(f"module {module_name!r} has no {class_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, dynamics.AbstractSimulation)):
        raise ValueError(f"{target} is not a subclass of dynamics.AbstractSimulation")
    missing = sorted(getattr(cls, "__abstractmethods__", ())) + sorted(getattr(cls, "__abstractvars__", ()))
    if missing:
        raise ValueError(
            f"{target} is abstract (it does not define {', '.join(missing)}): name a final subclass that does"
        )
    return cls


def _import_users_module(module_name: str, target: str):
    """Import a user's module, found in the working directory (as `python -m` finds it) or on the
    Python path; any failure as one line: the module, the error and where it arose."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and module_name.split(".")[0] == err.name.split(".")[0]:
            raise ValueError(
                f"cannot import {module_name!r} for {target}: {err} (a module of your own must be importable "
                "from the working directory or the Python path)"
            ) from None
        raise ValueError(f"cannot import {module_name!r} for {target}: {err}") from None
    except SyntaxError as err:
        raise ValueError(
            f"cannot import {module_name!r} for {target}: "
            f"a syntax error at {err.filename}:{err.lineno}: {err.msg}"
        ) from None
    except SystemExit as err:  # sys.exit() at import: an error, not the end of the command
        raise ValueError(
            f"cannot import {module_name!r} for {target}: it called sys.exit({err.code!r}) while it was "
            'imported (put a script\'s work under `if __name__ == "__main__":`)'
        ) from None
    except Exception as err:  # noqa: BLE001 -- whatever the module raised while it was imported
        frames = traceback.extract_tb(err.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        raise ValueError(
            f"cannot import {module_name!r} for {target}: it raised {type(err).__name__}{where}: {err}"
        ) from None
