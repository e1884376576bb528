"""What compiling costs in `attnflow reproduce`: cold (an empty compilation cache) and warm (the cache
the cold run filled), per check and figure, side by side.

Runs `attnflow reproduce` twice in fresh processes, each into a folder of its own under `--out`,
with `ATTNFLOW_CACHE_DIR` pointing at one new cache; reads each check's compiling from
`verify.json` and each figure's from `figures.json`. Prints one row per check and figure (its
seconds, the programs it compiled and the seconds that took, cold then warm, and the programs it
loaded from the cache warm), the rows that compile longest first, then the totals:

    cold reproduce: 640 s wall; 1903 programs compiled (320 s), 0 loaded
    warm reproduce: 300 s wall; 0 programs compiled (90 s tracing and lowering), 1903 loaded (25 s)

Compiling seconds are summed over the worker processes (CPU seconds, not wall). Use a quiet
machine: the wall times are the command's own.

    python bench/compile_budget.py --out /tmp/budget             # the quick sizes (10-25 min on 2 cores)
    python bench/compile_budget.py --out /tmp/budget --top 20    # only the 20 costliest rows
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def reproduce(out: Path, cache: Path, jobs: int | None) -> dict:
    """One `attnflow reproduce` into `out` with the compilation cache `cache`: its wall seconds,
    its totals, and each check's and figure's seconds and compiling."""
    env = os.environ | {"ATTNFLOW_CACHE_DIR": str(cache), "MPLBACKEND": "Agg"}
    argv = [sys.executable, "-m", "attnflow", "reproduce", "--out", str(out)]
    argv += [] if jobs is None else ["--jobs", str(jobs)]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if not (out / "figures.json").exists():
        raise SystemExit(f"attnflow reproduce failed ({done.returncode}):\n{done.stderr[-3000:]}")
    checks = json.loads((out / "verify.json").read_text())
    figures = json.loads((out / "figures.json").read_text())["figures"]
    pieces = {f"check {c['paper']}.{c['name']}": (c["seconds"], c["compiling"]) for c in checks["checks"]}
    pieces |= {f"figure {name}": (made["seconds"], made["compiling"]) for name, made in figures.items()}
    return {"wall": wall, "total": checks["meta"]["compiling"], "pieces": pieces, "status": done.returncode}


def _building(stats: dict) -> float:
    """Seconds spent tracing, lowering and compiling (loading from the cache not counted)."""
    return stats["trace_seconds"] + stats["lower_seconds"] + stats["compile_seconds"]


def table(cold: dict, warm: dict, top: int | None) -> str:
    """The rows, costliest compiling first, and the two totals."""
    names = sorted(cold["pieces"], key=lambda name: -_building(cold["pieces"][name][1]))
    header = (
        f"{'piece':<62} {'cold s':>7} {'compiled':>8} {'(s)':>6} {'warm s':>7} {'compiled':>8} {'(s)':>6} "
        f"{'loaded':>6}"
    )
    lines = [header, "-" * len(header)]
    for name in names[:top]:
        (cs, cc), (ws, wc) = cold["pieces"][name], warm["pieces"].get(name, (float("nan"), {}))
        warm_building = _building(wc) if wc else float("nan")
        lines.append(
            f"{name:<62} {cs:>7.1f} {cc['compiled']:>8} {_building(cc):>6.1f} {ws:>7.1f} "
            f"{wc.get('compiled', 0):>8} {warm_building:>6.1f} {wc.get('cached', 0):>6}"
        )
    for label, run in (("cold", cold), ("warm", warm)):
        total = run["total"]
        lines.append(
            f"{label} reproduce: {run['wall']:.0f} s wall; {total['compiled']} programs compiled "
            f"({_building(total):.0f} s tracing, lowering and compiling), {total['cached']} loaded "
            f"({total['load_seconds']:.0f} s)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="a new folder (default: a temporary one)")
    parser.add_argument("--jobs", type=int, default=None, help="reproduce's --jobs (default: its own)")
    parser.add_argument("--top", type=int, default=None, help="print only the costliest rows")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="attnflow-compile-budget-"))
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"--out {out} is not empty: the cold run needs an empty compilation cache")
    cold = reproduce(out / "cold", out / "cache", args.jobs)
    warm = reproduce(out / "warm", out / "cache", args.jobs)
    print(table(cold, warm, args.top))
    return {"cold": cold, "warm": warm}


if __name__ == "__main__":
    main()
