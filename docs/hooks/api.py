"""The API reference documents every public name: the build fails on a name of `dynamics`,
`theory`, `tasks` or `figures` (their `__all__`) whose docs are empty or borrowed from `typing`,
read the way the reference reads them (griffe, as mkdocstrings does)."""

from pathlib import Path

import griffe
from mkdocs.exceptions import PluginError

PACKAGES = ("dynamics", "dynamics.landscape", "dynamics.store", "theory", "tasks", "figures")
ROOT = Path(__file__).resolve().parents[2]


def undocumented(package: str) -> list[str]:
    """The public names of `package` without documentation of their own.

    **Raises:** `PluginError` for a package without `__all__`.
    """
    module = griffe.load(package, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    if not module.exports:
        raise PluginError(f"{package} has no __all__: its public names are not declared")
    missing = []
    for name in module.exports:
        member = module.members[name]
        target = member.final_target if member.is_alias else member
        text = target.docstring.value.strip() if target.docstring else ""
        if not text or target.path.startswith("typing."):
            missing.append(name)
    return missing


def on_config(config):
    """Fail the build on a public name without its own docs."""
    for package in PACKAGES:
        missing = undocumented(package)
        if missing:
            raise PluginError(f"{package}: public names without docs of their own: {', '.join(missing)}")
    return config
