"""The GPU benchmark `bench/gpu.py` at toy sizes on the CPU: the report has every section it ran,
each with numbers or the reason it has none, and a markdown table; its pieces (the lockstep waste,
where throughput saturates, the verify section's reading of `attnflow verify`, the time limits)
on made-up inputs. The toy runs, through worker processes, under `-m slow`."""

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPOSITORY, load_file

GPU = REPOSITORY / "bench" / "gpu.py"


@pytest.fixture(scope="module")
def gpu():
    return load_file("bench/gpu.py")


def _run_toy(out, *sections: str, options: tuple[str, ...] = ()) -> dict:
    command = [sys.executable, str(GPU), "--toy", "--out", str(out), *options]
    if sections:
        command += ["--sections", *sections]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPOSITORY)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "gpu.json").read_text())
    assert (out / "gpu.md").read_text().startswith("# GPU benchmark")
    return report


def _numbers(section: dict) -> list[float]:
    """Every number in a section's tables."""
    return [
        x for table in section["tables"] for row in table["rows"] for x in row if isinstance(x, int | float)
    ]


def _check_meta(report: dict) -> None:
    meta = report["meta"]
    assert meta["device_kinds"] and meta["date"] and meta["backend"]
    for library in ("jax", "jaxlib", "diffrax", "equinox", "optax"):
        assert meta["versions"][library], library
    assert "torch" in meta["versions"]  # its version, or None where it is not installed


def _check_lockstep(section: dict) -> None:
    assert section["status"] == "ok", section
    shuffled, ordered = section["orders"]["shuffled"], section["orders"]["sorted"]
    assert shuffled["useful"] == ordered["useful"] > 0
    # sorting by expected length groups runs of like length: never more executed steps
    assert 1 <= ordered["waste"] <= shuffled["waste"]
    assert 1 <= section["sorted_by_actual_steps"]["waste"] <= ordered["waste"] + 1e-12
    assert section["waste_after"] == (ordered["waste"] if shuffled["waste"] > 2 else shuffled["waste"])
    assert section["steps_per_run"]["max"] > section["steps_per_run"]["min"]  # the runs stop apart


def _check_verify(section: dict) -> None:
    assert section["status"] == "ok", section
    assert section["paper"] == "ntp_partial_order" and not section["full"]
    (check,) = section["checks"]
    assert check["name"] == "eqn2_closed_form_vs_qp" and check["verdict"] == "pass" and check["seconds"] > 0


@pytest.mark.slow
def test_gpu_bench_toy_quick(tmp_path, gpu):
    """Two sections through the worker processes (the lockstep measurement, one quick check), the
    JSON, the markdown and the goals."""
    report = _run_toy(tmp_path, "verify", "lockstep")
    _check_meta(report)
    assert report["sizes"] == "toy" and list(report["sections"]) == ["lockstep", "verify"]
    _check_lockstep(report["sections"]["lockstep"])
    _check_verify(report["sections"]["verify"])
    goals = {g["goal"]: g for g in report["goals"]}
    lockstep_goal = goals[gpu.GOALS["lockstep"]]
    assert lockstep_goal["measured"] == report["sections"]["lockstep"]["waste_after"]
    assert lockstep_goal["met"] == (lockstep_goal["measured"] < 2)
    assert goals[gpu.GOALS["fig6_first"]]["met"] is goals[gpu.GOALS["fig6_second"]]["met"] is None  # not run
    text = (tmp_path / "gpu.md").read_text()
    assert "## lockstep: ok" in text and "| order | runs | chunk |" in text and "## Goals" in text


