"""Decision-list figures: the batched (L, M) grid behind `decision_lists_time_vs_bound`, and every
figure (slow)."""

import json

import numpy as np
import pytest

from attnflow.papers import all_figures
from figures import decision_lists as fig


@pytest.mark.slow
def test_grid_respects_bound():
    data = fig.time_vs_bound_grid(3, (6,), (2, 3), 1)
    assert data["tau"].shape == (1, 2, 1)
    assert np.all(np.isfinite(data["tau"])) and np.all(data["ratio"] <= 1.0)
    assert np.all(data["bound"][0, 1] > data["bound"][0, 0])  # longer lists, smaller gamma


def test_registered():
    names = {
        "decision_lists_time_vs_bound",
        "decision_lists_flow_one_task",
        "decision_lists_uniform_attention",
    }
    assert names == set(fig.FIGURES) and names <= set(all_figures())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(fig.FIGURES))
def test_figure_writes_files(name, tmp_path):
    paths = fig.FIGURES[name](tmp_path, False)
    assert all(p.exists() for p in paths)
    assert json.loads(paths[-1].read_text())["figure"] == name
