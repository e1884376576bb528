"""The peak resident memory of a large `attnflow simulate`, beside the bytes of its store and of one
block: the memory of a command is bounded by a block, not by the whole result.

Runs, in a fresh process, `attnflow simulate scan_snap --level L1 --set task.dataset=syn_medium
--set init=uniform --set t1=1000 --set num_saves=SAVES --seeds SEEDS` (4,096 seeds × 1,000 saves by
default: 64 blocks of 64 seeds, a 1.4 GB store; about 2 minutes on two cores) and prints:

    peak resident memory 565 MiB; the runs' values 2.2 GiB (64 blocks of 35 MiB), 1.4 GiB on disk

    python bench/memory.py                               # the default sizes (goal: under 1 GB)
    python bench/memory.py --seeds 128 --saves 100       # a quick look
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

_PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if done.returncode:
    sys.exit(done.stderr[-3000:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4096, help="seeds (default 4096)")
    parser.add_argument("--saves", type=int, default=1000, help="saves per run (default 1000)")
    args = parser.parse_args(argv)
    import dynamics

    with tempfile.TemporaryDirectory() as out:
        settings = ["task.dataset=syn_medium", "init=uniform", "t1=1000", f"num_saves={args.saves}"]
        command = ["simulate", "scan_snap", "--level", "L1", "--seeds", str(args.seeds), "--out", out]
        command += [text for setting in settings for text in ("--set", setting)]
        done = subprocess.run(
            [sys.executable, "-c", _PEAK, sys.executable, "-m", "attnflow", *command],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode:
            raise SystemExit(f"attnflow simulate failed: {done.stderr}")
        peak = int(done.stdout.split()[-1])
        (store,) = Path(out).glob("*.zarr")
        ds = dynamics.store.open_sweep(store)
        values = sum(variable.nbytes for variable in ds.data_vars.values())
        blocks = int(ds.attrs["num_units"])
        disk = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    print(
        f"peak resident memory {peak / 2**20:.0f} MiB; the runs' values {values / 2**30:.2g} GiB "
        f"({blocks} blocks of {values / blocks / 2**20:.0f} MiB), {disk / 2**30:.2g} GiB on disk"
    )
    return {"peak_bytes": peak, "values_bytes": values, "blocks": blocks, "disk_bytes": disk}


if __name__ == "__main__":
    main()
