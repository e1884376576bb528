"""The report of `attnflow reproduce`: every check and every figure, gathered in one `index.html`."""

import json
from collections.abc import Collection
from pathlib import Path

import dynamics
import theory

from ._markup import can_render_maths, inline_html
from ._render import (
    HTML,
    described,
    esc,
    grouped,
    headline,
    holding,
    linked_names,
    predicted,
    remarks,
    tally,
    tolerance,
)
from .papers import papers


def index_page(checks: dict, figure_files: dict, out: Path, metadata: dict, docs: str | None = None) -> str:
    """The report: a provenance header, a summary of verdicts per paper, then each paper's verdict
    summary, figures with their captions and checks grouped by the result they are about; with
    `docs`, each check and figure links to its entry on its paper's page of that site."""
    summary = "\n".join(
        f"<tr><td><a href='#{esc(name)}'>{esc(papers()[name].info.label)}</a></td>"
        f"<td>{esc(papers()[name].title)}</td>{_counts(paper_checks)}"
        f"<td><a href='#{esc(name)}-figures'>figures</a> · <a href='#{esc(name)}-checks'>checks</a></td></tr>"
        for name, paper_checks in checks.items()
    )
    sections = "\n".join(
        f"<section id='{esc(name)}'><h2>{esc(papers()[name].info.label)}</h2>"
        f"<p class='title'>{esc(papers()[name].title)}</p>"
        f"{_verdicts(name, checks[name])}"
        f"<h3 id='{esc(name)}-figures'>Figures</h3>"
        f"{_figures(name, figure_files[name], out, docs, {c.name for c in checks[name]})}"
        f"<h3 id='{esc(name)}-checks'>Checks</h3>{_check_table(name, checks[name], docs, figure_files[name])}"
        "</section>"
        for name in checks
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>attnflow reproduce</title>
<style>{_STYLE}</style></head><body>
<h1>attnflow: every paper's checks and figures</h1>
{_made_by(metadata)}
<table class="summary"><tr><th>paper</th><th>title</th><th>pass</th><th>fail</th><th>deviation</th>
<th>go to</th></tr>
{summary}
</table>
{_FILTER}
{_maths_note()}
{sections}
<h2 id="made-by">How this was made, in full</h2>
<pre>{esc(json.dumps(metadata, indent=1))}</pre>
</body></html>
"""


_FILTER = """<form class="filter" onsubmit="return false">Show the checks that
<label><input type="checkbox" name="verdict" value="pass" checked> pass</label>
<label><input type="checkbox" name="verdict" value="fail" checked> fail</label>
<label><input type="checkbox" name="verdict" value="deviation" checked> deviate</label>,
containing <input type="search" name="text" placeholder="a name, a word of a claim or note" size="32">
<span class="shown"></span></form>
<script>
(function () {
  const form = document.querySelector("form.filter");
  function show() {
    const verdicts = new Set([...form.querySelectorAll("input[name=verdict]:checked")].map(b => b.value));
    const words = form.elements.text.value.trim().toLowerCase();
    let shown = 0, all = 0;
    for (const table of document.querySelectorAll("table.checks")) {
      let group = null, groupShown = false;
      for (const row of table.rows) {
        if (row.classList.contains("group")) {
          if (group) group.hidden = !groupShown;
          group = row; groupShown = false;
        } else if (row.classList.contains("check")) {
          const visible = verdicts.has(row.dataset.verdict)
            && (!words || row.textContent.toLowerCase().includes(words));
          row.hidden = !visible; all += 1; shown += visible; groupShown = groupShown || visible;
        }
      }
      if (group) group.hidden = !groupShown;
    }
    form.querySelector(".shown").textContent = shown === all ? "" : shown + " of " + all + " checks shown";
  }
  form.addEventListener("input", show);
})();
</script>"""
"""The report's filter of the checks: by verdict and by text, shown rows counted (the page works
without it: every row is shown)."""


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em;
       line-height: 1.45; color: #222; }
math { font-family: "Latin Modern Math", "STIX Two Math", "DejaVu Math TeX Gyre", math; }
table { border-collapse: collapse; font-size: 0.88em; width: 100%; }
td, th { border-bottom: 1px solid #ddd; padding: 4px 6px; vertical-align: top; text-align: left; }
th { background: #f4f4f4; }
tr.group th { background: #fafafa; font-weight: 600; border-top: 2px solid #ccc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { background: #dcf3dc; } .fail { background: #f7c6c6; } .deviation { background: #fbe7b5; }
td.verdict { white-space: nowrap; font-weight: 600; }
table.checks { table-layout: fixed; }
table.checks td, table.checks th { overflow-wrap: anywhere; overflow-x: auto; }
@media (max-width: 900px) { table.checks { font-size: 0.74em; } }
.method, .note, .why, .shown, .printed { color: #555; font-size: 0.92em; margin-top: 0.3em; }
.verdict .kind { font-size: 0.8em; font-weight: normal; }
.note { color: #777; }
.made-by td:first-child { white-space: nowrap; color: #555; width: 11em; }
.made-by { width: auto; margin-bottom: 1.5em; }
table.summary { width: auto; margin-bottom: 1em; }
ul.verdicts li { margin: 0.2em 0; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.92em; color: #333; max-width: 60em; }
p.title { color: #555; margin-top: -0.5em; }
code { font-size: 0.92em; background: #f3f3f3; padding: 0 2px; }
form.filter { margin: 0.5em 0 1em; font-size: 0.92em; } form.filter .shown { color: #555; margin-left: 1em; }
"""


