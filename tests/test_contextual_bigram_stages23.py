"""Stages 2-3 of Algorithm 1 on their own: the instance at a longer context keeps the task, Algorithm 1
equals Stage 1 followed by `run_later_stages` on the same keys, and the T-exponent fit recovers a
known power law with an interval that covers it."""

import equinox as eqx
import jax
import numpy as np
import pytest

import dynamics
import tasks.contextual_bigram as cb
from theory.contextual_bigram import fit_T_exponent

from .helpers import tree_allclose


def test_extend_context_keeps_P_and_the_weights_of_Q_star():
    base = cb.default_instance(50)
    longer = cb.extend_context(base, 200)
    np.testing.assert_array_equal(longer.P, base.P)
    np.testing.assert_allclose(longer.mu, base.mu, rtol=1e-14)  # recomputed from the same P
    np.testing.assert_array_equal(longer.Q_star[:50], base.Q_star)
    assert np.all(np.asarray(longer.Q_star[50:]) == 0) and longer.T == 200
    np.testing.assert_allclose(cb.k_p(longer), cb.k_p(base), rtol=1e-13)
    assert tree_allclose(cb.extend_context(base, 50), base)
    with pytest.raises(ValueError, match="T must be >= the instance's 50, got 40"):
        cb.extend_context(base, 40)


@pytest.mark.slow
def test_algorithm1_is_stage1_then_the_later_stages():
    inst = cb.default_instance(50)
    cfg = cb.Algorithm1(batch=32, stage2_steps=200, every=100)
    key = jax.random.PRNGKey(3)
    whole = cb.run_algorithm(inst, key, cfg)
    k1, k2 = jax.random.split(key)
    stage1_end, tau1 = cb.run_stage1(inst, k1, cfg)
    later = cb.run_later_stages(inst, stage1_end, k2, cfg, round_first=cfg.round_after_stage1)
    assert int(tau1) == int(whole["tau1"])
    assert tree_allclose(later["final_model"], whole["final_model"], rtol=1e-12, atol=1e-14)
    assert tree_allclose(later["stage2_metrics"], whole["stage2_metrics"], rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_later_stages_from_the_end_of_stage1_on_the_lines_recover_the_task():
    inst = cb.default_instance(50)
    cfg = cb.Algorithm1(stage2_steps=2000, every=2000)
    start = cb.on_line(cfg.delta1, cfg.delta1, inst)
    out, _ = dynamics.run_many(
        eqx.Partial(cb.run_later_stages, inst, start, cfg=cfg), dynamics.seed_keys(0, 4)
    )
    assert np.all(np.asarray(out["final_metrics"]["dist_Q"]) < 0.1)


@pytest.mark.parametrize("q", [-0.5, 0.0, 0.7])
def test_fit_T_exponent_recovers_a_power_law(q):
    rng = np.random.default_rng(1)
    Ts = [50, 100, 200, 400]
    errors = [0.1 * (T / 50) ** q * rng.lognormal(0.0, 0.2, 64) for T in Ts]
    fit = fit_T_exponent(Ts, errors)
    assert fit.low <= q <= fit.high
    assert fit.high - fit.low < 0.3
    np.testing.assert_allclose(fit.means, [e.mean() for e in errors])
