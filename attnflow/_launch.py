"""A sweep's shards as cluster jobs: submitted with submitit (SLURM, or local processes where no
cluster is found), waited for, their failures reported."""

import subprocess
import sys
import tempfile
from pathlib import Path


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
    try:
        executor.update_parameters(**parameters)
    except (TypeError, ValueError, NameError, AssertionError) as err:  # submitit's words for a bad one
        raise ValueError(f"bad --job parameter for the {executor.cluster} executor: {err}") from None
    return executor


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
    executor = _executor(folder, cluster, parameters)
    with executor.batch():
        jobs = [executor.submit(run_shard, argv, i, count) for i in range(count)]
    print(f"submitted {count} {executor.cluster} jobs (logs in {folder})", flush=True)
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
