"""Scan and Snap figures: files written, and the numbers behind them checked independently."""

import json

import numpy as np
import pytest
import scipy.special

import dynamics
from figures import scan_snap
from figures._scan_snap_sweep import SweepConfig, run_sweep
from tasks.scan_snap import SGDOutcome, h_continuous
from theory.scan_snap.closed_forms import phase_B_exact, phase_B_paper


def _written(paths, name):
    """The three files exist with the right signatures; returns the JSON content."""
    assert [p.name for p in paths] == [f"{name}.png", f"{name}.pdf", f"{name}.json"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    content = json.loads(paths[2].read_text())
    assert content["figure"] == name
    return content


def _h_lambert(t, M, eta_y):
    """h(t) of Lemma 6 from the Lambert-W closed form M h = a − W0(e^a / (M−1)), a = (Mη_Y t + 1)/(M−1)."""
    a = (M * eta_y * np.asarray(t) + 1) / (M - 1)
    return (a - scipy.special.lambertw(np.exp(a) / (M - 1)).real) / M


@pytest.mark.slow
def test_fig8_h_star_and_h(tmp_path):
    content = _written(scan_snap.fig8(tmp_path, False), "scan_snap_fig8")
    panels = content["data"]["panels"]
    assert [p["M"] for p in panels] == [50.0, 1000.0]
    for panel in panels:
        M, eta_ys = panel["M"], np.asarray(panel["eta_y"])
        t, h, h_star = np.asarray(panel["t"]), np.asarray(panel["h"]), np.asarray(panel["h_star"])
        np.testing.assert_allclose(
            h, np.asarray(h_continuous(t[None], M, eta_ys[:, None])), rtol=1e-12, atol=0
        )
        np.testing.assert_allclose(h, _h_lambert(t[None], M, eta_ys[:, None]), rtol=0, atol=1e-11)
        recursion = np.zeros_like(h_star)
        for s in range(1, h_star.shape[1]):
            recursion[:, s] = recursion[:, s - 1] + eta_ys / ((M - 1) + np.exp(M * recursion[:, s - 1]))
        np.testing.assert_allclose(h_star, recursion, rtol=1e-12, atol=0)
        # Lemma 7(a): 0 <= h*(s) - h(s) <= 2 eta_Y / M.
        gap = h_star - _h_lambert(np.asarray(panel["s"])[None], M, eta_ys[:, None])
        assert np.all(gap >= -1e-12)
        assert np.all(gap.max(axis=1) <= 2 * eta_ys / M)
    # Axis tops of the paper's figure: h(80) = 0.1786 (M = 50, eta_Y = 2), h(70) = 0.0125
    # (M = 1000, eta_Y = 4).
    assert panels[0]["h"][-1][-1] == pytest.approx(0.1786, abs=5e-5)
    assert panels[1]["h"][-1][-1] == pytest.approx(0.0125, abs=5e-5)


@pytest.mark.slow
def test_fig9_B_at_fixed_nu(tmp_path):
    content = _written(scan_snap.fig9(tmp_path, False), "scan_snap_fig9")
    assert content["config"]["K"] == 1.0 and content["config"]["C0"] == 1.0
    tops = []
    for panel in content["data"]["panels"]:
        M, nu = panel["M"], panel["nu"]
        eta_ys, eta_zs = np.asarray(panel["eta_y"]), np.asarray(panel["eta_z"])
        np.testing.assert_allclose(eta_ys, nu * eta_zs)
        t, B = np.asarray(panel["t"]), np.asarray(panel["B_ode"])
        expected = np.asarray(phase_B_paper(t[None], M, 1.0, eta_ys[:, None], eta_zs[:, None], 1.0))
        np.testing.assert_allclose(B, expected, rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(panel["B_paper_closed_form"], expected, rtol=1e-13, atol=0)
        # Independently: B = 1/4 ln(1 + 2 nu^-1 (M-1)^2 h^2) with K = C0 = 1 and h from Lambert W.
        h = _h_lambert(t[None], M, eta_ys[:, None])
        np.testing.assert_allclose(B, np.log1p(2 / nu * (M - 1) ** 2 * h**2) / 4, rtol=1e-7, atol=1e-10)
        B_t0 = np.asarray(panel["B_at_t0"])
        np.testing.assert_allclose(B_t0, B_t0[0], rtol=1e-10)
        tops.append(B[:, -1].max())
    assert tops == pytest.approx([0.78, 1.53], abs=5e-3)


@pytest.mark.slow
def test_fig3_growth_factor(tmp_path):
    content = _written(scan_snap.fig3(tmp_path, False), "scan_snap_fig3")
    data, config = content["data"], content["config"]
    t, B, eta_ys = np.asarray(data["t"]), np.asarray(data["B_ode"]), np.asarray(data["eta_y"])
    closed = np.asarray(
        phase_B_exact(t[None], config["M"], config["K"], eta_ys[:, None], config["eta_z"], config["C0"])
    )
    np.testing.assert_allclose(B, closed, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(data["chi"], np.exp(2 * B))
    # Fig. 3 reference values (C0 = 5.68e-3, eta_Y = 0.5): chi(100), chi(300), chi(700) = 289, 518, 600.
    assert [data["chi_at"][k][0] for k in ("100", "300", "700")] == pytest.approx([289, 518, 600], abs=1)
    # Large eta_Y rises first; the smallest eta_Y ends highest.
    assert np.argmax(np.asarray(data["chi_at"]["100"])) != 0
    assert np.argmax(np.asarray(data["chi_at"]["700"])) == 0


@pytest.mark.slow
def test_fig4_common_tokens_fade(tmp_path):
    content = _written(scan_snap.fig4(tmp_path, False), "scan_snap_fig4")
    slow, fast = content["data"]["settings"]
    assert (slow["eta_y"], fast["eta_y"]) == (1.0, 10.0)

    def ct_mass(setting, row):
        return float(np.sum(np.asarray(setting["rows_class1"])[row, :10]))

    assert ct_mass(slow, 0) == pytest.approx(10 / 15.5, rel=1e-6)
    assert ct_mass(slow, -1) < ct_mass(slow, 0) - 0.1
    assert ct_mass(fast, -1) > ct_mass(slow, -1) + 0.05
    assert slow["population_loss"][0] == pytest.approx(np.log(34), rel=1e-6)  # Y = Z = 0: uniform over M
    assert slow["population_loss"][5] < 0.1


@pytest.mark.slow
def test_fig6_sweep_reduced_grid_shared_by_the_figures(tmp_path, monkeypatch):
    config = SweepConfig(
        num_lasts=(1,), eta_zs=(0.5, 3.0), ratios=(1.0, 2.0), seeds=(1, 2), level=SGDOutcome(num_taus=5)
    )
    result = run_sweep(config)
    assert result.entropy.shape == (1, 2, 2, 2) and result.recall.shape == (1, 2, 2, 2, 5)
    assert result.completed.all()
    mean, std = result.entropy_mean_std()
    assert np.all(mean[0, 1] < mean[0, 0] - 0.1)  # larger eta_Z: sparser attention on the DTs
    assert np.all(mean < np.log(10))

    paths = scan_snap.draw_fig6(tmp_path, result)
    content = _written(paths, "scan_snap_fig6")
    np.testing.assert_allclose(content["data"]["mean"], mean)
    _written(scan_snap.draw_fig11(tmp_path, result), "scan_snap_fig11")

    # In a command's shared folder the figures' sweeps are one store, with the numbers in memory.
    for _ in range(2):
        with dynamics.store.sharing_runs(tmp_path / "shared"):
            again = run_sweep(config)
        np.testing.assert_array_equal(again.entropy, result.entropy)
        np.testing.assert_array_equal(again.recall, result.recall)
    assert len(list((tmp_path / "shared").glob("*.zarr"))) == 1
    with pytest.raises(ValueError, match="consecutive"):
        SweepConfig(seeds=(1, 3))
