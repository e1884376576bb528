"""The examples run as a user runs them."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dynamics

from .helpers import assert_sweep_round_trip

ROOT = Path(__file__).parents[1]


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
