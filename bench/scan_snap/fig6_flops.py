"""How much of a device the Fig. 6 sweep uses: its floating-point operations per seed-step, against
what the device does on a large matrix product.

One step of a Fig. 6 run is what `dynamics.train` does for `tasks.scan_snap.SGDOutcome`: draw a
batch (`tasks.scan_snap.sample` on `fold_in(key, step)`), the gradient of the cross-entropy, and
the heavy-ball momentum update (`tasks.scan_snap.optimizer`). This script builds that step for each
Syn-Medium vocabulary, batched over the vocabulary's 160 runs as the sweep calls them, and:

- counts its floating-point operations with XLA's cost analysis of the lowered program: the
  operations as written, before any device's compiler rewrites them, so the same count on every
  device (a program's loop is counted once by XLA, hence one step on its own and not a whole run);
- times the sweep's own runs here, one `dynamics.run_many` call of a vocabulary's runs as
  `bench/scan_snap/fig6_sweep.py` makes it (median of `--repeats` after the compiling call), and
  a float32 matrix product of `--matmul-size`: seed-steps per second, FLOP/s, and the fraction of
  the matrix product's rate the runs reach;
- with `--gpu-json` (the `gpu.json` of `bench/gpu.py`), divides the whole sweep's operations
  (640 runs x 100 steps) by each time measured there (attnflow's first run, its in-process sweep,
  its second run, the PyTorch loop) and gives the fraction of `--peak-tflops` (default 67, the
  float32 peak of one H200 in NVIDIA's datasheet).

    python bench/scan_snap/fig6_flops.py                                   # here
    python bench/scan_snap/fig6_flops.py --gpu-json bench/results/2026-11-30-h200/gpu.json

`main(argv)` returns the numbers as a dict.
"""

import argparse
import importlib.util
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

import dynamics
from figures.scan_snap import SweepConfig
from tasks.scan_snap import SGDOutcome, YZModel, cross_entropy, optimizer, sample

BENCH = Path(__file__).resolve().parent
PAPER = SweepConfig.paper(full=True)
"""The sweep of `attnflow figures scan_snap_fig6 --full`: 4 vocabularies x 160 runs x 100 steps."""
H200_FP32_TFLOPS = 67.0
"""One H200's float32 peak (not the tensor cores), NVIDIA's H200 datasheet, in TFLOP/s."""


def step_program(level: SGDOutcome, width: int) -> tuple[jax.stages.Lowered, tuple]:
    """The lowered step of `width` runs of `level` at rates η_Z = η_Y = 1 (`dynamics.train`'s step,
    as `SGDOutcome.run` calls it), and its arguments: the runs of seeds 0, 1, ... at step 0.

    **Returns:** `(lowered, (data_keys, model, optimizer_state, steps))`; the compiled program maps
    these to the next `(model, optimizer_state)`."""
    classes = level.task.classes().arrays(level.float_dtype)
    opt = optimizer("momentum", 1.0, 1.0, level.momentum)

    def start(key):
        init_key, data_key = jax.random.split(key)
        model = YZModel.uniform(init_key, classes.probs.shape[1], level.float_dtype)
        return data_key, model, opt.init(model)

    def step(data_key, model, state, k):
        batch = sample(jax.random.fold_in(data_key, k), classes, level.batch_size, level.T)
        updates, state = opt.update(jax.grad(cross_entropy)(model, batch), state, model)
        return optax.apply_updates(model, updates), state

    args = (*jax.vmap(start)(jax.vmap(dynamics.seed_key)(jnp.arange(width))), jnp.zeros(width, jnp.int32))
    return jax.jit(jax.vmap(step)).lower(*args), args


def flop_per_seed_step(level: SGDOutcome, width: int) -> float:
    """The floating-point operations of one step of a run of `level` batched `width` wide (XLA's
    count of [`step_program`][] over `width`; what the runs share is counted once, so a narrower
    call costs a few percent more a run)."""
    return step_program(level, width)[0].cost_analysis()["flops"] / width


