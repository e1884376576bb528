"""The documentation site and the report as a reader opens them from disk: every page's maths
rendered and no markup left as text, every image and link present in the folder, nothing loaded
from the internet, every paper page with its verdicts and one image per declared figure, and the
report with its figures and verdicts, its checks' notes writing their maths in Unicode.

They read what was built: the site's folder named by `ATTNFLOW_BUILT_SITE` (after `mkdocs build`)
and the report named by `ATTNFLOW_BUILT_REPORT` (the `index.html` of `attnflow reproduce`), as CI
sets them after building both; they are skipped where these are not set."""

import html.parser
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from attnflow.papers import papers
from tests.helpers import ASCII_MATHS, load_file, plain_maths

SITE = os.environ.get("ATTNFLOW_BUILT_SITE")
REPORT = os.environ.get("ATTNFLOW_BUILT_REPORT")
needs_site = pytest.mark.skipif(not SITE, reason="no built site (set ATTNFLOW_BUILT_SITE)")
needs_report = pytest.mark.skipif(not REPORT, reason="no built report (set ATTNFLOW_BUILT_REPORT)")


class _References(html.parser.HTMLParser):
    """The resources a page loads (`img`, `script`, stylesheet `link`) and the links it has."""

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("img", "script") and attrs.get("src"):
            self.loads.append(attrs["src"])
        elif tag == "link" and attrs.get("href") and "stylesheet" in (attrs.get("rel") or ""):
            self.loads.append(attrs["href"])
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def _references(page: Path) -> _References:
    parser = _References()
    parser.feed(page.read_text())
    return parser


def _local(page: Path, reference: str) -> Path | None:
    """The file a reference of `page` opens from disk, or None for another site or a fragment."""
    parts = urlsplit(reference)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return (page.parent / unquote(parts.path)).resolve()


def _unrendered():
    return load_file("docs/hooks/mathml.py").unrendered


def _pages() -> list[Path]:
    return sorted(p for p in Path(SITE).rglob("*.html") if p.name != "404.html")


class _Prose(html.parser.HTMLParser):
    """The prose of a page as a reader reads it: its text without what names code or is rendered
    maths (`code`, `pre`, `math`, `script`, `style`), without the page's head, and without what
    lists names rather than writes maths: the navigation and the tables of contents (`nav`, which
    mkdocs-material's sidebars hold; they list members such as `theta1` or `omega_1`) and the
    headings' permanent links (¤). Text arrives with its entities unescaped."""

    SKIPPED_TAGS = frozenset({"head", "code", "pre", "math", "script", "style", "nav"})
    SKIPPED_CLASSES = frozenset({"md-sidebar", "headerlink"})

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skipping: str | None = None
        self.depth = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if self.skipping is not None:
            self.depth += tag == self.skipping
        elif tag in self.SKIPPED_TAGS or self.SKIPPED_CLASSES & set((dict(attrs).get("class") or "").split()):
            self.skipping, self.depth = tag, 1

    def handle_endtag(self, tag):
        if tag == self.skipping:
            self.depth -= 1
            if self.depth == 0:
                self.skipping = None

    def handle_data(self, data):
        if self.skipping is None:
            self.text.append(data)


def _prose(page: Path) -> str:
    parser = _Prose()
    parser.feed(page.read_text())
    parser.close()
    return " ".join(parser.text)


def test_prose_leaves_out_code_maths_navigation_and_headings_links():
    parser = _Prose()
    parser.feed(
        "<html><head><title>x^2</title></head><body><nav class='md-nav'><a>theta1</a></nav>"
        "<div class='md-sidebar'><span>omega_1</span></div><h2>attend <a class='headerlink'>¤</a></h2>"
        "<p>a <code>x -&gt; y</code> and <math><mi>x</mi></math>, ‖x‖₂ &ge; 0</p><br>"
        "<pre><code>&gt;&gt;&gt; f(alpha)</code></pre><script>a >= b</script><p>x &gt;= 0</p></body></html>"
    )
    parser.close()
    text = " ".join(parser.text)
    assert not {"x^2", "theta1", "omega_1", "¤", "alpha"} & set(re.findall(r"\S+", text)), text
    assert "‖x‖₂ ≥ 0" in text and [m.group(0) for m in ASCII_MATHS.finditer(text)] == [">="], text


