"""The GPU benchmark: every measurement of the GPU question in one command, written to one JSON
file and one markdown file.

    python bench/gpu.py --out DIR           # the full sizes, about 8 minutes on one H100 at most
    python bench/gpu.py --out DIR --toy     # tiny sizes, under a minute a section on a CPU (the tests')

Sections, in this order (`--sections` picks some):

- `fig6`: the whole Fig. 6 sweep end to end, `bench/scan_snap/fig6_end_to_end.py`: attnflow in a fresh
  process (compilation included, each program's compile time logged), first on an empty
  compilation cache, then again on the cache it filled, against the PyTorch per-run loop of
  `bench/scan_snap/fig6_torch.py` on the same device (CUDA when torch sees a GPU), and the ratios;
  then attnflow's first run again under other XLA flags (kernel autotuning off, then that with
  XLA's deterministic ops twice; or `--fig6-xla-flags`) while the section has time, with how many
  runs' entropies each changes and by how much, and whether a run under the same flags repeats
  itself bit for bit.
- `scaling_L0`, `scaling_L1`: throughput against the number of seeds (1, 64, 1 024, 16 384, 65 536)
  of the Scan and Snap L0 SGD level and the L1 population flow, all seeds in one `run_many` call:
  seed-steps per second in the steady state, the first (compiling) call apart, peak device memory,
  and where the throughput stops rising. The seeds stop growing once a point took longer than
  the point budget or the next one would not fit the section's time.
- `lockstep`: the cost of lockstep in a batched adaptive flow whose runs stop at different times:
  sparse token selection's `ReducedFlow` over a grid of ε (each run stops at Theorem 1's t_ε), in
  chunks. Under `vmap` a chunk steps until its longest run is done, so the waste is (chunk width ×
  the chunk's most solver steps, summed over chunks) / (the runs' own solver steps, summed). Measured
  with the runs in a shuffled order and sorted by their expected length (t_ε ∝ 1/ε).
- `sts_step`: one online step of sparse token selection at the paper's size (T = 200, N = 400,
  batch 256), `bench/sparse_token_selection/slots.py`, against the CPU figure (31 ms a step with
  slots, 99 ms dense, on two CPU cores).
- `verify`: the checks of one paper at its full sizes, as `attnflow --no-compile-cache verify --paper
  sparse_token_selection --full` runs them, each timed in the section's fresh worker process
  (compilation included), the longest known first (`fig2_stochastic_follows_theorem3`, 807 s on two
  CPU cores), then the paper's order while time is left: against their CPU times. (The command
  line cannot pick checks; `--toy` runs one quick check of `ntp_partial_order`.)

Each section runs in its own worker process with a time limit (its share of `--budget`); one
that fails, runs out of memory or out of time records why and the next one runs. `DIR/gpu.json`
(device, versions, date, every number) and `DIR/gpu.md` (a table per section, then the goals) are
rewritten after every section. Run `python bench/gpu.py --help` for the flags.
"""

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

# Several processes share the GPU (the sections' workers, the fresh attnflow process of `fig6`,
# torch): JAX takes memory as it needs it instead of 75 % of the device up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
RECORDED_ENV = (
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "CUDA_VISIBLE_DEVICES",
    "PYTHONPYCACHEPREFIX",
    "PYTHONDONTWRITEBYTECODE",
)
"""The environment variables a report records: the device's memory and its choice, and whether
and where Python keeps bytecode (`bench/gpu_run.sh` lets it; where none is kept, every process
compiles every module it imports from source)."""

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SECTIONS = ("fig6", "scaling_L0", "scaling_L1", "lockstep", "sts_step", "verify")
"""The sections, in the order they run."""

STS_CPU_MS = {"slots": 31.0, "dense": 99.0}
STS_CPU_SOURCE = (
    "docs/papers/sparse_token_selection.md: one step at T = 200, N = 400, batch 256, float32 on two "
    "CPU cores (`python bench/sparse_token_selection/slots.py --repeats 5`)"
)
VERIFY_CPU_SECONDS = {
    "papers": {
        "contextual_bigram": 1798.0,
        "sparse_token_selection": 1091.0,
        "scan_snap": 1047.0,
        "decision_lists": 226.0,
        "ntp_partial_order": 22.0,
    },
    "checks": {
        "fig10_entropy_falls_with_lr": 885.0,
        "fig2_stochastic_follows_theorem3": 807.0,
        "l1_needed_small_batch": 646.0,
        "stage1_batch_exponent": 524.0,
    },
}
VERIFY_CPU_SOURCE = (
    "README.md: `attnflow verify --full` on two CPU cores, one run, two worker processes (seconds "
    "each paper's worker spent; the four longest checks)"
)
GOALS = {
    "fig6_first": "the Fig. 6 sweep end to end, first run (empty cache) >= 5x the PyTorch loop (same device)",
    "fig6_second": "the Fig. 6 sweep end to end, second run (its cache) >= 20x the PyTorch loop",
    "scaling": "throughput still rising at 16 384 seeds (> 1.1x the rate at 1 024)",
    "lockstep": "lockstep waste under 2x (after sorting runs by expected length, where needed)",
}
RISING = 1.1
"""A throughput counts as still rising when the next point's is at least this many times higher."""


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What one run of the benchmark measures: the full sizes or the toy ones."""

    name: str
    budget: float
    """Seconds for the whole run; each section gets at most its cap, and what is left."""
    caps: dict
    fig6_argv: tuple[str, ...]
    fig6_xla_flags: tuple[str, ...]
    """XLA flags under which the Fig. 6 section times attnflow's process again, one run each (flags
    named twice run twice: whether a run repeats itself bit for bit under them)."""
    seeds: tuple[int, ...]
    point_budget: float
    """Seconds: the seeds stop growing once a point's first call took longer."""
    levels: dict
    """Scan and Snap level name -> the settings changed from its defaults."""
    lockstep_level: dict
    lockstep_eps: tuple[float, float]
    lockstep_runs: int
    lockstep_chunk: int
    sts_argv: tuple[str, ...]
    verify_paper: str
    verify_checks: tuple[str, ...] | None
    """The checks the verify section runs (None: every check of the paper, the longest first)."""
    min_section: float
    """Seconds: a section with less time left than this is skipped."""


