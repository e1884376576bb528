"""The whole Fig. 6 sweep end to end: attnflow as a user runs it against the PyTorch loop of
`bench/scan_snap/fig6_torch.py`, side by side.

The sweep: Syn-Medium `num_last` ∈ {1, 3, 5, 10} (M = 33, 79, 125, 240), η_Z ∈ {0.5, 1, 2, 3}
× η_Y/η_Z ∈ {1, 2, 5, 10}, seeds 1..10 (640 runs), each 100 steps of SGD with momentum 0.9,
batch 128, T = 128, uniform init, float32; a run's output is its final distinct-token entropy.

- **attnflow**: a fresh process running `attnflow --no-compile-cache figures scan_snap_fig6 --full
  --out <fresh temporary folder>`, timed from start to exit: process start, imports, every
  compilation (the persistent compile cache is off), the sweep, and drawing and writing the figure
  all count. The entropies are read back from the figure's JSON (`entropy_per_seed`). With a
  smaller sweep (`--num-last`, `--seeds`, `--steps`), or `--attnflow sweep`, the fresh process is
  instead this script's worker mode, which calls `figures.scan_snap.run_sweep` with the
  compile cache off and writes the entropies to a `.npz` file (no figure drawn).
- **torch**: `fig6_torch.run_sweep` over the same runs in this process, one run at a time; the
  torch import happens before timing and is not counted (torch has nothing to compile). With
  `--torch-device cuda` the loop runs on the GPU; one untimed run of one step first sets up CUDA
  there (its context and libraries), as the import is left out.

The two sides are interleaved (attnflow first on even repeats, torch first on odd ones); the
wall times are reported as median, min and max over `--repeats`. Both sides then have to show the
paper's result: the mean entropy over seeds of each (vocabulary, η_Z, ratio) is printed side by
side, and two claims are evaluated on each side (pass/fail, not asserted): the entropy falls with
η_Z in every (vocabulary, ratio) cell, and for `num_last` ≥ 3 the minimum over ratios is at
ratio 2 for every η_Z. The two sides draw from different random streams, so their per-cell means
agree only statistically (to about 0.01-0.02 nats).

Run `python bench/scan_snap/fig6_end_to_end.py --help` for the flags.
"""

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from figures.scan_snap import SweepConfig, run_sweep

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
PAPER = SweepConfig.paper(full=True)
"""The paper's sweep, the one `attnflow figures scan_snap_fig6 --full` runs."""
NUM_LAST, ETA_Z, RATIOS = PAPER.num_lasts, PAPER.eta_zs, PAPER.ratios
BATCH_SIZE, T = PAPER.level.batch_size, PAPER.level.T
FIGURE = "scan_snap_fig6"
WORKER_FLAG = "--attnflow-worker"
CLAIMS = {
    "falls_with_eta_z": "entropy falls with eta_z in every (vocabulary, ratio) cell",
    "min_at_ratio_2": "for num_last >= 3 the minimum over ratios is at ratio 2 for every eta_z",
}


def load_torch_side():
    """`bench/scan_snap/fig6_torch.py` as a module (imports torch)."""
    spec = importlib.util.spec_from_file_location("bench_fig6_torch", BENCH / "fig6_torch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _attnflow_executable() -> list[str]:
    """The `attnflow` console script of this interpreter's environment (else on PATH, else the
    module)."""
    beside = Path(sys.executable).with_name("attnflow")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("attnflow")
    return [found] if found else [sys.executable, "-m", "attnflow.cli"]


def is_paper_sweep(num_lasts: Sequence[int], seeds: int, steps: int) -> bool:
    """Whether these flags ask for exactly what `attnflow figures scan_snap_fig6 --full` runs."""
    return tuple(num_lasts) == NUM_LAST and seeds == len(PAPER.seeds) and steps == PAPER.level.num_steps


def attnflow_command(
    mode: str,
    out_dir: Path,
    num_lasts: Sequence[int],
    seeds: int,
    steps: int,
    cache_dir: Path | None = None,
) -> list[str]:
    """The command line of the attnflow side: the figure command (`mode` "figure") or this
    script's worker (`mode` "sweep"), writing into `out_dir`; with no compilation cache, or with
    JAX's persistent one in `cache_dir` (the figure command finds it in `ATTNFLOW_CACHE_DIR`, which
    [`run_attnflow`][] sets)."""
    if mode == "figure":
        return [
            *_attnflow_executable(),
            *(["--no-compile-cache"] if cache_dir is None else []),
            "figures",
            FIGURE,
            "--full",
            "--out",
            str(out_dir),
        ]
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        WORKER_FLAG,
        str(out_dir / "entropy.npz"),
        "--num-last",
        *map(str, num_lasts),
        "--seeds",
        str(seeds),
        "--steps",
        str(steps),
        *(["--cache-dir", str(cache_dir)] if cache_dir is not None else []),
    ]


