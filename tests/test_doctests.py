"""The examples in the docstrings of `dynamics` run and print what they say (float64)."""

import doctest
import importlib
import inspect

import jax

jax.config.update("jax_enable_x64", True)

import pytest  # noqa: E402

import dynamics  # noqa: E402

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
TYPE_ALIASES = {"Event", "Mask", "Predicate", "Rates"}
"""Public type aliases: neither functions nor classes, documented by attribute docstrings."""
PUBLIC = {
    name: getattr(door, name)
    for door in (dynamics, dynamics.landscape, dynamics.store)
    for name in door.__all__
    if name not in TYPE_ALIASES and callable(getattr(door, name))
}
"""The public functions and classes of `dynamics` and its wings `dynamics.landscape` and
`dynamics.store`, by name."""
MODULES = sorted(
    {obj.__module__ for obj in PUBLIC.values()}
    | {"dynamics._compiled", "dynamics.landscape", "dynamics.store"}
)
"""The modules that define them (`dynamics` re-exports them from its private modules), and the
private modules whose examples show a part of the engine."""

SLOW_EXAMPLES = {
    "dynamics._flow",
    "dynamics._phases",
    "dynamics._sharpness",
    "dynamics._sweep",
    "dynamics._sweep_landscape",
    "dynamics._store_add",
    "dynamics._integrity",
    "dynamics._sweep_phases",
    "dynamics._landscape",
    "dynamics._hessian",
}
"""The modules whose examples take longest (over 3 s each: several simulations or analyses), run
with the slow tests; the functions they show are tested in their own test files."""


def test_public_names_are_defined_in_dynamics():
    outside = {
        name: obj.__module__ for name, obj in PUBLIC.items() if not obj.__module__.startswith("dynamics.")
    }
    assert not outside, (
        f"public names defined outside dynamics (add an example or list as an alias): {outside}"
    )


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_name_has_example(name):
    doc = inspect.getdoc(PUBLIC[name]) or ""
    assert "**Example:**" in doc, f"dynamics.{name} has no **Example:** section"
    example = doc.split("**Example:**", 1)[1]
    assert ">>> " in example, f"the **Example:** of dynamics.{name} has no doctest (no `>>> ` line)"


@pytest.mark.parametrize(
    "module_name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_EXAMPLES else m for m in MODULES]
)
def test_module_examples(module_name):
    module = importlib.import_module(module_name)
    found = {test.name: len(test.examples) for test in doctest.DocTestFinder().find(module)}
    for obj in PUBLIC.values():
        if obj.__module__ == module_name:
            qualified = f"{module_name}.{obj.__qualname__}"
            assert found.get(qualified, 0) > 0, f"doctest finds no example in {qualified}"
    result = doctest.testmod(module, optionflags=OPTIONS)
    assert result.attempted > 0, f"{module_name} has no examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module_name}"
