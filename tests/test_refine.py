"""A phase diagram that refines itself, against a boundary known in closed form: gradient descent
on a quadratic whose largest Hessian eigenvalue is λ (`examples.phase_levels.QuadraticDescent`)
grows the loss for a step η above 2/λ and shrinks it below (the edge of stability): a point along
η, a curve ηλ = 2 in the plane (η, λ)."""

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
    found = dynamics.landscape.refine_sweep(
        QuadraticDescent(), {"eta": START}, dynamics.landscape.Outcome.parse("growth>1"), budget=12
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


def test_a_plane_refined_from_the_command_line_is_stored_plotted_and_resumed(tmp_path, capsys):
    out = tmp_path / "plane"
    argv = ["sweep", "examples.phase_levels:QuadraticDescent", "--seeds", "3", "--out", str(out)]
    argv += [
        "--grid",
        "eta=" + ",".join(map(str, ETA_PLANE)),
        "--grid",
        "lam=" + ",".join(map(str, LAM_PLANE)),
    ]
    argv += ["--refine", "growth>1", "--budget", "22"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "22 points in 2 rounds" in printed and "growth>1 changes in " in printed
    ds = dynamics.load_sweep(out / "sweep.zarr")
    assert ds.sizes["point"] == 22 and set(ds["refine.round"].values) == {0, 1}
    _plotted_and_resumed(argv, out, ds)


@pytest.mark.slow
def test_a_refined_sweep_from_the_command_line_is_stored_plotted_and_resumed(tmp_path, capsys):
    out = tmp_path / "edge"
    argv = ["sweep", "examples.phase_levels:QuadraticDescent", "--grid", "eta=" + ",".join(map(str, START))]
    argv += ["--seeds", "3", "--refine", "growth>1", "--budget", "6", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "6 points in 2 rounds" in printed and "growth>1 changes eta in [" in printed
    ds = dynamics.load_sweep(out / "sweep.zarr")
    assert ds.sizes["eta"] == 6 and {"refine.outcome", "refine.fraction", "refine.round"} <= set(ds.data_vars)
    _plotted_and_resumed(argv, out, ds)


def _plotted_and_resumed(argv: list[str], out, ds) -> None:
    """The refinement `argv` made into `out` (its points `ds`) drew its plot, and made again it
    reads every round from its store: nothing rewritten, the same points."""
    assert (out / "plots" / "refine.png").exists() and (out / "plots" / "refine.pdf").exists()
    rounds = sorted((out / "rounds").glob("round_*.zarr"))
    made = [r.stat().st_mtime_ns for r in rounds]
    assert main(argv) == 0
    assert [r.stat().st_mtime_ns for r in rounds] == made
    assert dynamics.load_sweep(out / "sweep.zarr")["eta"].values.tolist() == ds["eta"].values.tolist()


ETA_PLANE, LAM_PLANE = [0.3, 0.6, 1.2], [1.5, 3.0, 6.0]
"""The start of the plane (η, λ): a factor 2 apart along each axis; the edge ηλ = 2 crosses it
through no start point."""


@pytest.mark.slow  # test_a_plane_refined_from_the_command_line refines over two axes in the default run
def test_over_two_axes_the_cells_follow_the_edge_within_2_percent_with_a_fifth_of_the_points():
    """943 points (9, then 7 rounds) split every cell the edge ηλ = 2 crosses six times: each is a
    factor 2^(1/64) (1.09 %) wide along each axis and holds a piece of the edge; a uniform grid of
    that resolution over the same plane needs 129² = 16,641 points."""
    found = dynamics.landscape.refine_sweep(
        QuadraticDescent(),
        {"eta": ETA_PLANE, "lam": LAM_PLANE},
        dynamics.landscape.Outcome.parse("growth>1"),
        budget=943,
    )
    about = json.loads(found.attrs["refine"])
    assert [len(r) for r in about["rounds"]] == [9, 13, 29, 61, 117, 237, 477]
    cells = np.asarray(about["boundaries"])
    eta_low, eta_high, lam_low, lam_high = cells.T
    assert ((2 / lam_high <= eta_high) & (2 / lam_low >= eta_low)).all()  # the edge crosses each cell
    centre = np.sqrt(eta_low * eta_high) * np.sqrt(lam_low * lam_high) / 2
    assert np.abs(centre - 1).max() < 0.02
    widest = max((eta_high / eta_low).max(), (lam_high / lam_low).max())
    np.testing.assert_allclose(widest, 2 ** (1 / 64), rtol=1e-12)
    uniform = (np.log(ETA_PLANE[-1] / ETA_PLANE[0]) / np.log(widest) + 1) ** 2
    assert found.sizes["point"] <= uniform / 5
    eta, lam = found["eta"].values, found["lam"].values
    assert np.array_equal(found["refine.fraction"].values, (eta * lam > 2).astype(float))
    assert found["refine.round"].values.tolist() == [k for k, r in enumerate(about["rounds"]) for _ in r]


def test_a_paired_axis_runs_what_the_product_grid_runs_at_its_points():
    """Two points of (η, λ) swept as a paired axis hold bit for bit what the product grid holds
    there; a paired axis that gives a point too few values, repeats a point or names a setting
    twice is refused before any run."""
    product = dynamics.sweep(QuadraticDescent(), {"eta": [0.3, 0.6], "lam": [1.5, 6.0]}, num_seeds=3)
    points = [(0.3, 6.0), (0.6, 1.5)]
    paired = dynamics.sweep(QuadraticDescent(), {("eta", "lam"): points}, num_seeds=3)
    assert paired["growth"].dims[0] == dynamics.store.POINT_DIM
    for p, (eta, lam) in enumerate(points):
        assert (paired["eta"][p], paired["lam"][p]) == (eta, lam)
        expected = product["growth"].sel(eta=eta, lam=lam).values
        assert np.array_equal(paired["growth"].isel(point=p).values, expected)
    for grid, message in [
        ({("eta", "lam"): [(0.3,)]}, "one value to each of its 2 settings"),
        ({("eta", "lam"): [(0.3, 1.0), (0.3, 1.0)]}, "repeats"),
        ({("eta", "lam"): [(0.3, 1.0)], "lam": [1.0]}, "names the setting 'lam' twice"),
        ({("eta",): [(0.3,)]}, "at least 2 settings"),
        ({("eta", "nothing"): [(0.3, 1.0)]}, "no setting 'nothing'"),
    ]:
        with pytest.raises(ValueError, match=message):
            dynamics.sweep(QuadraticDescent(), grid, num_seeds=3)


def test_an_outcome_reads_blown_up_runs_as_diverged_and_an_event_s_padding_not():
    """GD at η = 1.6 overflows (|1 − ηλ| = 5.4 a step) without stopping: diverged, and its growth
    counts as +∞; a flow stopped by an event saves `inf` after it: neither diverged nor +∞, its
    value the last it saved."""
    from .test_dynamics_simulation import Decay

    ds = dynamics.sweep(QuadraticDescent(), {"eta": [0.1, 1.6]}, num_seeds=3)
    assert dynamics.landscape.Outcome.parse("diverged").of_runs(ds).values.tolist() == [
        [False] * 3,
        [True] * 3,
    ]
    assert dynamics.landscape.Outcome.parse("growth<1").of_runs(ds).values.tolist() == [
        [True] * 3,
        [False] * 3,
    ]
    stopped = dynamics.sweep(Decay(floor=0.3), {"rate": [2.0]}, num_seeds=3)
    assert (stopped["stop"] == int(dynamics.StopReason.event)).any()
    assert not dynamics.landscape.Outcome.parse("diverged").of_runs(stopped).values.any()
    last = dynamics.landscape.Outcome.parse("value<1e300").of_runs(stopped).values
    saved = np.isfinite(stopped["value"].values).any(axis=-1)  # a run stopped at its start saved none: +∞
    assert saved.any() and (last == saved).all()
    with pytest.raises(ValueError, match="no scalar of the runs"):
        dynamics.landscape.Outcome.parse("nothing>1").of_runs(ds)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--refine", "growth"], "an outcome is 'diverged', or NAME>VALUE"),
        (["--refine", "growth>1", "--seeds", "2"], "at least 3 seeds per point"),
        (["--refine", "growth>1", "--budget", "3"], "below the 5 points to start from"),
        (
            ["--refine", "growth>1", "--grid", "lam=1,2", "--grid", "num_steps=9,10"],
            "one or two --grid axes, got 3",
        ),
        (["--refine", "growth>1", "--shard", "0/2"], "it runs in one process"),
    ],
)
def test_a_refinement_that_cannot_run_is_refused_before_any_work(tmp_path, capsys, extra, message):
    argv = ["sweep", "examples.phase_levels:QuadraticDescent", "--grid", "eta=" + ",".join(map(str, START))]
    argv += ["--seeds", "3", "--out", str(tmp_path / "no"), *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
