"""Every public name of the packages has documentation of its own, as the API reference reads it:
the site's build checks it (`docs/hooks/api.py`); here the same check, and that it finds a name
without docs."""

import pytest

from tests.helpers import load_file

pytest.importorskip("griffe")  # the docs extra


def _hook():
    return load_file("docs/hooks/api.py")


@pytest.mark.parametrize("package", ["dynamics", "theory", "tasks", "figures"])
def test_every_public_name_has_its_own_docstring(package):
    assert _hook().undocumented(package) == []


def test_a_public_name_without_docs_is_found(tmp_path, monkeypatch):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "__init__.py").write_text(
        'from typing import Any\n\n__all__ = ["Alias", "Kept", "f"]\n\nAlias = Any\nKept = 1\n'
        '"""A documented constant."""\n\n\ndef f():\n    pass\n'
    )
    hook = _hook()
    monkeypatch.setattr(hook, "ROOT", tmp_path)
    assert hook.undocumented("toy") == ["Alias", "f"]
