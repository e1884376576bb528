"""`attnflow reproduce`: every paper's checks and figures, run side by side, and the report of
them all."""

import json
import time
from pathlib import Path

import jax

import dynamics

from ._kept_checks import drop_kept, kept_folder, refuse_foreign
from ._pieces import paper_checks, paper_figures, shared_runs
from ._render import text_table, write_json
from ._report import index_page
from ._workers import costs, run_pieces, schedule
from .papers import papers


def reproduce(
    out: Path,
    *,
    full: bool,
    metadata: dict,
    jobs: int,
    docs: str | None = None,
    data: str | None = None,
    names: list[str] | None = None,
) -> int:
    """Run every paper's checks (or those of the papers `names`) and draw its figures into `out`,
    then write `out/index.html` (with `out/verify.json`, the checks, and `out/figures.json`, each
    figure's files, seconds and compiling).

    The papers' checks and figures are independent pieces, run side by side in `jobs` worker
    processes (see `attnflow._workers`); the numbers do not depend on `jobs`. A sweep that a figure
    and a check both make is made once, in `out/shared_runs` (see `dynamics.store.shared_store` and
    [`shared_runs`][]), emptied once the pieces end. Each check is kept in `out/verify.kept` as it
    ends, until the report is written: the command stopped half-way and made again runs only the
    checks left (see `attnflow._kept_checks`), and resumes the shared runs of the same code.

    **Arguments:**

    - `out`: the output folder (created).
    - `full`: the papers' sizes instead of the quick defaults.
    - `metadata`: versions and options, written into the JSON report and the page.
    - `jobs`: worker processes, >= 1 (1: everything in this process).
    - `docs`: the documentation site each check and figure links to (an address, or a path
      relative to `out`); `None`: no links.
    - `data`: the data directory the papers with a data option read (`--data`), or `None`.
    - `names`: the papers to run (`--paper`), or `None` for every paper.

    **Returns:** the exit status: 1 if any check failed, else 0.
    """
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    keep = kept_folder(out / "verify.json")
    refuse_foreign(keep)
    names = list(papers()) if names is None else names
    pieces = schedule(names, ("checks", "figures"), full)
    tasks = [
        (paper_checks, (name, full, None, keep, data))
        if part == "checks"
        else (paper_figures, (name, out / "figures", full, None, data))
        for name, part in pieces
    ]
    with shared_runs(out / "shared_runs", data, names) as folder:
        cache = jax.config.jax_compilation_cache_dir
        done, compiling = run_pieces(tasks, jobs, cache, folder, costs(pieces, full))
    results = dict(zip(pieces, done))
    metadata = metadata | {"compiling": compiling.to_dict()}
    checks = {name: results[name, "checks"] for name in names}
    figures = {figure: made for name in names for figure, made in results[name, "figures"].items()}
    figure_files = {
        name: {figure: made.files for figure, made in results[name, "figures"].items()} for name in names
    }
    every_check = [c for paper_checks in checks.values() for c in paper_checks]
    print(text_table(every_check))
    print(f"compiling: {compiling.summary()}")
    write_json(every_check, out / "verify.json", metadata)
    with dynamics.store.atomic_write(out / "figures.json") as f:
        json.dump(
            {"meta": metadata, "figures": {name: made.to_dict() for name, made in figures.items()}},
            f,
            indent=1,
        )
    drop_kept(keep, every_check)

    elapsed = time.perf_counter() - start
    page = index_page(checks, figure_files, out, metadata | {"wall_seconds": round(elapsed, 1)}, docs)
    with dynamics.store.atomic_write(out / "index.html") as f:
        f.write(page)
    print(f"wrote {out / 'index.html'} ({elapsed:.0f} s)")
    return 0 if all(c.passed for c in every_check) else 1
