"""The papers as data: each paper's title, levels (with every setting), checks and figures, as
`attnflow list` prints them and as the command line looks names up before any work.

The catalog is read from the papers' code once per version of the sources and kept, under the
digest of every source file of attnflow's packages, in `$XDG_CACHE_HOME/attnflow/catalog` (default
`~/.cache/attnflow/catalog`): `attnflow list`, and a misspelt paper, level, check or figure, then
answer without importing JAX or any paper. A changed source file changes the digest, so the
catalog is never stale; one that cannot be kept (a read-only home) is read from the code every
time.

This module imports nothing heavy: it reads and writes kept catalogs; `attnflow.papers.catalog`
reads one from the code where none is kept (importing every paper).
"""

import json
import os
import sys
from pathlib import Path

from ._sources import installed_paper_packages, sources_digest

PACKAGES = ("attnflow", "dynamics", "tasks", "theory", "figures")
"""The packages whose source files the catalog's digest covers, with those of the installed papers."""


def catalog_dir() -> Path:
    """Where catalogs are kept: `$XDG_CACHE_HOME/attnflow/catalog`, else `~/.cache/attnflow/catalog`."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnflow" / "catalog"


def kept_catalog() -> dict | None:
    """The catalog kept for these sources, or `None` when there is none yet (nothing imported)."""
    try:
        return json.loads((catalog_dir() / f"{_digest()}.json").read_text())
    except (OSError, ValueError):
        return None


def known_catalog() -> dict | None:
    """The catalog where it needs no import: where this process has imported the papers, read
    from them (so that it holds a paper added or changed in the process); else the one kept for
    these sources; else `None`."""
    registry = sys.modules.get("attnflow.papers")
    if registry is not None and registry.papers.cache_info().currsize > 0:
        return registry.catalog_of(registry.papers())
    return kept_catalog()


def keep(made: dict) -> None:
    """Write the catalog whole or not at all; where it cannot be written, it is not kept."""
    folder = catalog_dir()
    path = folder / f"{_digest()}.json"
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(made))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _digest() -> str:
    """The digest the catalog is kept under: attnflow's packages and the installed papers'."""
    return sources_digest((*PACKAGES, *installed_paper_packages()))
