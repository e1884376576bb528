"""`attnflow reproduce`: every check and every figure, gathered in one `index.html`."""

import html
import json
import time
from pathlib import Path

import jax

import dynamics
import theory

from ._workers import run_pieces
from .papers import papers


def schedule(names: list[str], parts: tuple[str, ...]) -> list[tuple[str, str]]:
    """The `(paper, part)` pieces of `names` × `parts`, the longest first, as each paper declares
    its cost (`tasks.PaperInfo.cost`); a piece of unknown cost comes last. Workers take the pieces
    in this order, so that the longest do not start last."""
    pieces = [(name, part) for name in names for part in parts]
    cost = {piece: papers()[piece[0]].info.cost.get(piece[1], -1.0) for piece in pieces}
    return sorted(pieces, key=lambda piece: -cost[piece])


def paper_checks(name: str, quick: bool) -> list[theory.Check]:
    """Every check of paper `name`, each announced as it starts."""
    return papers()[name].run_checks(
        quick=quick, progress=lambda check: print(f"  {name}: {check}", flush=True)
    )


def paper_figures(name: str, out: Path, full: bool) -> dict[str, list[Path]]:
    """Every figure of paper `name` drawn into `out`, each timed: figure name -> files written."""
    files = {}
    for figure, draw in papers()[name].figures.items():
        start = time.perf_counter()
        files[figure] = draw(out, full)
        print(f"[figure] {figure} ({time.perf_counter() - start:.1f} s)", flush=True)
    return files


def reproduce(out: Path, *, full: bool, metadata: dict, jobs: int) -> int:
    """Run every paper's checks and draw every figure into `out`, then write `out/index.html`.

    The papers' checks and figures are independent pieces, run side by side in `jobs` worker
    processes (see `attnflow._workers`); the numbers do not depend on `jobs`.

    **Arguments:**

    - `out`: the output folder (created).
    - `full`: the papers' sizes instead of the quick defaults.
    - `metadata`: versions and options, written into the JSON report and the page.
    - `jobs`: worker processes, >= 1 (1: everything in this process).

    **Returns:** the exit status: 1 if any check failed, else 0.
    """
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    names = list(papers())
    pieces = schedule(names, ("checks", "figures"))
    tasks = [
        (paper_checks, (name, not full))
        if part == "checks"
        else (paper_figures, (name, out / "figures", full))
        for name, part in pieces
    ]
    results = dict(zip(pieces, run_pieces(tasks, jobs, jax.config.jax_compilation_cache_dir)))
    checks = {name: results[name, "checks"] for name in names}
    figure_files = {name: results[name, "figures"] for name in names}
    every_check = [c for paper_checks in checks.values() for c in paper_checks]
    print(theory.format_table(every_check))
    theory.write_json(every_check, out / "verify.json", metadata)

    elapsed = time.perf_counter() - start
    page = _index_page(checks, figure_files, out, metadata | {"wall_seconds": round(elapsed, 1)})
    with dynamics.atomic_write(out / "index.html") as f:
        f.write(page)
    print(f"wrote {out / 'index.html'} ({elapsed:.0f} s)")
    return 0 if all(c.passed for c in every_check) else 1


def _index_page(checks: dict, figure_files: dict, out: Path, metadata: dict) -> str:
    esc = html.escape
    verdicts = list(theory.Verdict)
    summary = "\n".join(
        f"<tr><td><a href='#{esc(name)}'>{esc(name)}</a></td><td>{esc(papers()[name].title)}</td>"
        + "".join(f"<td class='{v}'>{sum(c.verdict is v for c in paper_checks)}</td>" for v in verdicts)
        + "</tr>"
        for name, paper_checks in checks.items()
    )
    sections = "\n".join(
        f"<section id='{esc(name)}'><h2>{esc(name)}</h2><p>{esc(papers()[name].title)}</p>"
        f"<h3>Checks</h3>{_check_table(checks[name])}"
        f"<h3>Figures</h3>{_figures(figure_files[name], out)}</section>"
        for name in checks
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>attnflow reproduce</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }}
.pass, tr.pass td:first-child {{ background: #d9f2d9; }}
.fail, tr.fail td:first-child {{ background: #f7c6c6; }}
.deviation, tr.deviation td:first-child {{ background: #fbe7b5; }}
img {{ max-width: 100%; border: 1px solid #eee; }}
</style></head><body>
<h1>attnflow: checks and figures</h1>
<table><tr><th>paper</th><th>title</th>{"".join(f"<th>{v}</th>" for v in verdicts)}</tr>
{summary}
</table>
{sections}
<h2>How this was made</h2>
<pre>{esc(json.dumps(metadata, indent=1))}</pre>
</body></html>
"""


def _predicted(check) -> str:
    """The predicted cell: the value, or `bound ≥ x` / `bound ≤ x` where it is a bound."""
    if check.bound is None:
        return f"{check.predicted:.6g}"
    return f"bound {check.bound.sign} {check.predicted:.6g}"


def _check_table(checks: list) -> str:
    esc = html.escape
    rows = "\n".join(
        f"<tr class='{c.verdict}'><td>{c.verdict}</td><td>{esc(c.name)}</td>"
        f"<td>{esc(c.claim)}</td><td>{esc(_predicted(c))}</td><td>{c.simulated:.6g}</td>"
        f"<td>{c.error:.3g}</td><td>{c.tolerance:.3g}</td><td>{esc(c.provenance)}</td><td>{esc(c.note)}</td></tr>"
        for c in checks
    )
    return (
        "<table><tr><th>verdict</th><th>check</th><th>claim</th><th>predicted</th><th>simulated</th>"
        f"<th>error</th><th>tolerance</th><th>provenance</th><th>note</th></tr>{rows}</table>"
    )


def _figures(figure_files: dict[str, list[Path]], out: Path) -> str:
    esc = html.escape
    sections = []
    for name, paths in figure_files.items():
        links = [(p, esc(str(p.relative_to(out)))) for p in paths]
        images = "".join(
            f"<img src='{esc(str(p.relative_to(out)))}' alt='{esc(name)}'>"
            for p in paths
            if p.suffix == ".png"
        )
        links = " · ".join(
            f"<a href='{esc(str(p.relative_to(out)))}'>{esc(p.suffix[1:])}</a>"
            for p in paths
            if p.suffix != ".png"
        )
        sections.append(f"<div><h4>{esc(name)}</h4>{images}<p>{links}</p></div>")
    return "".join(sections)
