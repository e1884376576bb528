"""Smoke test of Sparse token selection's benchmark `bench/sparse_token_selection/slots.py` at toy
sizes: it prints a positive finite ratio, and its two sides compute the same loss and gradient."""

import math

import pytest

from tests.helpers import load_file, positive_finite, printed_ratio


@pytest.mark.slow
def test_slots_smoke(capsys):
    slots = load_file("bench/sparse_token_selection/slots.py")
    result = slots.main(
        ["--T", "12", "--N", "24", "--d", "3", "--batch", "8", "--steps", "2", "--repeats", "1"]
    )
    printed = printed_ratio(capsys.readouterr().out, "ratio dense/slots (s/step)")
    assert positive_finite(printed) and math.isclose(printed, result["ratio"], rel_tol=1e-2)
    # the two sides compute the same loss and gradient (float32 rounding only)
    assert result["dloss"] < 1e-5 and result["dgrad"] < 1e-5