def _counts(checks: list) -> str:
    """A summary row's cells: the number of checks of each verdict, coloured only where not 0."""
    return "".join(
        f"<td class='num{' ' + verdict.value if count else ''}'>{count}</td>"
        for verdict, count in tally(checks).items()
    )


def _made_by(metadata: dict) -> str:
    """The provenance header: what made the page, one row per fact."""
    commit = esc(metadata.get("commit") or "")
    if not commit:
        commit = "not a git checkout"
    elif commit.endswith("+dirty"):
        commit = f"{commit.removesuffix('+dirty')} <strong>with uncommitted changes</strong>"
    else:
        commit = f"{commit} (clean)"
    options = metadata.get("options", {})
    versions = ", ".join(f"{k} {v}" for k, v in (metadata.get("versions") or {}).items() if v)
    rows = [
        ("sizes", "the papers' (--full)" if options.get("full") else "quick"),
        ("commit", commit),
        ("date", esc(metadata.get("date", ""))),
        ("wall time", f"{metadata.get('wall_seconds', 0):.0f} s with {options.get('jobs', 1)} worker(s)"),
        ("compiling", esc(_compiling(metadata))),
        (
            "machine",
            esc(f"{metadata.get('host', '')}: {metadata.get('cpu', '')}, {metadata.get('cores', '')} cores"),
        ),
        ("devices", esc(f"{metadata.get('backend', '')}: {', '.join(metadata.get('devices', []))}")),
        (
            "precision",
            "float64 available (each check's simulations state their dtype)"
            if metadata.get("float64")
            else "float32 only",
        ),
        ("XLA flags", f"<code>{esc(metadata.get('xla_flags') or '(none)')}</code>"),
        ("versions", esc(f"attnflow {metadata.get('attnflow', '')}, {versions}")),
    ]
    body = "".join(f"<tr><td>{key}</td><td>{value}</td></tr>" for key, value in rows)
    return f"<table class='made-by'>{body}</table>"


def _compiling(metadata: dict) -> str:
    """What compiling cost in the work the page shows, in words ("not recorded" for a page of an
    older report)."""
    if "compiling" not in metadata:
        return "not recorded"
    return f"{dynamics.CompileStats.from_dict(metadata['compiling']).summary()}, in all the workers together"


def _maths_note() -> str:
    if can_render_maths():
        return ""
    return (
        "<p class='method'>The claims' maths is shown as TeX: install <code>attnflow[docs]</code> "
        "(latex2mathml) to see it rendered.</p>"
    )


def _verdicts(paper: str, checks: list) -> str:
    """A paper's verdict summary: how many pass and what holds (the results all of whose checks
    pass), then each failure and each deviation, with its reason, one line each
    (`attnflow._render.remarks`)."""
    held = holding(checks)
    lines = [
        f"<li><strong>{esc(headline(checks))}.</strong> "
        + (f"Every check holds for: {esc(', '.join(held))}." if held else "")
        + "</li>"
    ]
    for outcome, line in remarks(checks, HTML, lambda name: f"{paper}-{name}"):
        kind = "deviation" if outcome is theory.Outcome.deviation else "fail"
        lines.append(f"<li class='{kind}'>{line}</li>")
    return f"<ul class='verdicts'>{''.join(lines)}</ul>"


def _in_docs(docs: str | None, paper: str, anchor: str, text: str) -> str:
    """`text` (HTML) linked to `#anchor` on the paper's page of the site `docs`; as is without one."""
    if docs is None:
        return text
    address = f"{docs}/papers/{paper}.html#{anchor}"
    return f"<a href='{esc(address)}' title='in the documentation'>{text}</a>"


