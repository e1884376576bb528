"""Sweeps written block by block to a zarr store: the store equals the in-memory sweep; a sweep
killed mid-way and run again gives the uninterrupted result bit for bit; shards run as separate
processes make the one-process result; anything else at the path is refused before work."""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import ClassVar

import jax
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import dynamics
import dynamics._batch
from dynamics._simulation import batched_run, static_part
from dynamics._store import make_plan

from ._store_sims import Logistic, SlowDecay

if importlib.util.find_spec("submitit"):  # on import it sets up logging on the streams open then:
    import submitit  # noqa: F401 -- so before a test captures them (capsys), not inside one

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
    # per program (scale) and rate: two blocks of 3 seeds (6 seeds need two blocks of at most
    # chunk_size runs, as even as two can be; a block holds one rate's cells in order)
    assert dynamics.store.sweep_progress(tmp_path / "s.zarr") == (8, 8)
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
    written, total = dynamics.store.sweep_progress(store)
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


def _called_widths(monkeypatch) -> list[int]:
    """The runs of each batched call from now on (the leading size of its arguments)."""
    widths = []
    batched = dynamics._batch._batched

    def spy(fn, args, meters):
        widths.append(len(jax.tree.leaves(args)[0]))
        return batched(fn, args, meters)

    spy.lower = batched.lower  # a sweep compiles its programs ahead through it
    monkeypatch.setattr(dynamics._batch, "_batched", spy)
    return widths


def test_each_program_of_a_sweep_is_called_at_one_width_and_compiles_once(monkeypatch):
    """5 seeds in blocks of at most 4 are cells of 3 and 2 seeds, each run in a call of 3 (the
    cell of 2 repeats its last run), not calls of 4 and 1 that compile the program twice; the
    numbers of a point, in both its cells, are its own, run alone (to rounding: a call's width can
    change the last bit; every point of every level: `test_levels_contract`)."""
    widths = _called_widths(monkeypatch)
    ds = dynamics.sweep(SlowDecay(), GRID, num_seeds=5, chunk_size=4)
    assert widths == [3] * 8  # 2 programs (scale) x 2 rates x 2 cells
    rate, scale = GRID["rate"][-1], GRID["scale"][-1]
    alone = dynamics.simulate(SlowDecay(rate=rate, scale=scale), num_seeds=5)
    np.testing.assert_allclose(ds["value"].sel(rate=rate, scale=scale), alone["value"], rtol=1e-14)


class _Descent(dynamics.AbstractSimulation):
    """Two steps of gradient descent on rate·‖w‖² from w ~ N(0, scale²): a class of this test
    alone, so that its programs are compiled here, not found compiled by another test."""

    rate: float = dynamics.param(1.0, dynamics.Interval(0), doc="curvature", traced=True)
    scale: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="one program per value")
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        w0 = self.scale * jax.random.normal(key, (2,), self.dtype)
        return dynamics.train(lambda w: self.rate * w @ w, w0, dynamics.gd(0.1), num_steps=2)


class _Traced(dynamics.AbstractSimulation):
    """Two steps of gradient descent on rate·‖w‖², recording each time its run is traced from
    Python (a class of this test alone, so that no other test has traced it)."""

    rate: float = dynamics.param(1.0, dynamics.Interval(0), doc="curvature", traced=True)
    scale: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="one program per value")
    dtype: str = dynamics.dtype_param("float64")
    traces: ClassVar[list] = []

    def run(self, key):
        self.traces.append(self.scale)
        w0 = self.scale * jax.random.normal(key, (2,), self.dtype)
        return dynamics.train(lambda w: self.rate * w @ w, w0, dynamics.gd(0.1), num_steps=2)


def test_a_sweep_traces_each_program_from_python_once():
    """The trace made before a sweep (its shapes, its fingerprint) is the one its blocks run,
    vmapped: one trace from Python per program, not one more for the batched call; and the
    numbers are, bit for bit, those of the batched run traced anew from Python."""
    grid = {"rate": [0.5, 1.0], "scale": [1.0, 2.0]}
    ds = dynamics.sweep(_Traced(), grid, num_seeds=3, chunk_size=2)
    assert sorted(_Traced.traces) == [1.0, 2.0]
    for rate in grid["rate"]:
        for scale in grid["scale"]:
            static = static_part(_Traced(scale=scale))
            runs, _ = dynamics.run_many(
                batched_run(static), {"rate": np.full(3, rate)}, np.arange(3), None, chunk_size=2
            )
            np.testing.assert_array_equal(ds["final"].sel(rate=rate, scale=scale), runs.final)