FULL = Sizes(
    name="full",
    budget=460.0,
    caps={"fig6": 500, "scaling_L0": 100, "scaling_L1": 100, "lockstep": 110, "sts_step": 60, "verify": 420},
    fig6_argv=(),
    fig6_xla_flags=(
        "--xla_gpu_autotune_level=0",
        "--xla_gpu_autotune_level=0 --xla_gpu_deterministic_ops=true",
        "--xla_gpu_autotune_level=0 --xla_gpu_deterministic_ops=true",
    ),
    seeds=(1, 64, 1024, 16384, 65536),
    point_budget=30.0,
    levels={"L0": {}, "L1": {"init": "uniform"}},
    lockstep_level={},
    lockstep_eps=(1e-7, 1e-1),
    lockstep_runs=256,
    lockstep_chunk=64,
    sts_argv=(),
    verify_paper="sparse_token_selection",
    verify_checks=None,
    min_section=20.0,
)
"""The paper's sizes: the whole Fig. 6 sweep, the levels' defaults (L1 from the random init, so the
seeds differ), `ReducedFlow` at d = 10, T = 200 (Kvaerno5, t1 = 10⁷) over 256 values of ε in chunks
of 64 (`dynamics.sweep`'s chunk), the STS step at T = 200, N = 400, batch 256, and every check of
sparse token selection at its full sizes."""

TOY = Sizes(
    name="toy",
    budget=300.0,
    caps=dict.fromkeys(SECTIONS, 90),
    fig6_argv=("--num-last", "1", "--seeds", "2", "--steps", "10"),
    fig6_xla_flags=("--xla_gpu_experimental_enable_fusion_autotuner=false",),
    seeds=(1, 8),
    point_budget=30.0,
    levels={"L0": {"num_steps": 4, "every": 2, "T": 8, "batch_size": 4}, "L1": {"t1": 5.0, "num_saves": 3}},
    lockstep_level={"task.d": 2, "task.T": 10, "task.q": 2, "t1": 1e4, "num_saves": 9, "solver": "tsit5"},
    lockstep_eps=(1e-4, 1e-1),
    lockstep_runs=16,
    lockstep_chunk=4,
    sts_argv=("--T", "12", "--N", "24", "--d", "3", "--batch", "8", "--steps", "2", "--repeats", "1"),
    verify_paper="ntp_partial_order",
    verify_checks=("eqn2_closed_form_vs_qp",),
    min_section=5.0,
)
"""Tiny sizes (the levels' `small` settings): every section runs in seconds on a CPU."""


