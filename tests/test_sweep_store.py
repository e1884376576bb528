"""Sweeps written block by block to a zarr store: the store equals the in-memory sweep; a sweep
killed mid-way and run again gives the uninterrupted result bit for bit; shards run as separate
processes make the one-process result; anything else at the path is refused before work."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import dynamics

from ._store_sims import SlowDecay

ROOT = Path(__file__).parents[1]
GRID = {"rate": [0.5, 2.0], "scale": [1.0, 3.0]}


def _script(store: Path, shard: tuple[int, int], pause: float) -> str:
    return textwrap.dedent(
        f"""
        import jax
        jax.config.update("jax_enable_x64", True)
        import dynamics
        from tests._store_sims import SlowDecay
        dynamics.sweep(SlowDecay(pause={pause}), {GRID!r}, num_seeds=6, chunk_size=4,
                       store={str(store)!r}, shard={shard!r})
        """
    )


def _start(store: Path, shard=(0, 1), pause=0.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _script(store, shard, pause)],
        cwd=ROOT,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _in_memory() -> xr.Dataset:
    return dynamics.sweep(SlowDecay(), GRID, num_seeds=6, chunk_size=4)


@pytest.mark.slow
def test_the_store_equals_the_in_memory_sweep(tmp_path):
    memory = _in_memory()
    stored = dynamics.sweep(SlowDecay(), GRID, num_seeds=6, chunk_size=4, store=tmp_path / "s.zarr")
    xr.testing.assert_identical(stored.load(), memory)
    assert memory["stop"].dtype.kind == "i" and memory["time"].dims == ("rate", "scale", "seed", "save")
    # per program (scale) and rate: a block of 4 seeds and one of 2 (a block holds one rate's cells
    # in order, at most chunk_size runs)
    assert dynamics.sweep_progress(tmp_path / "s.zarr") == (8, 8)
    # every block's marker says where and how long it ran
    record = json.loads(next((tmp_path / "s.zarr" / ".attnflow_units_done").iterdir()).read_text())
    assert record["seconds"] >= 0 and record["host"]


def _markers(done) -> list:
    """The block markers written (not a marker's temporary file, still being written)."""
    return [path for path in done.iterdir() if not path.name.startswith(".")]


@pytest.mark.slow
def test_a_killed_sweep_resumes_to_the_uninterrupted_result(tmp_path):
    store = tmp_path / "s.zarr"
    process = _start(store, pause=0.2)
    done = store / ".attnflow_units_done"
    deadline = time.monotonic() + 240
    while not (done.exists() and _markers(done)) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-2000:]
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    written, total = dynamics.sweep_progress(store)
    assert 1 <= written < total, "the kill should land between blocks"
    with pytest.raises(ValueError, match=rf"is incomplete: {written} of {total} blocks written"):
        dynamics.load_sweep(store)
    resumed = dynamics.sweep(SlowDecay(pause=0.2), GRID, num_seeds=6, chunk_size=4, store=store)
    # the pause changes no number: the uninterrupted sweep without it has the same data
    xr.testing.assert_identical(resumed.load().drop_attrs(), _in_memory().drop_attrs())


@pytest.mark.slow
def test_two_shards_in_two_processes_make_the_one_process_result(tmp_path):
    store = tmp_path / "s.zarr"
    processes = [_start(store, shard=(i, 2)) for i in (0, 1)]  # both race to create the store
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
    xr.testing.assert_identical(dynamics.load_sweep(store), _in_memory())


def test_another_sweep_or_a_foreign_folder_is_refused_before_work(tmp_path):
    store = tmp_path / "s.zarr"
    dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=store)
    with pytest.raises(ValueError, match=r"other settings.*grid: \{'rate': \[1.0\]\} in the store"):
        dynamics.sweep(SlowDecay(), {"rate": [3.0]}, num_seeds=2, store=store)
    with pytest.raises(ValueError, match=r"chunk_size: 64 in the store, 1 now"):
        dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=store, chunk_size=1)
    foreign = tmp_path / "data"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="exists and is not an attnflow sweep store"):
        dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=foreign)
    assert (foreign / "notes.txt").read_text() == "mine"
    with pytest.raises(ValueError, match="exists and is not an attnflow sweep store"):
        dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=foreign / "notes.txt")
    with pytest.raises(ValueError, match="is not a sweep written by attnflow"):
        dynamics.load_sweep(foreign)
    with pytest.raises(ValueError, match=r"shard must be \(i, n\)"):
        dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=store, shard=(2, 2))


@pytest.mark.slow
def test_only_the_blocks_of_a_shard_run(tmp_path):
    ds = dynamics.sweep(SlowDecay(), GRID, num_seeds=6, chunk_size=4, store=tmp_path / "s.zarr", shard=(0, 2))
    assert dynamics.sweep_progress(tmp_path / "s.zarr") == (4, 8)
    final = np.asarray(ds["final"])
    assert np.isnan(final).any() and np.isfinite(final).any()  # the other shard's cells are still empty


@pytest.mark.slow
def test_the_launcher_runs_the_shards_as_local_jobs(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    from attnflow import _runtime, cli

    monkeypatch.chdir(ROOT)
    # the jobs compile at this process's level, so their numbers equal it bit for bit
    monkeypatch.setenv("XLA_FLAGS", _runtime.BACKEND_OPTIMIZATION)
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--grid", "scale=1,3"]
    argv += ["--seeds", "6", "--out", str(tmp_path), "--launch", "2", "--cluster", "local"]
    assert cli.main(argv) == 0
    ds = dynamics.load_sweep(tmp_path / "sweep.zarr")
    expected = dynamics.sweep(SlowDecay(), GRID, num_seeds=6)
    xr.testing.assert_identical(ds.drop_attrs(), expected.drop_attrs())
    assert json.loads(ds.attrs["config"]) == json.loads(expected.attrs["config"])
    assert (tmp_path / "plots").is_dir() and len(list((tmp_path / "jobs").glob("*_log.out"))) == 2
