"""Smoke tests of the engine's benchmarks `bench/landscape_cost.py` and `bench/first_call.py` at
toy sizes (the papers' benchmarks are smoke-tested beside their papers' tests)."""

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
