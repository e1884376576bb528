"""The digest of the source files of packages, found without importing them: what the papers'
catalog and the kept checks are kept under, so that neither outlives the code that made it."""

import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path


def sources_digest(packages: Iterable[str]) -> str:
    """One digest of every Python source file of `packages` (found without importing them)."""
    hashed = hashlib.sha256()
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for file in sorted(root.rglob("*.py")):
            hashed.update(f"{package}/{file.relative_to(root)}\n".encode())
            hashed.update(file.read_bytes())
    return hashed.hexdigest()[:16]