def _load(name: str):
    """The bench script `bench/<name>.py` as a module."""
    spec = importlib.util.spec_from_file_location(f"bench_{name.replace('/', '_')}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def device_memory() -> dict:
    """The first device's memory counters (`peak_bytes_in_use`, `bytes_in_use`, `bytes_limit`), each
    `None` where the backend keeps none (the CPU). The peak is the process's so far."""
    import jax

    stats = jax.local_devices()[0].memory_stats() or {}
    return {key: stats.get(key) for key in ("peak_bytes_in_use", "bytes_in_use", "bytes_limit")}


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


# --- sections --------------------------------------------------------------------------------


def section_fig6(sizes: Sizes, budget: float) -> dict:
    """The whole Fig. 6 sweep end to end: attnflow's first run (an empty compilation cache) and its
    second (the cache the first filled) against the PyTorch loop on the same device, then attnflow
    with no cache under each of `sizes.fig6_xla_flags` while time is left. Each attnflow process
    logs its compilations (`JAX_LOG_COMPILES=1`), so its time splits into compiling and the rest;
    the torch loop runs one vocabulary at a time, and the numbers so far are kept after each step
    (a section stopped at its limit keeps them)."""
    import numpy as np

    e2e = _load("scan_snap/fig6_end_to_end")
    args = e2e.parse_args(list(sizes.fig6_argv))
    start = time.perf_counter()
    seeds = tuple(range(1, args.seeds + 1))
    runs = len(args.num_last) * len(e2e.ETA_Z) * len(e2e.RATIOS) * args.seeds
    sweep = {"runs": runs, "steps": args.steps, "num_last": list(args.num_last), "seeds": args.seeds}
    sweep["attnflow_mode"] = args.attnflow

    def attnflow(flags: str | None = None, timeout: float | None = None, cache_dir: Path | None = None):
        env = {"JAX_LOG_COMPILES": "1"}
        if flags:
            env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()
        seconds, out, command, log = e2e.run_attnflow(
            args.attnflow,
            args.num_last,
            args.seeds,
            args.steps,
            cache_dir=cache_dir,
            env=env,
            timeout=timeout,
        )
        entropy = np.where(out["completed"], out["entropy"], np.nan)
        return seconds, float(out["seconds"]), command, compile_times(log), entropy

    with tempfile.TemporaryDirectory(prefix="gpu_fig6_cache_") as cache:  # a user's first run, then second
        seconds, sweep_s, command, compiled, entropy = attnflow(cache_dir=Path(cache))
        result = {
            "status": "ok",
            "sweep": sweep,
            "attnflow_seconds": [seconds],
            "attnflow_sweep_seconds": sweep_s,
            "attnflow_command": command,
            "attnflow_compile": compiled,
            "torch_seconds": None,
            "ratio": None,
        }
        checkpoint(result, "running attnflow again on the compilation cache of its first run")
        warm_s, warm_sweep_s, _, warm_compiled, warm_entropy = attnflow(cache_dir=Path(cache))
    result |= {
        "attnflow_warm_seconds": warm_s,
        "attnflow_warm_sweep_seconds": warm_sweep_s,
        "attnflow_warm_compile": warm_compiled,
    } | {f"attnflow_warm_{key}": value for key, value in entropy_change(warm_entropy, entropy).items()}
    result["notes"] = [
        f"the second run against the first: {result['attnflow_warm_runs_changed']} of {runs} runs' entropies "
        f"not equal bit for bit, by at most {result['attnflow_warm_max_abs_entropy_change']:.3g}"
    ]
    checkpoint(result, "timing a bare process (imports and the device's set-up)")
    result["bare_process"] = bare_process()
    result["bare_process_overlapped"] = bare_process(BARE_PROCESS_OVERLAPPED)
    attnflow_rows = (seconds, sweep_s, compiled, warm_s, warm_compiled)
    result["tables"] = [
        _fig6_table(*attnflow_rows, None, None, runs, args.steps),
        _fig6_seconds_table((seconds, sweep_s, compiled), (warm_s, warm_sweep_s, warm_compiled)),
        _bare_process_table(result["bare_process"], result["bare_process_overlapped"]),
    ]
    checkpoint(result, "timing the PyTorch loop")
    try:
        import torch
    except ImportError:
        torch = None
        result |= {"status": "partial", "reason": "torch is not installed: the attnflow side alone, no ratio"}
    if torch is not None:
        fig6_torch = e2e.load_torch_side()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda":  # CUDA's context and libraries, outside the timing (as the import)
            fig6_torch.train_run(
                fig6_torch.syn_medium(args.num_last[0], device=device),
                e2e.ETA_Z[0],
                e2e.RATIOS[0],
                1,
                steps=1,
            )
        torch_entropy, per_vocabulary = [], []
        for num_last in args.num_last:
            values, vocabulary_s = fig6_torch.run_sweep(
                (num_last,), e2e.ETA_Z, e2e.RATIOS, seeds, steps=args.steps,
                batch_size=e2e.BATCH_SIZE, T=e2e.T, device=device,
            )  # fmt: skip
            torch_entropy.append(values[0])
            per_vocabulary.append(float(vocabulary_s[0]))
            result["torch_seconds_per_vocabulary"] = per_vocabulary
            checkpoint(
                result,
                f"timing the PyTorch loop ({len(per_vocabulary)} of {len(args.num_last)} vocabularies done)",
            )
        torch_s = sum(per_vocabulary)
        torch_info = {"version": torch.__version__, "cuda": torch.version.cuda, "device": device}
        if device == "cuda":
            torch_info["device_name"] = torch.cuda.get_device_name(0)
            torch_info["peak_bytes_allocated"] = int(torch.cuda.max_memory_allocated())
        means = {"attnflow": e2e.cell_means(entropy), "torch": e2e.cell_means(np.stack(torch_entropy))}
        verdicts = {
            side: e2e.evaluate_claims(mean, args.num_last, e2e.ETA_Z, e2e.RATIOS)
            for side, mean in means.items()
        }
        result |= {
            "torch_seconds": [torch_s],
            "torch": torch_info,
            "ratio": torch_s / seconds,
            "ratio_warm": torch_s / warm_s,
            "max_mean_entropy_diff": float(np.nanmax(np.abs(means["attnflow"] - means["torch"]))),
            "claims": {claim: {side: verdicts[side][claim][0] for side in verdicts} for claim in e2e.CLAIMS},
        }
        result["tables"][0] = _fig6_table(*attnflow_rows, torch_s, device, runs, args.steps)
        bare, overlapped = result["bare_process"], result["bare_process_overlapped"]
        bare_says = f"takes {bare['seconds']:.3g} s of it" if bare["seconds"] else f"failed: {bare['reason']}"
        overlapped_says = (
            f"{overlapped['seconds']:.3g} s" if overlapped["seconds"] else f"failed: {overlapped['reason']}"
        )
        result["notes"].append(
            f"20x the PyTorch loop leaves {torch_s / 20:.3g} s for the whole second run; a bare process "
            f"(start, imports, the device's set-up, exit) {bare_says} (with the device set up during the "
            f"imports: {overlapped_says})"
        )
    variants, entropies = [], {}
    for flags in sizes.fig6_xla_flags:
        left = budget - (time.perf_counter() - start)
        if left < sizes.min_section:
            result.setdefault("notes", []).append(f"XLA flags {flags!r} not timed ({left:.0f} s left)")
            continue
        checkpoint(result, f"timing attnflow with XLA flags {flags!r}")
        row = {"xla_flags": flags}
        try:
            seconds_v, sweep_v, _, compiled_v, entropy_v = attnflow(flags, timeout=left)
        except subprocess.TimeoutExpired:
            row |= {"seconds": None, "reason": f"not done in the {left:.0f} s left"}
        except RuntimeError as error:  # a flag this XLA does not know stops the process at its start
            row |= {"seconds": None, "reason": str(error).strip().splitlines()[-1]}
        else:
            row |= {"seconds": seconds_v, "sweep_seconds": sweep_v, "compile": compiled_v}
            row |= entropy_change(entropy_v, entropy)
            if flags in entropies:  # the same flags again: does the run repeat itself?
                row["repeat"] = entropy_change(entropy_v, entropies[flags])
            entropies.setdefault(flags, entropy_v)
        variants.append(row)
        result["xla_variants"] = variants
    if variants:
        result["tables"].append(_variants_table(seconds, compiled, variants, result["torch_seconds"]))
    return result


COMPILE_LINE = re.compile(r"Finished XLA compilation of (\S+) in ([0-9.eE+-]+) sec")


def entropy_change(entropy, reference) -> dict:
    """How far the Fig. 6 entropies `entropy` are from `reference` (NaN where a run did not
    complete): `max_abs_entropy_change` (0 where every value is equal bit for bit), `runs_changed`
    (how many runs' values are not equal bit for bit) and `same_completed` (whether the same runs
    completed)."""
    import numpy as np

    changed = ~((entropy == reference) | (np.isnan(entropy) & np.isnan(reference)))
    difference = np.abs(entropy - reference)
    return {
        "max_abs_entropy_change": float(np.nanmax(difference)) if np.isfinite(difference).any() else 0.0,
        "runs_changed": int(changed.sum()),
        "same_completed": bool(np.array_equal(np.isnan(entropy), np.isnan(reference))),
    }


def compile_times(log: str) -> dict:
    """The XLA compilations that a process with `JAX_LOG_COMPILES=1` wrote to `log`: how many, their
    seconds in all (a program found in the persistent cache is logged as compiled, its seconds
    those of loading it), the longest (its name and seconds), and the seconds spent tracing and
    lowering programs (`trace_seconds`, `lower_seconds`: what a process spends before it can look a
    program up in the cache; read per program by `bench/compile_budget.py`'s `programs`)."""
    found = [(name, float(seconds)) for name, seconds in COMPILE_LINE.findall(log)]
    name, longest = max(found, key=lambda item: item[1], default=(None, 0.0))
    per_program = _load("compile_budget").programs(log).values()
    return {
        "programs": len(found),
        "seconds": sum(seconds for _, seconds in found),
        "longest": name,
        "longest_seconds": longest,
        "each_over_1s": [round(seconds, 2) for _, seconds in found if seconds > 1.0],
        "trace_seconds": sum(stats["trace_seconds"] for stats in per_program),
        "lower_seconds": sum(stats["lower_seconds"] for stats in per_program),
    }


BARE_PROCESS = """
import json, time
start = time.perf_counter()
import attnflow.cli, figures.scan_snap
imported = time.perf_counter()
import jax
jax.block_until_ready(jax.numpy.zeros(1))
print(json.dumps({"import_seconds": imported - start, "device_seconds": time.perf_counter() - imported}))
"""
"""What a fresh `attnflow figures` process does before any of its own work: the imports of the command
and its figures, then the device's set-up (the backend started, one array put on the device)."""

BARE_PROCESS_OVERLAPPED = """
import json, threading, time
start = time.perf_counter()
import jax
ready = threading.Thread(target=lambda: jax.block_until_ready(jax.numpy.zeros(1)))
ready.start()
import attnflow.cli, figures.scan_snap
imported = time.perf_counter()
ready.join()
print(json.dumps({"import_seconds": imported - start, "device_seconds": time.perf_counter() - imported}))
"""
"""[`BARE_PROCESS`][] with the device set up on a thread while the command and its figures are
imported: whether the two overlap on this machine (`device_seconds`: the wait for the device once
the imports are done). On two CPU cores they do not (the whole process 0.1 to 0.3 s longer)."""


def bare_process(snippet: str | None = None, timeout: float = 120.0) -> dict:
    """`snippet` (default [`BARE_PROCESS`][]) run in a fresh process from the repository root: its
    wall `seconds` (start to exit), `import_seconds` and `device_seconds` (timed inside it); where it
    fails or takes over `timeout` seconds, each is `None` and `reason` says why (the section goes
    on)."""
    snippet = BARE_PROCESS if snippet is None else snippet
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", snippet], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        done, reason = None, f"not done in {timeout:g} s"
    else:
        reason = None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1]
    seconds = time.perf_counter() - start
    if reason is not None:
        return dict.fromkeys(("seconds", "import_seconds", "device_seconds")) | {"reason": reason}
    return {"seconds": seconds} | json.loads(done.stdout.strip().splitlines()[-1])


