"""Smoke test of the benchmarks in bench/ at toy sizes: they run, print and return positive
finite ratios, and the two sides of each comparison do the same work."""

import importlib.util
import math
import pathlib
import re

import jax
import numpy as np

import dynamics
from tasks.scan_snap import Dataset2, YZModel, model_rates, population_loss

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _printed_ratio(text: str, label: str) -> float:
    match = re.search(rf"^{re.escape(label)}: (\S+)$", text, re.MULTILINE)
    assert match, f"no line {label!r} in the output:\n{text}"
    return float(match.group(1))


def _positive_finite(x: float) -> bool:
    return math.isfinite(x) and x > 0


def test_fig6_sweep_smoke(capsys):
    fig6 = _load("fig6_sweep")
    result = fig6.main(
        [
            "--num-last",
            "1",
            "--seeds",
            "2",
            "--steps",
            "3",
            "--repeats",
            "1",
            "--loop-sample",
            "3",
            "--eta-z",
            "1",
            "2",
            "--ratios",
            "1",
            "5",
            "--batch-size",
            "8",
            "--T",
            "16",
        ]
    )
    out = capsys.readouterr().out
    printed = _printed_ratio(out, "ratio batched/loop (seed-steps/s)")
    assert _positive_finite(printed) and _positive_finite(result["ratio"])
    assert math.isclose(printed, result["ratio"], rel_tol=0.01, abs_tol=0.01)
    assert result["extrapolated"] and "EXTRAPOLATED" in out
    (row,) = result["rows"]
    assert row["runs"] == 2 * 2 * 2 and row["loop_runs"] == 3
    for key in ("batched_rate", "loop_rate", "ratio"):
        assert _positive_finite(row[key])
    # Equal work: the looped runs end where the same runs of the batched call end.
    batched = row["batched_entropies"][row["loop_indices"]]
    assert np.all(np.isfinite(batched))
    np.testing.assert_allclose(row["loop_entropies"], batched, rtol=0, atol=1e-5)


def test_population_flow_smoke(capsys):
    flow = _load("population_flow")
    result = flow.main(
        ["--t1", "20", "--rtol", "1e-4", "--ref-tol", "1e-10", "--dt0", "0.0625", "--repeats", "1"]
    )
    out = capsys.readouterr().out
    for label, key in [
        ("ratio Euler/adaptive (gradient evaluations)", "ratio_evals"),
        ("ratio Euler/adaptive (wall time)", "ratio_time"),
    ]:
        printed = _printed_ratio(out, label)
        assert _positive_finite(printed) and _positive_finite(result[key])
        assert math.isclose(printed, result[key], rel_tol=1e-3)
    # Equal accuracy: the chosen Euler step is at least as accurate as the adaptive run, and
    # twice that step (when tried) is not.
    assert not result["extrapolated"]
    assert result["euler_error"] <= result["adaptive_error"]
    larger = result["euler_steps"] // 2
    if larger in result["errors"]:
        assert result["errors"][larger] > result["adaptive_error"]
    assert result["euler_error"] == flow.max_abs_error(result["euler_final"], result["reference_final"])
    assert result["adaptive_evals"] > 6 and (result["adaptive_evals"] - 1) % 6 == 0


def test_gradient_evaluation_counter_counts_euler_steps():
    flow = _load("population_flow")
    dataset = Dataset2.syn_medium(1)
    arrays = dataset.build().arrays()
    model = YZModel.zeros(dataset.M)

    def euler(loss, m):
        return dynamics.train(loss, m, dynamics.gd(model_rates(0.1, 0.1)), num_steps=7)

    assert flow.count_gradient_evaluations(euler, lambda m: population_loss(m, arrays), model) == 7
    jax.effects_barrier()


def test_progress_cost_smoke(capsys):
    bench = _load("progress_cost")
    result = bench.main(["--seeds", "2", "--steps", "20", "--t1", "10", "--repeats", "1"])
    out = capsys.readouterr().out
    assert re.search(r"^ratio with/without meters: flow \S+, scan \S+$", out, re.MULTILINE)
    for side in result.values():
        assert all(_positive_finite(side[key]) for key in ("off", "on", "ratio"))


def test_sharding_smoke():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(BENCH / "sharding.py"), "--devices", "2", "--seeds", "4", "--steps", "10"]
        + ["--t1", "5", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH.parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"^ratio named/shard_map \(wall time\): flow (\S+), scan (\S+)$", result.stdout, re.M)
    assert match and all(_positive_finite(float(x)) for x in match.groups())
