"""A phase diagram that refines itself, against a boundary known in closed form: gradient descent
on a quadratic whose largest Hessian eigenvalue is λ (`examples.phase_levels.QuadraticDescent`)
grows the loss for a step η above 2/λ and shrinks it below (the edge of stability)."""

import json

import numpy as np
import pytest

import dynamics
from attnflow.cli import main
from examples.phase_levels import QuadraticDescent

START = [0.1, 0.2, 0.4, 0.8, 1.6]
"""The coarse grid of step sizes: a factor 2 apart, over a factor 16."""


def test_the_boundary_lands_on_the_edge_of_stability_within_2_percent_with_a_fifth_of_the_points():
    """12 points (5, then one per round) put 2/λ in an interval 0.5 % wide; a uniform grid of that
    resolution over the same range needs over 500 points."""
    found = dynamics.refine_sweep(
        QuadraticDescent(), "eta", START, dynamics.Outcome.parse("growth>1"), budget=12
    )
    about = json.loads(found.attrs["refine"])
    ((low, high),) = about["boundaries"]
    edge = 2 / QuadraticDescent().lam
    assert low < edge < high
    assert abs(np.sqrt(low * high) / edge - 1) < 0.02
    uniform = np.log(START[-1] / START[0]) / np.log(high / low) + 1
    assert found.sizes["eta"] <= uniform / 5
    assert [len(r) for r in about["rounds"]] == [5] + [1] * 7
    outcome = found["refine.fraction"].values
    assert np.array_equal(outcome, (found["eta"].values > edge).astype(float))  # every seed agrees


def test_a_refined_sweep_from_the_command_line_is_stored_plotted_and_resumed(tmp_path, capsys):
    out = tmp_path / "edge"
    argv = ["sweep", "examples.phase_levels:QuadraticDescent", "--grid", "eta=" + ",".join(map(str, START))]
    argv += ["--seeds", "3", "--refine", "growth>1", "--budget", "6", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "6 points in 2 rounds" in printed and "growth>1 changes eta in [" in printed
    ds = dynamics.load_sweep(out / "sweep.zarr")
    assert ds.sizes["eta"] == 6 and {"refine.outcome", "refine.fraction", "refine.round"} <= set(ds.data_vars)
    assert (out / "plots" / "refine.png").exists() and (out / "plots" / "refine.pdf").exists()
    rounds = sorted((out / "rounds").glob("round_*.zarr"))
    made = [r.stat().st_mtime_ns for r in rounds]
    assert main(argv) == 0  # again: every round read from its store, the same points
    assert [r.stat().st_mtime_ns for r in rounds] == made
    assert dynamics.load_sweep(out / "sweep.zarr")["eta"].values.tolist() == ds["eta"].values.tolist()


def test_an_outcome_reads_blown_up_runs_as_diverged_and_an_event_s_padding_not():
    """GD at η = 1.6 overflows (|1 − ηλ| = 5.4 a step) without stopping: diverged, and its growth
    counts as +∞; a flow stopped by an event saves `inf` after it: neither diverged nor +∞, its
    value the last it saved."""
    from .test_dynamics_simulation import Decay

    ds = dynamics.sweep(QuadraticDescent(), {"eta": [0.1, 1.6]}, num_seeds=3)
    assert dynamics.Outcome.parse("diverged").of_runs(ds).values.tolist() == [[False] * 3, [True] * 3]
    assert dynamics.Outcome.parse("growth<1").of_runs(ds).values.tolist() == [[True] * 3, [False] * 3]
    stopped = dynamics.sweep(Decay(floor=0.3), {"rate": [2.0]}, num_seeds=3)
    assert (stopped["stop"] == int(dynamics.StopReason.event)).any()
    assert not dynamics.Outcome.parse("diverged").of_runs(stopped).values.any()
    last = dynamics.Outcome.parse("value<1e300").of_runs(stopped).values
    saved = np.isfinite(stopped["value"].values).any(axis=-1)  # a run stopped at its start saved none: +∞
    assert saved.any() and (last == saved).all()
    with pytest.raises(ValueError, match="no scalar of the runs"):
        dynamics.Outcome.parse("nothing>1").of_runs(ds)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--refine", "growth"], "an outcome is 'diverged', or NAME>VALUE"),
        (["--refine", "growth>1", "--seeds", "2"], "at least 3 seeds per point"),
        (["--refine", "growth>1", "--budget", "3"], "below the 5 values to start from"),
        (["--refine", "growth>1", "--grid", "lam=1,2"], "along one --grid axis, got 2"),
        (["--refine", "growth>1", "--shard", "0/2"], "it runs in one process"),
    ],
)
def test_a_refinement_that_cannot_run_is_refused_before_any_work(tmp_path, capsys, extra, message):
    argv = ["sweep", "examples.phase_levels:QuadraticDescent", "--grid", "eta=" + ",".join(map(str, START))]
    argv += ["--seeds", "3", "--out", str(tmp_path / "no"), *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