def read_attnflow_output(mode: str, out_dir: Path) -> dict[str, np.ndarray]:
    """The attnflow side's results: `entropy` (V, Z, R, S), `completed` (V, Z, R, S) and
    `seconds`, the in-process wall time of the sweep (compilation included)."""
    if mode == "figure":
        stored = json.loads((out_dir / f"{FIGURE}.json").read_text())
        data, config = stored["data"], stored["config"]
        expected = dict(
            num_lasts=list(NUM_LAST),
            eta_zs=list(ETA_Z),
            ratios=list(RATIOS),
            seeds=list(range(1, 11)),
            num_steps=100,
            batch_size=BATCH_SIZE,
            T=T,
            dtype="float32",
        )
        settings = config | config["level"]
        got = {key: settings.get(key) for key in expected}
        if got != expected:
            raise RuntimeError(f"the figure ran another sweep than the torch side: {got} != {expected}")
        return {
            "entropy": np.asarray(data["entropy_per_seed"], dtype=float),
            "completed": np.asarray(data["completed"], dtype=bool),
            "seconds": np.asarray(config["sweep_seconds"], dtype=float),
        }
    with np.load(out_dir / "entropy.npz") as stored:
        return {key: stored[key] for key in ("entropy", "completed", "seconds")}


def run_attnflow(
    mode: str,
    num_lasts: Sequence[int],
    seeds: int,
    steps: int,
    *,
    cache_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> tuple[float, dict, list[str], str]:
    """Run the attnflow side once in a fresh process and a fresh output folder.

    **Arguments:** the side's `mode` and sweep (as [`attnflow_command`][]); `cache_dir`: the
    folder of JAX's persistent compilation cache (`None`: no cache); `env`: variables set for that
    process on top of this one's (`JAX_LOG_COMPILES`, `XLA_FLAGS`, ...); `timeout`: seconds after
    which the process is killed (`subprocess.TimeoutExpired`).

    **Returns:** `(wall seconds of the process, its results, its command line, its stderr)`.
    """
    full_env = dict(os.environ) | dict(env or {})
    full_env.setdefault("MPLBACKEND", "Agg")
    if cache_dir is not None:
        full_env["ATTNFLOW_CACHE_DIR"] = str(cache_dir)
    with tempfile.TemporaryDirectory(prefix="fig6_end_to_end_") as tmp:
        out_dir = Path(tmp)
        command = attnflow_command(mode, out_dir, num_lasts, seeds, steps, cache_dir)
        start = time.perf_counter()
        done = subprocess.run(
            command, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(
                f"attnflow side failed (exit {done.returncode}): {' '.join(command)}\n{done.stderr[-3000:]}"
            )
        result = read_attnflow_output(mode, out_dir)
    return seconds, result, command, done.stderr


def attnflow_worker(argv: Sequence[str]) -> None:
    """Worker mode (`--attnflow-worker OUT.npz ...`): the attnflow sweep through
    `figures.scan_snap.run_sweep` with the persistent compilation cache off, or in
    `--cache-dir` as the command line keeps it; writes `entropy`, `completed` and `seconds` to
    OUT.npz."""
    parser = argparse.ArgumentParser(prog="fig6_end_to_end.py --attnflow-worker")
    parser.add_argument("out", type=Path)
    parser.add_argument("--num-last", type=int, nargs="+", required=True)
    parser.add_argument("--seeds", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--cache-dir", type=Path)
    args = parser.parse_args(argv)

    import jax

    if args.cache_dir is None:
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        from attnflow import _runtime

        _runtime.use_compile_cache(args.cache_dir)
    config = dataclasses.replace(
        PAPER,
        num_lasts=tuple(args.num_last),
        seeds=tuple(range(1, args.seeds + 1)),
        level=dataclasses.replace(PAPER.level, num_steps=args.steps),
        full=is_paper_sweep(args.num_last, args.seeds, args.steps),
    )
    result = run_sweep(config)
    np.savez(args.out, entropy=result.entropy, completed=result.completed, seconds=result.seconds)


def cell_means(entropy: np.ndarray) -> np.ndarray:
    """The mean entropy over seeds (the last axis) of each (vocabulary, η_Z, ratio) cell, the runs
    whose entropy is not finite (diverged) left out."""
    return np.nanmean(np.where(np.isfinite(entropy), entropy, np.nan), axis=-1)


def evaluate_claims(
    mean: np.ndarray, num_lasts: Sequence[int], eta_zs: Sequence[float], ratios: Sequence[float]
):
    """The paper's two Fig. 6 claims on per-cell means `mean` (V, Z, R).

    **Returns:** `{claim: (passed or None when the grid cannot show it, [failing cells as text])}`.
    """
    out = {}
    order = np.argsort(eta_zs)
    falls = np.diff(mean[:, order, :], axis=1) < 0  # (V, Z - 1, R); NaN fails
    failing = [
        f"num_last {n}, ratio {r:g}"
        for v, n in enumerate(num_lasts)
        for k, r in enumerate(ratios)
        if not falls[v, :, k].all()
    ]
    out["falls_with_eta_z"] = (not failing if len(eta_zs) > 1 else None, failing)
    vocabularies = [v for v, n in enumerate(num_lasts) if n >= 3]
    if 2.0 in ratios and len(ratios) > 1 and vocabularies:
        r2 = list(ratios).index(2.0)
        failing = []
        for v in vocabularies:
            for z, eta_z in enumerate(eta_zs):
                cell = mean[v, z]
                best = int(np.argmin(np.where(np.isnan(cell), np.inf, cell)))
                if best != r2 or np.isnan(cell).any():
                    failing.append(f"num_last {num_lasts[v]}, eta_z {eta_z:g}: min at ratio {ratios[best]:g}")
        out["min_at_ratio_2"] = (not failing, failing)
    else:
        out["min_at_ratio_2"] = (None, [])
    return out


def _stats(values: list[float]) -> dict[str, float]:
    return dict(median=statistics.median(values), min=min(values), max=max(values))


def _verdict(passed: bool | None, failing: list[str]) -> str:
    if passed is None:
        return "n/a"
    if passed:
        return "PASS"
    shown = "; ".join(failing[:3]) + ("; ..." if len(failing) > 3 else "")
    return f"FAIL ({len(failing)}: {shown})"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Fig. 6 sweep end to end: attnflow in a fresh process (compile included) vs the "
        "PyTorch loop of fig6_torch.py.",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; medians reported (default 3)")
    parser.add_argument(
        "--num-last",
        type=int,
        nargs="+",
        default=list(NUM_LAST),
        help="Syn-Medium vocabularies (default: 1 3 5 10)",
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds 1..N per rate pair (default 10)")
    parser.add_argument("--steps", type=int, default=100, help="SGD-momentum steps per run (default 100)")
    parser.add_argument(
        "--attnflow",
        choices=("auto", "figure", "sweep"),
        default="auto",
        help="how the attnflow side runs: 'figure' = `attnflow --no-compile-cache figures scan_snap_fig6 "
        "--full` (only for the paper's sweep), 'sweep' = this script's worker calling run_sweep; "
        "'auto' (default) = figure for the paper's sweep, else sweep",
    )
    parser.add_argument(
        "--torch-device", default="cpu", help="where the torch loop runs: cpu (default) or cuda"
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--seeds, --steps and --repeats must be >= 1")
    paper = is_paper_sweep(args.num_last, args.seeds, args.steps)
    if args.attnflow == "figure" and not paper:
        parser.error("--attnflow figure runs the paper's sweep only (all --num-last, 10 seeds, 100 steps)")
    if args.attnflow == "auto":
        args.attnflow = "figure" if paper else "sweep"
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Time both sides, print the timings, the per-cell means and the claims.

    **Returns:** a dict: `attnflow_seconds` and `torch_seconds` (one per repeat), their
    `attnflow_stats` / `torch_stats` (median, min, max), `ratio` (torch / attnflow, medians),
    `attnflow_entropy` / `torch_entropy` (V, Z, R, S), `attnflow_mean` / `torch_mean` (V, Z, R),
    `max_mean_diff`, `claims` ({claim: {"attnflow": pass, "torch": pass}}, None = n/a),
    `attnflow_command`, `attnflow_sweep_seconds` (in-process seconds of the sweep, compilation
    included, last repeat), `torch_seconds_per_vocabulary` (last repeat), `torch_device`.
    """
    args = parse_args(argv)
    fig6_torch = load_torch_side()  # imports torch: outside every timing
    import torch

    num_lasts, seeds = tuple(args.num_last), tuple(range(1, args.seeds + 1))
    runs = len(num_lasts) * len(ETA_Z) * len(RATIOS) * len(seeds)
    print(
        f"Fig 6 sweep end to end: num_last {list(num_lasts)}, {len(ETA_Z)}x{len(RATIOS)} (eta_z, ratio) "
        f"pairs x {len(seeds)} seeds = {runs} runs of {args.steps} SGD-momentum steps, "
        f"batch {BATCH_SIZE}, T {T}, float32; {args.repeats} repeats, interleaved"
    )
    command = attnflow_command(args.attnflow, Path("<fresh temp dir>"), num_lasts, args.seeds, args.steps)
    print(f"attnflow: fresh process, compile and start-up included: {' '.join(command)}")
    print(
        f"torch {torch.__version__}: fig6_torch.run_sweep in this process, one run at a time, on "
        f"{args.torch_device}, {torch.get_num_threads()} threads; torch import excluded"
    )
    if args.torch_device != "cpu":  # set up CUDA (context, libraries) outside the timing, like the import
        fig6_torch.train_run(
            fig6_torch.syn_medium(num_lasts[0], device=args.torch_device), ETA_Z[0], RATIOS[0], 1, steps=1
        )

    times = {"attnflow": [], "torch": []}
    results = {}
    for repeat in range(args.repeats):
        order = ("attnflow", "torch") if repeat % 2 == 0 else ("torch", "attnflow")
        for side in order:
            if side == "attnflow":
                seconds, results["attnflow"], _, _ = run_attnflow(
                    args.attnflow, num_lasts, args.seeds, args.steps
                )
            else:
                start = time.perf_counter()
                entropy, per_vocabulary = fig6_torch.run_sweep(
                    num_lasts,
                    ETA_Z,
                    RATIOS,
                    seeds,
                    steps=args.steps,
                    batch_size=BATCH_SIZE,
                    T=T,
                    device=args.torch_device,
                )
                seconds = time.perf_counter() - start
                results["torch"] = {"entropy": entropy, "seconds": per_vocabulary}
            times[side].append(seconds)
            print(f"  repeat {repeat + 1}/{args.repeats}: {side:<8} {seconds:8.2f} s")

    stats = {side: _stats(values) for side, values in times.items()}
    ratio = stats["torch"]["median"] / stats["attnflow"]["median"]
    print(f"\nwall seconds over {args.repeats} repeat(s)           median      min      max")
    for side, label in [
        ("attnflow", "attnflow (fresh process, compile included)"),
        ("torch", "torch (in-process, import excluded)"),
    ]:
        s = stats[side]
        print(f"{label:<44} {s['median']:>8.2f} {s['min']:>8.2f} {s['max']:>8.2f}")
    attnflow_sweep = results["attnflow"]["seconds"]
    print(f"  attnflow's run_sweep alone (last repeat, compile included): {float(attnflow_sweep):.2f} s")
    torch_per_vocabulary = ", ".join(f"{s:.1f}" for s in results["torch"]["seconds"])
    print(f"  torch per vocabulary (last repeat): {torch_per_vocabulary} s")

    attnflow_entropy = np.where(results["attnflow"]["completed"], results["attnflow"]["entropy"], np.nan)
    torch_entropy = np.where(np.isfinite(results["torch"]["entropy"]), results["torch"]["entropy"], np.nan)
    means, variances = {}, {}
    for side, entropy in [("attnflow", attnflow_entropy), ("torch", torch_entropy)]:
        means[side] = cell_means(entropy)
        counts = np.sum(np.isfinite(entropy), axis=-1)
        if entropy.shape[-1] > 1:
            variances[side] = np.nanstd(entropy, axis=-1, ddof=1) ** 2 / counts  # of the mean
    diff = means["attnflow"] - means["torch"]
    max_diff = float(np.nanmax(np.abs(diff)))

    print("\nmean final distinct-token entropy over seeds (nats): attnflow | torch")
    cols = " ".join(f"{f'r={r:g}':>7}" for r in RATIOS)
    header = f"{'num_last':>8} {'eta_z':>6} | {cols} | {cols} | {'max|d|':>7}"
    print(header)
    print("-" * len(header))
    for v, num_last in enumerate(num_lasts):
        for z, eta_z in enumerate(ETA_Z):
            a = " ".join(f"{x:>7.4f}" for x in means["attnflow"][v, z])
            t = " ".join(f"{x:>7.4f}" for x in means["torch"][v, z])
            print(f"{num_last:>8} {eta_z:>6g} | {a} | {t} | {np.nanmax(np.abs(diff[v, z])):>7.4f}")

    claims = {}
    verdicts = {
        side: evaluate_claims(means[side], num_lasts, ETA_Z, RATIOS) for side in ("attnflow", "torch")
    }
    print()
    for key, text in CLAIMS.items():
        claims[key] = {side: verdicts[side][key][0] for side in verdicts}
        print(f'claim "{text}":')
        for side in verdicts:
            print(f"  {side:<8} {_verdict(*verdicts[side][key])}")
    line = f"max |per-cell mean, attnflow - torch|: {max_diff:.4f} nats"
    if variances:
        z_score = float(np.nanmax(np.abs(diff) / np.sqrt(variances["attnflow"] + variances["torch"])))
        line += f" (largest |difference| / its standard error over seeds: {z_score:.1f})"
    print(line)
    print("(different random streams on the two sides: the means agree only statistically)")
    incomplete = int(np.sum(np.isnan(attnflow_entropy))), int(np.sum(np.isnan(torch_entropy)))
    if any(incomplete):
        print(
            f"warning: diverged runs left out of the means: attnflow {incomplete[0]}, torch {incomplete[1]}"
        )
    print(f"ratio torch/attnflow (wall time, medians): {ratio:.2f}")
    return dict(
        attnflow_seconds=times["attnflow"],
        torch_seconds=times["torch"],
        attnflow_stats=stats["attnflow"],
        torch_stats=stats["torch"],
        ratio=ratio,
        attnflow_entropy=attnflow_entropy,
        torch_entropy=torch_entropy,
        attnflow_mean=means["attnflow"],
        torch_mean=means["torch"],
        max_mean_diff=max_diff,
        claims=claims,
        attnflow_command=command,
        attnflow_sweep_seconds=attnflow_sweep,
        torch_seconds_per_vocabulary=results["torch"]["seconds"],
        torch_device=args.torch_device,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER_FLAG:
        attnflow_worker(sys.argv[2:])
    else:
        main()
