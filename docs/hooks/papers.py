"""The papers in the site, found where every command finds them (`attnflow.papers.papers()`): the
"Papers" section of the navigation (one page per paper, `papers/<name>.md`, labelled with its
declared label) and the API reference of each paper's package, written where a page says
`<!-- attnflow: the papers' packages -->`. No list of papers is kept in the site's sources."""

from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = "<!-- attnflow: the papers' packages -->"


def _papers():
    from attnflow.papers import papers

    return papers()


def on_config(config):
    """Insert the "Papers" section before the FAQ (at the end when there is none)."""
    pages = []
    for name, paper in _papers().items():
        page = f"papers/{name}.md"
        if not (Path(config["docs_dir"]) / page).is_file():
            raise PluginError(f"the paper {name} has no page docs/{page}")
        pages.append({paper.info.label: page})
    nav = config["nav"]
    at = next((i for i, item in enumerate(nav) if isinstance(item, dict) and "FAQ" in item), len(nav))
    nav.insert(at, {"Papers": pages})
    return config


def on_page_markdown(markdown, page, config, files):
    """Each paper's package in the API reference, in the registry's order."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, "\n".join(f"::: tasks.{name}" for name in _papers()))
