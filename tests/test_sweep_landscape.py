"""The landscape at the end of every run of a sweep (`dynamics.landscape.sweep_critical_points`,
`dynamics.landscape.sweep_sharpness`) against closed forms, and what `attnflow sweep --analyse` refuses
(a paper's default level end to end: its own tests)."""

import numpy as np
import pytest
import xarray as xr

import dynamics
import dynamics._sweep_landscape
from attnflow import cli
from dynamics._kept_runs import keep_run, kept_runs
from tests._store_sims import Quadratic, SlowDecay
from tests.helpers import REPOSITORY

GRID = {"rate": [0.5, 3.0], "step": [0.1, 0.2]}


@pytest.fixture(scope="module")
def swept():
    return dynamics.sweep(Quadratic(), GRID, num_seeds=3)


def test_every_run_is_polished_to_the_saddle_of_the_quadratic(swept):
    """The critical point is 0, with Hessian diag(rate, 1, −1): index 1, eigenvalues −1 and
    max(rate, 1), loss 0; its distance from the final state is the final state's norm."""
    found = dynamics.landscape.sweep_critical_points(swept, Quadratic())
    assert found["critical_point.status"].dims == ("rate", "step", "seed")
    assert np.all(found["critical_point.status"] == int(dynamics.landscape.CriticalPointStatus.converged))
    assert np.all(found["critical_point.index"] == 1)
    np.testing.assert_allclose(found["critical_point.min_eigenvalue"], -1.0, rtol=1e-12)
    top = np.maximum(swept["rate"], 1.0).broadcast_like(found["critical_point.max_eigenvalue"])
    np.testing.assert_allclose(found["critical_point.max_eigenvalue"], top.transpose(*found.dims), rtol=1e-12)
    np.testing.assert_allclose(found["critical_point.loss"], 0.0, atol=1e-15)
    norms = np.sqrt((swept["final"] ** 2).sum("final_dim0"))
    np.testing.assert_allclose(found["critical_point.distance"], norms, rtol=1e-12)
    assert found["critical_point.status"].attrs["statuses"][0] == "converged"


def test_a_polish_stopped_half_way_computes_only_the_runs_left_when_made_again(swept, tmp_path, monkeypatch):
    """With `keep`, a polish interrupted after two runs and made again equals one never stopped,
    polishing only the runs left; other settings polish every run again, with a warning; a folder
    that holds other files is refused, and left as it is."""
    expected = dynamics.landscape.sweep_critical_points(swept, Quadratic())
    num_runs = swept.sizes["rate"] * swept.sizes["step"] * swept.sizes["seed"]
    polished = []

    def counted(folder, name, outputs):
        if len(polished) == limit:
            raise KeyboardInterrupt
        keep_run(folder, name, outputs)  # the module's own, imported above
        polished.append(name)

    monkeypatch.setattr(dynamics._sweep_landscape, "keep_run", counted)
    kept = tmp_path / "kept"
    limit = 2
    with pytest.raises(KeyboardInterrupt):
        dynamics.landscape.sweep_critical_points(swept, Quadratic(), keep=kept)
    limit = None
    resumed = dynamics.landscape.sweep_critical_points(swept, Quadratic(), keep=kept)
    xr.testing.assert_identical(resumed, expected)
    assert len(polished) == len(set(polished)) == num_runs  # the first two were not polished again
    polished.clear()
    with pytest.warns(UserWarning, match=rf"the {num_runs} results kept in .*kept come from other .*code"):
        dynamics.landscape.sweep_critical_points(swept, Quadratic(), keep=kept, max_steps=50)
    assert len(polished) == num_runs
    polished.clear()
    copied = sorted(kept.glob("*.npz"))
    copied[1].write_bytes(copied[0].read_bytes())  # one run's result over another's
    again = dynamics.landscape.sweep_critical_points(swept, Quadratic(), keep=kept, max_steps=50)
    assert polished == [copied[1].stem], "a result copied from another run is not taken as this run's"
    xr.testing.assert_identical(
        again, dynamics.landscape.sweep_critical_points(swept, Quadratic(), max_steps=50)
    )
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="mine exists and holds no kept runs"):
        dynamics.landscape.sweep_critical_points(swept, Quadratic(), keep=tmp_path / "mine")
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


def test_a_kept_run_that_cannot_be_read_is_computed_again_and_a_file_is_no_folder(tmp_path):
    folder, key = tmp_path / "kept", {"analysis": "critical_point"}
    assert kept_runs(folder, key) == {}
    for name in ("0-0", "0-1"):
        keep_run(folder, name, {"loss": np.float64(1.5), "index": np.int32(1)})
    truncated = folder / "0-1.npz"
    truncated.write_bytes(truncated.read_bytes()[:40])
    found = kept_runs(folder, key)
    assert list(found) == ["0-0"] and found["0-0"]["index"].dtype == np.int32 and not truncated.exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="file exists and holds no kept runs"):
        kept_runs(tmp_path / "file", key)


