"""What a store keeps is never stale, never holed, never silently overwritten: a code change, a
lost, truncated or edited file, a second writer and a failing disk are each named, and a rerun
repairs what can be repaired to the uninterrupted result bit for bit."""

import errno
import functools
import importlib
import json
import os
import re
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
from attnflow import _runtime, cli
from attnflow.papers import papers

from ._store_sims import SlowDecay

ROOT = Path(__file__).parents[1]
GRID = {"rate": [0.5, 2.0]}


def _sweep(store, **options):
    return dynamics.sweep(SlowDecay(), GRID, num_seeds=3, chunk_size=2, store=store, **options)


def _reference():
    return dynamics.sweep(SlowDecay(), GRID, num_seeds=3, chunk_size=2)


# -- a result knows the code that made it -------------------------------------------------------

MODULE = """
import jax
import dynamics

class Decay(dynamics.AbstractSimulation):
    k: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        y0 = jax.random.uniform(key, (), self.dtype)
        return dynamics.ode_flow(lambda t, y, args: -{factor} * self.k * y, y0, t1=1.0)
"""


def _users_module(folder: Path, factor: str, monkeypatch):
    """A user's module `mymod` with the loss scaled by `factor`, imported afresh."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (folder / "mymod.py").write_text(MODULE.format(factor=factor))
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    if "mymod" in sys.modules:
        return importlib.reload(sys.modules["mymod"])
    return importlib.import_module("mymod")


@pytest.mark.slow
def test_a_code_change_is_refused_naming_it_and_overwrite_replaces(tmp_path, monkeypatch):
    store = tmp_path / "d.zarr"
    first = _users_module(tmp_path, "1.0", monkeypatch)
    dynamics.sweep(first.Decay(), {"k": [1.0, 2.0]}, num_seeds=2, store=store)
    code = json.loads(dynamics.load_sweep(store).attrs["code"])
    assert code["module"] == "mymod" and list(code["sources"]) == ["mymod.py"] and code["program"]

    changed = _users_module(tmp_path, "3.0", monkeypatch)  # the loss changes
    with pytest.raises(ValueError, match=r"made by other code.*compiled program differs.*mymod\.py"):
        dynamics.sweep(changed.Decay(), {"k": [1.0, 2.0]}, num_seeds=2, store=store)
    ds = dynamics.sweep(changed.Decay(), {"k": [1.0, 2.0]}, num_seeds=2, store=store, overwrite=True)
    y = ds["value"].values
    np.testing.assert_allclose(y[..., 1], y[..., 0] * np.exp(-3.0 * np.array([1.0, 2.0]))[:, None], rtol=1e-6)

    # a comment changes only the source: the program is the same, the file is still named
    (tmp_path / "mymod.py").write_text(MODULE.format(factor="3.0") + "# a comment\n")
    commented = importlib.reload(sys.modules["mymod"])
    with pytest.raises(ValueError, match=r"source files of mymod changed: mymod\.py") as refused:
        dynamics.sweep(commented.Decay(), {"k": [1.0, 2.0]}, num_seeds=2, store=store)
    assert "compiled program" not in str(refused.value)


# -- integrity: every file checked when read, damage named and repaired --------------------------


@pytest.mark.slow
def test_a_deleted_or_truncated_chunk_is_named_and_a_rerun_repairs_it(tmp_path):
    store = tmp_path / "s.zarr"
    _sweep(store)
    reference = _reference()
    assert dynamics.store.check_store(store).state == "complete"
    (store / "time" / "1.0.0").unlink()  # rate=2.0, seeds 0-1
    chunk = store / "value" / "0.1.0.0"  # rate=0.5, seed 2
    chunk.write_bytes(chunk.read_bytes()[:-3])
    report = dynamics.store.check_store(store)
    assert report.state == "damaged" and report.repairable
    assert (
        "block 1 (rate=0.5, seeds 2-2): value: value/0.1.0.0 differs from its checksum" in report.problems[0]
    )
    assert any("(rate=2.0, seeds 0-1): time: time/1.0.0 is missing" in p for p in report.problems)
    with pytest.raises(
        dynamics.store.StoreNeedsRuns, match=r"is damaged.*value/0.1.0.0 differs.*runs the damaged"
    ):
        dynamics.load_sweep(store)
    with pytest.warns(UserWarning, match="2 damaged block"):
        _sweep(store)  # the same sweep reruns the damaged blocks, and only them
    xr.testing.assert_identical(dynamics.load_sweep(store), reference)


def test_attnflow_check_reports_and_repairs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    store = tmp_path / "s.zarr"
    _sweep(store)
    (store / "final" / "0.0.0").unlink()
    assert cli.main(["check", str(store)]) == 1
    out = capsys.readouterr().out
    assert "damaged, 4 of 4 blocks written" in out and "final/0.0.0 is missing" in out and "--repair" in out
    assert cli.main(["check", str(store), "--repair"]) == 0
    assert "after the repair:" in capsys.readouterr().out
    xr.testing.assert_identical(dynamics.load_sweep(store), _reference())
    assert cli.main(["check", str(tmp_path)]) == 1
    assert "not a sweep store attnflow can check" in capsys.readouterr().out
    assert cli.main(["check", str(tmp_path / "typo.zarr"), "--repair"]) == 2  # refused, not foreign
    assert "typo.zarr does not exist" in capsys.readouterr().err


def test_edited_settings_are_named_on_load_and_refused_on_resume(tmp_path):
    store = tmp_path / "s.zarr"
    _sweep(store)
    attrs = json.loads((store / ".zattrs").read_text())
    attrs["config"] = attrs["config"].replace('"pause": 0.0', '"pause": 9.0')
    (store / ".zattrs").write_text(json.dumps(attrs))
    report = dynamics.store.check_store(store)
    assert report.state == "damaged" and not report.repairable
    assert report.problems == (".zattrs differs from its checksum (changed or truncated)",)
    with pytest.raises(ValueError, match=r"\.zattrs differs.*make it again"):
        dynamics.load_sweep(store)
    with pytest.raises(ValueError, match=r"is damaged, so it cannot be resumed: \.zattrs differs"):
        _sweep(store)


def test_a_saved_sweep_is_checked_when_read(tmp_path):
    path = dynamics.store.save_sweep(_reference(), tmp_path / "saved.zarr")
    assert dynamics.store.check_store(path).state == "complete"
    (path / "value" / "1.0.0.0").unlink()
    with pytest.raises(ValueError, match="value/1.0.0.0 is missing"):
        dynamics.load_sweep(path)


# -- writers: one replaces only alone, several share the blocks ----------------------------------


def _writer(store: Path, overwrite=False, log="", pause=0.0, hold="", progress=False) -> subprocess.Popen:
    script = textwrap.dedent(
        f"""
        import jax
        jax.config.update("jax_enable_x64", True)
        import dynamics
        from tests._store_sims import SlowDecay
        sim = SlowDecay(pause={pause}, log={log!r}, hold={hold!r})
        dynamics.sweep(sim, {GRID!r}, num_seeds=6, chunk_size=2, store={str(store)!r},
                       overwrite={overwrite}, progress={progress})
        """
    )
    return subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_an_entry(folder: Path, process: subprocess.Popen) -> None:
    """Wait (at most 4 minutes) until `folder` holds a file, while `process` runs."""
    deadline = time.monotonic() + 240
    while not (folder.is_dir() and any(folder.iterdir())) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-2000:]
        time.sleep(0.05)


def _wait_for_a_block(store: Path, process: subprocess.Popen) -> None:
    _wait_for_an_entry(store / ".attnflow_units_done", process)


@pytest.mark.slow
def test_overwrite_is_refused_while_another_process_writes(tmp_path):
    store, hold = tmp_path / "s.zarr", tmp_path / "hold"
    hold.touch()  # the first writer's runs wait until the refusal is seen
    first = _writer(store, hold=str(hold))
    _wait_for_an_entry(store / ".attnflow_writers", first)  # the first writer is registered
    with pytest.raises(ValueError, match=rf"is being written by pid {first.pid} on .*overwrite replaces"):
        dynamics.sweep(SlowDecay(), GRID, num_seeds=6, chunk_size=2, store=store, overwrite=True)
    hold.unlink()
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    assert dynamics.store.check_store(store).state == "complete"


@pytest.mark.slow
def test_two_identical_writers_share_the_blocks_and_compute_none_twice(tmp_path):
    store, log = tmp_path / "s.zarr", tmp_path / "runs.log"
    writers = [_writer(store, log=str(log), pause=0.05, progress=True) for _ in range(2)]
    ran_here = 0
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err[-2000:]
        last = [line for line in err.splitlines() if line.startswith("blocks: ")][-1]
        total = int(last.split("/")[1].split()[0])
        ran_here += int(last.split("; ")[1].split(" run here")[0]) if "; " in last else total
    runs = log.read_text().splitlines()
    assert len(runs) == len(set(runs)) == 2 * 6, "every run computed exactly once"
    assert ran_here == total, "the progress of each counts the blocks it ran"
    expected = dynamics.sweep(SlowDecay(), GRID, num_seeds=6, chunk_size=2)
    xr.testing.assert_identical(dynamics.load_sweep(store).drop_attrs(), expected.drop_attrs())
    assert not list((store / ".attnflow_claims").iterdir()) and not list(
        (store / ".attnflow_writers").iterdir()
    )


MOMENTS = ["before its first block", "after its first block", "after its last block"]


@pytest.mark.slow
@pytest.mark.parametrize("moment", MOMENTS)
def test_a_second_writer_started_at_any_moment_of_the_first_leaves_the_uninterrupted_store(tmp_path, moment):
    """An identical sweep started while the first is registered but its runs wait (before any
    block is written), once its first block is written, or once it has ended: both end well, every
    run is computed once, and the store is the sweep run alone."""
    store, log, hold = tmp_path / "s.zarr", tmp_path / "runs.log", tmp_path / "hold"
    hold.touch()  # the runs wait while it exists
    first = _writer(store, log=str(log), hold=str(hold), pause=0.05)
    _wait_for_an_entry(store / ".attnflow_writers", first)
    if moment != MOMENTS[0]:
        hold.unlink()
        _wait_for_a_block(store, first)
    if moment == MOMENTS[2]:
        first.wait(timeout=300)
    second = _writer(store, log=str(log), hold=str(hold), pause=0.05)
    hold.unlink(missing_ok=True)
    for writer in (first, second):
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err[-2000:]
    runs = log.read_text().splitlines()
    assert len(runs) == len(set(runs)) == 2 * 6, "every run computed exactly once"
    expected = dynamics.sweep(SlowDecay(), GRID, num_seeds=6, chunk_size=2)
    xr.testing.assert_identical(dynamics.load_sweep(store).drop_attrs(), expected.drop_attrs())


def _command(out: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "attnflow", "sweep", "tests._store_sims:Logistic", "--grid", "rate=1,2"]
    argv += ["--seeds", "256", "--analyse", "phases", "--out", str(out)]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_a_second_command_started_during_the_analysis_and_plots_of_the_first_leaves_its_store(tmp_path):
    """`attnflow sweep ... --analyse phases` started again once the first has written its blocks
    (while it adds its analysis and draws its plots): both end well, and the store, analysis
    included, is that of the command run alone."""
    first = _command(tmp_path / "o")
    lines = []
    for line in first.stdout:  # the blocks are written: the analysis and the plots come next
        lines.append(line)
        if "blocks written" in line:
            break
    second = _command(tmp_path / "o")
    assert second.wait(timeout=300) == 0, second.stdout.read()[-2000:]
    assert first.wait(timeout=300) == 0, "".join(lines) + first.stdout.read()[-2000:]
    alone = _command(tmp_path / "alone")
    assert alone.wait(timeout=300) == 0
    stored, expected = (dynamics.load_sweep(tmp_path / out / "sweep.zarr") for out in ("o", "alone"))
    assert "phases.count" in stored
    xr.testing.assert_identical(stored.drop_attrs(), expected.drop_attrs())
    for process in (first, second, alone):
        process.stdout.close()


# -- file-system failures: one line, before the work where possible, resumable after it ----------


def _simulate(out):
    return cli.main(["simulate", "tests._store_sims:SlowDecay", "--seeds", "2", "--out", str(out)])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: (tmp / "file").write_text("x") and tmp / "file", "it is a file, not a folder"),
        (lambda tmp: (tmp / "link").symlink_to(tmp / "missing") or tmp / "link", "which does not exist"),
        (lambda tmp: tmp / ("n" * 300), "a name in it is too long"),
        (lambda tmp: Path("/proc/attnflow-out"), "cannot be written"),  # refused to root too
    ],
)
def test_an_unwritable_out_is_one_line_before_any_work(make, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(dynamics, "sweep", lambda *a, **k: pytest.fail("the work started"))
    out = make(tmp_path)
    assert _simulate(out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--out" in err


def test_verify_json_unwritable_is_refused_before_any_check(tmp_path, capsys, monkeypatch):
    from attnflow import _workers

    monkeypatch.setattr(_workers, "run_pieces", lambda *a, **k: pytest.fail("a check ran"))
    (tmp_path / "report").mkdir()
    paper = next(iter(papers()))
    assert cli.main(["verify", "--paper", paper, "--json", str(tmp_path / "report")]) == 2
    assert "--json" in capsys.readouterr().err


def test_a_full_disk_mid_sweep_is_one_line_and_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    from dynamics import _store

    writes = []
    real = _store._write_cells

    def failing(group, plan, cells):
        writes.append(cells)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "sweep.zarr" / "y"))
        real(group, plan, cells)

    monkeypatch.setattr(_store, "_write_cells", failing)
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--out", str(tmp_path)]
    argv += ["--seeds", "40"]  # two blocks of 40 runs
    monkeypatch.chdir(ROOT)
    assert cli.main(argv) == 3
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the progress bars
    assert "Traceback" not in err and last.startswith("attnflow: error: no space left on the device")
    assert "1 of 2 blocks done" in last and "rerun the same command to resume" in last
    monkeypatch.setattr(_store, "_write_cells", real)
    assert cli.main(argv) == 0
    expected = dynamics.sweep(SlowDecay(), GRID, num_seeds=40)
    stored = dynamics.load_sweep(tmp_path / "sweep.zarr")
    xr.testing.assert_identical(stored.drop_attrs(), expected.drop_attrs())
    assert (tmp_path / "plots").is_dir() and not list(tmp_path.glob(".*attnflow-tmp*"))


def test_atomic_writes_leave_nothing_half_written(tmp_path):
    import matplotlib.pyplot as plt

    from figures._save import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    fig.savefig = lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError):
        save_figure(fig, tmp_path, "figure", data={}, config={})
    assert list(tmp_path.iterdir()) == []


def test_temporaries_of_killed_processes_are_removed(tmp_path):
    from dynamics.store import remove_stale_temporaries, temporary_path

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    mine = temporary_path(tmp_path / "sweep.zarr")
    mine.mkdir()
    theirs = tmp_path / mine.name.replace(f"-{os.getpid()}-", f"-{dead.stdout.strip()}-")
    theirs.mkdir()
    (tmp_path / ".other.tmp").write_text("not ours")
    assert remove_stale_temporaries(tmp_path) == [theirs]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, ".other.tmp"])


# -- sizes and seeds refused before allocating (a level's own sizes and values: its paper's tests)


def test_a_seed_past_the_largest_is_refused_before_any_work(tmp_path, capsys):
    argv = ["simulate", "tests._store_sims:SlowDecay", "--seeds", "10", "--seed", str(2**63 - 5)]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reaches past the largest seed" in err, err
    assert not list(tmp_path.iterdir())


def test_max_bytes_from_the_command_line(tmp_path, capsys):
    argv = ["simulate", "tests._store_sims:SlowDecay", "--seeds", "40", "--out", str(tmp_path)]
    assert cli.main([*argv, "--max-bytes", "1k"]) == 2
    err = capsys.readouterr().err
    assert "over the limit of 1 kB" in err and "(max_bytes); on the command line, --max-bytes SIZE" in err
    with pytest.raises(SystemExit, match="2"):
        cli.main([*argv, "--max-bytes", "lots"])
    assert "a size must be a positive number of bytes" in capsys.readouterr().err


# -- grids, user modules and runs that say what they know ----------------------------------------


@pytest.mark.unchecked_types
@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"rate": [1.0, 2.0, 1.0]}, r"grid axis 'rate' repeats 1.0"),
        ({"rate": (r for r in [1.0, 2.0])}, r"must be a list or tuple of values, got generator"),
        ({"rate": 1.0}, r"must be a list or tuple of values, got float 1.0"),
        ({"pause": "01"}, r"must be a list or tuple of values, got str '01'"),
        ({"rate": np.ones((2, 2))}, r"must be one-dimensional"),
    ],
)
def test_bad_grids_are_refused_when_parsed(grid, message):
    with pytest.raises(ValueError, match=message):
        dynamics.sweep(SlowDecay(), grid, num_seeds=1)


def test_a_key_given_twice_and_duplicate_values_on_the_command_line(tmp_path, capsys):
    argv = ["sweep", "tests._store_sims:SlowDecay", "--seeds", "1", "--out", str(tmp_path)]
    assert cli.main([*argv, "--grid", "rate=1,2", "--grid", "rate=3"]) == 2
    assert "--grid names 'rate' twice (rate=1,2 and rate=3)" in capsys.readouterr().err
    assert cli.main([*argv, "--grid", "rate=1,2,1.0"]) == 2
    assert "grid axis 'rate' repeats 1.0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise RuntimeError('no data here')", r"it raised RuntimeError at .*broken\.py:1: no data here"),
        ("def f(:\n    pass", r"a syntax error at .*broken\.py:1"),
        (
            "import dynamics\nclass Base(dynamics.AbstractSimulation):\n    pass",
            r"broken:Base is abstract \(it does not define run, dtype\)",
        ),
    ],
)
def test_a_broken_users_module_is_one_line(source, message, tmp_path, capsys, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("broken", None)
    request.addfinalizer(lambda: sys.modules.pop("broken", None))  # this test's module goes with it
    (tmp_path / "broken.py").write_text(source)
    target = "broken:Base" if "Base" in source else "broken:Thing"
    assert cli.main(["simulate", target, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err), err


def test_float64_without_x64_is_refused_with_the_fix():
    import jax

    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match=r"x64 mode is off.*jax_enable_x64"):
            dynamics.sweep(SlowDecay(), {}, num_seeds=1)
        with pytest.raises(ValueError, match=r"x64 mode is off"):
            dynamics.simulate(SlowDecay(), num_seeds=1)
    finally:
        jax.config.update("jax_enable_x64", True)


def test_a_field_without_param_is_refused_when_the_class_is_defined():
    with pytest.raises(TypeError, match=r"Decay.k is declared without dynamics.param"):

        class Decay(dynamics.AbstractSimulation):
            k: float = 1.0
            dtype: str = dynamics.dtype_param("float64")

            def run(self, key):
                raise NotImplementedError


def test_events_without_names_are_refused():
    import jax.numpy as jnp

    class Half(dynamics.AbstractSimulation):
        dtype: str = dynamics.dtype_param("float64")

        def run(self, key):
            half = dynamics.Crossing(lambda y: y - 0.5)
            return dynamics.ode_flow(lambda t, y, args: -y, jnp.array(1.0), t1=2.0, events={"half": half})

    with pytest.raises(ValueError, match=r"stops on the events \('half',\).*declares event_names = \(\)"):
        dynamics.sweep(Half(), {}, num_seeds=1)


# -- kills at any moment: a rerun completes the store, and nothing half-written stays ------------


def _cli_sweep(out: Path, pause: float) -> subprocess.Popen:
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--grid", "scale=1,3"]
    argv += ["--seeds", "3", "--set", f"pause={pause}", "--out", str(out)]
    code = f"import sys; from attnflow.cli import main; sys.exit(main({argv!r}))"
    # at this process's XLA level, so that the blocks it writes equal this process's bit for bit
    level = _runtime.BACKEND_OPTIMIZATION
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=level),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _leftovers(out: Path) -> list[Path]:
    return [
        p
        for p in out.rglob("*")
        if "attnflow-tmp" in p.name or (p.suffix == ".png" and p.stat().st_size == 0)
    ]


@pytest.mark.parametrize(
    "delay", [pytest.param(0.3, marks=pytest.mark.slow), 2.5, pytest.param(6.0, marks=pytest.mark.slow)]
)
def test_a_kill_at_any_moment_is_completed_by_a_rerun(delay, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    process = _cli_sweep(out, pause=0.1)
    time.sleep(delay)
    process.kill()
    process.wait()
    monkeypatch.chdir(ROOT)
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--grid", "scale=1,3"]
    assert cli.main([*argv, "--seeds", "3", "--set", "pause=0.1", "--out", str(out)]) == 0
    expected = dynamics.sweep(SlowDecay(pause=0.1), {"rate": [0.5, 2.0], "scale": [1.0, 3.0]}, num_seeds=3)
    stored = dynamics.load_sweep(out / "sweep.zarr")
    xr.testing.assert_identical(stored.drop_attrs(), expected.drop_attrs())
    assert not _leftovers(out) and not [p for p in tmp_path.iterdir() if "attnflow-tmp" in p.name]


@pytest.mark.slow
def test_sigterm_ends_the_command_and_leaves_no_temporaries(tmp_path):
    out = tmp_path / "out"
    process = _cli_sweep(out, pause=0.3)
    _wait_for_a_block(out / "sweep.zarr", process)
    process.terminate()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err[-2000:]
    assert "Traceback" not in err and not _leftovers(out)
    written, total = dynamics.store.sweep_progress(out / "sweep.zarr")
    assert 1 <= written < total


@pytest.mark.parametrize(
    "exception, signum", [(cli._Terminated, signal.SIGTERM), (KeyboardInterrupt, signal.SIGINT)]
)
def test_a_signal_raised_inside_a_finaliser_is_sent_again(exception, signum, monkeypatch):
    # Python can only print an exception raised in a finaliser (or JAX's garbage-collection
    # callback) and carries on; the command line sends the signal again so that it ends
    sent, other = [], []
    monkeypatch.setattr(os, "kill", lambda pid, s: sent.append((pid, s)))
    monkeypatch.setattr(sys, "unraisablehook", functools.partial(cli._redeliver, other.append))

    class Finalised:
        def __del__(self):
            raise exception

    Finalised()
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent == [(os.getpid(), signum)] and not other


def test_any_other_exception_in_a_finaliser_goes_to_the_previous_hook(monkeypatch):
    other = []
    monkeypatch.setattr(sys, "unraisablehook", functools.partial(cli._redeliver, other.append))

    class Finalised:
        def __del__(self):
            raise RuntimeError("in a finaliser")

    Finalised()
    assert [type(u.exc_value) for u in other] == [RuntimeError]


@pytest.mark.slow
def test_check_repairs_a_users_module_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "cwdmod.py").write_text(MODULE.format(factor="1.0"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "cwdmod", raising=False)
    assert cli.main(["sweep", "cwdmod:Decay", "--grid", "k=1,2", "--seeds", "2", "--out", "d"]) == 0
    (tmp_path / "d" / "sweep.zarr" / "value" / "1.0.0").unlink()
    # a fresh process, as a user runs it, finds the module where the sweep found it
    code = "import sys; from attnflow.cli import main; sys.exit(main(['check', 'd/sweep.zarr', '--repair']))"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "attnflow: warning: 1 damaged block(s)" in result.stderr and "Traceback" not in result.stderr
    assert dynamics.store.check_store(tmp_path / "d" / "sweep.zarr").state == "complete"


@pytest.mark.slow  # four sweeps with their plots; `dynamics.store.drop_added`'s example runs by default
def test_a_lost_chunk_of_an_analysis_is_repaired_by_check_or_by_the_analysis_again(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(ROOT)
    argv = [
        "sweep",
        "tests._store_sims:Logistic",
        "--grid",
        "rate=1,2",
        "--seeds",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert cli.main([*argv, "--analyse", "phases"]) == 0
    store = tmp_path / "sweep.zarr"
    reference = dynamics.load_sweep(store)
    (store / "phases.count" / "0.0").unlink()
    assert cli.main(["check", str(store), "--repair"]) == 0
    assert "removed the damaged analyses" in capsys.readouterr().out
    assert dynamics.store.check_store(
        store
    ).state == "complete" and "phases.count" not in dynamics.load_sweep(store)
    assert cli.main([*argv, "--analyse", "phases"]) == 0  # added again
    (store / "phases.count" / "0.0").unlink()
    capsys.readouterr()
    assert cli.main([*argv, "--analyse", "phases"]) == 0  # removed and added again at once
    assert "were damaged (added variables: phases.count/0.0 is missing)" in capsys.readouterr().out
    xr.testing.assert_identical(dynamics.load_sweep(store).drop_attrs(), reference.drop_attrs())
