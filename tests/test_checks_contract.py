"""Every paper's checks hold one contract, whatever the paper: each is declared with
`theory.claim`, named once, of the paper whose `theory` package holds it, with a finite tolerance (so
that it can fail), and called alike (`full` exactly when it is sized, anything else keyword-only with
a default); a list of checks with an undeclared function in it is refused."""

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
        assert 0 <= declared.tolerance < math.inf, fn.__name__  # an error beyond it fails the check
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


def test_a_family_of_checks_is_one_check_per_value_each_named_and_claiming_its_value():
    @theory.claims(
        "twice_{}", (1, 5), "twice {} is {} plus itself", method="by hand", tolerance=0.0, sized=True
    )
    def twice(n: int, full: bool = False) -> theory.Measured:
        return theory.Measured(2 * n, n + n + (1 if full else 0), float(full))

    assert [check.__name__ for check in twice] == ["twice_1", "twice_5"]
    assert [check.declaration.claim for check in twice] == [
        "twice 1 is 1 plus itself",
        "twice 5 is 5 plus itself",
    ]
    assert list(inspect.signature(twice[1]).parameters) == ["full"]
    quick, full = twice[1](), twice[1](full=True)
    assert (quick.predicted, quick.simulated, quick.passed) == (10.0, 10.0, True)
    assert (full.simulated, full.passed) == (11.0, False)


@pytest.mark.parametrize(
    ("name", "values", "statement"),
    [("twice", (1,), "twice {}"), ("twice_{}", (1,), "twice"), ("twice_{}", "12", "twice {}")],
)
def test_a_family_without_a_place_for_its_value_is_refused(name, values, statement):
    with pytest.raises(ValueError, match="hold {} for the value"):
        theory.claims(name, values, statement, method="m", tolerance=0.0)