def _fig6_seconds_table(first: tuple, second: tuple) -> dict:
    """Where the seconds of attnflow's two runs go: each run's `(wall s, sweep s, compile_times of
    its log)`. A sweep compiles its programs side by side, so the log's seconds, summed over the
    threads, may exceed the sweep's."""

    def column(wall, sweep_s, compiled):
        return [
            wall,
            sweep_s,
            wall - sweep_s,
            compiled["trace_seconds"],
            compiled["lower_seconds"],
            compiled["seconds"],
        ]

    labels = [
        "the whole process, start to exit",
        "  in the sweep (run_sweep, compiling included)",
        "  outside it: start, imports, the device's set-up, the figure, exit",
        "tracing programs (JAX's log, summed over threads)",
        "lowering them to XLA (summed over threads)",
        "compiling them, or loading them from the cache (summed over threads)",
    ]
    return {
        "title": "Where attnflow's seconds go",
        "columns": ["seconds", "first run", "second run"],
        "rows": [[label, a, b] for label, a, b in zip(labels, column(*first), column(*second))],
    }


def _bare_process_table(bare: dict, overlapped: dict) -> dict:
    """The two bare processes, [`BARE_PROCESS`][] and [`BARE_PROCESS_OVERLAPPED`][]; a failed one
    says why in the title."""
    failed = "".join(
        f" ({name} failed: {run['reason']})"
        for name, run in (("it", bare), ("the overlapped one", overlapped))
        if run.get("reason")
    )
    return {
        "title": "A bare process: `import attnflow.cli, figures.scan_snap`, then one array on the device"
        + failed,
        "columns": ["", "s"],
        "rows": [
            ["the whole process, start to exit", bare["seconds"]],
            ["  the imports", bare["import_seconds"]],
            ["  the device's set-up", bare["device_seconds"]],
            ["the same, the device set up on a thread during the imports", overlapped["seconds"]],
            ["  the imports", overlapped["import_seconds"]],
            ["  then the wait for the device", overlapped["device_seconds"]],
        ],
    }


def _fig6_table(attnflow_s, sweep_s, compiled, warm_s, warm_compiled, torch_s, device, runs, steps) -> dict:
    def ratio(seconds):
        return None if torch_s is None else torch_s / seconds

    def compiling(compiled):
        return [
            f"  of which XLA compilation ({compiled['programs']} programs)",
            compiled["seconds"],
            None,
            None,
        ]

    first, second = (
        "attnflow, first run (empty compilation cache)",
        "attnflow, second run (the cache it filled)",
    )
    rows = [
        [first, attnflow_s, runs * steps / attnflow_s, ratio(attnflow_s)],
        ["  of which run_sweep (compile included)", sweep_s, runs * steps / sweep_s, None],
        compiling(compiled),
        [second, warm_s, runs * steps / warm_s, ratio(warm_s)],
        compiling(warm_compiled),
    ]
    if torch_s is not None:
        rows.append([f"torch per-run loop on {device}", torch_s, runs * steps / torch_s, 1.0])
    return {
        "title": f"Fig. 6 sweep end to end: {runs} runs x {steps} steps",
        "columns": ["side", "wall s", "seed-steps/s", "torch / this"],
        "rows": rows,
    }


def _variants_table(attnflow_s, compiled, variants, torch_seconds) -> dict:
    torch_s = torch_seconds[0] if torch_seconds else None
    rows = [
        [
            "(none: the first run above)",
            attnflow_s,
            compiled["seconds"],
            compiled["longest_seconds"],
            0,
            0.0,
            None,
            torch_s and torch_s / attnflow_s,
        ]
    ]
    for row in variants:
        if row["seconds"] is None:
            rows.append([row["xla_flags"], *[None] * 7])
            continue
        repeat = row.get("repeat")
        rows.append([
            row["xla_flags"], row["seconds"], row["compile"]["seconds"], row["compile"]["longest_seconds"],
            row["runs_changed"], row["max_abs_entropy_change"],
            repeat and f"{repeat['runs_changed']} runs, by {repeat['max_abs_entropy_change']:.3g}",
            torch_s and torch_s / row["seconds"],
        ])  # fmt: skip
    return {
        "title": "attnflow's Fig. 6 first run under other XLA flags (fresh process, no compilation cache)",
        "columns": [
            "XLA flags",
            "wall s",
            "compile s",
            "longest compile s",
            "runs changed",
            "max |entropy change|",
            "changed from the same flags' earlier run",
            "torch / attnflow",
        ],
        "rows": rows,
    }


def saturation(seeds: Sequence[int], rates: Sequence[float]) -> dict:
    """Where a throughput curve stops rising: `saturates_at` is the first seed count whose next
    point is less than `RISING` times faster (None: still rising at the last point measured), and
    `rising_at_16384` whether 16 384 seeds ran at least `RISING` times faster than 1 024 (None when
    either was not measured)."""
    saturates_at = None
    for i in range(len(rates) - 1):
        if rates[i + 1] < RISING * rates[i]:
            saturates_at = seeds[i]
            break
    by_seeds = dict(zip(seeds, rates))
    rising = None
    if 1024 in by_seeds and 16384 in by_seeds:
        rising = bool(by_seeds[16384] >= RISING * by_seeds[1024])
    gains = {f"{a}->{b}": rates[i + 1] / rates[i] for i, (a, b) in enumerate(zip(seeds, seeds[1:]))}
    return {"saturates_at": saturates_at, "rising_at_16384": rising, "gains": gains}