def paper_level(
    num_last: int, batch_size: int = PAPER.level.batch_size, T: int = PAPER.level.T
) -> SGDOutcome:
    """The Fig. 6 sweep's level of vocabulary `num_last` (the paper's batch and T by default)."""
    return dynamics.with_settings(PAPER.level, {"task.num_last": num_last, "batch_size": batch_size, "T": T})


def _fig6_sweep():
    """`bench/scan_snap/fig6_sweep.py`, whose runs are the figure's."""
    spec = importlib.util.spec_from_file_location("bench_fig6_sweep", BENCH / "fig6_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _median_seconds(fn, args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_flops_per_second(size: int, repeats: int) -> float:
    """The FLOP/s of a float32 `size` x `size` matrix product here (median of `repeats`)."""
    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), jnp.float32)
    return 2.0 * size**3 / _median_seconds(jax.jit(jnp.matmul), (a, a), repeats)


def measured_here(args: argparse.Namespace) -> dict:
    """Per vocabulary of `args.num_last`: M, the runs, FLOP per seed-step (of [`step_program`][]),
    and the time and rate of its runs here, in one call of the sweep's program."""
    fig6 = _fig6_sweep()
    sizes = ["--seeds", str(args.seeds), "--steps", str(args.steps), "--batch-size", str(args.batch_size)]
    sweep_args = fig6.parse_args([*sizes, "--T", str(args.T), "--repeats", str(args.repeats)])
    matmul = matmul_flops_per_second(args.matmul_size, args.repeats)
    rows = []
    for num_last in args.num_last:
        one, run_args, M = fig6.sweep(num_last, sweep_args)
        width = len(run_args[0])
        flops = flop_per_seed_step(paper_level(num_last, args.batch_size, args.T), width)
        fig6._time_batched(one, run_args, None)  # compiles
        seconds = statistics.median(fig6._time_batched(one, run_args, None)[0] for _ in range(args.repeats))
        rate = width * args.steps / seconds
        rows.append(
            {
                "num_last": num_last,
                "M": M,
                "runs": width,
                "flop_per_seed_step": flops,
                "call_seconds": seconds,
                "seed_steps_per_second": rate,
                "flops_per_second": flops * rate,
                "of_matmul": flops * rate / matmul,
            }
        )
    return {
        "device": f"{jax.device_count()} {jax.default_backend()} device(s), {jax.devices()[0].device_kind}",
        "steps": args.steps,
        "matmul_size": args.matmul_size,
        "matmul_flops_per_second": matmul,
        "rows": rows,
        "sweep_flop": sum(row["flop_per_seed_step"] * row["runs"] for row in rows) * args.steps,
    }


