"""Fig. 6 sweep of Scan and Snap: one batched `dynamics.run_many` call per vocabulary vs the same
runs one at a time through one jitted single-run function.

The sweep: Syn-Medium with `num_last` ∈ {1, 3, 5, 10}; 16 (η_Z, η_Y/η_Z) pairs
η_Z ∈ {0.5, 1, 2, 3} × ratio ∈ {1, 2, 5, 10}; 10 seeds; 100 steps of SGD with heavy-ball
momentum 0.9; batch 128, T = 128; uniform init; float32. A run is the figure's own run, one run
of the `tasks.scan_snap.SGDOutcome` level (final distinct-token entropy and recall curve, seed `s`
the official sweep's `seed=s`, seeds 1-10), so both sides do exactly the figure's work and their
entropies are compared.

Timing (compile excluded from both sides; each side's first, compiling call is untimed and its
wall time is printed separately):

- **batched**: wall time of one `dynamics.run_many` call over all (pair × seed) runs of a
  vocabulary (`run_many` keeps its compiled function between calls with the same `fn`).
- **loop**: `jax.jit(fn)` called once per run in a Python loop, each result fetched to the
  host. With `--loop-sample N` only a random subset of N runs is timed and the loop's cost for
  all runs is extrapolated from the per-run cost (the output says so).

Both sides are timed in the same process, interleaved (batched then loop for every vocabulary,
order swapped on odd repeats); the table reports medians over `--repeats`.

Run `python bench/scan_snap/fig6_sweep.py --help` for the flags.
"""

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

import equinox as eqx
import jax
import numpy as np

import dynamics
from figures.scan_snap import SweepConfig
from tasks.scan_snap import Dataset2, SGDOutcome

PAPER = SweepConfig.paper(full=True)
"""The paper's sweep, the one `attnflow figures scan_snap_fig6 --full` runs."""
NUM_LAST, ETA_Z, RATIOS = PAPER.num_lasts, PAPER.eta_zs, PAPER.ratios


def _one_run(level: SGDOutcome, seed, eta_z, ratio) -> dict:
    """One run of `level` at the rates `eta_z`, `ratio` (arrays inside the batched call, as in
    `dynamics.sweep`): its final entropy, recall curve and stop code."""
    run = eqx.tree_at(lambda s: (s.eta_z, s.ratio), level, (eta_z, ratio)).run(dynamics.seed_key(seed))
    return run.final | {"stop": run.stop}


def sweep(num_last: int, args: argparse.Namespace):
    """One vocabulary's runs, as `attnflow figures scan_snap_fig6` runs them: the single-run
    function, its arguments over every (η_Z, ratio, seed) and the vocabulary's size M."""
    seeds = tuple(range(args.seed + 1, args.seed + 1 + args.seeds))
    level = dynamics.with_settings(
        PAPER.level,
        {"task.num_last": num_last, "num_steps": args.steps, "batch_size": args.batch_size, "T": args.T},
    )
    points = dynamics.grid(eta_z=tuple(args.eta_z), ratio=tuple(args.ratios), seed=seeds)
    dtype = level.float_dtype
    arguments = (points["seed"], points["eta_z"].astype(dtype), points["ratio"].astype(dtype))
    return eqx.Partial(_one_run, level), arguments, Dataset2.syn_medium(num_last).M


def _time_batched(one, args, chunk_size):
    start = time.perf_counter()
    outputs, finite = dynamics.run_many(one, *args, chunk_size=chunk_size)
    return time.perf_counter() - start, np.asarray(outputs["entropy"]), finite


