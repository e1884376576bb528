"""A sweep's shards as cluster jobs: submitted with submitit (SLURM, or local processes where no
cluster is found), waited for, their failures reported."""

import subprocess
import sys
from pathlib import Path


def run_shard(argv: list[str], index: int, count: int) -> int:
    """One job: the command `attnflow <argv> --shard index/count`, run by the job's Python (module
    level, so a job can unpickle it).

    **Returns:** its exit status (its output goes to the job's log).
    """
    command = [sys.executable, "-m", "attnflow", *argv, "--shard", f"{index}/{count}"]
    return subprocess.run(command, check=False).returncode


def launch_shards(argv: list[str], count: int, folder: Path, cluster: str, parameters: dict) -> None:
    """Submit `count` jobs, job i running shard i of `attnflow <argv>`, and wait for all.

    **Arguments:**

    - `argv`: the command line of one shard, without `--shard`.
    - `count`: the number of jobs (shards).
    - `folder`: where submitit keeps the jobs' logs and pickles.
    - `cluster`: `"auto"` (SLURM when it is there, else local processes), `"slurm"` or `"local"`.
    - `parameters`: submitit's job parameters, e.g. `{"slurm_partition": "gpu", "timeout_min": 60}`.

    **Raises:** `ValueError` when submitit is missing, a parameter is unknown, or a job failed
    (naming its shard and its log folder).
    """
    try:
        import submitit
    except ImportError:
        raise ValueError("--launch needs submitit: pip install 'attnflow[cluster]'") from None
    executor = submitit.AutoExecutor(folder=folder, cluster=None if cluster == "auto" else cluster)
    try:
        executor.update_parameters(**parameters)
    except (TypeError, ValueError) as err:
        raise ValueError(f"bad --job parameter for the {executor.cluster} executor: {err}") from None
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
