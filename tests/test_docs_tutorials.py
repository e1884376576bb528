"""The tutorials' pictures are drawn by the commands the tutorials show (`docs/hooks/tutorials.py`):
every picture a tutorial links has its command on the same page, and every command line is one
the command line parses."""

import re

import pytest

from attnflow import cli
from tests.helpers import REPOSITORY, load_file

TUTORIALS = REPOSITORY / "docs" / "tutorials"


def _hook():
    return load_file("docs/hooks/tutorials.py")


@pytest.mark.parametrize("page", sorted(path.name for path in TUTORIALS.glob("*.md")))
def test_every_picture_a_tutorial_links_is_drawn_by_a_command_of_that_page(page):
    linked = set(re.findall(r"\]\(img/([\w.]+\.png)\)", (TUTORIALS / page).read_text()))
    pictures = _hook().PICTURES.get(page, {})
    assert linked == set(pictures)
    commands = _hook().commands(page)
    for plot in pictures.values():
        out = plot.split("/")[0]
        assert out in commands, (page, plot)
        cli.build_parser().parse_args(commands[out])


def test_a_command_is_read_whole_across_its_continuation_lines(tmp_path, monkeypatch):
    hook = _hook()
    (tmp_path / "page.md").write_text(
        "text\n\n```bash\nattnflow sweep m:C --grid eta=1,2 \\\n    --seeds 3 --out edge\nls edge\n```\n"
    )
    monkeypatch.setattr(hook, "TUTORIALS", tmp_path)
    assert hook.commands("page.md") == {
        "edge": ["sweep", "m:C", "--grid", "eta=1,2", "--seeds", "3", "--out", "edge"]
    }
