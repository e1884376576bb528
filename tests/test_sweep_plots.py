"""The standard plots of a sweep: the time axis says time or step, early stops are marked on it,
the stop time gets its own plot when runs stop early, and each scalar of the final state is drawn
against the grid."""

import warnings

import numpy as np
import pytest

import dynamics
from attnflow import _sweep_plots

from .test_dynamics_simulation import Decay


@pytest.fixture(scope="module")
def euler():
    """Euler on the decay at two rates, 2 seeds: drawn by several tests, run once."""
    return dynamics.sweep(Decay(mode="euler"), {"rate": [0.5, 2.0]}, num_seeds=2)


@pytest.fixture(scope="module")
def blown_up():
    """Euler at rate 10⁴ multiplies y by −99 a step: its last value is about 10¹⁹⁹."""
    return dynamics.sweep(Decay(mode="euler"), {"rate": [0.5, 1e4]}, num_seeds=2)


@pytest.fixture
def drawn(monkeypatch):
    """The x-label and title of every plot drawn, by file name, and the titles of its panels."""
    seen, save = {}, _sweep_plots._save

    def record(fig, path):
        panels = [ax.get_title() for ax in fig.axes if ax.get_title()]
        first = fig.axes[0]
        seen[path.name] = (first.get_xlabel(), first.get_title(), panels, first.get_ylabel())
        return save(fig, path)

    monkeypatch.setattr(_sweep_plots, "_save", record)
    return seen


def test_a_flow_with_early_stops_is_drawn_against_time_with_its_stop_times(tmp_path, drawn):
    ds = dynamics.sweep(Decay(floor=0.3), {"rate": [0.5, 2.0]}, num_seeds=3)  # stops once |y| < 0.3
    paths = _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)
    assert {p.name for p in paths} >= {"t_stop_final.png"} and all(p.stat().st_size for p in paths)
    time_plots = [name for name in drawn if name.endswith("_time.png")]
    assert time_plots and all(drawn[name][0] == _sweep_plots.CLOCKS["time"] for name in time_plots)
    small = int(np.sum(dynamics.stop_reasons(ds).values == "event:small"))
    assert 0 < small < 6
    assert all(f"stopped early (event:small × {small})" in drawn[name][1] for name in time_plots)
    assert all("over the runs still going" in drawn[name][1] for name in time_plots)
    assert drawn["t_stop_final.png"][1].startswith("the time of each run that stopped early")


def test_discrete_training_is_drawn_against_steps_and_has_no_stop_plot(tmp_path, drawn, euler):
    ds = euler
    paths = _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)
    assert "t_stop_final.png" not in {p.name for p in paths}
    time_plots = [name for name in drawn if name.endswith("_time.png")]
    assert time_plots and all(drawn[name][0] == _sweep_plots.CLOCKS["step"] for name in time_plots)
    assert not any("stopped early" in drawn[name][1] for name in time_plots)


def test_every_plot_has_a_pdf_beside_it_and_its_values_labelled_in_words(tmp_path, drawn, euler):
    """A paper takes the PDF; a saved value's axis reads its words from the simulation's `labels`
    (its name where it has none), the engine's own values their words from the engine."""
    labels = {"value": "the decaying quantity y"}
    ds = euler.assign(sharpness=euler["value"])
    paths = _sweep_plots.plot_sweep(ds, ["rate"], tmp_path, labels)
    assert paths and all(p.with_suffix(".pdf").read_bytes().startswith(b"%PDF") for p in paths)
    assert drawn["value_time.png"][3] == "value: the decaying quantity y"
    assert drawn["value_final.png"][3] == "value: the decaying quantity y"
    assert drawn["sharpness_time.png"][3] == "sharpness: top Hessian eigenvalue λ_max"
    _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)
    assert drawn["value_time.png"][3] == "value"


def test_each_scalar_of_the_final_state_is_drawn_against_the_grid(tmp_path, drawn, euler):
    ds = euler
    finals = [name for name in ds.data_vars if name.startswith("final") and ds[name].dims == ("rate", "seed")]
    paths = {p.name for p in _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)}
    assert finals and {f"{name}.png" for name in finals} <= paths
    assert all(drawn[f"{name}.png"][0] == "rate" for name in finals)


