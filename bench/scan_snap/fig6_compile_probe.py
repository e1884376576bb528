"""Where the Fig. 6 sweep's compile time goes: its programs compiled alone, each in a fresh process,
under variants (JAX's float64 mode on or off, XLA flags, one program or the four side by side),
with a profile of the compiler for the variants that ask for one.

Each variant's worker builds the programs exactly as `attnflow figures scan_snap_fig6 --full`
does (the sweep's own path through `dynamics.sweep`, stopped before any run), lowers them and
compiles them, and prints the seconds of each step and what the optimized program holds (its
kernels, loops and instructions). With `profile`, the compile runs under JAX's profiler, and the
compiler's own annotations (every HLO pass, the autotuner, LLVM, the assembler) are summed by name
into the report: the seconds spent in each, nested parts included ("total") and without them
("self").

    python bench/scan_snap/fig6_compile_probe.py --out DIR                 # every variant, in order
    python bench/scan_snap/fig6_compile_probe.py --out DIR --variants x64 x32 --budget 120

Writes `DIR/compile_probe.json` (every number, rewritten after each variant) and
`DIR/compile_probe.md` (a table per variant and the profile's largest entries). A variant that
fails (an XLA flag this version does not know stops its process) or outlives the time left records
why and the next one runs. Run with `--help` for the flags.
"""

import argparse
import collections
import concurrent.futures
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "x64": {"x64": True, "profile": True},
    "x32": {"x64": False},
    "x64_four_threads": {"x64": True, "four": "threads", "profile": True},
    "x64_four_in_turn": {"x64": True, "four": "in_turn"},
    "x64_no_triton_gemm": {"x64": True, "flags": "--xla_gpu_enable_triton_gemm=false"},
    "x64_autotune_0": {"x64": True, "flags": "--xla_gpu_autotune_level=0"},
    "x64_llvm_cheap": {"x64": True, "flags": "--xla_llvm_disable_expensive_passes=true"},
    "x64_one_thread": {"x64": True, "flags": "--xla_gpu_force_compilation_parallelism=1"},
    "x64_dump": {"x64": True, "dump": True},
}
"""Each variant: `x64` (JAX's float64 mode, as the command line runs), `four` (all four
vocabularies' programs, compiled `threads` side by side as the sweep does or `in_turn`; else the
largest alone), `flags` (XLA_FLAGS), `profile` (the compile under JAX's profiler), `dump` (XLA's
dump of the program: its optimized HLO is kept beside the report, and the kernels' sizes in the
generated assembly (PTX) are reported, the largest first)."""
NUM_LASTS = (1, 3, 5, 10)


def _capture_programs(num_lasts: Sequence[int]) -> list:
    """The lowered programs of the Fig. 6 sweep over `num_lasts`, as the sweep builds them (its
    `compile_ahead` calls are caught before compiling, and the sweep is stopped before any run)."""
    import jax

    import dynamics
    import dynamics._store as store
    from dynamics import _batch
    from figures.scan_snap import SweepConfig

    lowered = []

    def lower_only(fn, *batched_args, chunk_size=None, devices=None, progress=False):
        devices = jax.local_devices() if devices is None else devices
        num_runs = _batch._leading_size(batched_args)
        chunk = _batch._chunk_width(num_runs, chunk_size, devices)
        args = _batch._chunk_args(batched_args, 0, chunk, num_runs, devices)
        lowered.append(_batch._batched.lower(fn, args, _batch.inner_meters(False)))

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    store.compile_ahead, store.run_many = lower_only, stop
    config = SweepConfig.paper(full=True)
    grid = {"task.num_last": list(num_lasts), "eta_z": list(config.eta_zs), "ratio": list(config.ratios)}
    try:
        dynamics.sweep(config.level, grid=grid, num_seeds=10, seed=1, chunk_size=config.chunk_size)
    except Stop:
        pass
    return lowered