def test_the_sharpness_is_the_largest_curvature_beside_the_edge_two_over_eta(swept):
    found = dynamics.landscape.sweep_sharpness(swept, Quadratic())
    top = np.maximum(swept["rate"], 1.0) + 0 * swept["step"]
    np.testing.assert_allclose(found["sharpness.max_eigenvalue"].mean("seed"), top, rtol=1e-12)
    edge = (2 / swept["step"] + 0 * swept["rate"]).transpose("rate", "step")
    np.testing.assert_allclose(found["sharpness.edge_of_stability"].mean("seed"), edge, rtol=1e-12)
    np.testing.assert_allclose(
        found["sharpness.ratio"], found["sharpness.max_eigenvalue"] / (2 / swept["step"])
    )


def test_a_simulation_without_a_landscape_is_refused():
    ds = dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=1)
    with pytest.raises(ValueError, match="SlowDecay declares no landscape"):
        dynamics.landscape.sweep_sharpness(ds, SlowDecay())


def test_an_analysis_of_final_states_is_refused_before_any_work_without_a_landscape(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(REPOSITORY)
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=1,2", "--seeds", "2"]
    argv += ["--out", str(tmp_path), "--analyse", "sharpness"]
    assert cli.main(argv) == 2
    assert "--analyse sharpness analyses the loss at each run's final state" in capsys.readouterr().err
    assert not (tmp_path / "sweep.zarr").exists()


def test_analyses_added_to_a_store_are_checked_with_it(tmp_path):
    """Added variables load with the runs; a lost or changed file of theirs is named, and adding
    them again mends the store; the sweep resumes on it; an analysis of other runs is refused."""
    store = tmp_path / "sweep.zarr"
    dynamics.sweep(Quadratic(), GRID, num_seeds=2, chunk_size=2, store=store)
    found = dynamics.landscape.sweep_sharpness(dynamics.load_sweep(store), Quadratic())
    dynamics.store.add_to_store(store, found)
    loaded = dynamics.load_sweep(store)
    np.testing.assert_array_equal(loaded["sharpness.max_eigenvalue"], found["sharpness.max_eigenvalue"])
    assert dynamics.store.check_store(store).state == "complete"
    dynamics.sweep(Quadratic(), GRID, num_seeds=2, chunk_size=2, store=store)  # resumes: nothing to run
    assert dynamics.store.check_store(store).state == "complete"

    (store / "sharpness.ratio" / "0.0.0").write_bytes(b"changed")
    report = dynamics.store.check_store(store)
    assert report.state == "damaged" and not report.repairable
    assert "added variables: sharpness.ratio/0.0.0 differs from its checksum" in report.problems[0]
    with pytest.raises(ValueError, match="is damaged"):
        dynamics.load_sweep(store)
    dynamics.store.add_to_store(store, found)
    assert dynamics.store.check_store(store).state == "complete"

    other = dynamics.sweep(Quadratic(), {"rate": [1.0]}, num_seeds=2)
    with pytest.raises(ValueError, match="analyse another sweep"):
        dynamics.store.add_to_store(store, dynamics.landscape.sweep_sharpness(other, Quadratic()))
    with pytest.raises(ValueError, match="the sweep's own variables"):
        dynamics.store.add_to_store(store, loaded[["loss"]])


def test_every_analysis_refuses_a_sweep_with_runs_not_written_yet(tmp_path):
    """One shard of two written: the other shard's runs hold fill values, which no analysis takes
    as runs."""
    store = tmp_path / "s.zarr"
    half = dynamics.sweep(
        Quadratic(), {"rate": [1.0, 2.0]}, num_seeds=2, chunk_size=2, store=store, shard=(0, 2)
    )
    for analyse in (
        lambda: dynamics.landscape.sweep_phases(half),
        lambda: dynamics.landscape.sweep_critical_points(half, Quadratic()),
        lambda: dynamics.landscape.sweep_sharpness(half, Quadratic()),
    ):
        with pytest.raises(ValueError, match="2 of 4 runs of the sweep are not written yet"):
            analyse()


def test_the_flat_directions_at_a_critical_point_are_counted():
    """L = ½(rate·w₀² + w₁² − w₂²) with rate 10⁻¹⁰ is flat along w₀ within the eigenvalue tolerance
    (10⁻⁸ of the largest): one zero eigenvalue there, none at rate 3; the index is 1 at both."""
    ds = dynamics.sweep(Quadratic(), {"rate": [1e-10, 3.0]}, num_seeds=2)
    found = dynamics.landscape.sweep_critical_points(ds, Quadratic())
    assert found["critical_point.zero_count"].values.tolist() == [[1, 1], [0, 0]]
    assert np.all(found["critical_point.index"] == 1)