@pytest.mark.slow
def test_three_grid_axes_give_one_heat_map_per_value_of_the_first(tmp_path, drawn):
    grid = {"scale": [0.5, 1.0, 2.0], "rate": [0.5, 2.0], "floor": [0.0, 0.1]}
    ds = dynamics.sweep(Decay(mode="euler"), grid, num_seeds=2)
    paths = {p.name for p in _sweep_plots.plot_sweep(ds, list(grid), tmp_path)}
    assert "value_final.png" in paths and "final.png" in paths
    assert drawn["final.png"][2] == ["scale = 0.5", "scale = 1.0", "scale = 2.0"]
    assert drawn["final.png"][0] == "floor"


def test_a_run_that_blew_up_is_drawn_without_numerical_warnings(tmp_path, drawn, blown_up):
    """A last value of ~10¹⁹⁹ overflows a standard deviation; the plots are drawn all the same,
    with no warning for the user to puzzle over."""
    ds = blown_up
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = {p.name for p in _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)}
    assert {"final.png", "value_time.png"} <= paths


def test_the_sharpness_ratio_is_drawn_with_the_edge_of_stability(tmp_path, monkeypatch, euler):
    lines = []
    monkeypatch.setattr(
        _sweep_plots,
        "_save",
        lambda fig, path: lines.extend(line.get_label() for line in fig.axes[0].lines) or path,
    )
    ds = euler.rename({"value": "sharpness_ratio"})
    _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)
    assert "edge of stability" in lines


def test_positive_values_near_the_largest_float_are_drawn_on_a_log_axis_without_warnings(
    tmp_path, drawn, blown_up
):
    """A diverging sharpness climbs to ~10³⁰⁰: the usual 5 % margin of a log axis spanning 300
    decades would reach beyond the largest float."""
    ds = blown_up.assign(value=np.abs(blown_up["value"]) ** 1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = {p.name for p in _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)}
    assert "value_time.png" in paths


def test_a_run_of_many_saves_is_drawn_from_evenly_spaced_ones_first_and_last_kept(
    tmp_path, drawn, euler, monkeypatch
):
    monkeypatch.setattr(_sweep_plots, "MAX_SAVES_DRAWN", 3)
    saves = euler.sizes[dynamics.store.SAVE_DIM]
    assert saves > 3
    thinned, words = _sweep_plots._thinned(euler)
    kept = thinned["time"].isel(seed=0, rate=0).values
    every = euler["time"].isel(seed=0, rate=0).values
    np.testing.assert_array_equal(kept, every[[0, int(np.round((saves - 1) / 2)), saves - 1]])
    assert words == f" (3 of its {saves:,} saves, evenly spaced)"
    _sweep_plots.plot_sweep(euler, ["rate"], tmp_path)
    titles = [drawn[name][1] for name in drawn if name.endswith("_time.png")]
    assert titles and all(f"(3 of its {saves:,} saves, evenly spaced)" in title for title in titles)


def test_a_constant_count_is_drawn_on_whole_number_ticks_without_an_offset(tmp_path, monkeypatch):
    """Every run found 2 plateaus: the y ticks are whole numbers around 2 (1, 2, 3), not fractional
    offsets from it; a count that varies keeps whole-number ticks too."""
    import xarray as xr

    ticks, save = {}, _sweep_plots._save

    def record(fig, path):
        fig.canvas.draw()
        ax = fig.axes[0]
        ticks[path.name] = (
            [t.get_text() for t in ax.get_yticklabels()],
            ax.yaxis.get_offset_text().get_text(),
        )
        return save(fig, path)

    monkeypatch.setattr(_sweep_plots, "_save", record)
    for name, values in [
        ("constant", np.full((3, 4), 2.0)),
        ("varying", np.array([[1, 2, 2, 3]] * 3, float)),
    ]:
        count = xr.DataArray(values, dims=("rate", dynamics.store.SEED_DIM), coords={"rate": [0.5, 1.0, 2.0]})
        _sweep_plots._finals(count, ["rate"], name, "plateaus per run", tmp_path)
    labels, offset = ticks["constant_final.png"]
    assert offset == "" and all(float(t.replace("−", "-")).is_integer() for t in labels if t), labels
    assert "2" in labels, labels
    labels, offset = ticks["varying_final.png"]
    assert offset == "" and all(float(t.replace("−", "-")).is_integer() for t in labels if t), labels
