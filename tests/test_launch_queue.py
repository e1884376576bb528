"""`attnflow sweep --launch N` on a machine without a cluster: the jobs run at most one per core at
a time, queued, and no more jobs than the sweep has blocks are started."""

import os
import threading
from pathlib import Path

import pytest

from attnflow import _launch, cli

submitit = pytest.importorskip("submitit")  # imported here: its logger keeps the stream it finds at import

ROOT = Path(__file__).resolve().parent.parent


def test_local_jobs_run_at_most_limit_at_a_time_and_all_of_them(tmp_path, monkeypatch):
    from tests._jobs import stay

    monkeypatch.chdir(ROOT)
    executor = submitit.AutoExecutor(folder=tmp_path / "jobs", cluster="local")
    done = tmp_path / "done"
    done.mkdir()
    finished = []
    jobs = _launch.run_queued(
        lambda i: executor.submit(stay, str(done), i, 1.0),  # outlasts a job's start on a busy machine
        count=9,
        limit=3,
        finished=lambda: finished.append(1),
    )
    assert [job.result() for job in jobs] == [None] * 9 and len(
        finished
    ) == 9  # each counted once, as it ends
    spans = [tuple(map(float, (done / str(i)).read_text().split())) for i in range(9)]
    most = max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)
    assert 2 <= most <= 3, spans


def _children_alive() -> int:
    """This process's child processes that are running (not zombies), from /proc."""
    alive = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        alive += fields[1] == str(os.getpid()) and fields[0] != "Z"
    return alive


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes from /proc")
def test_a_thousand_local_jobs_never_run_more_processes_than_cores(tmp_path, monkeypatch):
    """1,000 local jobs queued at one per core (a local launch's limit): all of them run, and this
    process never has more child processes alive than cores (sampled every 10 ms)."""
    from tests._jobs import stay

    monkeypatch.chdir(ROOT)
    executor = submitit.AutoExecutor(folder=tmp_path / "jobs", cluster="local")
    done = tmp_path / "done"
    done.mkdir()
    cores, most, running = os.cpu_count() or 1, [0], threading.Event()

    def sample():
        while not running.wait(0.01):
            most[0] = max(most[0], _children_alive())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        jobs = _launch.run_queued(lambda i: executor.submit(stay, str(done), i, 0.0), count=1000, limit=cores)
    finally:
        running.set()
        sampler.join()
    assert [job.result() for job in jobs] == [None] * 1000
    assert 1 <= most[0] <= cores, most


def test_more_jobs_or_shards_than_blocks_are_refused_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    argv = ["sweep", "tests._store_sims:SlowDecay", "--grid", "rate=0.5,2", "--seeds", "2"]  # 1 block
    for options, message in [
        (["--launch", "1000000", "--cluster", "local"], "1000000 jobs (--launch) for a sweep of 1 block:"),
        (["--shard", "1/2"], "2 shards for a sweep of 1 block:"),
    ]:
        assert cli.main([*argv, "--out", str(tmp_path / "out"), *options]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()
