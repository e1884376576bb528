"""The seeds' spread as Stage 1 leaves the scratch start against its linear-noise law
(`theory.contextual_bigram.stage1_escape_spread`): the law is built right, and the test the check
makes can fail."""

import jax
import pytest

jax.config.update("jax_enable_x64", True)

import doctest  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

import tasks.contextual_bigram as cb  # noqa: E402
from theory.contextual_bigram import KS_CRITICAL, ks_distance, linear_noise_law, stage1_spread  # noqa: E402

T, BATCH, STEPS, ETA, SEEDS = 50, 32, 4, 0.5, 400


def test_the_seeds_follow_the_law_and_a_wrong_law_is_refused():
    """At T = 50 the seeds' α and β after 4 steps lie within the 1 % critical distance of their
    laws, whose means are the population GD trajectory (Lemma B.8); the law of a batch four times
    larger (the noise's 1/B wrong) and the law without the drift of the scratch start (mean 0) lie
    beyond it."""
    inst = cb.default_instance(T)
    law = linear_noise_law(inst, ETA, BATCH, STEPS, samples=10_000)
    model = cb.scratch_init(inst)
    for _ in range(STEPS):
        g = cb.expected_preconditioned(model, inst)
        model = cb.LinearSCB(V=model.V - ETA * g.V, Q=model.Q - ETA * g.Q)
    line = cb.line_coordinates(model, inst)
    np.testing.assert_allclose([law["alpha"][0], law["beta"][0]], [line["alpha"], line["beta"]], rtol=1e-12)
    spread = stage1_spread(inst, ETA, BATCH, STEPS, SEEDS)
    critical = KS_CRITICAL / np.sqrt(SEEDS)
    for name in ("alpha", "beta"):
        assert ks_distance(spread[name], law[name]) < critical
    larger = linear_noise_law(inst, ETA, 4 * BATCH, STEPS, samples=10_000)
    assert ks_distance(spread["beta"], larger["beta"]) > critical
    mean, sd = law["beta"]
    assert ks_distance(spread["beta"], (0.0, sd)) > critical


@pytest.mark.slow
def test_after_one_step_the_law_s_variance_is_one_sample_s_over_the_batch():
    """After one step the variance of β is η²/B times the variance of β after one sample's step,
    measured here from the same samples (T = 20, as the module's example)."""
    inst = cb.default_instance(20)
    start = cb.scratch_init(inst)
    draws = cb.sample(jax.random.split(jax.random.PRNGKey(0), 1)[0], inst, 2000)

    def beta_after(context, last, label):
        grads = cb.precondition(cb.sample_gradients(start, context, last, label), inst.mu)
        return cb.line_coordinates(jax.tree.map(lambda p, d: p - ETA * d, start, grads), inst)["beta"]

    betas = jax.vmap(beta_after)(draws.context, draws.last, draws.label)
    one = linear_noise_law(inst, ETA, BATCH, 1, samples=2000)["beta"]
    np.testing.assert_allclose(one[1], np.std(np.asarray(betas), ddof=1) / np.sqrt(BATCH), rtol=1e-9)


def test_the_module_s_examples_run():
    result = doctest.testmod(sys.modules[linear_noise_law.__module__])
    assert result.attempted > 0 and result.failed == 0