def _program_summary(compiled) -> dict:
    """What an optimized program holds: its kernels (fusions and library calls), loops and
    instructions, from its HLO text."""
    text = getattr(compiled, "compiled", compiled).as_text()  # equinox's wrapper holds JAX's
    return {
        "hlo_chars": len(text),
        "instructions": len(re.findall(r"^\s+\S+ = ", text, flags=re.M)),
        "fusions": len(re.findall(r"\bfusion\(", text)),
        "custom_calls": len(re.findall(r"\bcustom-call\(", text)),
        "while_loops": len(re.findall(r"\bwhile\(", text)),
        "s64_instructions": len(re.findall(r"= s64\[", text)),
        "f64_instructions": len(re.findall(r"= f64\[", text)),
    }


def profile_summary(trace_dir: Path, top: int = 40) -> dict:
    """The compiler's annotations in a profile written by `jax.profiler`, summed by name: seconds
    with nested parts ("total") and without them ("self"), and calls, the `top` largest by self."""
    paths = sorted(trace_dir.rglob("perfetto_trace.json.gz"))
    if not paths:
        return {"error": f"no perfetto_trace.json.gz under {trace_dir}"}
    data = json.load(gzip.open(paths[-1]))
    events = [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") == "X"]
    total, own, calls = collections.Counter(), collections.Counter(), collections.Counter()
    by_thread = collections.defaultdict(list)
    for event in events:
        by_thread[(event.get("pid"), event.get("tid"))].append(event)
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack = []  # (end, name) of the enclosing events
        for event in thread:
            start, dur = event["ts"], event.get("dur", 0)
            while stack and stack[-1][0] <= start:
                stack.pop()
            total[event["name"]] += dur
            own[event["name"]] += dur
            calls[event["name"]] += 1
            if stack:
                own[stack[-1][1]] -= dur
            stack.append((start + dur, event["name"]))
    rows = [
        {"name": name[:120], "self_s": own[name] / 1e6, "total_s": total[name] / 1e6, "calls": calls[name]}
        for name, _ in own.most_common(top)
    ]
    return {"threads": len(by_thread), "events": len(events), "largest_self": rows}


def dump_summary(dump_dir: Path, out: Path, top: int = 15) -> dict:
    """What XLA's dump of the sweep's program says: the files and their sizes, the optimized HLO
    copied to `out`, and the largest kernels of the generated PTX (lines of each `.entry`)."""
    files = sorted(dump_dir.iterdir(), key=lambda p: -p.stat().st_size)
    summary = {"files": [[p.name, p.stat().st_size] for p in files[:30]]}
    for path in files:
        if path.name.endswith("after_optimizations.txt"):
            (out / "after_optimizations.txt").write_bytes(path.read_bytes())
            break
    kernels = collections.Counter()
    for path in (p for p in files if p.suffix == ".ptx"):
        entry = None
        for line in path.read_text(errors="replace").splitlines():
            found = re.match(r"\s*\.visible \.entry (\S+?)\(", line)
            if found:
                entry = found.group(1)
            if entry:
                kernels[entry] += 1
    summary["ptx_lines"] = sum(kernels.values())
    summary["largest_kernels"] = kernels.most_common(top)
    return summary


def worker(name: str, num_last: int, out: Path) -> dict:
    """One variant in this process (XLA_FLAGS are set by the caller): lower the programs, then
    compile them as the variant says; returns the seconds and the programs' summaries."""
    variant = VARIANTS[name]
    import jax

    if variant.get("dump"):  # before JAX starts its backend, which reads the flags
        dump_dir = Path(tempfile.mkdtemp(prefix="xla_dump_"))
        dump_flags = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*_batched.*"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {dump_flags}".strip()
    jax.config.update("jax_enable_x64", variant["x64"])
    jax.config.update("jax_enable_compilation_cache", False)
    start = time.perf_counter()
    import dynamics  # noqa: F401  (its import time is reported apart)

    imported = time.perf_counter()
    lowered = _capture_programs(NUM_LASTS if variant.get("four") else (num_last,))
    traced = time.perf_counter()
    result = {"variant": name, "x64": variant["x64"], "flags": variant.get("flags", "")}
    result |= {"import_s": imported - start, "trace_and_lower_s": traced - imported, "programs": len(lowered)}
    result["device"] = str(jax.devices()[0])
    trace_dir = out / f"trace_{name}"
    if variant.get("profile"):
        jax.profiler.start_trace(str(trace_dir), create_perfetto_trace=True)

    def compile_one(low):
        begin = time.perf_counter()
        compiled = low.compile()
        return time.perf_counter() - begin, compiled

    begin = time.perf_counter()
    if variant.get("four") == "threads":
        with concurrent.futures.ThreadPoolExecutor(len(lowered)) as pool:
            done = list(pool.map(compile_one, lowered))
    else:
        done = [compile_one(low) for low in lowered]
    result["compile_wall_s"] = time.perf_counter() - begin
    if variant.get("profile"):
        jax.profiler.stop_trace()
        result["profile"] = profile_summary(trace_dir)
    result["compile_s"] = [seconds for seconds, _ in done]
    result["summaries"] = [_program_summary(compiled) for _, compiled in done]
    if variant.get("dump"):
        result["dump"] = dump_summary(dump_dir, out)
    return result


def run_variant(name: str, num_last: int, out: Path, timeout: float) -> dict:
    """Run `worker(name)` in a fresh process with the variant's XLA flags."""
    env = dict(os.environ)
    flags = VARIANTS[name].get("flags")
    if flags:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flags}".strip()
    with tempfile.NamedTemporaryFile(suffix=".json") as result_file:
        command = [sys.executable, __file__, "--worker", name, "--num-last", str(num_last)]
        command += ["--out", str(out), "--result", result_file.name]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"variant": name, "error": f"not done in {timeout:.0f} s"}
        wall = time.perf_counter() - start
        if done.returncode != 0:
            return {"variant": name, "error": done.stderr.strip()[-1500:], "process_s": wall}
        return json.loads(Path(result_file.name).read_text()) | {"process_s": wall}