@pytest.mark.slow
def test_gpu_bench_toy_all_sections(tmp_path):
    """`bench/gpu.py --toy`: every section, each with numbers or a recorded reason; of the fig6
    section's XLA flags, one named twice runs twice, and one this XLA does not know is recorded
    with XLA's own words."""
    flags = ("--xla_gpu_experimental_enable_fusion_autotuner=false", "--xla_no_such_flag=1")
    report = _run_toy(tmp_path, options=tuple(f"--fig6-xla-flags={f}" for f in (flags[0], *flags)))
    _check_meta(report)
    sections = report["sections"]
    assert list(sections) == ["fig6", "scaling_L0", "scaling_L1", "lockstep", "sts_step", "verify"]
    for name, section in sections.items():
        if section["status"] in ("skipped", "error"):
            assert section["reason"], name
        else:
            assert _numbers(section), name
            assert all(math.isfinite(x) for x in _numbers(section)), name
    fig6 = sections["fig6"]
    assert fig6["status"] in ("ok", "partial")
    assert fig6["attnflow_seconds"][0] > 0 and fig6["sweep"]["runs"] == 32
    assert fig6["attnflow_compile"]["programs"] > 0
    assert 0 < fig6["attnflow_compile"]["seconds"] < fig6["attnflow_seconds"][0]
    assert fig6["attnflow_warm_seconds"] > 0  # on the cache, on the CPU: the same numbers, bit for bit
    assert fig6["attnflow_warm_runs_changed"] == fig6["attnflow_warm_max_abs_entropy_change"] == 0
    assert 0 < fig6["attnflow_warm_sweep_seconds"] < fig6["attnflow_warm_seconds"]
    for bare in (fig6["bare_process"], fig6["bare_process_overlapped"]):
        assert 0 < bare["import_seconds"] + bare["device_seconds"] < bare["seconds"]
    assert len(fig6["tables"][2]["rows"]) == 6
    assert [t["title"] for t in fig6["tables"][1:3]] == [
        "Where attnflow's seconds go",
        "A bare process: `import attnflow.cli, figures.scan_snap`, then one array on the device",
    ]
    variant, again, unknown = fig6["xla_variants"]
    assert variant["xla_flags"] == again["xla_flags"] == flags[0]  # a GPU flag: on the CPU, bit for bit
    for row in (variant, again):
        assert row["seconds"] > 0 and row["max_abs_entropy_change"] == row["runs_changed"] == 0
        assert row["same_completed"]
    assert "repeat" not in variant and again["repeat"]["runs_changed"] == 0
    assert unknown["seconds"] is None and f"Unknown flag in XLA_FLAGS: {flags[1]}" in unknown["reason"]
    if fig6["status"] == "ok":
        assert fig6["ratio"] > 0 and fig6["torch_seconds"][0] > 0
    else:
        assert "torch" in fig6["reason"] and fig6["ratio"] is None
    for level in ("L0", "L1"):
        scaling = sections[f"scaling_{level}"]
        assert scaling["status"] == "ok", scaling
        assert [p["seeds"] for p in scaling["points"]] == [1, 8]
        assert all(
            p["seed_steps_per_s"] > 0 and p["first_call_s"] >= p["steady_s"] for p in scaling["points"]
        )
    _check_lockstep(sections["lockstep"])
    sts = sections["sts_step"]
    assert sts["slots_ms"] > 0 and sts["dense_ms"] > 0 and sts["max_grad_diff"] < 1e-5
    assert sts["speedup_over_cpu"] is None  # toy size: no CPU figure
    _check_verify(sections["verify"])
    text = (tmp_path / "gpu.md").read_text()
    for name in sections:
        assert f"## {name}: " in text