def _time_loop(jitted, args, indices):
    out = np.empty(len(indices), np.float32)
    start = time.perf_counter()
    for j, i in enumerate(indices):
        out[j] = np.asarray(jitted(*(a[i] for a in args))["entropy"])
    return time.perf_counter() - start, out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Fig. 6 sweep: batched dynamics.run_many vs a Python loop of single jitted runs.",
    )
    parser.add_argument(
        "--num-last",
        type=int,
        nargs="+",
        default=list(NUM_LAST),
        help="Syn-Medium vocabularies (default: 1 3 5 10)",
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds per (eta_z, ratio) pair (default 10)")
    parser.add_argument("--steps", type=int, default=100, help="SGD-momentum steps per run (default 100)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; medians reported (default 3)")
    parser.add_argument(
        "--loop-sample",
        type=int,
        default=0,
        help="time the loop on N random runs per vocabulary and extrapolate (default 0 = all)",
    )
    parser.add_argument("--eta-z", type=float, nargs="+", default=list(ETA_Z), help="default 0.5 1 2 3")
    parser.add_argument(
        "--ratios", type=float, nargs="+", default=list(RATIOS), help="eta_y/eta_z, default 1 2 5 10"
    )
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--T", type=int, default=128, help="sequence length (query position)")
    parser.add_argument(
        "--chunk-size", type=int, default=None, help="run_many chunk size (default: all runs)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the runs use seeds SEED+1 .. SEED+SEEDS (default 0: the paper's 1-10)",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.steps < 1 or args.repeats < 1 or args.loop_sample < 0:
        parser.error("--seeds, --steps, --repeats must be >= 1 and --loop-sample >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the benchmark and print the table.

    **Returns:** a dict: `ratio` (batched / loop seed-steps per second over all vocabularies),
    `extrapolated` (whether the loop was timed on a sample), and `rows`, one dict per vocabulary
    with the times, rates, ratio, first-call seconds, and both sides' final entropies
    (`batched_entropies` for all runs, `loop_entropies` for the runs `loop_indices`).
    """
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(
        f"Fig 6 sweep: {len(args.eta_z)}x{len(args.ratios)} (eta_z, ratio) pairs x {args.seeds} seeds, "
        f"{args.steps} SGD-momentum steps, batch {args.batch_size}, T {args.T}, float32, "
        f"{jax.device_count()} {jax.default_backend()} device(s), {args.repeats} repeats (medians)"
    )
    print("compile excluded from both timings (first, compiling calls shown in the 'first call' columns)")

    setups = {}
    for num_last in args.num_last:
        one, run_args, M = sweep(num_last, args)
        num_runs = len(run_args[0])
        if args.loop_sample and args.loop_sample < num_runs:
            indices = np.sort(rng.choice(num_runs, args.loop_sample, replace=False))
        else:
            indices = np.arange(num_runs)
        # Warm-ups (untimed): the batched call compiles and gives the reference entropies; the
        # loop's jit compiles on its first call.
        batched_first, entropies, finite = _time_batched(one, run_args, args.chunk_size)
        jitted = jax.jit(lambda seed, eta_z, ratio: one(seed, eta_z, ratio))  # a user's jitted closure
        start = time.perf_counter()
        jax.block_until_ready(jitted(*(a[indices[0]] for a in run_args)))
        loop_first = time.perf_counter() - start
        setups[num_last] = dict(
            one=one,
            M=M,
            args=run_args,
            num_runs=num_runs,
            indices=indices,
            jitted=jitted,
            entropies=entropies,
            finite=finite,
            batched_first=batched_first,
            loop_first=loop_first,
            batched=[],
            loop=[],
            loop_entropies=None,
        )

    for repeat in range(args.repeats):
        for num_last in args.num_last:
            s = setups[num_last]
            order = ("batched", "loop") if repeat % 2 == 0 else ("loop", "batched")
            for side in order:
                if side == "batched":
                    seconds, entropies, _ = _time_batched(s["one"], s["args"], args.chunk_size)
                    s["batched"].append(seconds)
                    s["entropies_repeat"] = entropies
                else:
                    seconds, out = _time_loop(s["jitted"], s["args"], s["indices"])
                    s["loop"].append(seconds / len(s["indices"]))
                    s["loop_entropies"] = out

    header = (
        f"{'num_last':>8} {'M':>4} {'runs':>5} {'loop runs':>9} | {'batched s':>9} {'seed-steps/s':>12} | "
        f"{'loop s':>9} {'seed-steps/s':>12} | {'ratio':>6} | "
        f"{'first call b/l s':>16} | {'max|dH|':>8}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    total_steps = total_batched = total_loop = 0.0
    any_extrapolated = False
    for num_last in args.num_last:
        s = setups[num_last]
        seed_steps = s["num_runs"] * args.steps
        batched_s = statistics.median(s["batched"])
        loop_s = statistics.median(s["loop"]) * s["num_runs"]
        extrapolated = len(s["indices"]) < s["num_runs"]
        any_extrapolated |= extrapolated
        delta = float(np.max(np.abs(s["loop_entropies"] - s["entropies"][s["indices"]])))
        delta_repeat = float(np.max(np.abs(s["entropies_repeat"] - s["entropies"])))
        row = dict(
            num_last=num_last,
            M=s["M"],
            runs=s["num_runs"],
            loop_runs=len(s["indices"]),
            batched_s=batched_s,
            loop_s=loop_s,
            extrapolated=extrapolated,
            batched_rate=seed_steps / batched_s,
            loop_rate=seed_steps / loop_s,
            ratio=loop_s / batched_s,
            batched_first_s=s["batched_first"],
            loop_first_s=s["loop_first"],
            max_entropy_diff=delta,
            max_entropy_diff_batched_repeat=delta_repeat,
            batched_entropies=s["entropies"],
            loop_entropies=s["loop_entropies"],
            loop_indices=s["indices"],
            all_finite=bool(np.all(s["finite"])),
        )
        rows.append(row)
        total_steps += seed_steps
        total_batched += batched_s
        total_loop += loop_s
        loop_runs = f"{len(s['indices'])}{'*' if extrapolated else ''}"
        print(
            f"{num_last:>8} {s['M']:>4} {s['num_runs']:>5} {loop_runs:>9} | {batched_s:>9.3f} "
            f"{row['batched_rate']:>12.1f} | {loop_s:>9.3f} {row['loop_rate']:>12.1f} | "
            f"{row['ratio']:>6.2f} | {row['batched_first_s']:>8.1f}/{row['loop_first_s']:<7.1f} | "
            f"{delta:>8.1e}"
        )
    ratio = (total_steps / total_batched) / (total_steps / total_loop)
    print("-" * len(header))
    print(
        f"{'all':>8} {'':>4} {int(total_steps / args.steps):>5} {'':>9} | {total_batched:>9.3f} "
        f"{total_steps / total_batched:>12.1f} | {total_loop:>9.3f} {total_steps / total_loop:>12.1f} | "
        f"{ratio:>6.2f} |"
    )
    print(
        "columns: batched s = median run_many wall time; loop s = median loop time for all runs; "
        "first call b/l = the untimed first (compiling) run_many call / first jitted loop call; "
        "max|dH| = max |final entropy, loop - batched| over the loop's runs"
    )
    if any_extrapolated:
        print(
            "* loop time EXTRAPOLATED: measured on the marked number of random runs, "
            "per-run median cost x all runs"
        )
    if not all(r["all_finite"] for r in rows):
        print("warning: some runs diverged (non-finite), see run_many's finite flags", file=sys.stderr)
    print(f"ratio batched/loop (seed-steps/s): {ratio:.2f}")
    return dict(ratio=ratio, rows=rows, extrapolated=any_extrapolated)


if __name__ == "__main__":
    main()
