"""A sweep's shards as cluster jobs: submitted with submitit (SLURM, or local processes where no
cluster is found), waited for, their failures reported. Local jobs run at most one per core at a
time, the others queued; a SLURM array runs at most `ARRAY_PARALLELISM` tasks at a time unless
`--job slurm_array_parallelism=N` says otherwise."""

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._runtime import default_jobs

ARRAY_PARALLELISM = 64
"""The tasks of a SLURM array that run at a time (its throttle, `%64`), unless
`--job slurm_array_parallelism=N` is given."""


def run_shard(argv: list[str], index: int, count: int) -> int:
    """One job: the command `attnflow <argv> --shard index/count`, run by the job's Python (module
    level, so a job can unpickle it).

    **Returns:** its exit status (its output goes to the job's log).
    """
    command = [sys.executable, "-m", "attnflow", *argv, "--shard", f"{index}/{count}"]
    return subprocess.run(command, check=False).returncode


def check_jobs(cluster: str, parameters: dict) -> None:
    """Refuse, before any work, what would stop the jobs from being submitted: submitit missing, a
    cluster that is not here, a job parameter its executor does not take (tried on a scratch
    folder, so nothing is left behind).

    **Raises:** `ValueError` saying which.
    """
    with tempfile.TemporaryDirectory() as scratch:
        _executor(Path(scratch), cluster, parameters)


def _executor(folder: Path, cluster: str, parameters: dict):
    try:
        import submitit
    except ImportError:
        raise ValueError("--launch needs submitit: pip install 'attnflow[cluster]'") from None
    try:
        executor = submitit.AutoExecutor(folder=folder, cluster=None if cluster == "auto" else cluster)
    except RuntimeError as err:  # submitit's word for a cluster it cannot find here
        raise ValueError(f"--cluster {cluster}: {err}") from None
    if "slurm_array_parallelism" not in parameters:
        parameters = {**parameters, "slurm_array_parallelism": ARRAY_PARALLELISM}
    try:
        executor.update_parameters(**parameters)
    except (TypeError, ValueError, NameError, AssertionError) as err:  # submitit's words for a bad one
        raise ValueError(
            f"bad --job parameter for the {executor.cluster} executor: {_one_line(err)}"
        ) from None
    return executor


def _one_line(err: Exception) -> str:
    """submitit's message for a bad job parameter in one line: its first, with the names of the
    parameters every executor takes where it lists them."""
    first, *rest = str(err).strip().splitlines() or [type(err).__name__]
    shared = re.findall(r"'(\w+)': <class", " ".join(rest))
    return f"{first.rstrip('.')}; every executor takes {', '.join(shared)}" if shared else first


def launch_shards(argv: list[str], count: int, folder: Path, cluster: str, parameters: dict) -> None:
    """Submit `count` jobs, job i running shard i of `attnflow <argv>`, and wait for all.

    **Arguments:**

    - `argv`: the command line of one shard, without `--shard`.
    - `count`: the number of jobs (shards).
    - `folder`: where submitit keeps the jobs' logs and pickles.
    - `cluster`: `"auto"` (SLURM when it is there, else local processes), `"slurm"` or `"local"`.
    - `parameters`: submitit's job parameters, e.g. `{"slurm_partition": "gpu", "timeout_min": 60}`.

    **Raises:** `ValueError` when the jobs cannot be submitted (see [`check_jobs`][]) or a job
    failed (naming its shard and its log folder).
    """
    from dynamics import progress_over

    executor = _executor(folder, cluster, parameters)
    if executor.cluster in ("local", "debug"):
        limit = min(count, default_jobs())
        queued = f", {count - limit} of them queued" if count > limit else ""
        print(
            f"running {count} local jobs, at most {limit} at a time (one per core){queued} "
            f"(logs in {folder})",
            flush=True,
        )
        with progress_over(count, "jobs", "job", True) as bar:  # with the time left, from those done
            jobs = run_queued(lambda i: executor.submit(run_shard, argv, i, count), count, limit, bar.update)
    else:
        with executor.batch():
            jobs = [executor.submit(run_shard, argv, i, count) for i in range(count)]
        print(f"submitted {count} {executor.cluster} jobs (logs in {folder})", flush=True)
        with progress_over(count, "jobs", "job", True) as bar:  # all submitted: wait, counting them
            run_queued(lambda i: jobs[i], count, count, bar.update)
    failed = []
    for i, job in enumerate(jobs):
        try:
            code = job.result()
        except Exception as err:  # a job that died: report it after waiting for the others
            failed.append(f"shard {i}/{count}: {type(err).__name__}: {str(err).strip().splitlines()[-1]}")
            continue
        if code != 0:
            failed.append(f"shard {i}/{count} exited with {code}")
    if failed:
        raise ValueError(f"{len(failed)} of {count} jobs failed (logs in {folder}): " + "; ".join(failed))


def run_queued(submit, count: int, limit: int, finished=lambda: None, poll: float = 0.1) -> list:
    """Jobs `submit(0), ..., submit(count - 1)`, at most `limit` of them unfinished at any moment:
    each is submitted once one before it has finished; `finished()` is called as each finishes.

    **Returns:** the jobs, in order, every one finished.
    """
    jobs, running = [], []
    while len(jobs) < count or running:
        still = [job for job in running if not job.done()]
        for _ in range(len(running) - len(still)):
            finished()
        running = still
        while len(running) < limit and len(jobs) < count:
            jobs.append(submit(len(jobs)))
            running.append(jobs[-1])
        if running:
            time.sleep(poll)
    return jobs
