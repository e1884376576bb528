"""The papers in the site, found where every command finds them (`attnflow.papers.papers()`): the
"Papers" section of the navigation (one page per paper, `papers/<name>.md`, labelled with its
declared label), the API reference of each paper's package, written where a page says
`<!-- attnflow: the papers' packages -->`, and the table of a paper's checks, written where its
page says `<!-- attnflow: checks -->`, from the checks' declarations (`theory.claim`), the list of
its figures with their captions (`figures.caption`) and images where it says
`<!-- attnflow: figures -->`, and the verdicts of its quick checks where it says
`<!-- attnflow: verdicts -->`. No list of papers, checks or figures is kept in the site's sources.

The images and verdicts come from one `attnflow reproduce` (quick sizes) of the code being
documented, run when the site is built and kept for later builds of the same code."""

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

MARKER = "<!-- attnflow: the papers' packages -->"
CHECKS_MARKER = "<!-- attnflow: checks -->"
FIGURES_MARKER = "<!-- attnflow: figures -->"
VERDICTS_MARKER = "<!-- attnflow: verdicts -->"
RESULTS_ENV = "ATTNFLOW_DOCS_RESULTS"
"""Set to `off` for a build without the figures' images and the checks' verdicts (a quick look at
the text)."""
SOURCES = ("dynamics", "tasks", "theory", "figures", "attnflow")
"""The packages whose files decide what the checks and figures give: the command line's among them,
since it sets the XLA flags, the workers and their threads that `attnflow reproduce` runs with."""
log = logging.getLogger("mkdocs.hooks.papers")
_results: dict = {}
"""This build's results: `"figures"` (figure name -> PNG), `"checks"` (paper -> the checks as
JSON) and `"meta"` (what made them)."""


def _papers():
    from attnflow.papers import papers

    return papers()


REPOSITORY = Path(__file__).resolve().parents[2]


def source_digest(root: Path = REPOSITORY) -> str:
    """A digest of every file of the packages under `root` that give the checks and figures
    ([`SOURCES`][]): the results of one digest are the results of that code."""
    digest = hashlib.sha256()
    for package in SOURCES:
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _plugin_error(message: str) -> Exception:
    """mkdocs' `PluginError`, imported when raised: the tables and lists this hook writes are
    tested where mkdocs is not installed (`pip install -e ".[test]"`)."""
    from mkdocs.exceptions import PluginError

    return PluginError(message)


def results_folder() -> Path:
    """Where the results of the code being documented are kept: a folder named by its
    [`source_digest`][], beside the command line's compilation cache. `attnflow reproduce --out`
    this folder, as CI does, and the build shows those results instead of running them again."""
    from attnflow._runtime import compile_cache_dir

    return compile_cache_dir().parent / "docs-results" / source_digest()


def reproduce_results() -> dict:
    """The quick checks and figures of the code being documented: one `attnflow reproduce` into its
    [`results_folder`][], or what an earlier build or run of the same code left there. Nothing
    runs, and the pages show no verdicts or images, when `ATTNFLOW_DOCS_RESULTS=off`.

    **Returns:** `{"figures": name -> PNG, "checks": paper -> list of checks (JSON), "meta": ...}`,
    or `{}`.

    **Raises:** `PluginError` when the run ends other than with every check run (a failing check
    is shown on its paper's page, not raised).
    """
    if os.environ.get(RESULTS_ENV) == "off":
        log.info(f"{RESULTS_ENV}=off: the papers' pages are built without their verdicts and figures")
        return {}
    folder = results_folder()
    figures = {
        name: folder / "figures" / f"{name}.png" for paper in _papers().values() for name in paper.figures
    }
    report = folder / "verify.json"
    if not report.is_file() or not all(png.is_file() for png in figures.values()):
        log.info(f"running attnflow reproduce into {folder} (once for this code)")
        command = [sys.executable, "-m", "attnflow", "reproduce", "--out", str(folder)]
        if subprocess.run(command, cwd=REPOSITORY).returncode not in (0, 1):
            raise _plugin_error(f"attnflow reproduce failed: {' '.join(command)}")
    made = json.loads(report.read_text())
    checks: dict[str, list] = {}
    for check in made["checks"]:
        checks.setdefault(check["paper"], []).append(check)
    return {"figures": figures, "checks": checks, "meta": made["meta"]}


def verdict_summary(paper: str, checks: list[dict], meta: dict) -> str:
    """A paper's verdicts at the top of its page, as an admonition: how many quick checks pass and
    what holds, then each failure and each deviation with its reason, linked to the check's row
    (what the report says, `attnflow._render`)."""
    from attnflow._render import MARKDOWN, headline, holding, remarks, tally
    from theory import Check, Verdict

    checks = [Check.from_dict(c) for c in checks]
    counts = tally(checks)
    kind = "failure" if counts[Verdict.failed] else "note" if counts[Verdict.deviation] else "success"
    commit = meta.get("commit")
    if commit:
        commit = commit[:12] + (" with uncommitted changes" if commit.endswith("+dirty") else "")
    held = holding(checks)
    lines = [
        f'!!! {kind} "{headline(checks)}"',
        "",
        f"    The quick checks (`attnflow verify --paper {paper}`), run when this site was built"
        f" ({commit or 'not a git checkout'}, {meta.get('date', '')[:10]}, {meta.get('cpu', '')})."
        + (f" Every check holds for: {', '.join(held)}." if held else ""),
        "",
    ]
    lines += [f"    - {line}" for _, line in remarks(checks, MARKDOWN, lambda name: f"check-{name}")]
    return "\n".join(lines)


