"""Smoke tests of Scan and Snap's benchmarks (`bench/scan_snap/`) at toy sizes: they run, print and
return positive finite ratios, and the two sides of each comparison do the same work; the PyTorch
baseline of the Fig. 6 sweep computes the same classes, loss, gradients and entropy as
`tasks.scan_snap`. The Fig. 6 benchmarks, the headline, run by default (`fig6_flops.py`'s timing under `-m
slow`); the others under `-m slow`."""

import gzip
import json
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from tasks.scan_snap import (
    Batch,
    Dataset2,
    YZModel,
    cross_entropy,
    distinct_token_entropy,
    model_rates,
    population_loss,
    token_counts,
)
from tests.helpers import REPOSITORY, load_file, positive_finite, printed_ratio

BENCH = REPOSITORY / "bench" / "scan_snap"


def _load(name: str):
    return load_file(f"bench/scan_snap/{name}.py")


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
    printed = printed_ratio(out, "ratio batched/loop (seed-steps/s)")
    assert positive_finite(printed) and positive_finite(result["ratio"])
    assert math.isclose(printed, result["ratio"], rel_tol=0.01, abs_tol=0.01)
    assert result["extrapolated"] and "EXTRAPOLATED" in out
    (row,) = result["rows"]
    assert row["runs"] == 2 * 2 * 2 and row["loop_runs"] == 3
    for key in ("batched_rate", "loop_rate", "ratio"):
        assert positive_finite(row[key])
    # Equal work: the looped runs end where the same runs of the batched call end.
    batched = row["batched_entropies"][row["loop_indices"]]
    assert np.all(np.isfinite(batched))
    np.testing.assert_allclose(row["loop_entropies"], batched, rtol=0, atol=1e-5)


def test_fig6_torch_smoke(capsys):
    pytest.importorskip("torch")
    fig6_torch = _load("fig6_torch")
    result = fig6_torch.main(
        ["--num-last", "1", "--eta-z", "1", "2", "--ratios", "2", "--seeds", "2", "--steps", "5"]
        + ["--batch-size", "8", "--T", "16"]
    )
    out = capsys.readouterr().out
    assert "mean final distinct-token entropy" in out
    entropy = result["entropy"]
    assert entropy.shape == (1, 2, 1, 2)
    assert np.all(np.isfinite(entropy)) and np.all((entropy > 0) & (entropy < np.log(10)))
    assert all(positive_finite(x) for x in result["seconds"])


def test_fig6_torch_classes_and_entropy_match_jax():
    torch = pytest.importorskip("torch")
    fig6_torch = _load("fig6_torch")
    for num_last in (1, 3, 5, 10):
        classes = fig6_torch.syn_medium(num_last, torch.float64)
        reference = Dataset2.syn_medium(num_last).build()
        np.testing.assert_allclose(classes.probs.numpy(), reference.probs, rtol=0, atol=1e-15)
        np.testing.assert_array_equal(classes.query.numpy(), reference.query)
        np.testing.assert_array_equal(classes.next_token.numpy(), reference.next_token)
        np.testing.assert_array_equal(classes.dt_mask.numpy(), reference.distinct_mask())
    generator = torch.Generator().manual_seed(0)
    for num_last, dtype, tol in [
        (1, torch.float64, 1e-12),
        (10, torch.float64, 1e-12),
        (10, torch.float32, 1e-6),
    ]:
        classes = fig6_torch.syn_medium(num_last, dtype)
        Z = 3 * torch.randn(classes.M, classes.M, generator=generator, dtype=torch.float64).to(dtype)
        model = YZModel(Y=jnp.zeros(Z.shape, Z.numpy().dtype), Z=jnp.asarray(Z.numpy()))
        expected = float(distinct_token_entropy(model, Dataset2.syn_medium(num_last).build()))
        assert abs(fig6_torch.distinct_token_entropy(Z, classes) - expected) < tol


