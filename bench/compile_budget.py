"""What compiling costs in `attnflow reproduce`: cold (an empty compilation cache) and warm (the cache
the cold run filled), per check and figure, side by side.

Runs `attnflow reproduce` twice in fresh processes, each into a folder of its own under `--out`,
with `ATTNFLOW_CACHE_DIR` pointing at one new cache; reads each check's compiling from
`verify.json` and each figure's from `figures.json`. Prints one row per check and figure (its
seconds, the programs it compiled and the seconds that took, cold then warm, and the programs it
loaded from the cache warm), the rows that compile longest first, then the totals:

    cold reproduce: 640 s wall; 1903 programs compiled (320 s), 0 loaded
    warm reproduce: 300 s wall; 0 programs compiled (90 s tracing and lowering), 1903 loaded (25 s)

Then, for each run, the least wall time its pieces leave were every check's runs free (see
`least_wall`). Then the same by program name, from JAX's own log of each program it traces,
lowers, compiles or loads (`JAX_LOG_COMPILES=1` in both runs): `_batched` is the batched runs of
`run_many` and `sweep`; a primitive's name (`broadcast_in_dim`, `gather`) is an operation run outside any
compiled function, one program per shape.

Compiling seconds are summed over the worker processes (CPU seconds, not wall). Use a quiet
machine: the wall times are the command's own.

    python bench/compile_budget.py --out /tmp/budget             # the quick sizes (10-25 min on 2 cores)
    python bench/compile_budget.py --out /tmp/budget --top 20    # only the 20 costliest rows
    python bench/compile_budget.py --out /tmp/budget --programs 40   # 40 program names (default 15)
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def reproduce(out: Path, cache: Path, jobs: int | None) -> dict:
    """One `attnflow reproduce` into `out` with the compilation cache `cache`: its wall seconds,
    its totals, and each check's and figure's seconds and compiling."""
    env = os.environ | {"ATTNFLOW_CACHE_DIR": str(cache), "MPLBACKEND": "Agg", "JAX_LOG_COMPILES": "1"}
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
    return {
        "wall": wall,
        "jobs": checks["meta"]["options"]["jobs"],
        "total": checks["meta"]["compiling"],
        "pieces": pieces,
        "programs": programs(done.stderr),
        "status": done.returncode,
    }


_LOGGED = (
    ("trace_seconds", re.compile(r"Finished tracing (?:\+ transforming )?(\S+) for \S+ in ([-+.\deE]+) sec")),
    ("lower_seconds", re.compile(r"Finished jaxpr to MLIR module conversion jit\((.+?)\) in ([-+.\deE]+) s")),
    ("compile_seconds", re.compile(r"Finished XLA compilation of jit\((.+?)\) in ([-+.\deE]+) sec")),
    ("loaded", re.compile(r"Persistent compilation cache hit for 'jit_(.+?)'")),
)


def programs(log: str) -> dict[str, collections.Counter]:
    """Per program name, from JAX's compile log (`JAX_LOG_COMPILES=1`): `compiled` and `loaded`
    (counts) and the seconds spent tracing, lowering and compiling (`trace_seconds`,
    `lower_seconds`, `compile_seconds`, as in a command's totals)."""
    named = collections.defaultdict(collections.Counter)
    for line in log.splitlines():
        for what, pattern in _LOGGED:
            found = pattern.search(line)
            if found is None:
                continue
            stats = named[found.group(1)]
            if what == "loaded":
                stats["loaded"] += 1
            else:
                stats[what] += float(found.group(2))
                stats["compiled"] += what == "compile_seconds"
            break
    return dict(named)


def program_table(cold: dict, warm: dict, top: int) -> str:
    """The program names that cost most to build cold (tracing, lowering and compiling), with
    their counts and seconds cold and warm."""
    names = sorted(cold["programs"], key=lambda name: -_building(cold["programs"][name]))
    header = f"{'program':<40} {'cold compiled':>13} {'(s)':>7} {'loaded':>6} {'warm loaded':>11} {'(s)':>6}"
    lines = [header, "-" * len(header)]
    for name in names[:top]:
        c, w = cold["programs"][name], warm["programs"].get(name, collections.Counter())
        lines.append(
            f"{name:<40} {c['compiled']:>13} {_building(c):>7.1f} {c['loaded']:>6} {w['loaded']:>11} "
            f"{_building(w):>6.1f}"
        )
    return "\n".join(lines)


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


def least_wall(run: dict) -> dict:
    """What one reproduction's pieces say about its least wall time: the seconds of the figures
    (`figures`), of the checks (`checks`), and of the checks' tracing, lowering, compiling and
    loading (`checks_building`, CPU seconds) summed over the workers, and `least_wall`, the figures'
    seconds plus the checks' building, shared out over `run["jobs"]` workers: what the reproduction
    would take at the least if every check's runs took no time and the workers never waited."""
    figures = sum(seconds for name, (seconds, _) in run["pieces"].items() if name.startswith("figure "))
    checks = [(seconds, c) for name, (seconds, c) in run["pieces"].items() if name.startswith("check ")]
    building = sum(_building(c) + c["load_seconds"] for _, c in checks)
    return {
        "figures": figures,
        "checks": sum(seconds for seconds, _ in checks),
        "checks_building": building,
        "least_wall": (figures + building) / run["jobs"],
    }


def least_wall_lines(cold: dict, warm: dict) -> str:
    """[`least_wall`][] of both runs, a line each."""
    lines = []
    for label, run in (("cold", cold), ("warm", warm)):
        least = least_wall(run)
        lines.append(
            f"{label}: figures {least['figures']:.0f} s, checks {least['checks']:.0f} s "
            f"({least['checks_building']:.0f} s of it tracing, lowering, compiling and loading); were the "
            f"checks' runs free, {run['jobs']} workers would take at least {least['least_wall']:.0f} s "
            f"(against {run['wall']:.0f} s)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="a new folder (default: a temporary one)")
    parser.add_argument("--jobs", type=int, default=None, help="reproduce's --jobs (default: its own)")
    parser.add_argument("--top", type=int, default=None, help="print only the costliest rows")
    parser.add_argument("--programs", type=int, default=15, help="program names to print (the costliest)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="attnflow-compile-budget-"))
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"--out {out} is not empty: the cold run needs an empty compilation cache")
    cold = reproduce(out / "cold", out / "cache", args.jobs)
    warm = reproduce(out / "warm", out / "cache", args.jobs)
    print(table(cold, warm, args.top))
    print()
    print(least_wall_lines(cold, warm))
    print()
    print(program_table(cold, warm, args.programs))
    return {"cold": cold, "warm": warm}


if __name__ == "__main__":
    main()
