"""The examples run as a user runs them."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dynamics

from .helpers import assert_sweep_round_trip

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_custom_model_sweeps_two_settings_from_python(tmp_path):
    from examples.custom_model import Retrieval

    ds = dynamics.sweep(Retrieval(samples=32, t1=100.0), {"eta_w": [0.5, 4.0], "tokens": [3, 6]}, num_seeds=4)
    assert ds["loss"].dims == ("eta_w", "tokens", "seed", "save")
    # The loss falls on every run, and a faster attention rate reaches the threshold no later.
    first, last = ds["loss"].isel(save=0), ds["loss"].where(np.isfinite(ds["loss"])).min("save")
    assert bool((last < first).all())
    t_stop = ds["t_stop"].median("seed")
    assert bool((t_stop.sel(eta_w=4.0) <= t_stop.sel(eta_w=0.5)).all())
    assert_sweep_round_trip(ds, tmp_path)  # with its root-found events


@pytest.mark.slow
def test_custom_model_script_runs():
    """The script as a user runs it: the sweep above at its full 64 seeds (half a minute)."""
    result = subprocess.run(
        [sys.executable, "examples/custom_model.py"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "fraction of seeds that reached the threshold" in result.stdout


@pytest.mark.slow
def test_landscape_script_finds_the_saddles_of_the_closed_form():
    """The landscape example as a user runs it: its plateaus sit at ½ Σ_{i>k} s_i², the saddles'
    indices are 9, 4, 1, 0, and past the edge of stability GD ends far from the flow."""
    result = subprocess.run(
        [sys.executable, "examples/landscape.py"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = [line.split() for line in lines[1 : lines.index(next(x for x in lines if x.startswith("eta")))]]
    singular_values = np.array([5.0, 2.0, 0.5])
    for k, row in enumerate(rows):
        assert float(row[-4]) == pytest.approx(0.5 * np.sum(singular_values[k:] ** 2), abs=1e-5)
        assert float(row[-3]) == pytest.approx(0.5 * np.sum(singular_values[k:] ** 2), abs=1e-5)
    assert [int(row[-2]) for row in rows] == [9, 4, 1, 0]
    gd = {float(row[0]): [float(v) for v in row[1:]] for row in (x.split() for x in lines[-3:])}
    assert gd[0.19][0] < 1 and gd[0.19][1] < 1e-12  # below the edge: the minimum
    assert gd[0.21][1] > 0.1 and gd[0.21][2] > 0.1  # past it: no convergence, far from the flow
