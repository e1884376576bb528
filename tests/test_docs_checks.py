"""Each paper's page lists its checks as they are declared: one row per check in the "Checks"
section, with the declared tolerance and provenance, and no row for a check that does not exist."""

import math
import re
from pathlib import Path

import pytest

from attnflow.papers import papers

PAGES = Path(__file__).parents[1] / "docs" / "papers"
ROW = re.compile(r"^\| `(?P<name>[A-Za-z0-9_]+)` \|(?P<cells>.*)\|\s*$")


def _check_rows(paper: str) -> dict[str, list[str]]:
    """The rows of the page's "Checks" section, by check name: their cells after the name."""
    text = (PAGES / f"{paper}.md").read_text()
    section = text.split("\n## Checks", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            assert match["name"] not in rows, f"{paper}: two rows for {match['name']}"
            rows[match["name"]] = [cell.strip() for cell in match["cells"].split("|")]
    return rows


@pytest.mark.parametrize("paper", sorted(papers()))
def test_the_checks_table_of_a_paper_page_is_its_declared_checks(paper):
    rows = _check_rows(paper)
    declared = {fn.__name__: fn.declaration for fn in papers()[paper].checks}
    assert sorted(rows) == sorted(declared)
    for name, declaration in declared.items():
        tolerance, provenance = rows[name][-2:]
        shown = float(tolerance.split()[0])  # a note may follow: "0 (lower bound)", "0.693 ($\ln 2$)"
        assert math.isclose(shown, declaration.tolerance, rel_tol=1e-3), (name, tolerance)
        assert provenance == declaration.provenance.value, (name, provenance)
