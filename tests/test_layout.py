"""Every paper's `tasks` and `theory` packages have the same files for the same roles."""

import importlib
import inspect
from pathlib import Path

import pytest

from attnflow.papers import papers

TASK_FILES = ("_config.py", "_data.py", "_model.py", "_simulate.py")
"""A paper's `tasks` package: its task config, its data, its model and its simulations."""
THEORY_FILES = ("closed_forms.py", "_runs.py")
"""A paper's `theory` package: its closed forms and the runs its checks share (beside its checks)."""


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_papers_task_package_has_the_files_of_every_paper(paper):
    folder = Path(importlib.import_module(f"tasks.{paper}").__file__).parent
    assert [name for name in TASK_FILES if not (folder / name).is_file()] == []


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_papers_theory_package_has_the_files_of_every_paper(paper):
    folder = Path(importlib.import_module(f"theory.{paper}").__file__).parent
    assert [name for name in THEORY_FILES if not (folder / name).is_file()] == []


@pytest.mark.parametrize("paper", sorted(papers()))
def test_every_simulations_task_config_is_defined_in_the_papers_config_module(paper):
    """The class of each level's `task` field lives in `tasks.<paper>._config`."""
    for level in papers()[paper].simulations.values():
        task = getattr(level(), "task", None)
        if task is not None and not inspect.isclass(task):
            assert type(task).__module__ == f"tasks.{paper}._config", (level.__name__, type(task))