@pytest.mark.slow
def test_gpu_run_sh_gives_each_timed_process_the_bytecode_written_once(tmp_path):
    """`bench/gpu_run.sh` where the environment says to write no bytecode
    (`PYTHONDONTWRITEBYTECODE`): the script it runs finds the project's bytecode in the folder of
    `$PYTHONPYCACHEPREFIX`, written by the import check before it, and may write what it imports
    later."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import importlib.util, json, sys\n"
        "import dynamics\n"
        "cached = importlib.util.cache_from_source(dynamics.__file__)\n"
        "json.dump({'prefix': sys.pycache_prefix, 'writes': not sys.dont_write_bytecode, 'cached': cached},"
        " open(sys.argv[sys.argv.index('--out') + 1] + '/probe.json', 'w'))\n"
    )
    prefix = tmp_path / "pycache"
    env = os.environ | {
        "SCRIPT": str(script),
        "OUT": str(tmp_path / "out"),
        "PYTHONPYCACHEPREFIX": str(prefix),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    done = subprocess.run(
        ["bash", str(REPOSITORY / "bench" / "gpu_run.sh")],
        capture_output=True, text=True, timeout=300, cwd=REPOSITORY, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    probe = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert probe["prefix"] == str(prefix) and probe["writes"]
    assert Path(probe["cached"]).is_file() and Path(probe["cached"]).is_relative_to(prefix)


def test_a_worker_gets_the_sizes_the_command_line_changed(gpu):
    """A section runs in a worker process: the options that changed the sizes reach it, and it
    reads them back into the same sizes."""
    changed = dataclasses.replace(
        gpu.FULL, verify_paper="scan_snap", fig6_xla_flags=("--xla_a=1 --xla_b=0", "--xla_c=2")
    )
    assert gpu._changed_sizes_argv(gpu.FULL) == gpu._changed_sizes_argv(gpu.TOY) == []
    every_toy_check = dataclasses.replace(gpu.TOY, verify_checks=None)  # --toy --verify-paper <its paper>
    assert gpu._changed_sizes_argv(every_toy_check) == ["--verify-paper", gpu.TOY.verify_paper]
    args = gpu.parse_args(["--out", "x", *gpu._changed_sizes_argv(changed)])
    assert args.verify_paper == "scan_snap" and tuple(args.fig6_xla_flags) == changed.fig6_xla_flags


def test_compile_times(gpu):
    """The compilations read from a `JAX_LOG_COMPILES=1` log, other lines ignored."""
    log = "\n".join([
        "Finished tracing + transforming f for pjit in 0.01 sec",
        "WARNING:jax._src.dispatch:Finished tracing one_run for jit in 0.25 sec",
        "Finished jaxpr to MLIR module conversion jit(one_run) in 0.5 sec",
        "Finished jaxpr to MLIR module conversion jit(_batched) in 1.25 sec",
        "Finished XLA compilation of jit(stage) in 0.049 sec",
        "W1127 slow_operation_alarm.cc:140] The operation took 2m15s",
        "Finished XLA compilation of jit(_batched) in 137.5 sec",
        "Finished XLA compilation of jit(_batched) in 2.5e0 sec",
    ])  # fmt: skip
    found = gpu.compile_times(log)
    assert found["programs"] == 3 and found["seconds"] == pytest.approx(0.049 + 137.5 + 2.5)
    assert found["trace_seconds"] == pytest.approx(0.26) and found["lower_seconds"] == 1.75
    assert found["longest"] == "jit(_batched)" and found["longest_seconds"] == 137.5
    assert found["each_over_1s"] == [137.5, 2.5]
    assert gpu.compile_times("no compilation") == {
        "programs": 0, "seconds": 0, "longest": None, "longest_seconds": 0.0, "each_over_1s": [],
        "trace_seconds": 0, "lower_seconds": 0,
    }  # fmt: skip


def test_fig6_seconds_split_into_the_sweep_and_the_rest(gpu):
    """The table of where attnflow's seconds go: each run's column from its wall time, its sweep's
    and its log; what lies outside the sweep is the rest of the wall time."""
    first = (20.0, 12.0, {"trace_seconds": 1.5, "lower_seconds": 2.5, "seconds": 27.0})
    second = (13.0, 6.0, {"trace_seconds": 1.0, "lower_seconds": 2.0, "seconds": 1.5})
    table = gpu._fig6_seconds_table(first, second)
    rows = {label.strip(): values for label, *values in table["rows"]}
    assert rows["the whole process, start to exit"] == [20.0, 13.0]
    assert rows["in the sweep (run_sweep, compiling included)"] == [12.0, 6.0]
    assert rows["outside it: start, imports, the device's set-up, the figure, exit"] == [8.0, 7.0]
    assert [values for label, values in rows.items() if label.startswith("tracing")] == [[1.5, 1.0]]
    assert table["columns"] == ["seconds", "first run", "second run"] and len(table["rows"]) == 6


def test_a_bare_process_that_fails_says_why_and_the_section_goes_on(gpu, monkeypatch):
    monkeypatch.setattr(gpu, "BARE_PROCESS", "raise SystemExit('no device here')")
    bare = gpu.bare_process()
    assert bare == {
        "seconds": None,
        "import_seconds": None,
        "device_seconds": None,
        "reason": "no device here",
    }
    ran = {"seconds": 3.0, "import_seconds": 2.0, "device_seconds": 0.5}
    table = gpu._bare_process_table(bare, ran)
    assert table["title"].endswith("(it failed: no device here)")
    assert [row[1] for row in table["rows"]] == [None] * 3 + [3.0, 2.0, 0.5]
    table = gpu._bare_process_table(ran, bare)
    assert table["title"].endswith("(the overlapped one failed: no device here)")
    assert [row[1] for row in table["rows"]] == [3.0, 2.0, 0.5] + [None] * 3
    assert gpu.bare_process("import time; time.sleep(5)", timeout=0.5)["reason"] == "not done in 0.5 s"


def test_goals_hold_each_fig6_run_to_its_own_ratio(gpu):
    """The first run is held to 5x the PyTorch loop and the second to 20x, each by its own ratio."""
    found = {g["goal"]: g for g in gpu.goals({"fig6": {"ratio": 5.5, "ratio_warm": 8.1}})}
    first, second = found[gpu.GOALS["fig6_first"]], found[gpu.GOALS["fig6_second"]]
    assert (first["measured"], first["met"]) == (5.5, True)
    assert (second["measured"], second["met"]) == (8.1, False)
    found = {g["goal"]: g for g in gpu.goals({"fig6": {"ratio": 4.9, "ratio_warm": 20.0}})}
    assert not found[gpu.GOALS["fig6_first"]]["met"] and found[gpu.GOALS["fig6_second"]]["met"]


def test_lockstep_waste(gpu):
    # chunks [10, 1] and [1, 1]: executed 2*10 + 2*1, useful 13
    waste = gpu.lockstep_waste([10, 1, 1, 1], chunk=2)
    assert waste["executed"] == 22 and waste["useful"] == 13 and waste["waste"] == 22 / 13
    assert waste["chunk_max"] == [10, 1] and waste["chunk_mean"] == [5.5, 1.0]
    # the last chunk padded to the chunk's width, as run_many pads it
    assert gpu.lockstep_waste([4, 4, 2], chunk=2)["executed"] == 2 * 4 + 2 * 2
    # 5 runs in chunks of at most 4: two chunks of 3, [5, 1, 1] and [1, 1] (padded), as run_many
    assert gpu.lockstep_waste([5, 1, 1, 1, 1], chunk=4)["executed"] == 3 * 5 + 3 * 1
    assert gpu.lockstep_waste(np.full(8, 7), chunk=4)["waste"] == 1.0


def test_saturation(gpu):
    seeds = (1, 64, 1024, 16384, 65536)
    curve = gpu.saturation(seeds, [1.0, 50.0, 500.0, 4000.0, 4100.0])
    assert curve["saturates_at"] == 16384 and curve["rising_at_16384"] is True
    assert curve["gains"]["1024->16384"] == 8.0
    curve = gpu.saturation(seeds, [1.0, 50.0, 500.0, 520.0, 530.0])
    assert curve["saturates_at"] == 1024 and curve["rising_at_16384"] is False
    curve = gpu.saturation(seeds[:3], [1.0, 50.0, 500.0])
    assert curve["saturates_at"] is None and curve["rising_at_16384"] is None


def test_report_records_failures_and_writes_markdown(tmp_path, gpu):
    """A section that failed or was skipped shows its reason; numpy values and NaN become JSON."""
    report = {
        "meta": {
            "device_kinds": ["NVIDIA H100"],
            "backend": "gpu",
            "devices": ["cuda:0"],
            "versions": {"jax": "0.0", "torch": None},
            "date": "2026-01-01T00:00:00+00:00",
            "commit": None,
            "host": "h",
            "cpu": "c",
            "cores": 16,
            "xla_flags": "",
        },
        "sizes": "full",
        "budget_s": 460.0,
        "wall_s": 1.0,
        "sections": {
            "fig6": {"status": "error", "reason": "RuntimeError: out of memory", "tables": []},
            "verify": {"status": "skipped", "reason": "no time left in the budget (3 s)", "tables": []},
            "sts_step": {
                "status": "ok",
                "slots_ms": np.float32(0.5),
                "tables": [{"title": "t", "columns": ["a", "b"], "rows": [[np.int64(3), float("nan")]]}],
            },
        },
        "goals": [],
    }
    report["goals"] = gpu.goals(report["sections"])
    gpu.write_report(tmp_path, report)
    stored = json.loads((tmp_path / "gpu.json").read_text())
    assert stored["sections"]["sts_step"]["slots_ms"] == 0.5
    assert stored["sections"]["sts_step"]["tables"][0]["rows"] == [[3, None]]
    assert all(g["met"] is None for g in stored["goals"])  # nothing measured
    text = (tmp_path / "gpu.md").read_text()
    assert "## fig6: error" in text and "RuntimeError: out of memory" in text
    assert "## verify: skipped" in text and "| 3 | – |" in text


def test_check_order(gpu):
    names = ["a", "b", "c", "d"]
    assert gpu.check_order(names, ["c", "x", "a"]) == ["c", "a", "b", "d"]
    assert gpu.check_order(names, []) == names


def test_checkpoint_keeps_the_results_so_far(tmp_path, gpu, monkeypatch):
    monkeypatch.setattr(gpu, "CHECKPOINT", tmp_path / "result.json")
    gpu.checkpoint({"status": "ok", "points": [{"seeds": 1, "rate": np.float64(2.0)}], "tables": []})
    kept = json.loads((tmp_path / "result.json").read_text())
    assert kept["status"] == "partial" and kept["reason"] == "the results so far"
    assert kept["points"] == [{"seeds": 1, "rate": 2.0}]
    gpu.checkpoint({"status": "ok", "tables": []}, doing="running 64 seeds")
    assert json.loads((tmp_path / "result.json").read_text())["reason"].endswith("it was running 64 seeds")


def test_worker_killed_at_its_time_limit(gpu):
    result = gpu.run_worker("lockstep", gpu.TOY, budget=0.5, grace=0.0)
    assert result["status"] == "error" and "time limit" in result["reason"]
    assert result["worker_s"] < 10


def test_entropy_change(gpu):
    """Runs that changed are counted bit for bit; a run that did not complete (NaN) on both sides is
    unchanged, on one side only it is changed and not the same completed runs."""
    nan = float("nan")
    reference = np.array([[1.0, 2.0], [nan, 4.0]], np.float32)
    assert gpu.entropy_change(reference.copy(), reference) == {
        "max_abs_entropy_change": 0.0, "runs_changed": 0, "same_completed": True
    }  # fmt: skip
    moved = reference.copy()
    moved[0, 1] = np.nextafter(np.float32(2.0), np.float32(3.0))
    moved[1, 1] = 4.5
    change = gpu.entropy_change(moved, reference)
    assert change["runs_changed"] == 2 and change["max_abs_entropy_change"] == 0.5
    assert change["same_completed"]
    moved[0, 0] = nan
    change = gpu.entropy_change(moved, reference)
    assert change["runs_changed"] == 3 and not change["same_completed"]