def test_a_sweep_compiles_every_program_before_any_block_runs(monkeypatch, tmp_path):
    """Both programs (one per `scale`) compile before the first block, and no block compiles."""
    compiled_in_blocks = []
    run = dynamics._store._Blocks.run

    def counted(self, u):
        with dynamics.recording_compiles() as record:
            run(self, u)
        compiled_in_blocks.append(record.stats.compiled + record.stats.cached)

    monkeypatch.setattr(dynamics._store._Blocks, "run", counted)
    grid = {"rate": [0.5, 1.0], "scale": [1.0, 2.0]}
    with dynamics.recording_compiles() as record:
        dynamics.sweep(_Descent(), grid, num_seeds=3)
    assert compiled_in_blocks == [0, 0] and record.stats.compiled >= 2
    compiled_in_blocks.clear()
    dynamics.sweep(_Descent(scale=3.0), {"rate": [0.5, 1.0]}, num_seeds=3, store=tmp_path / "sweep.zarr")
    assert compiled_in_blocks == [0]


def test_run_many_splits_the_runs_into_chunks_as_even_as_their_number_allows(monkeypatch):
    widths = _called_widths(monkeypatch)
    doubled, finite = dynamics.run_many(lambda x: 2.0 * x, np.arange(65.0), chunk_size=64)
    assert widths == [33, 33] and finite.all()
    np.testing.assert_array_equal(doubled, 2.0 * np.arange(65.0))


def test_run_many_cuts_host_arrays_into_chunks_without_compiling():
    """Cutting NumPy arguments into chunks (the last padded) happens on the host: the only program
    is the runs' own, one per chunk width (odd widths, which no other test compiles)."""
    with dynamics.recording_compiles() as record:
        tripled, _ = dynamics.run_many(lambda x, y: 3.0 * x + y, np.arange(13.0), np.ones(13), chunk_size=7)
    np.testing.assert_array_equal(tripled, 3.0 * np.arange(13.0) + 1.0)
    assert record.stats.compiled + record.stats.cached == 1


def _in_order_count(runs: list[int], width: int) -> int:
    """How many blocks of at most `width` runs the cells of `runs` fill, taken in order."""
    count, size = 1, 0
    for n in runs:
        count, size = (count + 1, n) if size and size + n > width else (count, size + n)
    return count


