"""Inputs at the edges, as a careless user gives them: each is refused before any work with one
line naming the problem (exit status 2), or said in words where the work ends."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import dynamics
from attnflow import cli

ROOT = Path(__file__).resolve().parent.parent

USERS = """
import sys

import jax
import jax.numpy as jnp

import dynamics


class Decay(dynamics.AbstractSimulation):
    rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
        return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=1.0)


class NotARun(Decay):
    def run(self, key):
        return {"y": jnp.zeros(2)}


class TwoSteps(Decay):
    def run(self, key):
        return dynamics.ode_flow(lambda t, y, args: -self.rate * y, 1.0, t1=1e6, max_steps=2)


class Logistic(dynamics.AbstractSimulation):
    rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        y0 = 0.001 * (1.0 + jax.random.uniform(key, (), self.dtype))
        ts = jnp.logspace(-2, 3, 41, dtype=self.dtype)
        save = dynamics.Save(ts=ts, fn=lambda t, y, args: {"loss": 1.0 - y})
        return dynamics.ode_flow(lambda t, y, args: self.rate * y * (1.0 - y), y0, t1=1e3, save=save)


class Spring(dynamics.AbstractSimulation):
    omega: float = dynamics.param(50.0, dynamics.Interval.positive(), traced=True)
    max_steps: int = dynamics.param(100, dynamics.Interval(1))
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        field = lambda t, y, args: jnp.stack([y[1], -self.omega**2 * y[0]])  # noqa: E731
        y0 = jnp.stack([1.0 + jax.random.uniform(key, (), self.dtype), jnp.zeros((), self.dtype)])
        return dynamics.ode_flow(field, y0, t1=1e5, max_steps=self.max_steps)
