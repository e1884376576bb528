"""The SCB task: data model and Assumption 2.1 errors, sampler, losses, exact population
gradients against exact enumeration, Algorithm 1 pieces."""

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
import tasks.contextual_bigram as cb

from .helpers import int64_sizes


@pytest.fixture(scope="module")
def tiny():
    return cb.random_instance(1, 3, 2, 4, cb.Assumption(sparsity=2, k_p_min=0.0))


def _unit_point(inst, seed):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(inst.N, inst.N))
    Q = rng.normal(size=(inst.T, inst.N))
    return cb.LinearSCB(V=jnp.asarray(V - V.mean(0) + 1 / inst.N), Q=jnp.asarray(Q - Q.mean(0) + 1 / inst.T))


def test_instance_is_valid(tiny):
    P, mu, Qs = (np.asarray(a) for a in (tiny.P, tiny.mu, tiny.Q_star))
    np.testing.assert_allclose(P.sum(0), 1.0, atol=1e-14)
    np.testing.assert_allclose(P @ mu, mu, atol=1e-14)
    np.testing.assert_allclose(Qs.sum(0), 1.0, atol=1e-14)
    assert (Qs > 0).sum(0).max() <= 2
    mu_sq = float(mu @ mu)
    assert abs(float(cb.k_p(tiny)) - (float(np.sum(mu * (P**2).sum(0))) - mu_sq)) < 1e-14


@pytest.mark.parametrize(
    "P, Q_star, assumption, match",
    [
        (
            np.full((3, 3), 1 / 3) + np.eye(3) * 0.1,
            np.full((4, 3), 0.25),
            cb.Assumption(k_p_min=0),
            "column-stochastic",
        ),
        (np.eye(3)[[1, 2, 0]], np.eye(5, 3), cb.Assumption(sparsity=6, k_p_min=0), r"Q=6 must be <= T=5"),
        (
            np.eye(3)[[1, 2, 0]],
            np.full((4, 3), 0.25),
            cb.Assumption(sparsity=2, k_p_min=0),
            "non-zero entries",
        ),
        (np.full((3, 3), 1 / 3), np.eye(4, 3), cb.Assumption(), r"2.1\(c\)"),
        (np.eye(3)[[1, 2, 0]], np.array([[0.95, 1, 1], [0.05, 0, 0]]), cb.Assumption(), r"2.1\(b\)"),
    ],
)
def test_assumption_errors(P, Q_star, assumption, match):
    with pytest.raises(ValueError, match=match):
        cb.make_instance(P, Q_star, assumption)


def test_bad_sizes_and_configs():
    with pytest.raises(ValueError, match="Q must satisfy"):
        cb.random_instance(0, 3, 6, 5)
    with pytest.raises(ValueError, match=r"Algorithm1\.switch"):
        cb.Algorithm1(switch="sometimes")
    with pytest.raises(ValueError, match="stage2_steps"):
        cb.Algorithm1(stage2_steps=150, every=100)


@pytest.mark.parametrize(
    "field, value",
    [
        ("sparsity", 1.5),
        ("sparsity", 0),
        ("c_q", math.nan),
        ("c_q", 0.0),
        ("c_mu", math.inf),
        ("k_p_min", -0.1),
        ("k_p_min", math.nan),
        ("t_exponent", math.inf),
    ],
)
def test_assumption_refuses_bad_values(field, value):
    with pytest.raises(ValueError, match=rf"Assumption\.{field} must be .*, got {value!r}"):
        cb.Assumption(**{field: value})


def test_sampler_label_distribution(tiny):
    b = cb.sample(jax.random.PRNGKey(0), tiny, 40_000)
    counts = np.bincount(np.asarray(b.label), minlength=3) / 40_000
    np.testing.assert_allclose(counts, np.asarray(tiny.mu), atol=0.015)  # Pr[x_o = n] = mu_n
    # the selected position never has zero attention: labels are consistent with Eqn 1
    ctx, last, lab = (np.asarray(x) for x in (b.context, b.last, b.label))
    P, Qs = np.asarray(tiny.P), np.asarray(tiny.Q_star)
    prob = np.einsum("bt,bt->b", Qs[:, last].T, P[lab[:, None], ctx])
    assert prob.min() > 0