def section_scaling(level: str, sizes: Sizes, budget: float) -> dict:
    """Throughput of one Scan and Snap level against the number of seeds, all in one call."""
    import jax
    import numpy as np

    import dynamics
    from dynamics._simulation import batched_run, static_part, traced_arrays
    from tasks.scan_snap import SIMULATIONS

    start = time.perf_counter()
    sim = dynamics.with_settings(SIMULATIONS[level](), sizes.levels[level])
    static = static_part(sim)
    fn = batched_run(static)
    rows, points, stops = [], [], []
    unit = "optimizer" if level == "L0" else "solver (accepted and rejected)"

    def result() -> dict:
        measured = [p for p in points if "error" not in p]
        curve = saturation([p["seeds"] for p in measured], [p["seed_steps_per_s"] for p in measured])
        status = "ok" if len(measured) == len(sizes.seeds) else "partial" if measured else "error"
        notes = [
            f"seed-steps = the runs' own {unit} steps; steady s = median of the timed calls after the "
            "first (compiling) one; peak MB = the device's peak so far in this section's process"
        ]
        return {
            "status": status,
            "reason": "; ".join(stops) or None,
            "level": level,
            "simulation": type(sim).__name__,
            "settings": sim.describe(),
            "device": str(jax.local_devices()[0]),
            "points": points,
            **curve,
            "notes": stops + notes,
            "tables": [
                {
                    "title": f"Scan and Snap {level} ({type(sim).__name__}): throughput against seeds, "
                    "one call",
                    "columns": [
                        "seeds",
                        "first call s",
                        "steady s",
                        "repeats",
                        "seed-steps/s",
                        "steps/run mean / max",
                        "peak MB",
                        "note",
                    ],
                    "rows": rows,
                }
            ],
        }

    previous = None
    for n in sizes.seeds:
        left = budget - (time.perf_counter() - start)
        if previous is not None:
            # the next point: a compile as long as the last one's, then its first call and one timed
            # call, each linear in the seeds; with a margin
            run = previous["steady_s"] * n / previous["seeds"]
            predicted = 1.2 * (previous["compile_s"] + 2 * run)
            if predicted > left:
                stops.append(f"{n} seeds not run: about {predicted:.0f} s predicted, {left:.0f} s left")
                break
        traced = {key: np.repeat(value, n) for key, value in traced_arrays(static, [sim]).items()}
        seeds = np.arange(n)
        if points:
            checkpoint(result(), doing=f"running {n} seeds")
        try:
            t0 = time.perf_counter()
            runs, finite = dynamics.run_many(fn, traced, seeds, chunk_size=n)
            first = time.perf_counter() - t0
            times = []
            while len(times) < 3:
                t0 = time.perf_counter()
                runs, finite = dynamics.run_many(fn, traced, seeds, chunk_size=n)
                times.append(time.perf_counter() - t0)
                if times[0] > 2.0 or time.perf_counter() - start + times[0] > budget:
                    break
        except Exception as err:  # out of memory, above all: recorded, the seeds stop growing
            message = f"{type(err).__name__}: {str(err)[:400]}"
            points.append({"seeds": n, "error": message})
            rows.append([n, None, None, None, None, None, None, message[:120]])
            stops.append(f"{n} seeds failed: the seeds stop growing")
            break
        steady = _median(times)
        num_steps = np.asarray(runs.num_steps)
        memory = device_memory()
        point = {
            "seeds": n,
            "first_call_s": first,
            "steady_s": steady,
            "repeats": len(times),
            "compile_s": max(first - steady, 0.0),
            "steps_per_run_mean": float(num_steps.mean()),
            "steps_per_run_max": int(num_steps.max()),
            "seed_steps_per_s": float(num_steps.sum()) / steady,
            "executed_seed_steps_per_s": float(n * num_steps.max()) / steady,
            "all_finite": bool(np.all(finite)),
            **memory,
        }
        points.append(point)
        peak = memory["peak_bytes_in_use"]
        rows.append(
            [
                n,
                first,
                steady,
                len(times),
                point["seed_steps_per_s"],
                f"{point['steps_per_run_mean']:.1f} / {point['steps_per_run_max']}",
                None if peak is None else peak / 2**20,
                "" if point["all_finite"] else "non-finite runs",
            ]
        )
        checkpoint(result())
        previous = point
        if first > sizes.point_budget:
            stops.append(
                f"stopped growing: {n} seeds took {first:.1f} s (> {sizes.point_budget:.0f} s a point)"
            )
            break
    return result()


def lockstep_waste(num_steps, chunk: int) -> dict:
    """The lockstep cost of runs with `num_steps` solver steps each (in the order they are batched)
    in chunks of at most `chunk` runs, as `dynamics.run_many` makes them: as few as that allows,
    as even as their number allows, the last padded to the others' width (repeating its last run).
    Under `vmap` a chunk steps until its longest run is done.

    **Returns:** `executed` (Σ over chunks of their width × the chunk's most steps), `useful` (Σ of
    the runs' own steps), `waste` = executed / useful, and per chunk its `max` and `mean` steps.
    """
    import numpy as np

    from dynamics._batch import even_width

    steps = np.asarray(num_steps, dtype=np.int64)
    width = even_width(len(steps), chunk)
    pieces = [steps[i : i + width] for i in range(0, len(steps), width)]
    executed = sum(width * int(piece.max()) for piece in pieces)
    useful = int(steps.sum())
    return {
        "executed": executed,
        "useful": useful,
        "waste": executed / useful,
        "chunk_max": [int(piece.max()) for piece in pieces],
        "chunk_mean": [float(piece.mean()) for piece in pieces],
    }


