"""What made an output, recorded with it: versions, commit, backend, devices, host, date and the
command line."""

import datetime
import platform
import subprocess
import sys
from pathlib import Path

import jax


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


def provenance() -> dict:
    """What made an output: versions, commit, backend, devices, host, date and the command line."""
    from . import __version__

    return {
        "attnflow": __version__,
        "commit": source_commit(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()],
        "host": platform.node(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
    }
