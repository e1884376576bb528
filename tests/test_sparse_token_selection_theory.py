"""Sparse token selection: the closed forms of theory/_sts_formulas against brute force, and the
cheap checks of `attnflow verify --paper sparse_token_selection`."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.sparse_token_selection as sts
from theory import _sts_formulas as F
from theory import sparse_token_selection as paper


def test_fixed_pe_floor_brute_force():
    d, T, q, T_test = 2, 5, 2, 8
    rng = np.random.default_rng(0)
    total, n = 0.0, 200_000
    for _ in range(n // 1000):
        ys = np.argsort(rng.random((1000, T_test)), axis=1)[:, :q]
        k = (ys < T).sum(1)
        loss = np.where(k > 0, 0.5 * d * (1 / np.maximum(k, 1) - 1 / q), 0.5 * d * (1 / q - 1 / T_test))
        total += loss.sum()
    assert F.fixed_pe_floor(d, T, q, T_test) == pytest.approx(total / n, rel=0.02)


def test_fixed_pe_floor_spec_table():
    ratios = [F.fixed_pe_floor(10, 200, 3, t) / F.trivial_loss(10, 3) for t in (250, 300, 350, 400)]
    np.testing.assert_allclose(ratios, [0.391, 0.704, 0.919, 1.063], atol=6e-4)


def test_ood_ratio_matches_reduced_loss_limit():
    d, T, q = 3, 30, 3
    for T_new, q_new in ((60, 3), (30, 5), (45, 4)):
        a = 15.0
        gamma = float(sts.optimal_gamma(jnp.asarray(a), d, T, q))
        ratio = float(sts.reduced_loss(gamma, a, d, T_new, q_new) / sts.reduced_loss(gamma, a, d, T, q))
        assert ratio == pytest.approx(F.ood_ratio_limit(T, q, T_new, q_new), rel=1e-4)
    assert F.ood_ratio_limit(T, q, 2 * T, q) == pytest.approx(((T) ** 2 / q + 2 * T - q) / (T - q))


def test_fcn_bound_and_exact_risks():
    d, T, q = 2, 6, 2
    for m in range(T * d + 1):
        top = sts.linear_readout_risk(sts.top_eigenspace_layer(d, T, m), d, T, q)
        assert top == pytest.approx(F.fcn_min_risk(d, T, q, m), abs=1e-12)
        assert top >= F.fcn_lower_bound(d, T, q, m) - 1e-12
        coord = sts.linear_readout_risk(sts.coordinate_layer(d, T, m), d, T, q)
        assert coord == pytest.approx(F.coordinate_risk(d, T, q, m), abs=1e-12)
    assert F.fcn_min_risk(d, T, q, 0) == pytest.approx(d / (2 * q))


def test_asymptotic_formulas_consistent():
    assert F.rate_constant(199) == pytest.approx(199 / 4)
    assert F.t_eps(1e-3, 199) == pytest.approx(199 / 4e-3)
    assert F.theorem1_eps_max(10, 200, 3) == pytest.approx(10 * 200 / (100 * 197 * 3))
    a = F.attention_scale(1e7, 10, 200, 3)
    assert a == pytest.approx(0.5 * math.log(2 * 10 * 197 * 1e7 / (9 * 199)))
    assert F.value_excess(a, 200, 3) == pytest.approx(197 * math.exp(-a) / 3)


def test_checks_need_float64_and_cheap_ones_pass():
    makers = {m.__name__: m for m in paper.checks(quick=True)}
    assert len(makers) == len(paper._CHECKS)
    for name in ("fcn_bound_attained", "fcn_bound_random_layers"):
        result = makers[name]()
        assert result.verdict == "pass", (name, result)
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="float64"):
            paper.checks(quick=True)
    finally:
        jax.config.update("jax_enable_x64", True)
