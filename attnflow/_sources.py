"""The digest of the source files of packages, found without importing them: what the papers'
catalog and the kept checks are kept under, so that neither outlives the code that made it."""

import hashlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path


def sources_digest(packages: Iterable[str]) -> str:
    """One digest of every Python source file of `packages`, in every folder each is found in (its
    `__path__` where this process has imported it and extended it, e.g. with a new paper's folder;
    else where it would be imported from, found without importing it)."""
    hashed = hashlib.sha256()
    for package in packages:
        for root in map(Path, _search_locations(package)):
            for file in sorted(root.rglob("*.py")):
                hashed.update(f"{package}/{file.relative_to(root)}\n".encode())
                hashed.update(file.read_bytes())
    return hashed.hexdigest()[:16]


def _search_locations(package: str) -> list[str]:
    """The folders `package`'s modules are found in."""
    imported = sys.modules.get(package)
    if imported is not None and hasattr(imported, "__path__"):
        return list(imported.__path__)
    spec = importlib.util.find_spec(package)
    return list(spec.submodule_search_locations or []) if spec is not None else []
