"""Every paper's checks hold one contract, whatever the paper: each is declared with
`theory.claim`, named once, of the paper whose `theory` package holds it, and called alike (`full`
exactly when it is sized, anything else keyword-only with a default); a list of checks with an
undeclared function in it is refused."""

import inspect
import math

import pytest

import theory
from attnflow.papers import papers


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_papers_checks_are_declared_named_once_and_called_alike(paper):
    checks = papers()[paper].checks
    names = [fn.__name__ for fn in checks]
    assert len(set(names)) == len(names), names
    for fn in checks:
        declared = fn.declaration
        assert isinstance(declared, theory.Declaration), fn.__name__
        assert declared.claim and declared.method, fn.__name__
        assert declared.tolerance >= 0 and not math.isnan(declared.tolerance), fn.__name__
        assert fn.__module__.split(".")[:2] == ["theory", paper], (fn.__name__, fn.__module__)
        arguments = inspect.signature(fn).parameters
        assert ("full" in arguments) == declared.sized, fn.__name__
        for argument in arguments.values():  # a formula under test, given by a test only
            assert argument.name == "full" or (
                argument.kind is argument.KEYWORD_ONLY and argument.default is not argument.empty
            ), (fn.__name__, argument.name)


def _undeclared():
    """An undeclared function named like a check."""


def test_checks_with_an_undeclared_function_among_them_are_refused():
    with pytest.raises(ValueError, match=r"^not declared with theory.claim: _undeclared \(checks of p\)$"):
        theory.check_makers("p", [*next(iter(papers().values())).checks, _undeclared], full=False)