@settings(max_examples=200, deadline=None)
@given(
    programs=st.lists(st.integers(0, 2), min_size=1, max_size=12),
    num_seeds=st.integers(1, 40),
    chunk_size=st.integers(1, 70),
)
def test_a_plan_s_blocks_are_as_few_as_its_chunk_size_allows_and_its_calls_as_narrow(
    programs, num_seeds, chunk_size
):
    """Every cell once, each program's cells in order; a point's seeds in as few cells as
    `chunk_size` allows, each of as few seeds as that many cells allow (the last may hold fewer);
    no more blocks than cells of `chunk_size` seeds (and the rest) filled in order would make;
    each program's width the runs of its widest block, and one run narrower would need more
    blocks."""
    programs = [SlowDecay(scale=1.0 + p) for p in programs]  # one program per scale
    plan = make_plan(programs, {"point": programs}, programs, 0, num_seeds, chunk_size, {}, {})
    num_cells = -(-num_seeds // plan.seeds_per_chunk)
    seeds = [plan.seed_block(b).stop - plan.seed_block(b).start for b in range(num_cells)]
    assert sum(seeds) == num_seeds and num_cells == -(-num_seeds // chunk_size)
    assert seeds[0] == max(seeds) == -(-num_seeds // num_cells)
    full, rest = divmod(num_seeds, min(chunk_size, num_seeds))
    filled = [min(chunk_size, num_seeds)] * full + [rest] * bool(rest)
    for program in set(programs):
        blocks = [cells for static, cells in plan.units if static == program]
        cells = [cell for block in blocks for cell in block]
        points = [p for p, static in enumerate(programs) if static == program]
        assert cells == [(p, b) for p in points for b in range(num_cells)]
        assert max(sum(seeds[b] for _, b in block) for block in blocks) == plan.widths[program] <= chunk_size
        assert len(blocks) <= _in_order_count(filled * len(points), chunk_size)
        narrower = _in_order_count([seeds[b] for _, b in cells], plan.widths[program] - 1)
        assert plan.widths[program] == max(seeds) or narrower > len(blocks)


def test_a_store_laid_out_in_other_blocks_is_refused(tmp_path):
    """A store whose blocks an older attnflow packed otherwise is not resumed into a new layout."""
    store = tmp_path / "s.zarr"
    dynamics.sweep(SlowDecay(), {"rate": [1.0, 2.0]}, num_seeds=3, chunk_size=4, store=store)
    created = json.loads((store / ".attnflow_created").read_text())
    created["units"] = [[cell for block in created["units"] for cell in block]]  # one block of 6 runs
    (store / ".attnflow_created").write_text(json.dumps(created))
    with pytest.raises(ValueError, match=r"in other blocks \(blocks: 1, seeds per cell: 3; now 2 and 3\)"):
        dynamics.sweep(SlowDecay(), {"rate": [1.0, 2.0]}, num_seeds=3, chunk_size=4, store=store)


def test_another_sweep_or_a_foreign_folder_is_refused_before_work(tmp_path):
    store = tmp_path / "s.zarr"
    dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=store)
    with pytest.raises(ValueError, match=r"other settings.*grid: \{'rate': \[1.0\]\} in the store"):
        dynamics.sweep(SlowDecay(), {"rate": [3.0]}, num_seeds=2, store=store)
    with pytest.raises(ValueError, match=r"chunk_size: 64 in the store, 1 now"):
        dynamics.sweep(SlowDecay(), {"rate": [1.0]}, num_seeds=2, store=store, chunk_size=1)
    with pytest.raises(
        ValueError, match=r"holds a sweep of tests._store_sims:SlowDecay, not of tests._store_sims:Logistic"
    ):
        dynamics.sweep(Logistic(), {"rate": [1.0]}, num_seeds=2, store=store)
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
    assert dynamics.store.sweep_progress(tmp_path / "s.zarr") == (4, 8)
    final = np.asarray(ds["final"])
    assert np.isnan(final).any() and np.isfinite(final).any()  # the other shard's cells are still empty


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--job", "mem_gb=4"], "--job is a setting of --launch N's jobs"),
        (["--cluster", "local", "--job", "mem_gb=4"], "--cluster and --job are settings of --launch N"),
        (["--launch", "0"], "--launch must be >= 1"),
        (["--launch", "2", "--shard", "0/2"], "give --launch or --shard, not both"),
        (["--launch", "2", "--cluster", "local", "--job", "mem"], "--job expects key=value"),
        (["--launch", "2", "--cluster", "local", "--job", "no_such_parameter=1"], "bad --job parameter"),
        (["--launch", "2", "--cluster", "local", "--job", "timeout_min=soon"], "bad --job parameter"),
    ],
)
def test_the_launch_options_are_refused_before_any_work(tmp_path, monkeypatch, capsys, options, message):
    """A bad launch option is refused with exit status 2 before anything is written or removed: the
    store of an `--overwrite` stays as it was, and a new `--out` is not made."""
    pytest.importorskip("submitit")
    from attnflow import cli

    monkeypatch.chdir(ROOT)
    old = tmp_path / "old"
    store = dynamics.store.save_sweep(dynamics.sweep(SlowDecay(), GRID, num_seeds=2), old / "sweep.zarr")
    before = dynamics.store.check_store(store)
    for out in (old, tmp_path / "new"):
        argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--out", str(out)]
        assert cli.main([*argv, "--overwrite", *options]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert dynamics.store.check_store(store) == before and not (tmp_path / "new").exists()
    assert sorted(p.name for p in old.iterdir()) == ["sweep.zarr"]


def test_a_cluster_that_is_not_here_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    pytest.importorskip("submitit")
    if shutil.which("srun"):
        pytest.skip("this machine is a SLURM cluster")
    from attnflow import cli

    monkeypatch.chdir(ROOT)
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--out", str(tmp_path / "out")]
    assert cli.main(argv + ["--launch", "2", "--cluster", "slurm"]) == 2
    assert "--cluster slurm: " in capsys.readouterr().err and not (tmp_path / "out").exists()


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


def test_a_held_store_is_replaced_by_no_other_process_but_by_its_holder(tmp_path):
    """While a process holds a store (`hold_store`: a command from its first byte written to its
    last plot or analysis), another process's `--overwrite` is refused; the holder itself
    replaces the store and adds to it."""
    store = tmp_path / "sweep.zarr"
    argv = [sys.executable, "-m", "attnflow", "sweep", "tests._store_sims:Logistic", "--grid", "rate=1,2"]
    argv += ["--seeds", "2", "--out", str(tmp_path), "--overwrite"]
    with dynamics.store.hold_store(store):
        dynamics.sweep(Logistic(), {"rate": [0.5, 2.0]}, num_seeds=2, store=store)
        other = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        assert other.returncode == 2 and "is being written by another process" in other.stderr, other.stderr
        ds = dynamics.sweep(Logistic(), {"rate": [1.0, 2.0]}, num_seeds=2, store=store, overwrite=True)
        dynamics.store.add_to_store(store, dynamics.landscape.sweep_phases(ds.load()))
    assert (
        "phases.count" in dynamics.load_sweep(store) and dynamics.store.check_store(store).state == "complete"
    )
    dynamics.store.remove_store(store)  # let go: replaced by anyone