def section_lockstep(sizes: Sizes, budget: float) -> dict:
    """The cost of lockstep in a batched adaptive flow whose runs stop at different times, with the runs
    shuffled and sorted by their expected length."""
    import jax
    import numpy as np

    import dynamics
    from dynamics._simulation import batched_run, static_part, traced_arrays
    from tasks.sparse_token_selection import ReducedFlow

    start = time.perf_counter()
    sim = dynamics.with_settings(ReducedFlow(), sizes.lockstep_level)
    n, chunk = sizes.lockstep_runs, sizes.lockstep_chunk
    eps = np.geomspace(*sizes.lockstep_eps, n)
    static = static_part(sim)
    fn = batched_run(static)
    traced = traced_arrays(static, [dataclasses.replace(sim, eps=float(e)) for e in eps])
    seeds = np.zeros(n, dtype=int)  # a deterministic flow: the seed does not matter
    expected = (sim.task.T - 1) / (4 * eps)  # Theorem 1's t_eps (min(t_eps, t1) orders the same)
    orders = {
        "shuffled": np.random.default_rng(0).permutation(n),
        "sorted": np.argsort(expected, kind="stable"),
    }

    def call(order):
        t0 = time.perf_counter()
        args = {key: value[order] for key, value in traced.items()}
        runs, _ = dynamics.run_many(fn, args, seeds[order], chunk_size=chunk)
        return time.perf_counter() - t0, runs

    first = call(orders["sorted"][:chunk])[0]  # compiles the chunk's program (and runs one chunk)
    measured, notes = {}, []
    per_run = None  # each run's own solver steps, in the grid's order

    def result() -> dict:
        orders_out = {}
        for name, order in orders.items():
            if name in measured:
                orders_out[name] = measured[name]
            else:  # not timed: what the order gives, from the runs' own steps
                orders_out[name] = {
                    "seconds": None,
                    "measured": False,
                    **lockstep_waste(per_run[order], chunk),
                }
        oracle = lockstep_waste(np.sort(per_run), chunk)
        rows = []
        for name, r in orders_out.items():
            worst = max(m / a for m, a in zip(r["chunk_max"], r["chunk_mean"]))
            label = f"{name} ({'measured' if r['measured'] else 'computed'})"
            rows.append([label, n, chunk, r["useful"], r["executed"], r["waste"], worst, r["seconds"]])
        rows.append(["sorted by actual steps (bound)", n, chunk, oracle["useful"], oracle["executed"]])
        rows[-1] += [oracle["waste"], None, None]
        before, after = orders_out["shuffled"]["waste"], orders_out["sorted"]["waste"]
        times = [orders_out[name]["seconds"] for name in ("shuffled", "sorted")]
        return {
            "status": "ok" if len(measured) == len(orders) else "partial",
            "reason": None if len(measured) == len(orders) else "; ".join(notes) or "not every order timed",
            "simulation": type(sim).__name__,
            "settings": sim.describe(),
            "device": str(jax.local_devices()[0]),
            "eps": [float(e) for e in eps],
            "chunk": chunk,
            "first_call_s": first,
            "steps_per_run": {
                "min": int(per_run.min()),
                "median": float(np.median(per_run)),
                "max": int(per_run.max()),
            },
            "orders": orders_out,
            "sorted_by_actual_steps": oracle,
            "waste_before": before,
            "waste_after": after if before > 2 else before,
            "fix_needed": bool(before > 2),
            "sorted_speedup": times[0] / times[1] if all(times) else None,
            "notes": notes
            + [
                "waste = executed / useful solver steps; executed = chunk width x the chunk's most steps, "
                "summed over chunks (a vmapped adaptive solve steps until its longest run is done); the "
                "eps grid's own order is the sorted one, a shuffled order stands for runs whose lengths "
                f"vary within a chunk; the first call (compiling, one chunk) took {first:.1f} s"
            ],
            "tables": [
                {
                    "title": f"Lockstep: {type(sim).__name__} over {n} values of eps in chunks of {chunk}",
                    "columns": [
                        "order",
                        "runs",
                        "chunk",
                        "useful steps",
                        "executed steps",
                        "waste",
                        "worst chunk max/mean",
                        "wall s",
                    ],
                    "rows": rows,
                }
            ],
        }

    for name, order in orders.items():
        left = budget - (time.perf_counter() - start)
        if measured and 1.2 * measured["shuffled"]["seconds"] > left:
            notes.append(
                f"{name} order not timed ({left:.0f} s left): its waste computed from the runs' steps"
            )
            break
        seconds, runs = call(order)
        steps = np.empty(n, dtype=np.int64)
        steps[order] = np.asarray(runs.num_steps)
        stops = np.asarray(runs.stop)
        measured[name] = {
            "seconds": seconds,
            "measured": True,
            **lockstep_waste(steps[order], chunk),
            "stops": {dynamics.StopReason(int(s)).name: int(np.sum(stops == s)) for s in np.unique(stops)},
        }
        if per_run is None:
            per_run = steps
        else:  # the same runs in other batches: the same steps, up to a few (see ReducedFlow)
            measured[name]["max_steps_diff"] = int(np.max(np.abs(steps - per_run)))
        checkpoint(result(), doing=None if len(measured) == len(orders) else "timing the next order")
    return result()


def section_sts_step(sizes: Sizes, budget: float) -> dict:
    """One online step of sparse token selection, slots and dense, against the CPU figure."""
    import jax

    slots = _load("sparse_token_selection/slots")
    out = slots.main(list(sizes.sts_argv))
    paper_size = not sizes.sts_argv
    speedup = (
        {side: STS_CPU_MS[side] / (1e3 * out[f"{side}_s"]) for side in STS_CPU_MS} if paper_size else None
    )
    rows = [
        [
            side,
            1e3 * out[f"{side}_s"],
            out["first_call_s"][side],
            STS_CPU_MS[side] if paper_size else None,
            speedup[side] if paper_size else None,
        ]
        for side in ("slots", "dense")
    ]
    return {
        "status": "ok",
        "argv": list(sizes.sts_argv),
        "paper_size": paper_size,
        "device": str(jax.local_devices()[0]),
        "slots_ms": 1e3 * out["slots_s"],
        "dense_ms": 1e3 * out["dense_s"],
        "dense_over_slots": out["ratio"],
        "first_call_s": out["first_call_s"],
        "max_loss_diff": out["dloss"],
        "max_grad_diff": out["dgrad"],
        "cpu_ms": STS_CPU_MS,
        "cpu_source": STS_CPU_SOURCE,
        "speedup_over_cpu": speedup,
        "notes": [] if paper_size else ["toy size: no CPU figure to compare with"],
        "tables": [
            {
                "title": "Sparse token selection, one online step (draw, gradient, update)"
                + (": T = 200, N = 400, batch 256, d = 10, float32" if paper_size else " (toy size)"),
                "columns": ["side", "ms/step", "first call s", "CPU ms/step (2 cores)", "speed-up over CPU"],
                "rows": rows,
            }
        ],
    }


def check_order(names: Sequence[str], longest: Sequence[str]) -> list[str]:
    """`names` with those in `longest` first (in `longest`'s order), then the others in their order."""
    first = [name for name in longest if name in names]
    return first + [name for name in names if name not in first]


