"""The papers in the site, found where every command finds them (`attnflow.papers.papers()`): the
"Papers" section of the navigation (one page per paper, `papers/<name>.md`, labelled with its
declared label), the API reference of each paper's package, written where a page says
`<!-- attnflow: the papers' packages -->`, and the table of a paper's checks, written where its
page says `<!-- attnflow: checks -->`, from the checks' declarations (`theory.claim`), and the list
of its figures with their captions (`figures.caption`) where it says `<!-- attnflow: figures -->`.
No list of papers, checks or figures is kept in the site's sources."""

import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

MARKER = "<!-- attnflow: the papers' packages -->"
CHECKS_MARKER = "<!-- attnflow: checks -->"
FIGURES_MARKER = "<!-- attnflow: figures -->"
FIGURES_ENV = "ATTNFLOW_DOCS_FIGURES"
"""Set to `off` for a build without the figures' images (a quick look at the text)."""
SOURCES = ("dynamics", "tasks", "theory", "figures")
"""The packages whose files decide what the figures look like."""
log = logging.getLogger("mkdocs.hooks.papers")
_drawn: dict[str, Path] = {}
"""The PNG of each figure drawn for this build, by figure name."""


def _papers():
    from attnflow.papers import papers

    return papers()


REPOSITORY = Path(__file__).resolve().parents[2]


def source_digest(root: Path = REPOSITORY) -> str:
    """A digest of every file of the packages under `root` that draw the figures ([`SOURCES`][]):
    the figures of one digest are the figures of that code."""
    digest = hashlib.sha256()
    for package in SOURCES:
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def draw_figures() -> dict[str, Path]:
    """Every paper's quick figures, drawn by `attnflow figures` into a folder named by the code's
    [`source_digest`][] (beside the command line's compilation cache), or found there from an
    earlier build of the same code: figure name -> its PNG. Nothing is drawn, and no image shown,
    when `ATTNFLOW_DOCS_FIGURES=off`.

    **Raises:** `PluginError` when drawing fails.
    """
    if os.environ.get(FIGURES_ENV) == "off":
        log.warning(f"{FIGURES_ENV}=off: the papers' pages are built without their figures")
        return {}
    from attnflow._runtime import compile_cache_dir

    folder = compile_cache_dir().parent / "docs-figures" / source_digest()
    names = [name for paper in _papers().values() for name in paper.figures]
    missing = [name for name in names if not (folder / f"{name}.png").is_file()]
    if missing:
        log.info(f"drawing {len(missing)} figures into {folder} (once for this code)")
        command = [sys.executable, "-m", "attnflow", "figures", *missing, "--out", str(folder)]
        if subprocess.run(command, cwd=REPOSITORY).returncode != 0:
            raise PluginError(f"drawing the figures failed: {' '.join(command)}")
    return {name: folder / f"{name}.png" for name in names}


def on_config(config):
    """Insert the "Papers" section before the FAQ (at the end when there is none); draw the
    figures the papers' pages show."""
    pages = []
    for name, paper in _papers().items():
        page = f"papers/{name}.md"
        if not (Path(config["docs_dir"]) / page).is_file():
            raise PluginError(f"the paper {name} has no page docs/{page}")
        pages.append({paper.info.label: page})
    nav = config["nav"]
    at = next((i for i, item in enumerate(nav) if isinstance(item, dict) and "FAQ" in item), len(nav))
    nav.insert(at, {"Papers": pages})
    _drawn.clear()
    _drawn.update(draw_figures())
    return config


def on_files(files, config):
    """The figures' PNGs, as files of the site: `papers/figures/<name>.png`."""
    for name, png in _drawn.items():
        files.append(File.generated(config, f"papers/figures/{name}.png", abs_src_path=str(png)))
    return files


def _tolerance(tolerance: float) -> str:
    """A tolerance as the tables show it: `1e-8`, `0.05`, `4`."""
    return f"{tolerance:.6g}".replace("e-0", "e-").replace("e+0", "e+")


def checks_table(paper: str) -> str:
    """The Markdown table of a paper's checks, in the order `attnflow verify` runs them, as
    declared: in the first column each check's name (breaking after an underscore where the
    column is narrow; an anchor, `#check-<name>`, that the report
    links to), tolerance (with the bound it is, if one) and provenance; then its claim and how the
    prediction and the simulated value are obtained.

    **Raises:** `PluginError` for a declared text that would break the table (a `|` or a line
    break), naming the check.
    """
    rows = ["| check | claim | prediction and simulated value |", "|---|---|---|"]
    for check in _papers()[paper].checks:
        name, declared = check.__name__, check.declaration
        for field in ("claim", "method"):
            text = getattr(declared, field)
            if "|" in text or "\n" in text:
                raise PluginError(
                    f"the {field} of the check {paper}.{name} has a '|' or a line break, which would "
                    "break the table of checks: write \\lvert, \\Vert or one line"
                )
        tolerance = _tolerance(declared.tolerance)
        if declared.bound is not None:
            tolerance += f" ({declared.bound.value} bound)"
        about = f"tolerance {tolerance}<br>{declared.provenance.value}"
        rows.append(
            f'| <a id="check-{name}"></a><code>{name.replace("_", "_<wbr>")}</code><br>{about} '
            f"| {declared.claim} | {declared.method} |"
        )
    return '<div class="checks" markdown>\n\n' + "\n".join(rows) + "\n\n</div>"


def figures_list(paper: str, images: bool = False) -> str:
    """The Markdown list of a paper's figures, in the order `attnflow figures` draws them: each
    figure's name (an anchor, `#figure-<name>`), its caption and the command that draws it, and
    with `images` the figure itself (quick sizes), `figures/<name>.png` beside the page.

    **Raises:** `PluginError` for a caption with a line break, naming the figure.
    """
    items = []
    for name, draw in _papers()[paper].figures.items():
        if "\n" in draw.caption:
            raise PluginError(f"the caption of the figure {name} has a line break: write one line")
        items.append(f'- <a id="figure-{name}"></a>`{name}`: {draw.caption} `attnflow figures {name}`')
        if images:
            items.append(f"\n    ![{name}, quick sizes](figures/{name}.png)\n")
    return "\n".join(items)


def _paper_of(page) -> str:
    """The paper whose page `page` is, or a `PluginError`."""
    paper = Path(page.file.src_uri).stem
    if not page.file.src_uri.startswith("papers/") or paper not in _papers():
        raise PluginError(f"{page.file.src_uri}: only a paper's page can list its checks or figures")
    return paper


def on_page_markdown(markdown, page, config, files):
    """Each paper's package in the API reference, in the registry's order; a paper's checks and
    figures on its page."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, "\n".join(f"::: tasks.{name}" for name in _papers()))
    if CHECKS_MARKER in markdown:
        markdown = markdown.replace(CHECKS_MARKER, checks_table(_paper_of(page)))
    if FIGURES_MARKER in markdown:
        markdown = markdown.replace(FIGURES_MARKER, figures_list(_paper_of(page), images=bool(_drawn)))
    return markdown
