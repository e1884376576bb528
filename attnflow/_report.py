"""`attnflow reproduce`: every check and every figure, gathered in one `index.html`."""

import contextlib
import dataclasses
import html
import json
import re
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import jax

import dynamics
import theory

from ._kept_checks import code_key, drop_kept, kept_folder, refuse_foreign
from ._markup import can_render_maths, inline_html
from ._workers import run_pieces
from .papers import papers


def schedule(names: list[str], parts: tuple[str, ...]) -> list[tuple[str, str]]:
    """The `(paper, part)` pieces of `names` × `parts`, the longest first, as each paper declares
    its cost (`tasks.PaperInfo.cost`); a piece of unknown cost comes last. Workers take the pieces
    in this order, so that the longest do not start last."""
    pieces = [(name, part) for name in names for part in parts]
    cost = {piece: papers()[piece[0]].info.cost.get(piece[1], -1.0) for piece in pieces}
    return sorted(pieces, key=lambda piece: -cost[piece])


def costs(pieces: list[tuple[str, str]]) -> list[float]:
    """The declared cost of each `(paper, part)` piece (`tasks.PaperInfo.cost`, seconds on two
    cores); a piece of unknown cost counts as the mean of the others (1 when none is known)."""
    declared = [papers()[name].info.cost.get(part) for name, part in pieces]
    known = [cost for cost in declared if cost is not None]
    mean = sum(known) / len(known) if known else 1.0
    return [mean if cost is None else float(cost) for cost in declared]


def paper_checks(
    name: str, full: bool, only: list[str] | None = None, keep: Path | None = None, data: str | None = None
) -> list[theory.Check]:
    """The checks of paper `name` (those named in `only`, or all; at the paper's sizes when `full`;
    reading the data directory `data` where the paper has a data option), each announced as it
    starts, and kept in `keep` as it ends (see `Paper.run_checks`)."""
    return papers()[name].run_checks(
        full=full,
        progress=lambda check: print(f"  {name}: {check}", flush=True),
        only=only,
        keep=keep,
        data=data,
    )


@dataclasses.dataclass(frozen=True)
class DrawnFigure:
    """A figure drawn: the files written (PNG, PDF and the JSON data), the seconds it took and
    what compiling cost in it."""

    files: list[Path]
    seconds: float
    compiling: dynamics.CompileStats

    def to_dict(self) -> dict:
        """JSON-ready, the files by name."""
        return {
            "files": [path.name for path in self.files],
            "seconds": round(self.seconds, 3),
            "compiling": self.compiling.to_dict(),
        }


def paper_figures(
    name: str, out: Path, full: bool, only: list[str] | None = None, data: str | None = None
) -> dict[str, DrawnFigure]:
    """The figures of paper `name` (those named in `only`, or all) drawn into `out`, reading the
    data directory `data` where the paper has a data option, each timed and its compiling
    recorded: figure name -> [`DrawnFigure`][]."""
    drawn = {}
    with papers()[name].reading(data):
        for figure, draw in papers()[name].figures.items():
            if only is None or figure in only:
                drawn[figure] = _drawn(figure, draw, out, full)
    return drawn


def _drawn(figure: str, draw, out: Path, full: bool) -> DrawnFigure:
    """`figure` drawn into `out` by `draw`, timed, its compiling recorded and announced."""
    start = time.perf_counter()
    with dynamics.recording_compiles() as record:
        files = draw(out, full)
    made = DrawnFigure(files, time.perf_counter() - start, record.stats)
    written = ", ".join(path.name for path in files)
    print(f"[figure] {figure}: {written} ({made.seconds:.1f} s; {record.stats.summary()})", flush=True)
    return made


def reproduce(
    out: Path, *, full: bool, metadata: dict, jobs: int, docs: str | None = None, data: str | None = None
) -> int:
    """Run every paper's checks and draw every figure into `out`, then write `out/index.html`
    (with `out/verify.json`, the checks, and `out/figures.json`, each figure's files, seconds and
    compiling).

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

    **Returns:** the exit status: 1 if any check failed, else 0.
    """
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    keep = kept_folder(out / "verify.json")
    refuse_foreign(keep)
    names = list(papers())
    pieces = schedule(names, ("checks", "figures"))
    tasks = [
        (paper_checks, (name, full, None, keep, data))
        if part == "checks"
        else (paper_figures, (name, out / "figures", full, None, data))
        for name, part in pieces
    ]
    with shared_runs(out / "shared_runs", data) as folder:
        done, compiling = run_pieces(tasks, jobs, jax.config.jax_compilation_cache_dir, folder, costs(pieces))
    results = dict(zip(pieces, done))
    metadata = metadata | {"compiling": compiling.to_dict()}
    checks = {name: results[name, "checks"] for name in names}
    figures = {figure: made for name in names for figure, made in results[name, "figures"].items()}
    figure_files = {
        name: {figure: made.files for figure, made in results[name, "figures"].items()} for name in names
    }
    every_check = [c for paper_checks in checks.values() for c in paper_checks]
    print(theory.format_table(every_check))
    print(f"compiling: {compiling.summary()}")
    theory.write_json(every_check, out / "verify.json", metadata)
    with dynamics.store.atomic_write(out / "figures.json") as f:
        json.dump(
            {"meta": metadata, "figures": {name: made.to_dict() for name, made in figures.items()}},
            f,
            indent=1,
        )
    drop_kept(keep, every_check)

    elapsed = time.perf_counter() - start
    page = _index_page(checks, figure_files, out, metadata | {"wall_seconds": round(elapsed, 1)}, docs)
    with dynamics.store.atomic_write(out / "index.html") as f:
        f.write(page)
    print(f"wrote {out / 'index.html'} ({elapsed:.0f} s)")
    return 0 if all(c.passed for c in every_check) else 1


