"""The registry of papers: each paper's name, title, simulations, checks and figures, read by every
command (`verify`, `simulate`, `sweep`, `list`, `figures`, `reproduce`)."""

import dataclasses
import functools
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

import dynamics
import theory

Figure = Callable[[Path, bool], list[Path]]
"""A figure: `(out_dir, full) -> files written` (PNG, PDF and the JSON data behind them)."""

_TITLES = {
    "scan_snap": "Tian, Wang, Chen, Du, Scan and Snap: Understanding Training Dynamics and Token "
    "Composition in 1-layer Transformer (NeurIPS 2023)",
    "ntp_partial_order": "Huang, Liang, Yang, Non-asymptotic Convergence of Training Transformers for "
    "Next-token Prediction (NeurIPS 2024)",
    "decision_lists": "Provable Gradient-Descent-Based Learning of Decision Lists by Transformers "
    "(extended abstract)",
    "contextual_bigram": "Ren, Wang, Lee, Learning and Transferring Sparse Contextual Bigrams with Linear "
    "Transformers (NeurIPS 2024)",
    "sparse_token_selection": "Wang, Wei, Hsu, Lee, Transformers Provably Learn Sparse Token Selection "
    "While Fully-Connected Nets Cannot (ICML 2024)",
}


@dataclasses.dataclass(frozen=True)
class Paper:
    """One paper as a unit.

    **Fields:**

    - `name`: its one name: the folder in `tasks/`, `theory/` and `figures/`, the prefix of its
      figures and the name the command line knows it by.
    - `title`: authors, title and venue.
    - `simulations`: level name -> a final [`dynamics.AbstractSimulation`][] class; the first is
      the default level.
    - `checks`: the check functions, in order (see `theory.check_makers`).
    - `figures`: figure name -> [`Figure`][].
    """

    name: str
    title: str
    simulations: Mapping[str, type[dynamics.AbstractSimulation]]
    checks: tuple[Callable[..., theory.Check], ...]
    figures: Mapping[str, Figure]

    @property
    def default_level(self) -> str:
        """The level `simulate` and `sweep` use when none is named."""
        return next(iter(self.simulations))

    def simulation(self, level: str | None = None) -> type[dynamics.AbstractSimulation]:
        """The simulation class of `level` (default: [`Paper.default_level`][]).

        **Raises:** `ValueError` naming the paper's levels when `level` is not one of them.
        """
        level = self.default_level if level is None else level
        if level not in self.simulations:
            raise ValueError(f"{self.name} has no level {level!r}; levels: {', '.join(self.simulations)}")
        return self.simulations[level]

    def run_checks(self, *, quick: bool, progress: Callable[[str], None] | None = None) -> list[theory.Check]:
        """Run every check of the paper (smaller simulations when `quick`, same tolerances).

        **Returns:** the [`theory.Check`][]s in order.
        """
        return theory.run_checks(theory.check_makers(self.name, self.checks, quick), progress)


@functools.cache
def papers() -> dict[str, Paper]:
    """Every paper by name, in the order the papers are presented."""
    registry = {}
    for name, title in _TITLES.items():
        task = importlib.import_module(f"tasks.{name}")
        checks = importlib.import_module(f"theory.{name}")
        figures = importlib.import_module(f"figures.{name}")
        registry[name] = Paper(name, title, task.SIMULATIONS, tuple(checks.CHECKS), figures.FIGURES)
    return registry


def paper(name: str) -> Paper:
    """The paper called `name`.

    **Raises:** `ValueError` listing the known papers when there is none of that name.
    """
    if name not in papers():
        raise ValueError(f"unknown paper {name!r}; known: {', '.join(papers())}")
    return papers()[name]


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
    except Exception as err:  # noqa: BLE001 -- whatever the module raised while it was imported
        frames = traceback.extract_tb(err.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        raise ValueError(
            f"cannot import {module_name!r} for {target}: it raised {type(err).__name__}{where}: {err}"
        ) from None
