"""The checks of a `verify` or `reproduce` kept as each ends, so that the command stopped half-way
(killed, interrupted, out of time) and made again runs only the checks left. A check is kept for
its paper and sizes, under the fingerprint of the code that ran it (every source file of the
packages the checks run, the versions of the libraries, the backend, the XLA flags, the data
directories named): kept checks of other code are run again."""

import contextlib
import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

import dynamics
import theory

from ._provenance import LIBRARIES, version_of
from ._sources import installed_paper_packages, sources_digest

_PACKAGES = ("attnflow", "dynamics", "tasks", "theory")
"""The packages whose sources a check's result depends on."""

_KEY = "key.json"
"""The file of a paper's kept checks that says what they are results of (see `dynamics.store.kept_runs`)."""


def kept_folder(report: str | os.PathLike) -> Path:
    """Where the checks of the command that writes the report `report` are kept while it runs:
    beside it, `results/verify.json` -> `results/verify.kept`."""
    report = Path(report)
    return report.with_name(f"{report.stem}.kept")


def checks_key(paper: str, full: bool, data: str | None) -> dict:
    """What the kept checks of `paper` (at the papers' sizes when `full`; reading the data
    directory `data`, if any) are results of."""
    return {"checks of": paper, "full": full} | code_key() | {"data": data}


def code_key() -> dict:
    """The code that results computed here come from, beyond their own settings: every source file
    of the packages the checks and the runs go through, the versions of the libraries, the
    backend and its devices, float64 and the XLA flags."""
    return {
        "sources": sources_digest((*_PACKAGES, *installed_paper_packages())),
        "versions": {name: version_of(name) for name in ("attnflow", *LIBRARIES)},
        "backend": jax.default_backend(),
        "device_kinds": sorted({device.device_kind for device in jax.local_devices()}),
        "float64": bool(jax.config.read("jax_enable_x64")),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def run_keeping(
    makers: list[Callable[[], theory.Check]],
    folder: Path,
    key: dict,
    progress: Callable[[str], None] | None = None,
) -> list[theory.Check]:
    """Run `makers` (the checks of one paper, in order) as `theory.run_checks` does, each check
    kept in `folder` as it ends, under `key` ([`checks_key`][]); a check kept there before under
    the same key is taken instead of run, with its own seconds. A check that raised is not kept:
    it runs again.

    **Returns:** the checks, in the order of `makers`.
    """
    kept = dynamics.store.kept_runs(folder, key)
    checks = []
    for make in makers:
        if make.__name__ in kept:
            if progress is not None:
                progress(f"{make.__name__} (kept from an earlier run of this command)")
            checks.append(theory.Check.from_dict(json.loads(str(kept[make.__name__]["check"]))))
            continue
        (check,) = theory.run_checks([_keeping(make, folder)], progress)
        checks.append(check)
    return checks


def _keeping(make: Callable[[], theory.Check], folder: Path) -> Callable[[], theory.Check]:
    """`make`, keeping the check it returns in `folder` with the seconds it took."""

    def run() -> theory.Check:
        start = time.perf_counter()
        with dynamics.recording_compiles() as compiles:
            check = make()
        seconds = time.perf_counter() - start
        record = dataclasses.replace(check, seconds=seconds, compiling=compiles.stats.to_dict()).to_dict()
        dynamics.store.keep_run(folder, make.__name__, {"check": np.asarray(json.dumps(record))})
        return check

    run.__name__ = make.__name__
    run.paper = make.paper
    return run


def refuse_foreign(folder: Path) -> None:
    """Before any work: refuse a `folder` that exists and is not one of kept checks (a folder per
    paper, each with the key of its checks), naming it; nothing of it is removed.

    **Raises:** `ValueError`.
    """
    if not folder.exists():
        return
    foreign = not folder.is_dir() or any(not (entry / _KEY).is_file() for entry in folder.iterdir())
    if foreign:
        raise ValueError(
            f"{folder} is where this command keeps its checks as they end, and it holds something "
            "else: move it away, or write the report elsewhere"
        )


def drop_kept(folder: Path, checks: list[theory.Check]) -> None:
    """Once the report of `checks` is written: remove their kept copies from `folder`, and the
    folder of a paper (and `folder` itself) once nothing is kept in it. Checks kept by a run
    of other papers or checks, stopped before its report, stay for it."""
    for check in checks:
        (folder / check.paper / f"{check.name}.npz").unlink(missing_ok=True)
    for paper in list(folder.iterdir()) if folder.is_dir() else ():
        if not any(paper.glob("*.npz")):
            shutil.rmtree(paper)
    with contextlib.suppress(OSError):  # still holding another run's checks
        folder.rmdir()
