"""Sparse token selection figures: registered under `sparse_token_selection_` names; each draws at quick
sizes (slow)."""

import json

import pytest

from attnflow.papers import all_figures
from figures import sparse_token_selection as sts_figures

NAMES = (
    "sparse_token_selection_fig1",
    "sparse_token_selection_fig2",
    "sparse_token_selection_fig3",
    "sparse_token_selection_fig4",
    "sparse_token_selection_fig5",
    "sparse_token_selection_thm1_rate",
    "sparse_token_selection_fcn_bound",
    "sparse_token_selection_sphere_floor",
)


def test_registered():
    assert set(NAMES) == set(sts_figures.FIGURES)
    assert all(all_figures()[name] is sts_figures.FIGURES[name] for name in NAMES)
    assert not any(
        name in all_figures()
        for name in (
            "sparse_token_selection_fig6",
            "sparse_token_selection_fig7",
            "sparse_token_selection_fig8",
        )
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_figure_quick(name, tmp_path):
    paths = sts_figures.FIGURES[name](tmp_path, False)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".json"]
    data = json.loads(paths[2].read_text())
    assert data["figure"] == name and data["config"]