def section_verify(sizes: Sizes, budget: float) -> dict:
    """The checks of one paper, as `attnflow verify --paper P [--full]` runs them, timed one by one in
    this fresh process (compilation included), the longest known ones first, while time is left."""
    import jax

    import theory
    from attnflow.papers import paper as find_paper

    start = time.perf_counter()
    paper = find_paper(sizes.verify_paper)
    full = sizes.name == "full"
    makers = {make.__name__: make for make in theory.check_makers(paper.name, paper.checks, full)}
    cpu_checks = VERIFY_CPU_SECONDS["checks"] if full else {}
    order = check_order(list(makers), sorted(cpu_checks, key=lambda name: -cpu_checks[name]))
    if sizes.verify_checks:
        order = [name for name in order if name in sizes.verify_checks]
    cpu_total = VERIFY_CPU_SECONDS["papers"].get(paper.name) if full else None
    checks, notes = [], []

    def result() -> dict:
        seconds = sum(c["seconds"] for c in checks)
        complete = len(checks) == len(makers)
        verdicts = {}
        for c in checks:
            verdicts[c["verdict"]] = verdicts.get(c["verdict"], 0) + 1
        total = ["all checks" if complete else f"{len(checks)} of {len(makers)} checks", seconds]
        total += [
            cpu_total if complete else None,
            cpu_total / seconds if complete and cpu_total else None,
            "",
        ]
        rows = [total]
        for c in sorted(checks, key=lambda c: -c["seconds"])[:8]:
            rows.append([c["name"], c["seconds"], c["cpu_seconds"], c["speedup_over_cpu"], c["verdict"]])
        return {
            "status": "ok" if complete or sizes.verify_checks else "partial",
            "reason": "; ".join(notes) or None,
            "paper": paper.name,
            "full": full,
            "device": str(jax.local_devices()[0]),
            "equivalent_command": f"attnflow --no-compile-cache verify --paper {paper.name}"
            + (" --full" if full else ""),
            "seconds": seconds,
            "cpu_seconds": cpu_total,
            "cpu_source": VERIFY_CPU_SOURCE if full else None,
            "speedup_over_cpu": cpu_total / seconds if complete and cpu_total else None,
            "verdicts": verdicts,
            "checks": checks,
            "notes": notes
            + [
                "each check timed alone in this process, compilation included (no compile cache); the "
                "known longest first, then the paper's order"
                + (f"; CPU times from {VERIFY_CPU_SOURCE}" if full else "")
            ],
            "tables": [
                {
                    "title": f"The checks of {paper.name}"
                    + (" at the paper's sizes" if full else " (quick sizes)"),
                    "columns": ["check", "wall s", "CPU s (2 cores)", "speed-up", "verdict"],
                    "rows": rows,
                }
            ],
        }

    for name in order:
        left = budget - (time.perf_counter() - start)
        if checks and left < 10:
            notes.append(f"stopped with {left:.0f} s left: {len(order) - len(checks)} checks not run")
            break
        checkpoint(result(), doing=f"running {name} (from {time.perf_counter() - start:.0f} s)")
        (check,) = theory.run_checks([makers[name]])
        cpu = cpu_checks.get(name)
        checks.append(
            {
                "name": name,
                "seconds": check.seconds,
                "verdict": check.verdict,
                "cpu_seconds": cpu,
                "speedup_over_cpu": cpu / check.seconds if cpu else None,
            }
        )
        print(f"  {paper.name}: {name} {check.verdict} ({check.seconds:.1f} s)", flush=True)
        checkpoint(result())
    return result()


SECTION_FUNCTIONS: dict[str, Callable[[Sizes, float], dict]] = {
    "fig6": section_fig6,
    "scaling_L0": lambda sizes, budget: section_scaling("L0", sizes, budget),
    "scaling_L1": lambda sizes, budget: section_scaling("L1", sizes, budget),
    "lockstep": section_lockstep,
    "sts_step": section_sts_step,
    "verify": section_verify,
}
FLOAT64 = {"scaling_L0", "scaling_L1", "lockstep", "verify"}
"""The sections that run with JAX's x64 mode on, as the command line does (the STS step keeps the
setting its CPU figure was measured in; the Fig. 6 section's attnflow process is the command line)."""

CHECKPOINT: Path | None = None
"""Where a worker writes its section's result so far (set in worker processes)."""


def checkpoint(result: dict, doing: str | None = None) -> None:
    """Keep `result`, a section's numbers so far, where the worker's parent finds it should the
    worker be stopped at its time limit; `doing` says what the section starts next."""
    if CHECKPOINT is not None:
        reason = "the results so far" + (f"; it was {doing}" if doing else "")
        partial = dict(result, status="partial", reason=reason)
        tmp = CHECKPOINT.with_suffix(".tmp")
        tmp.write_text(json.dumps(_jsonable(partial)))
        os.replace(tmp, CHECKPOINT)


# --- running the sections ----------------------------------------------------------------------


def run_section(name: str, sizes: Sizes, budget: float) -> dict:
    """Section `name` in this process: its result, or the error it raised. JAX's x64 mode is set for
    the section and put back after it."""
    import jax

    x64 = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", name in FLOAT64)
    start = time.perf_counter()
    try:
        result = SECTION_FUNCTIONS[name](sizes, budget)
    except Exception as err:
        result = {
            "status": "error",
            "reason": f"{type(err).__name__}: {str(err)[:600]}",
            "traceback": traceback.format_exc()[-4000:],
            "tables": [],
        }
    finally:
        jax.config.update("jax_enable_x64", x64)
    result["wall_s"] = time.perf_counter() - start
    return result


def _kill_group(process: subprocess.Popen) -> None:
    """End `process` and what it started (its own session's process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _changed_sizes_argv(sizes: Sizes) -> list[str]:
    """The options that make a worker's sizes `sizes`: those of the command line that changed them
    from `FULL` or `TOY`."""
    base = TOY if sizes.name == "toy" else FULL
    argv = []
    if (sizes.verify_paper, sizes.verify_checks) != (base.verify_paper, base.verify_checks):
        argv += ["--verify-paper", sizes.verify_paper]  # every check of that paper
    if sizes.fig6_xla_flags != base.fig6_xla_flags:
        argv += [f"--fig6-xla-flags={flags}" for flags in sizes.fig6_xla_flags]
    return argv


def run_worker(name: str, sizes: Sizes, budget: float, grace: float = 20.0) -> dict:
    """Section `name` in a fresh worker process, killed (with what it started) at `budget` + `grace`
    seconds: its result, or why there is none."""
    with tempfile.TemporaryDirectory(prefix=f"gpu_{name}_") as tmp:
        result_path = Path(tmp) / "result.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            name,
            "--result",
            str(result_path),
        ]
        command += ["--budget", f"{budget:.1f}"] + (["--toy"] if sizes.name == "toy" else [])
        command += _changed_sizes_argv(sizes)
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
        timed_out = False
        try:
            process.wait(timeout=budget + grace)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
        seconds = time.perf_counter() - start
        if result_path.exists():  # the result, or the checkpoint of a worker stopped at its limit
            result = json.loads(result_path.read_text())
            if timed_out:
                result["reason"] = f"stopped at its time limit ({budget + grace:.0f} s): {result['reason']}"
        else:
            why = (
                f"killed at its time limit ({budget + grace:.0f} s)"
                if timed_out
                else f"exit {process.returncode}"
            )
            result = {"status": "error", "reason": f"the worker gave no result: {why}", "tables": []}
    result["worker_s"] = seconds
    return result


def _jsonable(x):
    """`x` with numpy values as Python ones and non-finite floats as None (JSON has no NaN)."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def goals(sections: dict) -> list[dict]:
    """The goals, each with what was measured and whether it is met (None: not measured)."""
    fig6 = sections.get("fig6", {})
    out = []
    for goal, key, at_least in (("fig6_first", "ratio", 5), ("fig6_second", "ratio_warm", 20)):
        ratio = fig6.get(key)
        out.append(
            {"goal": GOALS[goal], "measured": ratio, "met": None if ratio is None else ratio >= at_least}
        )
    for level in ("L0", "L1"):
        s = sections.get(f"scaling_{level}", {})
        gain = (s.get("gains") or {}).get("1024->16384")
        rising = s.get("rising_at_16384")
        out.append({"goal": f"{level}: {GOALS['scaling']}", "measured": gain, "met": rising})
    lock = sections.get("lockstep", {})
    after = lock.get("waste_after")
    out.append({"goal": GOALS["lockstep"], "measured": after, "met": None if after is None else after < 2})
    return out


