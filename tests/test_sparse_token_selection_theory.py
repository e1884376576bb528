"""Sparse token selection: the closed forms of `theory.sparse_token_selection.closed_forms` against
brute force, and the cheap checks of `attnflow verify --paper sparse_token_selection`."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.sparse_token_selection as sts
import theory
from theory import sparse_token_selection as paper
from theory.sparse_token_selection import closed_forms as F


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


def test_fixed_pe_floor_reference_table():
    ratios = [F.fixed_pe_floor(10, 200, 3, t) / F.trivial_loss(10, 3) for t in (250, 300, 350, 400)]
    np.testing.assert_allclose(ratios, [0.391, 0.704, 0.919, 1.063], atol=6e-4)


def test_fixed_pe_loss_at_the_training_length_is_the_reduced_loss():
    d, T, q = 4, 12, 3
    for gamma, a in ((0.0, 0.0), (0.7, 1.5), (1.3, 6.0), (1.0, 40.0)):
        reduced = float(sts.reduced_loss(jnp.asarray(gamma), jnp.asarray(a), d, T, q))
        assert F.fixed_pe_loss(gamma, a, d, T, q, T) == pytest.approx(reduced, rel=1e-12, abs=1e-15)


def test_fixed_pe_loss_matches_the_fixed_pe_transformer():
    task = sts.STSConfig(d=3, T=10, q=3, pe_sampler="dictionary_onehot", pe_dim=20, fixed_pe=True)
    gamma, a, T_test = 1.2, 2.5, 16
    W_EE = jnp.zeros((task.m_E, task.m_E)).at[: task.T, : task.T].set(a * sts.centring(task.T))
    model = sts.from_blocks(task, W_EE, gamma * jnp.eye(task.d))
    mean, se = sts.mc_loss(model, task, jax.random.PRNGKey(0), 8192, T=T_test, chunk=512)
    predicted = F.fixed_pe_loss(gamma, a, task.d, task.T, task.q, T_test)
    assert abs(float(mean) - predicted) < 4 * float(se)
    assert predicted != pytest.approx(F.fixed_pe_floor(task.d, task.T, task.q, T_test), rel=0.05)


def test_token_key_bias_is_the_average_over_all_subsets():
    d, N, q = 3, 7, 3
    W = np.random.default_rng(0).normal(size=(d, N))
    exact = np.mean([np.sum(W[:, list(y)].sum(axis=1) ** 2) for y in itertools.combinations(range(N), q)])
    assert F.token_key_bias(W, N, q) == pytest.approx(exact, rel=1e-12)


def test_optimal_gamma_with_bias_minimises_the_biased_reduced_loss():
    d, T, q, bias, alpha = 10, 200, 3, 0.03, 0.4

    def biased(gamma):
        reduced = float(sts.reduced_loss(jnp.asarray(gamma), jnp.asarray(alpha), d, T, q))
        return reduced + 0.5 * gamma**2 * bias

    gamma = float(sts.optimal_gamma(alpha, d, T, q, bias=bias))
    h = 1e-5
    assert abs(biased(gamma + h) - biased(gamma - h)) / (2 * h) < 1e-9


@pytest.mark.slow
def test_optimal_gamma_with_bias_predicts_the_transformer_with_token_key_noise():
    """On the plateau (W_EE = 0) with a random W_XE, the value scale minimising the transformer's
    Monte-Carlo loss, E<Xp, target> / E||Xp||², matches the first-order closed form (the bias is a
    third of the signal d/T: second-order terms are about 1.5%, Monte Carlo about 1%)."""
    task = sts.STSConfig(d=4, T=40, q=3, pe_sampler="dictionary_onehot", pe_dim=40)
    d, N = task.d, task.pe_dim
    W_XE = 0.05 * jax.random.normal(jax.random.PRNGKey(1), (d, N))
    model = sts.STSTransformer(jnp.zeros((task.D, task.D)).at[:d, d:].set(W_XE), jnp.zeros((d, task.D)), d)

    @jax.jit
    def moments(key):
        X, y, E, xq = sts.sample(task, key, 10_000)
        out = jnp.einsum("bdt,bt->bd", X, jax.vmap(model.attention)(X, y, E, xq))
        target = jnp.einsum("bdt,bt->bd", X, y) / task.q
        return jnp.stack([jnp.sum(out * target), jnp.sum(out**2)])

    cross, square = sum(moments(k) for k in jax.random.split(jax.random.PRNGKey(2), 10))
    bias = F.token_key_bias(np.asarray(W_XE), N, task.q)
    assert bias > 0.3 * d / task.T
    predicted = float(sts.optimal_gamma(0.0, d, task.T, task.q, bias=bias))
    assert float(cross / square) == pytest.approx(predicted, rel=0.04)
    assert predicted < 0.8


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
    makers = {m.__name__: m for m in theory.check_makers("sparse_token_selection", paper.CHECKS, full=False)}
    assert len(makers) == len(paper.CHECKS) == 32
    for name in ("fcn_bound_attained", "fcn_bound_random_layers"):
        result = makers[name]()
        assert result.verdict == "pass", (name, result)
        assert (result.name, result.paper) == (name, "sparse_token_selection")
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="float64"):
            theory.check_makers("sparse_token_selection", paper.CHECKS, full=False)
    finally:
        jax.config.update("jax_enable_x64", True)


def _sphere_config(T=6, q=2, m=4, d=2):
    return sts.STSConfig(d=d, T=T, q=q, pe_sampler="iid_sphere", pe_dim=m)


def test_sphere_loss_equals_full_transformer_on_bank():
    """Lemma A on the invariant set: the scalar bank loss equals the full transformer's exact-in-X
    population loss on the same PE draws (scores recomputed here from E and a random y)."""
    cfg = _sphere_config()
    E, y = jax.jit(lambda k: sts.pe_bank(cfg, k, 64))(jax.random.PRNGKey(0))
    E_np, y_np = np.asarray(E), np.asarray(y)
    scores = []
    for Eb, yb in zip(E_np, y_np):
        c = Eb.T @ (Eb @ yb)
        order = np.concatenate([np.flatnonzero(yb > 0), np.flatnonzero(yb == 0)])
        scores.append(c[order])
    scores = jnp.asarray(np.stack(scores))
    full_loss = jax.jit(lambda g, a: sts.bank_population_loss(sts.from_scalars(cfg, g, a), E, y))
    reduced = jax.jit(lambda g, a: sts.sphere_loss(g, a, scores, cfg.d, cfg.q))
    per_draw = jax.jit(lambda g, a: jnp.mean(sts.sphere_example_losses(g, a, scores, cfg.d, cfg.q)))
    for gamma, a in ((0.7, 0.0), (1.3, 2.5), (1.1, 7.0)):
        full = float(full_loss(gamma, a))
        assert float(reduced(gamma, a)) == pytest.approx(full, abs=1e-12)
        assert float(per_draw(gamma, a)) == pytest.approx(full, abs=1e-12)


def test_sphere_floor_against_projection_sampler():
    """The floor from the task's E sampler against an independent numpy computation: the q selected
    PE vectors drawn explicitly, the others' scores from the law of a sphere coordinate,
    <e_j, s> = ||s|| z / sqrt(z² + χ²_{m−1}), and a fine grid over a."""
    T, q, m, n = 20, 3, 8, 6000
    cfg = _sphere_config(T=T, q=q, m=m)
    floor = sts.sphere_floor(sts.sphere_scores(cfg, jax.random.PRNGKey(1), n, chunk=500), q)
    rng = np.random.default_rng(2)
    sel = rng.standard_normal((n, q, m))
    sel /= np.linalg.norm(sel, axis=2, keepdims=True)
    s = sel.sum(1)
    inside = np.einsum("nqm,nm->nq", sel, s)
    z = rng.standard_normal((n, T - q))
    coord = z / np.sqrt(z**2 + rng.chisquare(m - 1, (n, T - q)))
    scores = np.concatenate([inside, np.linalg.norm(s, axis=1, keepdims=True) * coord], axis=1)

    def ratio(a):
        p = np.exp(a * (scores - scores.max(1, keepdims=True)))
        p /= p.sum(1, keepdims=True)
        A, B = np.mean((p * p).sum(1)), np.mean(p[:, :q].sum(1)) / q
        return 1 - q * B * B / A, B / A, p

    coarse = np.arange(0.0, 20.0, 0.1)
    best = coarse[int(np.argmin([ratio(a)[0] for a in coarse]))]
    fine = np.arange(best - 0.1, best + 0.1, 0.002)
    best = fine[int(np.argmin([ratio(a)[0] for a in fine]))]
    r, g, p = ratio(best)
    per = (g * g * (p * p).sum(1) - 2 * g * p[:, :q].sum(1) / q + 1 / q) * q
    se = per.std(ddof=1) / np.sqrt(n)
    assert floor["ratio"] == pytest.approx(r, abs=5 * np.sqrt(2) * se)
    assert 0 < r < 1 and 0 < best < 19


def test_sphere_floor_needs_iid_sphere():
    with pytest.raises(ValueError, match="iid_sphere"):
        sts.sphere_scores(sts.STSConfig(d=2, T=6, q=2, pe_sampler="onehot"), jax.random.PRNGKey(0), 4)