def markdown(results: list[dict]) -> str:
    """A table of the variants, then each profile's largest entries."""
    lines = [
        "| variant | flags | programs | import s | trace+lower s | compile s (each) | compile wall s "
        "| kernels |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(
                f"| {r['variant']} | {VARIANTS[r['variant']].get('flags', '')} | failed: "
                f"{r['error'].splitlines()[-1][:200]} | | | | | |"
            )
            continue
        each = ", ".join(f"{s:.1f}" for s in r["compile_s"])
        kernels = ", ".join(str(s["fusions"] + s["custom_calls"]) for s in r["summaries"])
        lines.append(
            f"| {r['variant']} | {r['flags']} | {r['programs']} | {r['import_s']:.1f} | "
            f"{r['trace_and_lower_s']:.1f} | {each} | {r['compile_wall_s']:.1f} | {kernels} |"
        )
    for r in results:
        profile = r.get("profile")
        if not profile or "largest_self" not in profile:
            continue
        lines += [
            "",
            f"### {r['variant']}: the compiler's largest parts (self seconds)",
            "",
            "| name | self s | total s | calls |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {row['name']} | {row['self_s']:.2f} | {row['total_s']:.2f} | {row['calls']} |"
            for row in profile["largest_self"]
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    if args.worker:
        result = worker(args.worker, args.num_last, args.out)
        Path(args.result).write_text(json.dumps(result))
        return [result]
    args.out.mkdir(parents=True, exist_ok=True)
    start, results = time.perf_counter(), []
    for name in args.variants:
        left = args.budget - (time.perf_counter() - start)
        if left < 30:
            results.append({"variant": name, "error": f"not run ({left:.0f} s left)"})
            continue
        print(f"[{time.perf_counter() - start:6.1f} s] {name} ...", flush=True)
        results.append(run_variant(name, args.num_last, args.out, left))
        print(
            json.dumps({k: v for k, v in results[-1].items() if k not in ("profile", "summaries")}),
            flush=True,
        )
        (args.out / "compile_probe.json").write_text(json.dumps(results, indent=1))
        (args.out / "compile_probe.md").write_text(markdown(results))
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder for the report and profiles")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--num-last", type=int, default=10, help="the vocabulary compiled alone (default 10)")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds for all variants")
    parser.add_argument("--worker", choices=list(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
