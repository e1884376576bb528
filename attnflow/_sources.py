"""The digest of the source files of packages, found without importing them: what the papers'
catalog and the kept checks are kept under, so that neither outlives the code that made it. The
packages of the papers installed beside attnflow count too ([`installed_paper_packages`][])."""

import hashlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path

PAPER_ENTRY_POINTS = "attnflow.papers"
"""The entry-point group in which an installed package declares its papers: `NAME = "MODULE"`, a
module holding `PAPER` (a `tasks.PaperInfo` called NAME) and, where it has them, `CHECKS` (as
`theory.<paper>.CHECKS`) and `FIGURES` (as `figures.<paper>.FIGURES`)."""


def installed_papers() -> list[importlib.metadata.EntryPoint]:
    """The papers installed packages declare ([`PAPER_ENTRY_POINTS`][]), by name; none imported."""
    return sorted(importlib.metadata.entry_points(group=PAPER_ENTRY_POINTS), key=lambda ep: ep.name)


def installed_paper_packages() -> tuple[str, ...]:
    """The top-level packages of the installed papers' modules (found without importing them)."""
    return tuple(sorted({ep.module.split(".")[0] for ep in installed_papers()}))


def sources_digest(packages: Iterable[str]) -> str:
    """One digest of every Python source file of `packages`, in every folder each is found in (its
    `__path__` where this process has imported it and extended it, e.g. with a new paper's folder;
    else where it would be imported from, found without importing it); a module of one file counts
    its file."""
    hashed = hashlib.sha256()
    for package in packages:
        for root, files in _sources(package):
            for file in files:
                hashed.update(f"{package}/{file.relative_to(root)}\n".encode())
                hashed.update(file.read_bytes())
    return hashed.hexdigest()[:16]


def _sources(package: str) -> list[tuple[Path, list[Path]]]:
    """The source files of `package`, each folder it is found in with its files (a module of one
    file: its folder and that file)."""
    imported = sys.modules.get(package)
    if imported is not None and hasattr(imported, "__path__"):
        folders = list(imported.__path__)
    else:
        spec = importlib.util.find_spec(package)
        if spec is None:
            return []
        if spec.submodule_search_locations is None:
            origin = Path(spec.origin) if spec.origin else None
            return [(origin.parent, [origin])] if origin is not None and origin.suffix == ".py" else []
        folders = list(spec.submodule_search_locations)
    return [(Path(folder), sorted(Path(folder).rglob("*.py"))) for folder in folders]