@contextlib.contextmanager
def shared_runs(folder: Path, data: str | None = None) -> Iterator[Path]:
    """Make `folder` the place of the runs the pieces share (`dynamics.store.shared_store`), given
    to them by `run_pieces`; yields it. The stores there are kept for the same command made again when it
    stops half-way (killed, interrupted, a piece failed), so that it resumes them, and only for
    the same code and data directory `data`: before the pieces start, stores made under another
    [`runs_key`][] are removed; once every piece has ended, all of them are."""
    key_file = folder / RUNS_KEY

    def empty():
        for store in folder.glob("*.zarr") if folder.is_dir() else ():
            dynamics.store.remove_store(store)
            (folder / f".{store.name}.lock").unlink(missing_ok=True)
        key_file.unlink(missing_ok=True)

    key = runs_key(data)
    try:
        kept = json.loads(key_file.read_text())
    except (OSError, ValueError):
        kept = None
    if kept != key:
        empty()
    folder.mkdir(parents=True, exist_ok=True)
    with dynamics.store.atomic_write(key_file) as f:
        json.dump(key, f)
    yield folder
    empty()
    with contextlib.suppress(OSError):  # holding something not ours
        folder.rmdir()


RUNS_KEY = "key.json"
"""The file of [`shared_runs`][]'s folder that says what code its stores come from."""


def runs_key(data: str | None = None) -> dict:
    """What the shared runs of a command are results of, beyond their own settings (which name
    each store): the code (`attnflow._kept_checks.code_key`) and the data directory each paper
    with a data option reads (`data`, else the one its user set)."""
    read = {p.name: p.data_directory(data) for p in papers().values() if p.info.data}
    return {"shared runs of": code_key(), "data": read}


_RESULT = re.compile(
    r"^(?:Theorem|Lemmas?|Proposition|Corollary|Result|Example|Eqn|Figs?\.|Sec\.|Appendix|Stage"
    r"|Algorithm|Conclusion)(?: [0-9A-Z][\w.]*(?:-[\w.]+)?)?"
)
"""The result a claim begins with ("Theorem 4", "Lemma B.8", "Fig. 2", "Stage 1"): its group in
the report."""


def result_of(claim: str) -> str:
    """The paper's result a check's claim is about, read from its first words, e.g. `"Theorem 4"`;
    `"Other"` when it names none.

    **Example:**

        >>> result_of(r"Theorem 4(a): snap time $\\propto 1/\\eta_Y$"), result_of("P3: $a(t)$")
        ('Theorem 4', 'Other')
    """
    match = _RESULT.match(claim)
    return match.group(0).rstrip(".") if match else "Other"


def _index_page(checks: dict, figure_files: dict, out: Path, metadata: dict, docs: str | None = None) -> str:
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
table.checks td { overflow-wrap: anywhere; }
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


def esc(text) -> str:
    """`text` as HTML text or an attribute value."""
    return html.escape(str(text), quote=True)


def _counts(checks: list) -> str:
    """A summary row's cells: the number of checks of each verdict, coloured only where not 0."""
    cells = []
    for verdict in theory.Verdict:
        count = sum(c.verdict is verdict for c in checks)
        cells.append(f"<td class='num{' ' + verdict.value if count else ''}'>{count}</td>")
    return "".join(cells)


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
    """A paper's verdict summary: what holds (the results all of whose checks pass), then each
    failure and each deviation, with its reason, one line each."""
    groups = _grouped(checks)
    holding = [
        result
        for result, members in groups.items()
        if result != "Other" and all(c.verdict is theory.Verdict.passed for c in members)
    ]
    passed = sum(c.verdict is theory.Verdict.passed for c in checks)
    lines = [
        f"<li><strong>{passed} of {len(checks)} checks pass.</strong> "
        + (f"Every check holds for: {esc(', '.join(holding))}." if holding else "")
        + "</li>"
    ]
    for c in checks:
        named = f"<a href='#{esc(paper)}-{esc(c.name)}'><code>{esc(c.name)}</code></a>"
        if c.outcome is theory.Outcome.exceeded:
            lines.append(
                f"<li class='fail'><strong>Exceeds its tolerance</strong>: {named}, {inline_html(c.claim)} "
                f"(error {c.error:.3g} against tolerance {c.tolerance:.3g})</li>"
            )
        elif c.outcome is theory.Outcome.not_run:
            lines.append(f"<li class='fail'><strong>Did not run</strong>: {named}: {esc(c.note)}</li>")
        elif c.outcome is theory.Outcome.deviation:
            lines.append(
                f"<li class='deviation'><strong>Deviates, as documented</strong>: {named}, "
                f"{inline_html(c.claim)}. Why: {esc(c.deviation)}</li>"
            )
    return f"<ul class='verdicts'>{''.join(lines)}</ul>"