"""


@pytest.fixture
def users(tmp_path, monkeypatch):
    """A working folder holding a user's module `mine` and a module `exits` that calls sys.exit."""
    (tmp_path / "mine.py").write_text(textwrap.dedent(USERS))
    (tmp_path / "exits.py").write_text("import sys\n\nsys.exit(0)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("mine", "exits"):
        sys.modules.pop(name, None)
    return tmp_path


SWEEP = ["sweep", "mine:Decay", "--seeds", "2"]


@pytest.mark.unchecked_types
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [*SWEEP, "--grid", "rate=1,2", "--set", "rate=3", "--out", "o"],
            "rate is given by both --grid and --set",
        ),
        ([*SWEEP, "--grid", "rate=1,,2", "--out", "o"], "--grid rate=1,,2: an empty value between commas"),
        ([*SWEEP, "--grid", "rate=1,", "--out", "o"], "--grid rate=1,: an empty value"),
        ([*SWEEP, "--grid", "rate=1,2", "--out", ""], "--out must name a path, got ''"),
        ([*SWEEP, "--grid", "rate=1,2", "--out", "o", "--analyse", ""], "--analyse '': an empty name"),
        ([*SWEEP, "--grid", "rate=1,2", "--out", "o", "--analyse", "phases,"], "an empty name"),
        (["simulate", "exits:Decay", "--out", "o"], r"it called sys.exit(0) while it was imported"),
        (["simulate", "mine:NotARun", "--out", "o"], "NotARun.run must return a dynamics.Run"),
        (["reproduce", "--jobs", "1000", "--out", "o"], "--jobs must be from 1 to the"),
        (["verify", "--jobs", "0", "--json", "o/v.json"], "--jobs must be from 1 to the"),
        ([*SWEEP, "--out", "o", "--analyse", "phases:min_spam=1"], "the settings of phases as key=value"),
        ([*SWEEP, "--out", "o", "--analyse", "phases:window=-1"], "window must be a number >= 0"),
        ([*SWEEP, "--out", "o", "--analyse", "phases:min_depth=1"], "min_depth must be a number > 1"),
        ([*SWEEP, "--out", "o", "--analyse", "phases:leave=1.5"], "leave must be a number in (0, 1)"),
        ([*SWEEP, "--out", "o", "--analyse", "phases:max_phases=2.5"], "max_phases must be an integer >= 1"),
        ([*SWEEP, "--out", "o", "--analyse", "phases,phases"], "--analyse names phases twice"),
    ],
)
def test_a_bad_input_is_one_line_before_any_work(users, capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in users.iterdir() if not p.name.startswith("__")) == ["exits.py", "mine.py"]


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"SLURM_ARRAY_TASK_ID": "3"}, "needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT as integers"),
        ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "2"}, "is not among the 2 tasks"),
    ],
)
def test_a_slurm_task_without_its_array_is_one_line(users, capsys, monkeypatch, environment, message):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert cli.main([*SWEEP, "--grid", "rate=1,2", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_a_removed_working_folder_is_one_line(users, capsys, monkeypatch):
    gone = users / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert cli.main(["simulate", "mine:Decay", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert err == "attnflow: error: the working folder no longer exists: change to a folder that does\n", err
    with pytest.raises(ValueError, match="relative to the working folder, which no longer exists"):
        dynamics.store.prepare_folder("o", "--out")
    assert dynamics.store.prepare_folder(users / "o").is_dir()  # an absolute path is still fine


def test_the_step_budget_hint_names_only_settings_the_class_has(users, capsys):
    assert cli.main(["simulate", "mine:TwoSteps", "--seeds", "1", "--out", "o"]) == 0
    out = capsys.readouterr().out
    assert "max_steps x1 (the step budget ran out at t = " in out and "--set" not in out, out
    assert "pilot" not in out


def test_a_raised_step_budget_is_timed_by_a_pilot_block_before_the_work(users, capsys):
    """`--set max_steps=` above the class's default: before the work, how long a block that spends
    it takes, from a timed pilot block of 10,000 steps (at a class's own budget, no pilot: the test
    above)."""
    argv = ["simulate", "mine:Spring", "--seeds", "2", "--out", "o"]
    assert cli.main([*argv, "--set", "max_steps=100001"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("max_steps=100,001: a block of 2 runs")]
    assert len(lines) == 1 and "the 1 block up to about" in lines[0] and "10,000 steps took" in lines[0], out
    assert "stops: max_steps x2" in out  # the estimate came before the runs, which spent the budget


def test_check_names_a_file_an_empty_folder_and_a_damaged_attribute_file(users, capsys):
    (users / "plain").write_text("x")
    (users / "empty").mkdir()
    for path, line in [("plain", "a file, not a store"), ("empty", "an empty folder, not a store")]:
        assert cli.main(["check", path]) == 1
        out = capsys.readouterr().out
        assert f"{path}: not a sweep store attnflow can check\n  {line}" in out, out
    assert cli.main(["simulate", "mine:Decay", "--seeds", "2", "--out", "o"]) == 0
    (store,) = (users / "o").glob("*.zarr")
    (store / ".zattrs").write_text('{"a":')
    capsys.readouterr()
    assert cli.main(["check", str(store)]) == 1
    out = capsys.readouterr().out
    assert "damaged" in out and ".zattrs differs from its checksum" in out and "--overwrite" in out, out


AS_FROM_A_TERMINAL = """
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = ["attnflow", *sys.argv[1:]]
runpy.run_module("attnflow", run_name="__main__")
"""
"""`python -m attnflow` with Ctrl-C raising `KeyboardInterrupt`, as Python sets it up from a terminal."""


def test_ctrl_c_at_start_up_ends_with_130_and_one_line(tmp_path):
    """SIGINT to the process group (as a terminal's Ctrl-C) while the command starts: status 130
    and one line, where it used to print a traceback and run on to the end with status 0. (The
    command starts with Ctrl-C's default action, as from a terminal: a job started in the
    background by a shell script inherits SIGINT ignored.)"""
    argv = ["verify", "--check", "thm3_unseen_sentences", "--jobs", "1", "--json", str(tmp_path / "v.json")]
    process = subprocess.Popen(
        [sys.executable, "-c", AS_FROM_A_TERMINAL, *argv], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err.strip().splitlines() == ["attnflow: interrupted; what was written stays (rerun to resume)"], (
        err
    )


class _InterruptedImport:
    """A module finder under which importing `attnflow.cli` is interrupted (Ctrl-C meanwhile)."""

    def find_spec(self, name, path=None, target=None):
        if name == "attnflow.cli":
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_command_line_is_imported_ends_with_130_and_one_line(monkeypatch, capsys):
    from attnflow import _start

    monkeypatch.delitem(sys.modules, "attnflow.cli")
    monkeypatch.setattr(sys, "meta_path", [_InterruptedImport(), *sys.meta_path])
    assert _start.main() == 130
    assert capsys.readouterr().err == "attnflow: interrupted while starting; nothing was done\n"


@pytest.mark.slow
def test_a_closed_pipe_ends_the_command_quietly_with_141():
    """The reader of the output gone (`attnflow list | head` once head has its lines): status 141
    and no traceback, neither from the command nor from Python's last flush."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    done = subprocess.run(
        [sys.executable, "-m", "attnflow", "list"], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True
    )
    os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr


@pytest.mark.slow
def test_a_sweep_without_a_grid_is_the_one_setting_and_simulate_takes_analyses(users, capsys):
    """`sweep` with no `--grid` sweeps the one setting given, with its plots; `simulate --analyse
    phases` adds the phases to its own store and draws them beside it, with the settings given: the
    two stores hold the same numbers, the phases included."""
    argv = ["mine:Logistic", "--seeds", "3", "--set", "rate=2", "--analyse", "phases:min_depth=2.5"]
    assert cli.main(["sweep", *argv, "--out", "one"]) == 0
    assert (users / "one" / "plots" / "phases_time.png").is_file()
    capsys.readouterr()
    assert cli.main(["simulate", *argv, "--out", "sim"]) == 0
    out = capsys.readouterr().out
    (store,) = (users / "sim").glob("Logistic_*.zarr")
    assert f"added phases.* to {store.relative_to(users)}: " in out, out
    assert (users / "sim" / f"{store.stem}.plots" / "phases_time.png").is_file(), out
    swept, simulated = dynamics.load_sweep(users / "one" / "sweep.zarr"), dynamics.load_sweep(store)
    assert "phases.count" in simulated and set(swept.data_vars) == set(simulated.data_vars)
    assert json.loads(simulated["phases.count"].attrs["analysis"])["phases"]["min_depth"] == 2.5
    for name in swept.data_vars:
        np.testing.assert_array_equal(swept[name].values, simulated[name].values, err_msg=name)
