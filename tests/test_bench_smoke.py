"""Smoke tests of the engine's benchmarks `bench/landscape_cost.py`, `bench/first_call.py` and
`bench/memory.py` at toy sizes (the papers' benchmarks are smoke-tested beside their papers'
tests)."""

import re

import pytest

from tests.helpers import load_file, positive_finite


@pytest.mark.slow
def test_landscape_cost_smoke(capsys):
    bench = load_file("bench/landscape_cost.py")
    result = bench.main(["--d", "3", "--h", "4", "--n", "16", "--steps", "200", "--repeats", "1"])
    out = capsys.readouterr().out
    assert re.search(
        r"^overhead: sharpness every 100 steps \S+ % \(from a random start \S+ %\), flow alongside \S+ %, "
        r"phases \S+ %; "
        r"polish at 24 parameters \S+ s$",
        out,
        re.M,
    )
    assert "polish: converged" in out
    assert all(positive_finite(result[key]) for key in ("phases_overhead", "polish_seconds"))


@pytest.mark.slow
def test_first_call_smoke(capsys):
    bench = load_file("bench/first_call.py")
    result = bench.main(["--repeats", "1", "--only", "norm_growth", "hvp"])
    out = capsys.readouterr().out
    for way in ("first", "same loss", "new lambda"):
        line = rf"^{way}: all functions \S+ s as one program, \S+ s an operation at a time, ratio \S+$"
        assert re.search(line, out, re.M)
    assert set(result) == {"norm_growth", "hvp"}
    assert all(
        positive_finite(result[name]["op by op"]["first"]) and result[name]["one program"]["first"] > 0
        for name in result
    )


def test_compile_budget_puts_the_costliest_compiling_first_and_totals_both_runs():
    """`bench/compile_budget.py`'s table from two made-up runs (the script itself runs `reproduce`
    twice, longer than the suite affords)."""
    bench = load_file("bench/compile_budget.py")

    def stats(compiled, cached, seconds):
        return {
            "compiled": compiled,
            "cached": cached,
            "trace_seconds": seconds / 4,
            "lower_seconds": seconds / 4,
            "compile_seconds": seconds / 2,
            "load_seconds": 0.1 * cached,
            "slowest": [],
        }

    cold = {
        "wall": 100.0,
        "total": stats(12, 0, 40.0),
        "pieces": {"check p.a": (5.0, stats(2, 0, 4.0)), "figure p_f": (30.0, stats(10, 0, 36.0))},
    }
    warm = {
        "wall": 50.0,
        "total": stats(0, 12, 8.0),
        "pieces": {"check p.a": (1.0, stats(0, 2, 1.0)), "figure p_f": (9.0, stats(0, 10, 7.0))},
    }
    lines = bench.table(cold, warm, None).splitlines()
    assert lines[2].startswith("figure p_f") and lines[3].startswith("check p.a")
    assert lines[-2] == (
        "cold reproduce: 100 s wall; 12 programs compiled (40 s tracing, lowering and compiling), "
        "0 loaded (0 s)"
    )
    assert lines[-1].startswith("warm reproduce: 50 s wall; 0 programs compiled (8 s tracing")
    assert len(bench.table(cold, warm, 1).splitlines()) == 5


def test_compile_budget_least_wall_counts_the_figures_whole_and_the_checks_building():
    """Were the checks' runs free, a reproduction would still take its figures' seconds and its
    checks' tracing, lowering, compiling and loading, over its workers (made-up runs)."""
    bench = load_file("bench/compile_budget.py")
    building = {"trace_seconds": 1.0, "lower_seconds": 2.0, "compile_seconds": 3.0, "load_seconds": 0.5}
    run = {
        "wall": 40.0,
        "jobs": 2,
        "pieces": {
            "check p.a": (10.0, building),
            "check p.b": (4.0, building | {"compile_seconds": 0.0}),
            "figure p_f": (20.0, building),
        },
    }
    least = bench.least_wall(run)
    assert least == {"figures": 20.0, "checks": 14.0, "checks_building": 10.0, "least_wall": 15.0}
    line = bench.least_wall_lines(run, run | {"jobs": 1}).splitlines()[1]
    assert line.startswith("warm: figures 20 s, checks 14 s (10 s of it") and "at least 30 s" in line


def test_compile_budget_reads_each_program_from_jax_log():
    """JAX's compile log, as `JAX_LOG_COMPILES=1` writes it, read back per program name."""
    bench = load_file("bench/compile_budget.py")
    cold_log = "\n".join(
        [
            "WARNING:jax._src.dispatch:Finished tracing + transforming _batched for pjit in 0.5 sec",
            "Finished jaxpr to MLIR module conversion jit(_batched) in 0.25 sec",
            "Finished XLA compilation of jit(_batched) in 4.0 sec",
            "Finished tracing broadcast_in_dim for jit in 1e-04 sec",
            "Finished jaxpr to MLIR module conversion jit(broadcast_in_dim) in 0.01 sec",
            "Finished XLA compilation of jit(broadcast_in_dim) in 0.02 sec",
            "Finished XLA compilation of jit(broadcast_in_dim) in 0.03 sec",
            "Persistent compilation cache hit for 'jit_broadcast_in_dim' with key 'jit_broadcast_in_dim-ab'",
            "  a line of another kind",
        ]
    )
    cold = {"programs": bench.programs(cold_log)}
    assert cold["programs"]["_batched"] == {
        "trace_seconds": 0.5,
        "lower_seconds": 0.25,
        "compile_seconds": 4.0,
        "compiled": 1,
    }
    assert cold["programs"]["broadcast_in_dim"]["compiled"] == 2
    assert cold["programs"]["broadcast_in_dim"]["loaded"] == 1
    warm = {"programs": bench.programs("Persistent compilation cache hit for 'jit__batched' with key 'k'")}
    lines = bench.program_table(cold, warm, 5).splitlines()
    assert lines[2].split() == ["_batched", "1", "4.8", "0", "1", "0.0"]
    assert lines[3].split()[:2] == ["broadcast_in_dim", "2"] and len(lines) == 4


@pytest.mark.slow
def test_memory_smoke(capsys):
    bench = load_file("bench/memory.py")
    result = bench.main(["--seeds", "128", "--saves", "10"])
    line = (
        r"^peak resident memory \d+ MiB; the runs' values \S+ GiB \(2 blocks of \d+ MiB\), \S+ GiB on disk$"
    )
    assert re.search(line, capsys.readouterr().out, re.M)
    assert result["blocks"] == 2 and all(positive_finite(result[k]) for k in ("peak_bytes", "disk_bytes"))