@needs_site
def test_no_page_types_its_maths_in_ascii():
    """Every page's prose (see `_Prose`: no code, rendered maths, navigation or tables of contents)
    writes its maths in Unicode (Uᵀ, ‖x‖₂, ≥, →, ∼ N(0, I), L₀, R¹ᐟ², Q⋆) or as `$…$`, which the
    site renders, never as ASCII (`U^T`, `||x||_2`, `>=`, `->`, `~ N(0, I)`, `L_0`, `R^½`, `Q*`)."""
    typed = {}
    for page in _pages():
        found = [m.group(0) for m in ASCII_MATHS.finditer(_prose(page))]
        if found:
            typed[str(page.relative_to(SITE))] = (len(found), sorted(set(found)))
    assert typed == {}


@needs_site
def test_every_page_loads_nothing_from_the_internet_and_finds_its_files_on_disk():
    problems = []
    for page in _pages():
        found = _references(page)
        for reference in found.loads:
            target = _local(page, reference)
            if target is None and not reference.startswith("data:"):
                problems.append(f"{page}: loads {reference} from the internet")
            elif target is not None and not target.is_file():
                problems.append(f"{page}: loads {reference}, which is not in the site")
        for reference in found.links:
            target = _local(page, reference)
            if target is not None and not target.exists():
                problems.append(f"{page}: links to {reference}, which is not in the site")
    assert problems == []


@needs_site
def test_no_page_shows_maths_or_table_markup_as_text():
    pytest.importorskip("latex2mathml")  # the docs extra, which built the site
    unrendered = _unrendered()
    problems = {str(page): found for page in _pages() if (found := unrendered(page.read_text()))}
    assert problems == {}


@needs_site
@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_paper_page_shows_its_verdicts_and_every_declared_figure(paper):
    page = Path(SITE) / "papers" / f"{paper}.html"
    text = page.read_text()
    images = {Path(unquote(src)).name for src in _references(page).loads if src.endswith(".png")}
    assert images == {f"{name}.png" for name in papers()[paper].figures}
    assert re.search(r'<p class="admonition-title">\d+ of \d+ checks pass', text), "no verdicts"


@needs_report
def test_the_report_shows_every_figure_and_every_papers_verdicts_and_its_links_open():
    page = Path(REPORT)
    text = page.read_text()
    found = _references(page)
    missing = [src for src in found.loads if (_local(page, src) is None or not _local(page, src).is_file())]
    assert missing == []
    dead = [
        href for href in found.links if (target := _local(page, href)) is not None and not target.exists()
    ]
    assert dead == []
    images = {Path(unquote(src)).name for src in found.loads if src.endswith(".png")}
    assert images == {f"{name}.png" for paper in papers().values() for name in paper.figures}
    for name in papers():
        assert f"<section id='{name}'>" in text and "<ul class='verdicts'>" in text


@needs_report
def test_every_figure_of_the_report_is_readable_at_print_width():
    """Each figure's smallest text, once printed at `figures.PRINT_WIDTH` (as its JSON records it),
    is at least `figures.SMALLEST_TEXT` points."""
    from figures import SMALLEST_TEXT

    small = {}
    for path in sorted(Path(REPORT).parent.glob("figures/*.json")):
        printed = json.loads(path.read_text())["print"]
        if printed["smallest_text_pt"] is not None and printed["smallest_text_pt"] < SMALLEST_TEXT:
            small[path.stem] = printed
    assert small == {}


@needs_report
def test_no_note_of_the_report_types_its_maths_in_ascii():
    """Every check's note in the report's `verify.json` (beside its `index.html`) writes its maths in
    Unicode (η = 0.5, ‖V − V⋆‖, t⁻¹ᐟ², α ≥ 0.2), never as ASCII (`eta=0.5`, `||V - V*||`, `t^(-1/2)`,
    `alpha>=0.2`); what it names as code stands in backticks and is not read."""
    checks = json.loads((Path(REPORT).parent / "verify.json").read_text())["checks"]
    assert checks
    typed = {
        f"{c['paper']}.{c['name']}": (found.group(0), c["note"])
        for c in checks
        if (found := ASCII_MATHS.search(plain_maths(c["note"] or "")))
    }
    assert typed == {}
