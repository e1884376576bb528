"""Stages 2-3 on the Gaussian-noise surrogate: with a batch so large that the noise vanishes they
are the population process (rounding, proximal population GD, least squares), and with a small batch
their spread matches real mini-batches."""

import equinox as eqx
import jax
import numpy as np
import pytest

import dynamics
import tasks.contextual_bigram as cb

from .helpers import tree_allclose


def test_surrogate_later_stages_without_noise_are_the_population_process():
    inst = cb.default_instance(20)
    cfg = cb.Algorithm1(task=cb.SCBConfig(T=20), lam=1e-2, stage2_steps=50, every=50, batch=10**30)
    start = cb.on_line(0.3, 0.25, inst)
    out = cb.run_later_stages_surrogate(inst, start, jax.random.PRNGKey(0), cfg, probes=8)
    rounded = cb.round_1_2(start, inst, cfg.theta1_fraction)
    population = cb.population_gd(inst, rounded, cfg.eta2, cfg.stage2_steps, lam=cfg.lam).final
    assert tree_allclose(out["stage2_model"], population, rtol=1e-12, atol=1e-13)
    theta3 = cfg.c_f / int(cb.sparsity(inst))
    assert tree_allclose(out["final_model"], cb.stage3_least_squares(population, inst, theta3), atol=1e-12)


@pytest.mark.slow
def test_surrogate_later_stages_spread_like_mini_batches():
    inst = cb.default_instance(50)
    cfg = cb.Algorithm1(batch=32, lam=1e-2, stage2_steps=100, every=100)
    start = cb.on_line(cfg.delta1, cfg.delta1, inst)
    keys = dynamics.seed_keys(0, 32)

    def final_alpha(run):
        out, _ = dynamics.run_many(run, keys)
        return np.asarray(out["stage2_metrics"]["alpha"])

    real = final_alpha(eqx.Partial(cb.run_later_stages, inst, start, cfg=cfg))
    surrogate = final_alpha(eqx.Partial(cb.run_later_stages_surrogate, inst, start, cfg=cfg, probes=64))
    se = np.sqrt((real.var(ddof=1) + surrogate.var(ddof=1)) / len(keys))
    assert abs(real.mean() - surrogate.mean()) < 4 * se
    assert 0.5 < surrogate.std() / real.std() < 2.0


def test_surrogate_later_stages_refuse_a_stage3_they_do_not_run():
    inst = cb.default_instance(20)
    cfg = cb.Algorithm1(task=cb.SCBConfig(T=20), stage3="gd")
    with pytest.raises(ValueError, match="stage3='gd'"):
        cb.run_later_stages_surrogate(inst, cb.on_line(0.2, 0.2, inst), jax.random.PRNGKey(0), cfg)