def _cell(x) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}".replace(",", " ")
    if isinstance(x, float):
        if not math.isfinite(x):
            return "–"
        if x == 0:
            return "0"
        if abs(x) >= 1e5 or abs(x) < 1e-2:
            return f"{x:.3g}"
        return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}" if abs(x) < 1000 else f"{x:.0f}"
    return str(x).replace("|", "\\|")


def markdown_table(table: dict) -> str:
    lines = [f"**{table['title']}**", ""]
    lines.append("| " + " | ".join(table["columns"]) + " |")
    lines.append("|" + "|".join("---" for _ in table["columns"]) + "|")
    for row in table["rows"]:
        lines.append("| " + " | ".join(_cell(x) for x in row) + " |")
    return "\n".join(lines)


def markdown(report: dict) -> str:
    """The report as markdown: what ran where, then a table per section, then the goals."""
    meta = report["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v)
    lines = [
        "# GPU benchmark",
        "",
        f"- device: {', '.join(meta['device_kinds'])} ({meta['backend']}, {len(meta['devices'])} device(s))",
        f"- versions: {versions}",
        f"- date: {meta['date']}; commit: {meta['commit'] or 'unknown'}",
        f"- host: {meta['host']}, {meta['cpu']}, {meta['cores']} cores",
        f"- sizes: {report['sizes']}; budget {report['budget_s']:.0f} s; wall {report['wall_s']:.0f} s; "
        f"XLA_FLAGS `{meta['xla_flags']}`",
        "",
    ]
    for name, section in report["sections"].items():
        lines.append(f"## {name}: {section['status']}")
        lines.append("")
        if section.get("reason"):
            lines += [f"{section['reason']}", ""]
        for table in section.get("tables", []):
            lines += [markdown_table(table), ""]
        for note in section.get("notes", []):
            lines.append(f"- {note}")
        wall = section.get("worker_s", section.get("wall_s"))
        if wall is not None:
            lines.append(f"- section wall time {wall:.1f} s")
        lines.append("")
    lines += ["## Goals", "", "| goal | measured | met |", "|---|---|---|"]
    for g in report["goals"]:
        lines.append(f"| {g['goal']} | {_cell(g['measured'])} | {_cell(g['met'])} |")
    return "\n".join(lines) + "\n"


def metadata(commit: str | None) -> dict:
    """Device, versions, machine and date (`attnflow._provenance.provenance`), with torch's version."""
    from attnflow._provenance import provenance, version_of

    meta = provenance()
    meta["versions"]["torch"] = version_of("torch")
    meta["versions"]["xarray"] = version_of("xarray")
    meta["platform"] = platform.platform()
    meta["memory"] = device_memory()
    meta["env"] = {name: os.environ.get(name) for name in RECORDED_ENV}
    if commit:
        meta["commit"] = commit
    return meta


def write_report(out: Path, report: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    report = _jsonable(report)
    (out / "gpu.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "gpu.md").write_text(markdown(report))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="The GPU benchmark: Fig. 6 end to end against PyTorch, throughput against seeds, "
        "the lockstep cost, the STS step and the full checks of one paper; writes OUT/gpu.json and "
        "OUT/gpu.md.",
    )
    parser.add_argument("--out", type=Path, help="the folder for gpu.json and gpu.md")
    parser.add_argument("--toy", action="store_true", help="tiny sizes (seconds a section on a CPU)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, help="run only these (default: all)")
    parser.add_argument("--budget", type=float, help="seconds for the whole run (default 460, toy 300)")
    parser.add_argument("--verify-paper", help="the paper whose full checks the verify section runs")
    parser.add_argument("--commit", help="the commit to record (default: git's, where it is a checkout)")
    parser.add_argument(
        "--fig6-xla-flags",
        action="append",
        metavar="FLAGS",
        help="XLA flags the fig6 section times attnflow's first run under, once per use of this option "
        "(with '=': --fig6-xla-flags='--xla_a=0 --xla_b=1'; flags named twice run twice; default: kernel "
        "autotuning off, then that with XLA's deterministic ops, twice)",
    )
    parser.add_argument(
        "--in-process", action="store_true", help="run the sections in this process (no time limits enforced)"
    )
    parser.add_argument("--worker", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is None and args.out is None:
        parser.error("--out is required")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the sections and write the report.

    **Returns:** the report: `meta` (device, versions, date, ...), `sizes`, `budget_s`, `wall_s`,
    `sections` (name -> its result: `status` "ok", "partial", "skipped" or "error", `reason`, its
    numbers and `tables`) and `goals`.
    """
    args = parse_args(argv)
    sizes = TOY if args.toy else FULL
    if args.verify_paper:
        sizes = dataclasses.replace(sizes, verify_paper=args.verify_paper, verify_checks=None)
    if args.budget:
        sizes = dataclasses.replace(sizes, budget=args.budget)
    if args.fig6_xla_flags:
        sizes = dataclasses.replace(sizes, fig6_xla_flags=tuple(args.fig6_xla_flags))
    from attnflow._runtime import use_backend_optimization

    use_backend_optimization()  # the command line's XLA level, before JAX first computes (the workers too)
    if args.worker:  # one section in this fresh process, its result to --result
        global CHECKPOINT
        CHECKPOINT = args.result
        result = run_section(args.worker, sizes, float(args.budget or sizes.caps[args.worker]))
        args.result.write_text(json.dumps(_jsonable(result)))
        return result
    start = time.perf_counter()
    report = {
        "meta": metadata(args.commit),
        "sizes": sizes.name,
        "budget_s": sizes.budget,
        "wall_s": 0.0,
        "sections": {},
        "goals": [],
    }
    for name in [name for name in SECTIONS if name in (args.sections or SECTIONS)]:
        left = sizes.budget - (time.perf_counter() - start)
        budget = min(sizes.caps[name], left)
        print(f"\n=== {name}: up to {budget:.0f} s ===", flush=True)
        if budget < sizes.min_section:
            result = {
                "status": "skipped",
                "reason": f"no time left in the budget ({left:.0f} s)",
                "tables": [],
            }
        elif args.in_process:
            result = run_section(name, sizes, budget)
        else:
            result = run_worker(name, sizes, budget)
        print(f"=== {name}: {result['status']}" + (f" ({result['reason']})" if result.get("reason") else ""))
        report["sections"][name] = result
        report["goals"] = goals(report["sections"])
        report["wall_s"] = time.perf_counter() - start
        write_report(args.out, report)
    print(f"\nwrote {args.out / 'gpu.json'} and {args.out / 'gpu.md'} ({report['wall_s']:.0f} s)")
    return report


if __name__ == "__main__":
    main()