def _grouped(checks: list) -> dict[str, list]:
    """Checks by the result they are about, in the order each result first appears."""
    groups: dict[str, list] = {}
    for c in checks:
        groups.setdefault(result_of(c.claim), []).append(c)
    return groups


def _predicted(check) -> str:
    """The predicted cell: the value, or `bound ≥ x` / `bound ≤ x` where it is a bound."""
    if check.bound is None:
        return f"{check.predicted:.6g}"
    return f"bound {check.bound.sign} {check.predicted:.6g}"


def _in_docs(docs: str | None, paper: str, anchor: str, text: str) -> str:
    """`text` (HTML) linked to `#anchor` on the paper's page of the site `docs`; as is without one."""
    if docs is None:
        return text
    address = f"{docs}/papers/{paper}.html#{anchor}"
    return f"<a href='{esc(address)}' title='in the documentation'>{text}</a>"


def _linked_names(names: list[str], anchor, present) -> str:
    """`names` as code, each linked to `#anchor(name)` where `present(name)`."""
    return ", ".join(
        f"<a href='#{esc(anchor(n))}'><code>{esc(n)}</code></a>" if present(n) else f"<code>{esc(n)}</code>"
        for n in names
    )


def _verdict_cell(check) -> str:
    """The verdict, and under a failure which kind it is."""
    if check.outcome in (theory.Outcome.exceeded, theory.Outcome.not_run):
        return f"{check.verdict.value}<div class='kind'>{check.outcome.value}</div>"
    return check.verdict.value


def _check_table(paper: str, checks: list, docs: str | None = None, drawn: Collection[str] = ()) -> str:
    """The checks of a paper, grouped by result: verdict, name (linked to its entry in the
    documentation `docs`), claim with how it is measured, the note and the figures that draw it
    (linked where they are among the figures `drawn`), predicted, simulated, error, tolerance and
    provenance."""
    declared = {fn.__name__: fn.declaration for fn in papers()[paper].checks}
    rows = []
    for result, members in _grouped(checks).items():
        rows.append(f"<tr class='group'><th colspan='8'>{esc(result)}</th></tr>")
        for c in members:
            declaration = declared.get(c.name)
            about = f"<div class='method'>{inline_html(declaration.method if declaration else '')}</div>"
            if declaration and declaration.printed:
                printed = inline_html(declaration.printed)
                about += f"<div class='printed'><strong>The paper prints:</strong> {printed}</div>"
            about += f"<div class='note'>{esc(c.note)}</div>" if c.note else ""
            if c.deviation:
                about += f"<div class='why'><strong>Why it deviates:</strong> {esc(c.deviation)}</div>"
            shown = papers()[paper].figures_showing(c.name)
            if shown:
                about += f"<div class='shown'>Drawn in {_linked_names(shown, str, drawn.__contains__)}</div>"
            name = f"<code>{esc(c.name).replace('_', '_<wbr>')}</code>"
            rows.append(
                f"<tr id='{esc(paper)}-{esc(c.name)}' class='check' data-verdict='{c.verdict.value}'>"
                f"<td class='verdict {c.verdict.value}'>{_verdict_cell(c)}</td>"
                f"<td>{_in_docs(docs, paper, f'check-{c.name}', name)}</td>"
                f"<td>{inline_html(c.claim)}{about}</td>"
                f"<td class='num'>{esc(_predicted(c))}</td><td class='num'>{c.simulated:.6g}</td>"
                f"<td class='num'>{c.error:.3g}</td><td class='num'>{c.tolerance:.3g}</td>"
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
            checks = _linked_names(shows, lambda check: f"{paper}-{check}", run.__contains__)
            links += f"<br>Checks it draws: {checks}"
        parts.append(
            f"<figure id='{esc(name)}'>{img}<figcaption>"
            f"{_in_docs(docs, paper, f'figure-{name}', f'<code>{esc(name)}</code>')}: "
            f"{inline_html(getattr(draws.get(name), 'caption', ''))} {links}</figcaption></figure>"
        )
    return "".join(parts)
