"""The phases of every run of a sweep (`dynamics.landscape.sweep_phases`), and `attnflow sweep --analyse
phases`, which adds them to the store with their plots."""

import json
from pathlib import Path

import numpy as np
import pytest

import dynamics
from attnflow import cli
from tests._store_sims import Logistic, SlowDecay
from tests.helpers import REPOSITORY

GRID = {"rate": [1.0, 10.0]}


@pytest.fixture(scope="module")
def swept():
    return dynamics.sweep(Logistic(), GRID, num_seeds=3)


def test_each_runs_phases_are_those_of_the_run_alone(swept):
    found = dynamics.landscape.sweep_phases(swept, max_phases=4)
    assert found["phases.start_time"].dims == ("rate", "seed", "phase")
    assert found["phases.count"].dims == ("rate", "seed")
    for rate in GRID["rate"]:
        for seed in swept["seed"].values:
            run = swept.sel(rate=rate, seed=seed)
            alone = dynamics.landscape.phases(run["time"].values, run["loss"].values, max_phases=4)
            got = found.sel(rate=rate, seed=seed)
            assert int(got["phases.count"]) == int(alone.count)
            for field in ("start_time", "end_time", "loss"):
                np.testing.assert_array_equal(got[f"phases.{field}"], getattr(alone, field))
    assert json.loads(found.attrs["analysis"])["phases"]["loss"] == "loss"


def test_the_drop_of_the_logistic_flow_falls_between_its_two_plateaus(swept):
    """Closed form: 1 − y falls through ½ at t* = log(1/y(0) − 1) / rate; the plateaus sit at the
    losses 1 − y(0) ≈ 1 before it and 0 after it."""
    found = dynamics.landscape.sweep_phases(swept)
    y0 = 1.0 - swept["loss"].isel(save=0)  # y at t = 0.01, within 1 % of y(0) for rate <= 10
    drop = np.log(1.0 / y0 - 1.0) / swept["rate"]
    assert (found["phases.count"] == 2).all()
    assert (found["phases.end_time"].isel(phase=0) < drop).all()
    assert (found["phases.start_time"].isel(phase=1) > drop).all()
    np.testing.assert_allclose(found["phases.loss"].isel(phase=0), 1.0, atol=3e-3)
    np.testing.assert_allclose(found["phases.loss"].isel(phase=1), 0.0, atol=1e-6)


def test_a_loss_that_is_not_one_number_per_save_is_refused_naming_the_series(swept):
    with pytest.raises(ValueError, match=r"no 'nope' of that shape \(its saved series: loss, y\)"):
        dynamics.landscape.sweep_phases(swept, "nope")
    assert dynamics.landscape.saved_series(Logistic()) == ["loss", "y"]
    assert dynamics.landscape.saved_series(SlowDecay()) == []


def _sweep(out: Path, *options: str) -> int:
    argv = ["sweep", "tests._store_sims:Logistic", "--seeds", "2", "--out", str(out), *options]
    return cli.main(argv)


@pytest.mark.slow
def test_the_command_line_adds_the_phases_to_the_store_and_a_rerun_makes_them_again(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(REPOSITORY)
    assert _sweep(tmp_path, "--grid", "rate=1,10", "--analyse", "phases") == 0
    assert ": 2 plateaus per run\n" in capsys.readouterr().out  # each run, so one number
    stored = dynamics.load_sweep(tmp_path / "sweep.zarr")
    expected = dynamics.landscape.sweep_phases(stored)
    assert stored["phases.count"].values.tolist() == expected["phases.count"].values.tolist()
    np.testing.assert_array_equal(stored["phases.end_time"], expected["phases.end_time"])
    assert json.loads(stored["phases.count"].attrs["analysis"]) == json.loads(expected.attrs["analysis"])
    assert not (tmp_path / "phases.zarr").exists()
    assert (tmp_path / "plots" / "phases_time.png").is_file()
    assert (tmp_path / "plots" / "phases.count_final.png").is_file()

    assert _sweep(tmp_path, "--grid", "rate=1,10") == 0  # the same sweep: its phases stay
    assert dynamics.store.check_store(tmp_path / "sweep.zarr").state == "complete"
    assert "phases.count" in dynamics.load_sweep(tmp_path / "sweep.zarr")
    assert _sweep(tmp_path, "--grid", "rate=1,10", "--analyse", "phases") == 0  # made again, the same
    again = dynamics.load_sweep(tmp_path / "sweep.zarr")
    np.testing.assert_array_equal(again["phases.end_time"], expected["phases.end_time"])
    assert _sweep(tmp_path, "--grid", "rate=1,2", "--overwrite") == 0  # another sweep: no phases
    assert "phases.count" not in dynamics.load_sweep(tmp_path / "sweep.zarr")


@pytest.mark.parametrize(
    ("target", "analyse", "message"),
    [
        (
            "tests._store_sims:Logistic",
            "phase",
            "--analyse: unknown analysis phase (known: phases, saddles, critical_point, sharpness)",
        ),
        (
            "tests._store_sims:SlowDecay",
            "phases",
            "SlowDecay does not save as one number per save (its saved series: none)",
        ),
    ],
)
def test_an_analysis_that_cannot_run_is_refused_before_any_work(
    target, analyse, message, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(REPOSITORY)
    argv = [
        "sweep",
        target,
        "--grid",
        "rate=1,2",
        "--seeds",
        "2",
        "--out",
        str(tmp_path),
        "--analyse",
        analyse,
    ]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "sweep.zarr").exists()
