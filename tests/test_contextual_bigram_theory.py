"""SCB population theory: the line recursion, the 2-D ODE, error dynamics and the surrogate,
against the matrix population process and finite differences (tiny instances)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.contextual_bigram as cb
import theory
from theory import contextual_bigram
from theory.contextual_bigram import closed_forms as cf


@pytest.fixture(scope="module")
def inst():
    return cb.random_instance(0, 3, 2, 8)


def test_population_gd_stays_on_lines_and_follows_recursion(inst):
    KP, KQ = float(cb.k_p(inst)), float(cb.k_q(inst))
    run = cb.population_gd(inst, cb.scratch_init(inst), 0.5, 30)
    rec = cf.line_recursion(0.0, 0.0, KP, KQ, inst.T, 0.5, 30)
    np.testing.assert_allclose(run.values["alpha"], rec[:, 0], atol=1e-12)
    np.testing.assert_allclose(run.values["beta"], rec[:, 1], atol=1e-12)
    assert float(jnp.max(run.values["dQ_norm"])) < 1e-13
    assert float(jnp.max(run.values["dV_norm"])) < 1e-13


def test_vector_field_is_preconditioned_gradient_of_line_loss(inst):
    KP, KQ, T = float(cb.k_p(inst)), float(cb.k_q(inst)), float(inst.T)
    mu_sq = float(inst.mu @ inst.mu)
    y = np.array([0.3, 0.7])
    h = 1e-6
    grad = [
        (cf.line_loss(*(y + h * e), KP, KQ, T, mu_sq) - cf.line_loss(*(y - h * e), KP, KQ, T, mu_sq))
        / (2 * h)
        for e in np.eye(2)
    ]
    field = np.asarray(cf.line_vector_field(0.0, jnp.asarray(y), (KP, KQ, T)))
    np.testing.assert_allclose(field, [-grad[0] / KQ, -grad[1] / KP], rtol=1e-7)
    # the line loss is the population loss on the lines
    on = cb.on_line(y[0], y[1], inst)
    assert abs(float(cb.population_loss(on, inst)) - cf.line_loss(*y, KP, KQ, T, mu_sq)) < 1e-14


def test_error_step_matches_population_step(inst):
    rng = np.random.default_rng(0)
    V = np.asarray(inst.P) + 0.1 * rng.normal(size=(3, 3))
    Q = np.asarray(inst.Q_star) + 0.05 * rng.normal(size=(inst.T, 3))
    model = cb.LinearSCB(V=jnp.asarray(V - V.mean(0) + 1 / 3), Q=jnp.asarray(Q - Q.mean(0) + 1 / inst.T))
    line = cb.line_coordinates(model, inst)
    a, b, dV, dQ = cf.error_step(float(line["alpha"]), float(line["beta"]), line["dV"], line["dQ"], inst, 0.4)
    after = cb.line_coordinates(cb.population_gd(inst, model, 0.4, 1).final, inst)
    assert abs(a - float(after["alpha"])) < 1e-13 and abs(b - float(after["beta"])) < 1e-13
    np.testing.assert_allclose(dV, after["dV"], atol=1e-13)
    np.testing.assert_allclose(dQ, after["dQ"], atol=1e-13)


def test_stage1_linear_solves_linearised_system(inst):
    KP, KQ, T = float(cb.k_p(inst)), float(cb.k_q(inst)), inst.T
    ts = np.linspace(0, 2, 5)
    x = cf.stage1_linear(ts, KP, KQ, T)
    h = 1e-6
    dx = (cf.stage1_linear(ts + h, KP, KQ, T) - cf.stage1_linear(ts - h, KP, KQ, T)) / (2 * h)
    A = np.array([[0, KP], [KQ, -1 / T]])
    np.testing.assert_allclose(dx, x @ A.T + np.array([0, 1 / T]), atol=1e-8)
    assert cf.first_crossing(np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 1.0]), 0.75) == 1.5


@pytest.mark.slow
def test_surrogate_noise_has_the_probe_covariance(inst):
    model = cb.on_line(0.3, 0.4, inst)
    keys = jax.random.split(jax.random.PRNGKey(0), 400)
    probe_key = jax.random.PRNGKey(7)

    def draw(k):
        # the same probes every draw: xi's covariance must equal the probes' empirical covariance / B
        G = cb.probe_gradients(model, inst, probe_key, 64)
        z = jax.random.normal(k, (64,))
        return jnp.tensordot(z, G.Q - jnp.mean(G.Q, axis=0), axes=1) / jnp.sqrt(64.0 * 16.0)

    xi = np.asarray(jax.vmap(draw)(keys))
    assert np.max(np.abs(xi.sum(axis=1))) < 1e-12  # centred columns
    G = np.asarray(cb.probe_gradients(model, inst, probe_key, 64).Q)
    var = G.var(axis=0) / 16.0
    assert np.allclose(xi.var(axis=0), var, rtol=0.35, atol=1e-10)
    noise = cb.surrogate_noise(model, inst, jax.random.PRNGKey(1), batch=16, probes=64)
    assert noise.Q.shape == (inst.T, 3)
    with pytest.raises(ValueError, match="covariance"):
        cb.surrogate_noise(model, inst, jax.random.PRNGKey(1), batch=16, probes=64, covariance="other")


def _makers(full: bool):
    return theory.check_makers("contextual_bigram", contextual_bigram.CHECKS, full)


def test_checks_are_named_makers():
    makers = _makers(False)
    names = [m.__name__ for m in makers]
    assert len(names) == len(set(names)) and "algorithm1_recovers" in names
    assert all(m.paper == "contextual_bigram" for m in makers)


def test_figures_carry_the_paper_name():
    from figures import contextual_bigram as figs

    assert list(figs.FIGURES) == [
        "contextual_bigram_fig1",
        "contextual_bigram_fig2",
        "contextual_bigram_phase",
        "contextual_bigram_stage1_batch",
    ]


@pytest.mark.slow
def test_figures_write_files(tmp_path):
    from figures import contextual_bigram as figs

    for name, fn in figs.FIGURES.items():
        paths = fn(tmp_path, False)
        assert [p.name for p in paths] == [f"{name}.png", f"{name}.pdf", f"{name}.json"]


@pytest.mark.parametrize("exponent", [0.0, 0.8, 1.5])
def test_the_batch_exponent_fit_recovers_the_exponent_that_made_the_counts(exponent):
    """Counts drawn from the success model with a known p: the fitted p is within three standard
    errors of the truth (the 95% interval's half-width is about two), and the interval excludes 0
    exactly when p > 0."""
    batches = 2.0 ** np.arange(2, 12)
    rng = np.random.default_rng(3)
    offset, sharpness = -4.0 + (1.5 - exponent) * np.log(100.0), 2.0
    rates = {}
    for T in (25, 50, 100, 200, 400):
        logit = sharpness * (np.log(batches) - exponent * np.log(T) - offset)
        P = 0.5 + 0.5 / (1.0 + np.exp(-logit))
        rates[T] = rng.binomial(256, P) / 256
    fit = contextual_bigram.fit_batch_exponent(rates, batches, 256, resamples=100)
    standard_error = (fit.high - fit.low) / (2 * 1.96)
    assert abs(fit.exponent - exponent) < 3 * standard_error < 0.15
    assert (fit.low > 0) == (exponent > 0)
