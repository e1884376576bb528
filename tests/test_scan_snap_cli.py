"""Scan and Snap from the command line: settings refused with the field named before any work,
a simulation's store that loads with its config, a sweep's labelled store and its plots, and the
levels' settings as `attnflow list` documents them."""

import json
import re
import time

import numpy as np
import pytest

import dynamics
from attnflow import _provenance, cli
from attnflow.papers import load_simulation


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "eta_z=-1"], "SGD.eta_z must be a finite number > 0, got -1.0"),
        (["--level", "L9"], "scan_snap has no level 'L9'; levels: L0, L0_outcome, L1, L2, L3, text"),
        (
            ["--set", "task.dataset=wiki"],
            "SGD.task: Synthetic.dataset must be one of 'syn_small', 'syn_medium', got 'wiki'",
        ),
        (
            ["--set", "every=3"],
            "SGD: every must divide num_steps (or set log_saves), got every=3, num_steps=100, log_saves=None",
        ),
        (["--set", "T=1"], "SGD.T must be an integer >= 2, got 1"),
        (["--set", "T=abc"], "SGD.T must be an integer >= 2, got 'abc'"),
        (["--set", "colour=red"], "SGD has no setting 'colour'"),
        (["--set", "colour"], "--set expects key=value, got 'colour'"),
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
    ],
)
def test_bad_settings_exit_2_and_name_the_field(args, message, capsys, tmp_path):
    assert cli.main(["simulate", "scan_snap", *args, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing was written


def test_a_class_path_names_a_simulation_of_the_package():
    with pytest.raises(ValueError, match="has no 'Nope'"):
        load_simulation("tasks.scan_snap:Nope")
    with pytest.raises(ValueError, match="not a subclass of dynamics.AbstractSimulation"):
        load_simulation("tasks.scan_snap:YZModel")


def test_simulate_writes_a_store_that_loads_with_its_config(tmp_path, capsys):
    argv = ["simulate", "scan_snap", "--level", "L3", "--seeds", "3", "--out", str(tmp_path)]
    assert cli.main([*argv, "--set", "t1=50"]) == 0
    assert "stops: completed x3" in capsys.readouterr().out
    (path,) = tmp_path.glob("scan_snap_L3_3seeds_*.zarr")
    ds = dynamics.load_sweep(path)
    config, made_by = json.loads(ds.attrs["config"]), json.loads(ds.attrs["provenance"])
    assert config["simulation"] == "tasks.scan_snap:ScalarFlow" and config["t1"] == 50.0
    assert config["num_seeds"] == 3 and config["dtype"] == "float64" and ds["B"].dtype == np.float64
    assert made_by["versions"]["jax"] and made_by["commit"] == _provenance.source_commit()
    assert ds["B"].dims == ("seed", "save") and (ds["stop"] == 0).all()
    # L3 from z = 0: B grows and z falls (Theorem 4), identically for every seed.
    B = ds["B"].values
    assert np.all(np.diff(B[0]) >= 0) and ds["z"].values[0, -1] < 0
    np.testing.assert_array_equal(B[0], B[2])
    # A second run with another setting keeps the first.
    assert cli.main([*argv, "--set", "t1=20"]) == 0
    assert len(list(tmp_path.glob("scan_snap_L3_3seeds_*.zarr"))) == 2


@pytest.mark.slow
def test_sweep_writes_a_labelled_store_and_plots(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "scan_snap", "--level", "L1", "--grid", "eta_z=0.5,2", "--seeds", "2"]
    argv += ["--set", "num_saves=3", "--out", str(out)]
    assert cli.main([*argv, "--set", "t1=5"]) == 0
    ds = dynamics.load_sweep(out / "sweep.zarr")
    assert ds["population_loss"].dims == ("eta_z", "seed", "save")
    assert list(ds["eta_z"].values) == [0.5, 2.0]
    config = json.loads(ds.attrs["config"])
    assert config["simulation"] == "tasks.scan_snap:PopulationFlow" and config["t1"] == 5.0
    assert {"population_loss_time.png", "population_loss_final.png"} <= {
        p.name for p in (out / "plots").iterdir()
    }
    capsys.readouterr()
    assert cli.main([*argv, "--set", "t1=5"]) == 0  # the same sweep again: every block is there, nothing runs
    assert "1 of 1 blocks written" in capsys.readouterr().out  # 2 points x 2 seeds: one block
    assert cli.main([*argv, "--set", "t1=6"]) == 2
    assert "t1: 5.0 in the store, 6.0 now" in capsys.readouterr().err
    assert cli.main([*argv, "--set", "t1=6", "--overwrite"]) == 0
    assert json.loads(dynamics.load_sweep(out / "sweep.zarr").attrs["config"])["t1"] == 6.0
    assert cli.main(["sweep", "scan_snap", "--grid", "eta=1,2", "--out", str(tmp_path / "x")]) == 2
    assert "SGD has no setting 'eta'" in capsys.readouterr().err


def test_list_documents_the_levels_settings(capsys):
    assert cli.main(["list", "scan_snap"]) == 0
    out = capsys.readouterr().out
    assert "L0: tasks.scan_snap:SGD" in out
    assert "eta_z = 1.0  (float, traced; a finite number > 0)" in out
    assert "optimizer = 'momentum'  (str; one of 'sgd', 'momentum', 'adam')" in out
    # each level's summary is one line of plain text: "saves as [`SGD`][] does" in the docstring
    assert "saves as `SGD` does, at `num_saves` equally spaced times." in out
    assert "  a first try (seconds): --set num_steps=4 --set every=2 --set T=8 --set batch_size=4" in out


def test_a_figure_is_listed_by_its_name(capsys):
    assert cli.main(["figures", "--list"]) == 0
    assert "scan_snap_fig6" in capsys.readouterr().out.split()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--level", "L1", "--seeds", "1000000000"], r"the results would take .* TB \(1,000,000,000 runs"),
        (["--level", "L1", "--seeds", "100000000"], r"over the limit of 17.2 GB"),
        (["--level", "L1", "--set", "num_saves=100000000"], r"the results would take"),
        (["--level", "L0", "--set", "batch_size=1000000000"], r"one block of 16 runs would take at least"),
        (["--level", "L0", "--set", "eta_y=3.5e38"], r"SGD.eta_y = 3.5e\+38 is beyond float32"),
    ],
)
def test_sizes_and_values_are_refused_before_any_work(argv, message, tmp_path, capsys):
    start = time.perf_counter()
    assert cli.main(["simulate", "scan_snap", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err), err
    assert time.perf_counter() - start < 30 and not list(tmp_path.iterdir())


def test_a_flow_out_of_steps_says_so_with_the_time_reached(tmp_path, capsys):
    argv = ["simulate", "scan_snap", "--level", "L3", "--seeds", "1", "--set", "max_steps=3"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "max_steps x1 (the step budget max_steps ran out at t = " in out
    (store,) = tmp_path.glob("scan_snap_L3_1seeds_*.zarr")
    ds = dynamics.load_sweep(store)
    assert dynamics.StopReason(int(ds["stop"].values[0])) == dynamics.StopReason.max_steps
    assert 0 < float(ds["t_stop"].values[0]) < 1000.0 and int(ds["num_steps"].values[0]) == 3