def test_fig6_torch_step_matches_jax_gradient():
    torch = pytest.importorskip("torch")
    fig6_torch = _load("fig6_torch")
    classes = fig6_torch.syn_medium(3, torch.float64)
    generator = torch.Generator().manual_seed(0)
    Y, Z = fig6_torch.init_params(classes.M, generator, torch.float64)
    Y0, Z0 = Y.detach().clone().numpy(), Z.detach().clone().numpy()
    tokens, query, label = fig6_torch.sample_batch(classes, 16, 24, generator)
    eta_y, eta_z = 2.0, 0.5
    optimizer = fig6_torch.make_optimizer(Y, Z, eta_y=eta_y, eta_z=eta_z)
    loss = fig6_torch.train_step(Y, Z, optimizer, tokens, query, label)

    batch = Batch(
        counts=token_counts(jnp.asarray(tokens.numpy()), classes.M),
        query=jnp.asarray(query.numpy()),
        label=jnp.asarray(label.numpy()),
    )
    jax_loss, grad = jax.value_and_grad(cross_entropy)(YZModel(Y=jnp.asarray(Y0), Z=jnp.asarray(Z0)), batch)
    assert grad.Y.dtype == jnp.float64 and np.abs(np.asarray(grad.Z)).max() > 1e-3
    assert abs(float(loss) - float(jax_loss)) < 1e-10
    np.testing.assert_allclose(Y.grad.numpy(), np.asarray(grad.Y), rtol=0, atol=1e-10)
    np.testing.assert_allclose(Z.grad.numpy(), np.asarray(grad.Z), rtol=0, atol=1e-10)
    # The first heavy-ball step (zero velocity) is p <- p - eta * grad, at each matrix's own rate.
    np.testing.assert_allclose(Y.detach().numpy(), Y0 - eta_y * np.asarray(grad.Y), rtol=0, atol=1e-10)
    np.testing.assert_allclose(Z.detach().numpy(), Z0 - eta_z * np.asarray(grad.Z), rtol=0, atol=1e-10)


def test_fig6_end_to_end_claims():
    e2e = _load("fig6_end_to_end")
    num_lasts, eta_zs, ratios = (1, 3), (0.5, 1.0), (1.0, 2.0, 5.0)
    # Falls with eta_z everywhere; num_last 3 has its minimum at ratio 2.
    mean = np.array([[[2.0, 2.1, 2.2], [1.9, 2.0, 2.1]], [[2.1, 2.0, 2.2], [2.0, 1.9, 2.1]]])
    claims = e2e.evaluate_claims(mean, num_lasts, eta_zs, ratios)
    assert claims["falls_with_eta_z"] == (True, []) and claims["min_at_ratio_2"] == (True, [])
    mean[1, 1, 0] = 2.5  # num_last 3, ratio 1: rises with eta_z
    mean[1, 1, 2] = 1.5  # num_last 3, eta_z 1: minimum at ratio 5 (still falling with eta_z)
    claims = e2e.evaluate_claims(mean, num_lasts, eta_zs, ratios)
    assert claims["falls_with_eta_z"] == (False, ["num_last 3, ratio 1"])
    assert claims["min_at_ratio_2"] == (False, ["num_last 3, eta_z 1: min at ratio 5"])
    assert e2e.evaluate_claims(mean[:1], (1,), eta_zs, ratios)["min_at_ratio_2"] == (None, [])


@pytest.mark.slow
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
        printed = printed_ratio(out, label)
        assert positive_finite(printed) and positive_finite(result[key])
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


@pytest.mark.slow
def test_progress_cost_smoke(capsys):
    bench = _load("progress_cost")
    result = bench.main(["--seeds", "2", "--steps", "20", "--t1", "10", "--repeats", "1"])
    out = capsys.readouterr().out
    assert re.search(r"^ratio with/without meters: flow \S+, scan \S+$", out, re.MULTILINE)
    for side in result.values():
        assert all(positive_finite(side[key]) for key in ("off", "on", "ratio"))


@pytest.mark.slow
def test_sharding_smoke():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(BENCH / "sharding.py"), "--devices", "2", "--seeds", "4", "--steps", "10"]
        + ["--t1", "5", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPOSITORY,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"^ratio named/shard_map \(wall time\): flow (\S+), scan (\S+)$", result.stdout, re.M)
    assert match and all(positive_finite(float(x)) for x in match.groups())


