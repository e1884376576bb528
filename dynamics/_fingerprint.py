"""The fingerprint of the code behind a sweep, so that a store never serves the numbers of other code.

Two parts, because each misses what the other sees:

- `program`: a hash of the lowered program of one run (StableHLO text, without source locations),
  of every compiled program of the sweep. It changes when anything the runs compute changes,
  wherever that code lives (the simulation's module, a helper library, attnflow's engine, JAX),
  and not when a comment or an unrelated function does.
- `sources`: a hash of each source file of the simulation's package (or of its module, when it
  is a module of its own). Data drawn on the host before the program (a simulation's `draw`)
  is code the program never sees; these hashes cover it.

A store records both, with the versions of the libraries in use, and a rerun whose fingerprint
differs is refused with what changed named.
"""

import hashlib
import importlib.metadata
import json
import re
import sys
from pathlib import Path

_LIBRARIES = ("attnflow", "jax", "jaxlib", "diffrax", "equinox", "optax")
_TENSOR = re.compile(r"tensor<((?:\d+x)+)([a-z]+)(\d*)>")


def digest(data: bytes | str) -> str:
    """A short hex digest (SHA-256, 16 hex digits) of `data`."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def json_digest(value) -> str:
    """[`digest`][] of a JSON value, keys sorted."""
    return digest(json.dumps(value, sort_keys=True))


def versions() -> dict[str, str | None]:
    """The installed versions of attnflow and the libraries its runs go through."""
    found = {}
    for name in _LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def source_files(cls: type) -> tuple[str | None, dict[str, str]]:
    """`(folder, {file: digest})`: the source files of the package that defines `cls` (every
    `.py` file under its folder), or of its module alone when it is not in a package."""
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    if file is None:  # defined interactively
        return None, {}
    file = Path(file).resolve()
    folder = file.parent
    files = sorted(folder.rglob("*.py")) if getattr(module, "__package__", "") else [file]
    return str(folder), {str(f.relative_to(folder)): digest(f.read_bytes()) for f in files}


def code_record(cls: type, program_texts: list[str]) -> dict:
    """The fingerprint of the code of a sweep of `cls` whose compiled programs lower to
    `program_texts` (see the module's docstring)."""
    folder, sources = source_files(cls)
    return {
        "module": cls.__module__,
        "folder": folder,
        "program": digest("\n".join(program_texts)),
        "sources": sources,
        "versions": versions(),
    }


def code_differences(stored: dict | None, now: dict) -> list[str]:
    """What differs between the code that made a store (`stored`) and the code now, in words;
    empty when the programs and the sources are the same."""
    if stored is None:
        return ["the store records no fingerprint of its code (an older attnflow wrote it)"]
    out = []
    if stored.get("program") != now["program"]:
        changed = [
            f"{name} {stored['versions'].get(name)} then, {version} now"
            for name, version in now["versions"].items()
            if stored.get("versions", {}).get(name) != version
        ]
        out.append(
            "the runs' compiled program differs (the simulation's code, or code it calls, changed"
            + (f"; {', '.join(changed)}" if changed else "")
            + ")"
        )
    old, new = stored.get("sources", {}), now["sources"]
    changed_files = sorted(f for f in set(old) | set(new) if old.get(f) != new.get(f))
    if changed_files:
        shown = ", ".join(changed_files[:5]) + (
            f" and {len(changed_files) - 5} more" if len(changed_files) > 5 else ""
        )
        out.append(f"source files of {now['module']} changed: {shown} (in {now['folder']})")
    return out


def largest_array_bytes(program_text: str) -> int:
    """The bytes of the largest array in a lowered program: a floor under one run's memory."""
    largest = 0
    for dims, _, bits in _TENSOR.findall(program_text):
        size = 1
        for d in dims.rstrip("x").split("x"):
            size *= int(d)
        width = int(bits) if bits else 8  # index types
        largest = max(largest, size * max(width // 8, 1))
    return largest
