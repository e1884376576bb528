"""Smoke test of the engine's benchmark `bench/landscape_cost.py` at toy sizes (the papers'
benchmarks are smoke-tested beside their papers' tests)."""

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
