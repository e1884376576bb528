"""`attnflow reproduce`: every check and every figure, gathered in one `index.html`."""

import html
import json
import time
from pathlib import Path

import figures
import theory


def reproduce(out: Path, *, full: bool, metadata: dict) -> int:
    """Run every paper's checks and draw every figure into `out`, then write `out/index.html`.

    **Arguments:**

    - `out`: the output folder (created).
    - `full`: the papers' sizes instead of the quick defaults.
    - `metadata`: versions and options, written into the JSON report and the page.

    **Returns:** the exit status: 1 if any check failed, else 0.
    """
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    checks = []
    for paper in theory.PAPERS:
        print(f"[verify] {paper}", flush=True)
        checks += theory.run_paper(
            paper, quick=not full, progress=lambda name: print(f"  {name}", flush=True)
        )
    print(theory.format_table(checks))
    theory.write_json(checks, out / "verify.json", metadata)

    figure_files = {}
    for name in figures.FIGURES:
        t0 = time.perf_counter()
        figure_files[name] = figures.make(name, out / "figures", full=full)
        print(f"[figure] {name} ({time.perf_counter() - t0:.1f} s)", flush=True)

    elapsed = time.perf_counter() - start
    page = _index_page(checks, figure_files, out, metadata | {"wall_seconds": round(elapsed, 1)})
    (out / "index.html").write_text(page)
    print(f"wrote {out / 'index.html'} ({elapsed:.0f} s)")
    return 0 if all(c.passed for c in checks) else 1


def _index_page(checks, figure_files: dict[str, list[Path]], out: Path, metadata: dict) -> str:
    esc = html.escape
    rows = "\n".join(
        f"<tr class='{c.verdict}'><td>{c.verdict}</td><td>{esc(c.paper)}</td><td>{esc(c.name)}</td>"
        f"<td>{esc(c.claim)}</td><td>{c.predicted:.6g}</td><td>{c.simulated:.6g}</td>"
        f"<td>{c.error:.3g}</td><td>{c.tolerance:.3g}</td><td>{esc(c.provenance)}</td><td>{esc(c.note)}</td></tr>"
        for c in checks
    )
    sections = []
    for name, paths in figure_files.items():
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
        sections.append(f"<section><h3>{esc(name)}</h3>{images}<p>{links}</p></section>")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>attnflow reproduce</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }}
tr.pass td:first-child {{ background: #d9f2d9; }}
tr.fail td:first-child {{ background: #f7c6c6; }}
tr.deviation td:first-child {{ background: #fbe7b5; }}
img {{ max-width: 100%; border: 1px solid #eee; }}
</style></head><body>
<h1>attnflow: checks and figures</h1>
<pre>{esc(json.dumps(metadata, indent=1))}</pre>
<h2>Checks</h2>
<table><tr><th>verdict</th><th>paper</th><th>check</th><th>claim</th><th>predicted</th><th>simulated</th>
<th>error</th><th>tolerance</th><th>provenance</th><th>note</th></tr>
{rows}
</table>
<h2>Figures</h2>
{"".join(sections)}
</body></html>
"""
