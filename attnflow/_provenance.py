"""What made an output, recorded with it: versions, commit, backend, devices, machine, precision,
XLA flags, date and the command line."""

import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

import jax

LIBRARIES = ("jax", "jaxlib", "diffrax", "equinox", "optax", "numpy")
"""The libraries whose versions an output records."""


def source_commit() -> str | None:
    """The git commit of the attnflow source in use (with `+dirty` when it has uncommitted
    changes), or `None` when it is not a git checkout or git is absent."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0:
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def cpu_model() -> str:
    """The processor's model name (from `/proc/cpuinfo` on Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance() -> dict:
    """What made an output: versions, commit (`+dirty` with uncommitted changes), backend, devices,
    machine (host, CPU model, cores), whether float64 is on, the XLA flags (its backend
    optimisation level among them), date and the command line."""
    from . import __version__

    return {
        "attnflow": __version__,
        "commit": source_commit(),
        "versions": {name: version_of(name) for name in LIBRARIES} | {"python": platform.python_version()},
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()],
        "device_kinds": sorted({d.device_kind for d in jax.local_devices()}),
        "host": platform.node(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "float64": bool(jax.config.read("jax_enable_x64")),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
    }


def version_of(distribution: str) -> str | None:
    """The installed version of `distribution`, or `None` when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