def test_sampler_draws_in_32_bits_in_float64_mode(tiny):
    """The inverse-CDF draws compare a batch × positions × tokens tensor with the uniforms: its
    counts are int32 whatever JAX's default integer (no int64 tensor beyond the batch's tokens)."""
    batch = 64
    jaxpr = jax.make_jaxpr(lambda key: cb.sample(key, tiny, batch))(jax.random.PRNGKey(0))
    assert max(int64_sizes(jaxpr.jaxpr), default=0) < batch * tiny.T * tiny.N


def test_closed_form_sample_gradients_equal_autodiff(tiny):
    model = _unit_point(tiny, 2)
    b = cb.sample(jax.random.PRNGKey(1), tiny, 5)
    for i in range(5):
        auto = jax.grad(cb.sample_loss)(model, b.context[i], b.last[i], b.label[i])
        closed = cb.sample_gradients(model, b.context[i], b.last[i], b.label[i])
        np.testing.assert_allclose(closed.V, auto.V, atol=1e-14)
        np.testing.assert_allclose(closed.Q, auto.Q, atol=1e-14)


def test_population_loss_and_gradients_equal_enumeration(tiny):
    model = _unit_point(tiny, 3)
    loss, grads = cb.enumerate_population(model, tiny)
    assert abs(float(loss) - float(cb.population_loss(model, tiny))) < 1e-13
    formula = cb.expected_gradients(model, tiny)
    np.testing.assert_allclose(formula.V, grads.V, atol=1e-13)
    np.testing.assert_allclose(formula.Q, grads.Q, atol=1e-13)
    pre = cb.precondition(grads, tiny.mu)
    epre = cb.expected_preconditioned(model, tiny)
    np.testing.assert_allclose(epre.V, pre.V, atol=1e-13)
    np.testing.assert_allclose(epre.Q, pre.Q, atol=1e-13)
    # the general population loss is exact off the constraint set too
    rng = np.random.default_rng(9)
    free = cb.LinearSCB(V=jnp.asarray(rng.normal(size=(3, 3))), Q=jnp.asarray(rng.normal(size=(4, 3))))
    loss, grads = cb.enumerate_population(free, tiny)
    auto = jax.grad(cb.population_loss)(free, tiny)
    assert abs(float(loss) - float(cb.population_loss(free, tiny))) < 1e-12
    np.testing.assert_allclose(auto.Q, grads.Q, atol=1e-12)


def test_bayes_risk_and_scratch_facts(tiny):
    mu_sq = float(tiny.mu @ tiny.mu)
    star = cb.LinearSCB(V=tiny.P, Q=tiny.Q_star)
    L_star = 0.5 * (1 - mu_sq - float(cb.k_p(tiny)) * float(cb.mu_inner(tiny.Q_star, tiny.Q_star, tiny.mu)))
    assert abs(float(cb.population_loss(star, tiny)) - L_star) < 1e-14
    scratch = cb.scratch_init(tiny)
    assert abs(float(cb.population_loss(scratch, tiny)) - 0.5 * (1 - mu_sq)) < 1e-14
    # at V = mu 1^T every per-sample G_Q is exactly 0
    b = cb.sample(jax.random.PRNGKey(3), tiny, 7)
    for i in range(7):
        G = cb.precondition(cb.sample_gradients(scratch, b.context[i], b.last[i], b.label[i]), tiny.mu)
        assert float(jnp.max(jnp.abs(G.Q))) < 1e-15