def _verdict_cell(check) -> str:
    """The verdict, and under a failure which kind it is."""
    if check.outcome in (theory.Outcome.exceeded, theory.Outcome.not_run):
        return f"{check.verdict.value}<div class='kind'>{check.outcome.value}</div>"
    return check.verdict.value


_ABOUT = ("method", "printed", "note", "why", "shown")
"""The order of what the claim cell of a check's row says under the claim."""


def _check_table(paper: str, checks: list, docs: str | None = None, drawn: Collection[str] = ()) -> str:
    """The checks of a paper, grouped by result: verdict, name (linked to its entry in the
    documentation `docs`), claim with how it is measured, the note and the figures that draw it
    (linked where they are among the figures `drawn`), predicted, simulated, error, tolerance and
    provenance."""
    declared = {fn.__name__: fn.declaration for fn in papers()[paper].checks}
    rows = []
    for result, members in grouped(checks).items():
        rows.append(f"<tr class='group'><th colspan='8'>{esc(result)}</th></tr>")
        for c in members:
            declaration = declared.get(c.name)
            parts = {}
            if declaration:
                shown = papers()[paper].figures_showing(c.name)
                parts = dict(described(declaration, shown, HTML, lambda f: f if f in drawn else None))
            parts["note"] = esc(c.note) if c.note else ""
            parts["why"] = f"<strong>Why it deviates:</strong> {esc(c.deviation)}" if c.deviation else ""
            about = "".join(f"<div class='{kind}'>{parts[kind]}</div>" for kind in _ABOUT if parts.get(kind))
            name = f"<code>{esc(c.name).replace('_', '_<wbr>')}</code>"
            rows.append(
                f"<tr id='{esc(paper)}-{esc(c.name)}' class='check' data-verdict='{c.verdict.value}'>"
                f"<td class='verdict {c.verdict.value}'>{_verdict_cell(c)}</td>"
                f"<td>{_in_docs(docs, paper, f'check-{c.name}', name)}</td>"
                f"<td>{inline_html(c.claim)}{about}</td>"
                f"<td class='num'>{esc(predicted(c))}</td><td class='num'>{c.simulated:.6g}</td>"
                f"<td class='num'>{c.error:.3g}</td><td class='num'>{esc(tolerance(c.tolerance))}</td>"
                f"<td>{esc(c.provenance.value)}</td></tr>"
            )
    return (
        "<table class='checks'><colgroup><col style='width:6%'><col style='width:14%'>"
        "<col style='width:38%'><col style='width:10%'><col style='width:10%'><col style='width:8%'>"
        "<col style='width:6%'><col style='width:8%'></colgroup>"
        "<tr><th>verdict</th><th>check</th><th>claim; how it is measured; note</th><th>predicted</th>"
        "<th>simulated</th><th>error</th><th>tolerance</th><th>provenance</th></tr>"
        + "\n".join(rows)
        + "</table>"
    )


def _figures(
    paper: str,
    figure_files: dict[str, list[Path]],
    out: Path,
    docs: str | None = None,
    run: Collection[str] = (),
) -> str:
    """Each figure of a paper as its PNG with its caption, links to its PDF and JSON data (and to
    its entry in the documentation `docs`), and the checks it draws (linked where they are among
    the checks `run`)."""
    draws = papers()[paper].figures
    parts = []
    for name, paths in figure_files.items():
        image = next((p for p in paths if p.suffix == ".png"), None)
        links = " · ".join(
            f"<a href='{esc(p.relative_to(out))}'>{esc(p.suffix[1:])}</a>"
            for p in paths
            if p.suffix != ".png"
        )
        source = esc(image.relative_to(out)) if image else ""
        img = (
            f"<a href='{source}' title='full size'><img src='{source}' alt='{esc(name)}'></a>"
            if image
            else ""
        )
        shows = list(getattr(draws.get(name), "checks", ()))
        if shows:
            checks = linked_names(shows, HTML, lambda check: f"{paper}-{check}" if check in run else None)
            links += f"<br>Checks it draws: {checks}"
        parts.append(
            f"<figure id='{esc(name)}'>{img}<figcaption>"
            f"{_in_docs(docs, paper, f'figure-{name}', f'<code>{esc(name)}</code>')}: "
            f"{inline_html(getattr(draws.get(name), 'caption', ''))} {links}</figcaption></figure>"
        )
    return "".join(parts)
