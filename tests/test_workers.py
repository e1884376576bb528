"""`attnflow._workers`: the pieces of `verify` and `reproduce` run side by side in worker processes."""

import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

from attnflow._runtime import default_jobs
from attnflow._workers import costs, run_pieces, schedule
from attnflow.papers import papers


def _settings_and_double(x: int) -> tuple[bool, str | None, bool, int]:
    one_thread = "--xla_cpu_multi_thread_eigen=false" in os.environ.get("XLA_FLAGS", "")
    doubled = int(jax.jit(lambda y: 2 * y)(jax.numpy.int32(x)))  # a program compiled (or loaded) here
    return jax.config.jax_enable_x64, jax.config.jax_compilation_cache_dir, one_thread, doubled


def test_workers_return_results_in_order_with_the_command_line_settings(tmp_path):
    pieces = [(_settings_and_double, (i,)) for i in range(5)]
    # as many workers as cores: one XLA thread each (already so where the tests run one a core)
    one_thread = 2 >= default_jobs() or "--xla_cpu_multi_thread_eigen=false" in os.environ.get(
        "XLA_FLAGS", ""
    )
    expected = [(True, str(tmp_path), one_thread, 2 * i) for i in range(5)]
    results, compiling = run_pieces(pieces, 2, str(tmp_path))
    assert results == expected
    # each piece's compiling is recorded in its worker and added up here: a program per piece, in
    # each of the two workers compiled once and then taken from memory or loaded from the cache
    assert compiling.compiled + compiling.cached >= 2 and compiling.trace_seconds > 0
    assert [result[3] for result in run_pieces(pieces, 1, None)[0]] == [2 * i for i in range(5)]


def test_an_error_in_a_worker_reaches_the_caller():
    with pytest.raises(ZeroDivisionError):
        run_pieces([(divmod, (1, 1)), (divmod, (1, 0))], 2, None)


def _sleep_long(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    time.sleep(600)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its entry waits to be reaped


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_workers_end_when_the_process_that_started_them_is_killed(tmp_path):
    files = [str(tmp_path / name) for name in ("a", "b")]
    code = (
        "from attnflow._workers import run_pieces; from tests.test_workers import _sleep_long; "
        f"run_pieces([(_sleep_long, (f,)) for f in {files!r}], 2, None)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[1])
    deadline = time.monotonic() + 120
    while not all(Path(f).exists() for f in files) and time.monotonic() < deadline:
        assert parent.poll() is None
        time.sleep(0.1)
    parent.kill()  # nothing can tell the workers
    parent.wait()
    workers = [int(Path(f).read_text()) for f in files]
    deadline = time.monotonic() + 15
    while any(map(_running, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_running, workers))


@pytest.mark.parametrize("jobs", [0, -3])
def test_jobs_below_one_are_refused(jobs):
    with pytest.raises(ValueError, match="--jobs must be >= 1"):
        run_pieces([(divmod, (1, 1))], jobs, None)


def test_schedule_covers_every_piece_once_slowest_first():
    names = list(papers())
    pieces = schedule(names, ("checks", "figures"))
    assert sorted(pieces) == sorted((n, p) for n in names for p in ("checks", "figures"))
    declared = [papers()[name].info.cost[part] for name, part in pieces]
    assert declared == sorted(declared, reverse=True) and all(cost > 0 for cost in declared)


def test_full_sizes_are_scheduled_and_weighed_by_their_own_costs():
    """`verify --full` puts the papers in the order of their full checks' declared costs and
    weighs them so; where a piece declares no full cost (the figures), every piece keeps the quick
    costs, on one scale."""
    names = list(papers())
    full_checks = {name: papers()[name].info.cost["full checks"] for name in names}
    pieces = schedule(names, ("checks",), full=True)
    assert [full_checks[name] for name, _ in pieces] == sorted(full_checks.values(), reverse=True)
    assert costs(pieces, full=True) == [float(full_checks[name]) for name, _ in pieces]
    both = schedule(names, ("checks", "figures"), full=True)
    assert both == schedule(names, ("checks", "figures")) and costs(both, full=True) == costs(both)
