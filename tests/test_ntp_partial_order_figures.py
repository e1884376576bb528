"""ntp_partial_order figures: files written, and the numbers behind them checked independently."""

import json

import numpy as np
import pytest

from attnflow.papers import all_figures
from figures import ntp_partial_order
from theory.ntp_partial_order.closed_forms import stage1_loss


def test_registered():
    assert {"ntp_partial_order_fig2", "ntp_partial_order_wkq_column"} <= set(all_figures())


@pytest.mark.slow
def test_fig2_data(tmp_path):
    paths = ntp_partial_order.fig2(tmp_path, False)
    stem = "ntp_partial_order_fig2"
    assert [p.name for p in paths] == [f"{stem}.png", f"{stem}.pdf", f"{stem}.json"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(paths[2].read_text())["data"]
    t = np.asarray(data["t"])
    run = data["seed0"]
    eta0, eta = 0.2 / np.sqrt(20), 0.05 / np.sqrt(20)
    np.testing.assert_allclose(run["stage1"]["norm"], eta0 * t, rtol=1e-12)
    np.testing.assert_allclose(run["L0"], stage1_loss(t, eta0, 20), rtol=1e-9)
    np.testing.assert_allclose(run["stage2"]["norm"][1:], eta * t[1:], rtol=0.05)
    assert np.all(np.asarray(run["stage2"]["norm"]) <= eta * t * (1 + 1e-12))
    assert np.all(np.diff(run["L"]) < 0)
    one_minus = np.asarray(run["stage2"]["one_minus_cos"])
    dist = np.asarray(run["stage2"]["unit_distance"])
    np.testing.assert_allclose(dist[1:] ** 2, 2 * one_minus[1:], rtol=1e-9, atol=1e-14)  # t = 0: W = 0
