"""Sparse token selection figures: registered under `sts_` names; each draws at quick sizes (slow)."""

import json

import pytest

import figures
from figures import sparse_token_selection as sts_figures

NAMES = (
    "sts_fig1",
    "sts_fig2",
    "sts_fig3",
    "sts_fig4",
    "sts_fig5",
    "sts_thm1_rate",
    "sts_fcn_bound",
    "sts_sphere_floor",
)


def test_registered():
    assert set(NAMES) == set(sts_figures.FIGURES)
    assert all(figures.FIGURES[name] is sts_figures.FIGURES[name] for name in NAMES)
    assert not any(name in figures.FIGURES for name in ("sts_fig6", "sts_fig7", "sts_fig8"))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_figure_quick(name, tmp_path):
    paths = figures.make(name, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".json"]
    data = json.loads(paths[2].read_text())
    assert data["figure"] == name and data["config"]