def gpu_fractions(gpu_json: Path, peak_tflops: float) -> dict:
    """The Fig. 6 times of a `bench/gpu.py` run (the paper's batch and T) as FLOP/s and
    fractions of `peak_tflops`, with the sweep's operations counted here."""
    report = json.loads(gpu_json.read_text())
    fig6 = report["sections"]["fig6"]
    sweep = fig6["sweep"]
    runs_each = sweep["runs"] // len(sweep["num_last"])
    sweep_flop = (
        sum(flop_per_seed_step(paper_level(n), runs_each) for n in sweep["num_last"])
        * runs_each
        * sweep["steps"]
    )
    times = {
        "attnflow, first run (empty cache)": fig6.get("attnflow_seconds"),
        "attnflow, its sweep in the first run": fig6.get("attnflow_sweep_seconds"),
        "attnflow, second run (its cache)": fig6.get("attnflow_warm_seconds"),
        "PyTorch per-run loop": fig6.get("torch_seconds"),
    }
    rows = []
    for side, seconds in times.items():
        if isinstance(seconds, list):
            seconds = statistics.median(seconds) if seconds else None
        if seconds:
            tflops = sweep_flop / seconds / 1e12
            rows.append({"side": side, "seconds": seconds, "tflops": tflops, "of_peak": tflops / peak_tflops})
    return {
        "file": str(gpu_json),
        "device": ", ".join(report["meta"].get("device_kinds") or []) or None,
        "commit": report["meta"].get("commit"),
        "runs": sweep["runs"],
        "steps": sweep["steps"],
        "sweep_flop": sweep_flop,
        "peak_tflops": peak_tflops,
        "rows": rows,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="The Fig. 6 sweep's FLOP per seed-step and share of a device."
    )
    parser.add_argument(
        "--num-last",
        type=int,
        nargs="+",
        default=list(PAPER.num_lasts),
        help="vocabularies (default: 1 3 5 10)",
    )
    parser.add_argument(
        "--seeds", type=int, default=len(PAPER.seeds), help="seeds per rate pair (default 10)"
    )
    parser.add_argument(
        "--steps", type=int, default=PAPER.level.num_steps, help="steps per run (default 100)"
    )
    parser.add_argument("--batch-size", type=int, default=PAPER.level.batch_size, help="default 128")
    parser.add_argument("--T", type=int, default=PAPER.level.T, help="sequence length (default 128)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls, median reported (default 5)")
    parser.add_argument(
        "--matmul-size", type=int, default=2048, help="the matrix product's size (default 2048)"
    )
    parser.add_argument("--gpu-json", type=Path, help="a bench/gpu.py gpu.json whose Fig. 6 times to rate")
    parser.add_argument(
        "--peak-tflops",
        type=float,
        default=H200_FP32_TFLOPS,
        help=f"the float32 peak of the --gpu-json device, TFLOP/s (default {H200_FP32_TFLOPS:g}, one H200)",
    )
    args = parser.parse_args(argv)
    counts = (args.seeds, args.steps, args.batch_size, args.T, args.repeats, args.matmul_size, *args.num_last)
    if min(counts) < 1 or args.peak_tflops <= 0:
        parser.error("the sizes, --repeats and --matmul-size must be >= 1 and --peak-tflops > 0")
    if args.gpu_json is not None and not args.gpu_json.is_file():
        parser.error(f"--gpu-json {args.gpu_json}: no such file")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Measure and print.

    **Returns:** `{"here": measured_here(...), "gpu": gpu_fractions(...) or None}`."""
    args = parse_args(argv)
    here = measured_here(args)
    print(
        f"Fig. 6 runs (a vocabulary's in one call, {here['steps']} steps) on {here['device']}; "
        f"float32 {here['matmul_size']}^2 matrix product: {here['matmul_flops_per_second'] / 1e9:.1f} GFLOP/s"
    )
    columns = ("M", "runs", "MFLOP/seed-step", "call s", "seed-steps/s", "GFLOP/s", "of matmul")
    widths = (5, 5, 16, 8, 13, 8, 10)
    print(" ".join(f"{name:>{width}}" for name, width in zip(columns, widths)))
    for row in here["rows"]:
        cells = (
            f"{row['M']}",
            f"{row['runs']}",
            f"{row['flop_per_seed_step'] / 1e6:.2f}",
            f"{row['call_seconds']:.2f}",
            f"{row['seed_steps_per_second']:.0f}",
            f"{row['flops_per_second'] / 1e9:.2f}",
            f"{row['of_matmul']:.1%}",
        )
        print(" ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths)))
    runs = sum(row["runs"] for row in here["rows"])
    print(f"these runs ({runs} x {here['steps']} steps): {here['sweep_flop'] / 1e12:.4g} TFLOP")
    gpu = None if args.gpu_json is None else gpu_fractions(args.gpu_json, args.peak_tflops)
    if gpu is not None:
        print(
            f"{gpu['file']} ({gpu['device']}, commit {gpu['commit']}; {gpu['runs']} runs x {gpu['steps']} "
            f"steps, {gpu['sweep_flop'] / 1e12:.4g} TFLOP), against {gpu['peak_tflops']:g} TFLOP/s:"
        )
        for row in gpu["rows"]:
            rate = f"{row['tflops'] * 1e3:.1f} GFLOP/s"
            print(f"  {row['side']:<40} {row['seconds']:>7.1f} s {rate:>16} {row['of_peak']:>8.3%}")
    return {"here": here, "gpu": gpu}


if __name__ == "__main__":
    main()