def test_compile_probe_profile_sums_each_name_without_its_nested_parts(tmp_path):
    """The probe's profile summary: a part's self time is its time less the parts nested in it on
    its own thread; parts on other threads are not subtracted."""
    probe = _load("fig6_compile_probe")
    events = [
        {"ph": "X", "name": "compile", "ts": 0, "dur": 10_000_000, "pid": 1, "tid": 1},
        {"ph": "X", "name": "pass", "ts": 1_000_000, "dur": 2_000_000, "pid": 1, "tid": 1},
        {"ph": "X", "name": "pass", "ts": 4_000_000, "dur": 1_000_000, "pid": 1, "tid": 1},
        {"ph": "X", "name": "assemble", "ts": 0, "dur": 6_000_000, "pid": 1, "tid": 2},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "pool"}},
    ]
    folder = tmp_path / "plugins" / "profile" / "run"
    folder.mkdir(parents=True)
    with gzip.open(folder / "perfetto_trace.json.gz", "wt") as file:
        json.dump({"traceEvents": events}, file)
    rows = {row["name"]: row for row in probe.profile_summary(tmp_path)["largest_self"]}
    assert rows["compile"] == {"name": "compile", "self_s": 7.0, "total_s": 10.0, "calls": 1}
    assert rows["pass"] == {"name": "pass", "self_s": 3.0, "total_s": 3.0, "calls": 2}
    assert rows["assemble"]["self_s"] == 6.0


@pytest.mark.slow
def test_compile_probe_smoke(tmp_path):
    probe = _load("fig6_compile_probe")
    results = probe.main(["--out", str(tmp_path), "--variants", "x64", "x32", "--num-last", "1"])
    assert [r["variant"] for r in results] == ["x64", "x32"] and not any("error" in r for r in results)
    assert all(r["programs"] == 1 and positive_finite(r["compile_s"][0]) for r in results)
    assert results[0]["profile"]["largest_self"] and results[0]["summaries"][0]["fusions"] > 0
    assert "| x64 |" in (tmp_path / "compile_probe.md").read_text()


def test_fig6_flops_counts_the_step_the_sweep_takes():
    """The step whose operations `fig6_flops.py` counts is the sweep's: taken three times from the
    runs' start, it ends where `SGDOutcome` (rates 1) ends, run by run."""
    flops = _load("fig6_flops")
    level = dynamics.with_settings(
        flops.PAPER.level, {"task.num_last": 1, "T": 8, "batch_size": 4, "num_steps": 3, "eta_z": 1.0}
    )
    lowered, (keys, model, state, _) = flops.step_program(level, 2)
    step = lowered.compile()
    for k in range(3):
        model, state = step(keys, model, state, jnp.full(2, k, jnp.int32))
    classes = level.task.classes().arrays(level.float_dtype)
    ours = jax.vmap(distinct_token_entropy, in_axes=(0, None))(model, classes)
    ds = dynamics.simulate(level, num_seeds=2)
    np.testing.assert_allclose(np.asarray(ours), ds["final.entropy"].values, rtol=1e-6)
    assert flops.flop_per_seed_step(level, 2) > 0


@pytest.mark.slow
def test_fig6_flops_smoke(capsys):
    """At a toy size the script rates the runs here and the committed H200 run: every rate
    positive, the H200 run's operations counted for its 640 runs of 100 steps."""
    flops = _load("fig6_flops")
    gpu_json = REPOSITORY / "bench" / "results" / "2026-11-30-h200" / "gpu.json"
    argv = ["--num-last", "1", "--seeds", "1", "--steps", "2", "--repeats", "1", "--matmul-size", "64"]
    result = flops.main([*argv, "--gpu-json", str(gpu_json)])
    (row,) = result["here"]["rows"]
    assert row["M"] == 33 and row["runs"] == 16
    assert all(positive_finite(row[k]) for k in ("flop_per_seed_step", "seed_steps_per_second", "of_matmul"))
    gpu = result["gpu"]
    assert (gpu["runs"], gpu["steps"]) == (640, 100) and len(gpu["rows"]) == 4
    assert all(positive_finite(r["of_peak"]) and r["of_peak"] < 1 for r in gpu["rows"])
    assert "PyTorch per-run loop" in capsys.readouterr().out
