"""Every program the command line compiles is kept in JAX's persistent cache: a second process
running the same quick checks and figure compiles nothing (no host callback inside a program: a
run's data is drawn before it; Equinox's runtime checks end a run with NaN), and on a CPU a cache
copied to another folder keeps its programs."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from attnflow import _runtime
from attnflow.papers import papers

CHECKS = {"ntp_partial_order": "thm3_unseen_sentences", "scan_snap": "theorem3_eqn11_L2"}
"""Quick checks, a second or two each: Algorithm 1 on datasets drawn on the host for each run
(next-token prediction), and a flow saving at times set by its traced end time (Scan and Snap's
L2). Every level of every paper is held to the same in `test_levels_contract`: its program, as the
engine traces it, holds no host callback."""

FIGURES = {"scan_snap": "scan_snap_fig8"}
"""A quick figure, a second or two."""

_RUN = """
import json, sys
from pathlib import Path
from attnflow import _runtime
_runtime.set_up(compile_cache=True)  # as the command line does
import importlib
import dynamics
checks, figures, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
with dynamics.recording_compiles() as record:
    for paper, check in checks.items():
        assert getattr(importlib.import_module(f"theory.{paper}"), check)(full=False).passed, check
    for paper, figure in figures.items():
        importlib.import_module(f"figures.{paper}").FIGURES[figure](out, False)
print(json.dumps(record.stats.to_dict()))
"""
"""A process that runs the checks and draws the figures with the command line's runtime, and
prints what compiling cost."""


def test_the_checks_and_figures_here_exist():
    for name, check in CHECKS.items():
        assert check in [fn.__name__ for fn in papers()[name].checks]
    for name, figure in FIGURES.items():
        assert figure in papers()[name].figures


def _compiling(script: str, cache, *args: str) -> dict:
    """What compiling cost in a fresh process that runs `script` with the compilation cache `cache`
    and the arguments `args` (the script prints it, `CompileStats.to_dict`, as its last line)."""
    env = os.environ | {"ATTNFLOW_CACHE_DIR": str(cache), "MPLBACKEND": "Agg"}
    env.pop("EQX_ON_ERROR", None)  # the command line's own setting
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _quick_checks_and_figures(tmp_path) -> dict:
    """What compiling cost in a process that runs `CHECKS` and draws `FIGURES` (`_RUN`)."""
    return _compiling(
        _RUN, tmp_path / "cache", json.dumps(CHECKS), json.dumps(FIGURES), str(tmp_path / "figures")
    )


@pytest.mark.slow  # 25 s on two cores; CI checks the same after its `attnflow reproduce` (`.ci/run`)
def test_a_second_process_compiles_nothing(tmp_path):
    first = _quick_checks_and_figures(tmp_path)
    again = _quick_checks_and_figures(tmp_path)
    assert first["compiled"] > 0
    assert again["compiled"] == 0, again["slowest"]
    assert again["cached"] >= first["compiled"]


_TINY = """
import json
from attnflow import _runtime
_runtime.set_up(compile_cache=True)  # as the command line does
import jax
import jax.numpy as jnp
import dynamics
with dynamics.recording_compiles() as record:
    jax.jit(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3)).block_until_ready()
print(json.dumps(record.stats.to_dict()))
"""
"""A process that compiles one small program with the command line's runtime, and prints what
compiling cost."""


@pytest.mark.skipif(not _runtime.only_a_cpu(), reason="an accelerator: keys name the folder")
def test_a_cache_copied_to_another_folder_keeps_its_programs(tmp_path):
    assert _compiling(_TINY, tmp_path / "first")["compiled"] > 0
    shutil.copytree(tmp_path / "first", tmp_path / "copy")
    assert _compiling(_TINY, tmp_path / "copy")["compiled"] == 0
