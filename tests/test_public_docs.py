"""Every public name of the packages has documentation of its own, as the API reference shows it
(read the way the site reads it, with griffe): no empty entry, none borrowed from `typing`."""

from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")  # the docs extra

ROOT = Path(__file__).parents[1]
PACKAGES = ("dynamics", "theory", "tasks", "figures")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_its_own_docstring(package):
    module = griffe.load(package, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    assert module.exports, f"{package} has no __all__"
    undocumented = []
    for name in module.exports:
        member = module.members[name]
        target = member.final_target if member.is_alias else member
        text = target.docstring.value.strip() if target.docstring else ""
        if not text or target.path.startswith("typing."):
            undocumented.append(name)
    assert not undocumented, f"{package}: public names without docs of their own: {undocumented}"
