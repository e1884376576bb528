"""The command line: errors name the field, simulate writes a loadable trajectory, verify's exit code."""

import json

import numpy as np
import pytest

import dynamics
import theory
from attnflow import cli
from tasks.scan_snap import Simulation


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("eta_z=-1", "eta_z must be a finite number > 0"),
        ("level=L9", "level must be one of"),
        ("dataset=wiki", "dataset must be one of"),
        ("every=3", "every must divide num_steps"),
        ("T=1", "T must be >= 2"),
        ("T=abc", "T must be a int"),
        ("colour=red", "unknown setting 'colour'"),
    ],
)
def test_bad_settings_exit_2_and_name_the_field(setting, message, capsys, tmp_path):
    status = cli.main(["simulate", "scan_snap", "--set", setting, "--out", str(tmp_path)])
    assert status == 2
    assert message in capsys.readouterr().err


def test_settings_are_parsed_to_field_types():
    sim = Simulation.from_settings(
        {"eta_y": "2.5", "num_steps": "10", "every": "5", "class_weighted": "true"}
    )
    assert (sim.eta_y, sim.num_steps, sim.every, sim.class_weighted) == (2.5, 10, 5, True)
    assert Simulation.from_settings({"dtype": "none"}).dtype is None


def test_simulate_writes_a_trajectory_that_loads_with_its_config(tmp_path, capsys):
    status = cli.main(
        ["simulate", "scan_snap", "--level", "L3", "--seeds", "3", "--set", "t1=50", "--out", str(tmp_path)]
    )
    assert status == 0
    traj = dynamics.Trajectory.load(tmp_path / "scan_snap_L3_3seeds.npz")
    assert traj.config["level"] == "L3" and traj.config["t1"] == 50.0 and traj.config["num_seeds"] == 3
    assert list(traj.stop_reasons) == ["completed"] * 3
    # L3 from z = 0: B grows and z falls (Theorem 4), identically for every seed.
    assert np.all(np.diff(traj.values["B"][0]) >= 0) and traj.values["z"][0, -1] < 0
    np.testing.assert_array_equal(traj.values["B"][0], traj.values["B"][2])


def test_figures_list(capsys):
    assert cli.main(["figures", "--list"]) == 0
    names = capsys.readouterr().out.split()
    assert "scan_snap_fig6" in names and "scan_snap_fig8" in names


def test_verify_exit_code_and_json_follow_the_checks(tmp_path, monkeypatch, capsys):
    def good():
        return theory.within("toy", "good", "1 = 1", predicted=1.0, simulated=1.0, error=0.0, tolerance=1e-12)

    def bad():
        return theory.within("toy", "bad", "1 = 2", predicted=1.0, simulated=2.0, error=1.0, tolerance=1e-12)

    monkeypatch.setitem(theory.PAPERS, "toy", lambda quick: [good])
    assert cli.main(["verify", "--paper", "toy", "--json", str(tmp_path / "ok.json")]) == 0
    monkeypatch.setitem(theory.PAPERS, "toy", lambda quick: [good, bad])
    assert cli.main(["verify", "--paper", "toy", "--json", str(tmp_path / "bad.json")]) == 1
    report = json.loads((tmp_path / "bad.json").read_text())
    assert [(c["name"], c["verdict"]) for c in report["checks"]] == [("good", "pass"), ("bad", "fail")]
    assert report["checks"][1]["simulated"] == 2.0
    assert "checks: 1 pass, 1 fail" in capsys.readouterr().out


def test_a_check_that_raises_is_a_failure():
    def broken():
        raise RuntimeError("solver exploded")

    (check,) = theory.run_checks([broken])
    assert check.verdict == "fail" and "solver exploded" in check.note