def on_config(config):
    """Insert the "Papers" section before the FAQ (at the end when there is none); draw the
    figures the papers' pages show."""
    pages = []
    for name, paper in _papers().items():
        page = f"papers/{name}.md"
        if not (Path(config["docs_dir"]) / page).is_file():
            raise _plugin_error(f"the paper {name} has no page docs/{page}")
        pages.append({paper.info.label: page})
    nav = config["nav"]
    at = next((i for i, item in enumerate(nav) if isinstance(item, dict) and "FAQ" in item), len(nav))
    nav.insert(at, {"Papers": pages})
    _results.clear()
    _results.update(reproduce_results())
    return config


def on_files(files, config):
    """The figures' PNGs, as files of the site: `papers/figures/<name>.png`."""
    from mkdocs.structure.files import File

    for name, png in _results.get("figures", {}).items():
        files.append(File.generated(config, f"papers/figures/{name}.png", abs_src_path=str(png)))
    return files


def checks_table(paper: str) -> str:
    """The Markdown table of a paper's checks, in the order `attnflow verify` runs them, as
    declared: in the first column each check's name (breaking after an underscore where the
    column is narrow; an anchor, `#check-<name>`, that the report
    links to), tolerance (with the bound it is, if one) and provenance; then its claim, how the
    prediction and the simulated value are obtained, and the figures that draw it.

    **Raises:** `PluginError` for a declared text that would break the table (a `|` or a line
    break), naming the check.
    """
    from attnflow._render import MARKDOWN, described, tolerance

    rows = ["| check | claim | prediction and simulated value |", "|---|---|---|"]
    for check in _papers()[paper].checks:
        name, declared = check.__name__, check.declaration
        for field in ("claim", "method", "printed"):
            text = getattr(declared, field) or ""
            if "|" in text or "\n" in text:
                raise _plugin_error(
                    f"the {field} of the check {paper}.{name} has a '|' or a line break, which would "
                    "break the table of checks: write \\lvert, \\Vert or one line"
                )
        shown = tolerance(declared.tolerance)
        if declared.bound is not None:
            shown += f" ({declared.bound.value} bound)"
        about = f"tolerance {shown}<br>{declared.provenance.value}"
        figures = _papers()[paper].figures_showing(name)
        parts = described(declared, figures, MARKDOWN, lambda figure: f"figure-{figure}")
        rows.append(
            f'| <a id="check-{name}"></a><code>{name.replace("_", "_<wbr>")}</code><br>{about} '
            f"| {declared.claim} | {'<br>'.join(text for _, text in parts)} |"
        )
    return '<div class="checks" markdown>\n\n' + "\n".join(rows) + "\n\n</div>"


def figures_list(paper: str, images: bool = False) -> str:
    """The Markdown list of a paper's figures, in the order `attnflow figures` draws them: each
    figure's name (an anchor, `#figure-<name>`), its caption, the command that draws it and the
    checks it draws, and with `images` the figure itself (quick sizes), `figures/<name>.png` beside
    the page, linked to itself so that a click opens it full size.

    **Raises:** `PluginError` for a caption with a line break, naming the figure.
    """
    items = []
    for name, draw in _papers()[paper].figures.items():
        if "\n" in draw.caption:
            raise _plugin_error(f"the caption of the figure {name} has a line break: write one line")
        draws = ", ".join(f"[`{c}`](#check-{c})" for c in getattr(draw, "checks", ()))
        items.append(
            f'- <a id="figure-{name}"></a>`{name}`: {draw.caption} `attnflow figures {name}`'
            + (f" Checks it draws: {draws}." if draws else "")
        )
        if images:
            items.append(f"\n    [![{name}, quick sizes](figures/{name}.png)](figures/{name}.png)\n")
    return "\n".join(items)


def _paper_of(page) -> str:
    """The paper whose page `page` is, or a `PluginError`."""
    paper = Path(page.file.src_uri).stem
    if not page.file.src_uri.startswith("papers/") or paper not in _papers():
        raise _plugin_error(f"{page.file.src_uri}: only a paper's page can list its checks or figures")
    return paper


def on_page_markdown(markdown, page, config, files):
    """Each paper's package in the API reference, in the registry's order; a paper's verdicts,
    checks and figures on its page."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, "\n".join(f"::: tasks.{name}" for name in _papers()))
    if CHECKS_MARKER in markdown:
        markdown = markdown.replace(CHECKS_MARKER, checks_table(_paper_of(page)))
    if FIGURES_MARKER in markdown:
        markdown = markdown.replace(FIGURES_MARKER, figures_list(_paper_of(page), images=bool(_results)))
    if VERDICTS_MARKER in markdown:
        paper = _paper_of(page)
        summary = (
            verdict_summary(paper, _results["checks"].get(paper, []), _results["meta"]) if _results else ""
        )
        markdown = markdown.replace(VERDICTS_MARKER, summary)
    return markdown