def test_engine_step_equals_eqns_4_to_6(tiny):
    model = _unit_point(tiny, 4)
    grads = cb.expected_gradients(model, tiny)
    eta, lam = 0.2, 0.3
    tx = cb.preconditioned_step(tiny.mu, eta, lam)
    u, _ = tx.update(grads, tx.init(model), model)
    G = cb.precondition(grads, tiny.mu)
    Z = np.asarray(model.Q - eta * G.Q)
    hand = np.sign(Z) * np.maximum(np.abs(Z) - eta * lam, 0)
    hand = hand + (1 - hand.sum(0)) / tiny.T
    np.testing.assert_allclose(np.asarray(model.Q + u.Q), hand, atol=1e-14)
    np.testing.assert_allclose(np.asarray(model.V + u.V), np.asarray(model.V - eta * G.V), atol=1e-14)
    np.testing.assert_allclose(np.asarray(model.V + u.V).sum(0), 1.0, atol=1e-14)


def test_rounding_maps(tiny):
    Q = jnp.array([[0.5, 0.05], [0.3, 0.9], [0.2, 0.05]])
    r = np.asarray(cb.round_attention(Q, 0.25))
    np.testing.assert_allclose(
        r, [[0.5 + 0.2 / 3, 0.1 / 3], [0.3 + 0.2 / 3, 0.9 + 0.1 / 3], [0.2 / 3, 0.1 / 3]]
    )
    n = np.asarray(cb.normalise_attention(Q, 0.25))
    np.testing.assert_allclose(n, [[0.625, 0.0], [0.375, 1.0], [0.0, 0.0]])
    # on the line with alpha = 1 normalisation is exact
    star = cb.on_line(1.0, 1.0, tiny)
    np.testing.assert_allclose(cb.normalise_attention(star.Q, 0.05), tiny.Q_star, atol=1e-15)
    np.testing.assert_allclose(cb.least_squares_V(tiny.Q_star, tiny), tiny.P, atol=1e-15)


def test_softmax_model_near_uniform_is_linear_model(tiny):
    lin = cb.scratch_init(tiny)
    sm = cb.SoftmaxSCB(V=lin.V, W=jnp.zeros((tiny.T, tiny.N)))
    b = cb.sample(jax.random.PRNGKey(5), tiny, 9)
    np.testing.assert_allclose(jax.vmap(sm)(b.context, b.last), jax.vmap(lin)(b.context, b.last), atol=1e-15)


@pytest.mark.slow
def test_algorithm_runs_batched_and_recovers_small():
    inst = cb.random_instance(0, 3, 2, 8)
    cfg = cb.Algorithm1(task=cb.SCBConfig(T=8), batch=256, stage2_steps=300, every=100, stage1_max_steps=60)
    out, ok = dynamics.run_many(eqx.Partial(cb.run_algorithm, inst, cfg=cfg), dynamics.seed_keys(0, 2))
    assert ok.all()
    assert np.all(out["tau1"] < cfg.stage1_max_steps)
    assert np.all(out["final_metrics"]["dist_Q"] < 0.1)
    assert out["curves"]["dist_V"].shape == (2, 4)
    fixed = dataclasses.replace(cfg, switch="fixed", tau1=10, stage3="gd", stage3_steps=50)
    out = cb.run_algorithm(inst, jax.random.PRNGKey(1), fixed)
    assert int(out["tau1"]) == 10
    assert float(out["final_metrics"]["dist_V"]) < 0.2


def test_transfer_population_step_formula(tiny):
    V_pre = cb.related_transition(tiny)
    model = cb.transfer_init(tiny, V_pre, None, delta=0.5, eta0=3.0, batch0=None, round_theta1=False)
    V0 = tiny.mu[:, None] + 0.5 * (V_pre - tiny.mu[:, None])
    beta0 = float(cb.line_coordinates(cb.LinearSCB(V=V0, Q=model.Q), tiny)["beta"])
    alpha1 = float(cb.line_coordinates(model, tiny)["alpha"])
    assert abs(alpha1 - 3.0 * beta0 * float(cb.k_p(tiny))) < 1e-13
    line = cb.line_coordinates(model, tiny)
    assert float(line["dQ_norm"]) < 1e-14  # Q_1 lies on the attention line
