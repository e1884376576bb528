"""Sparse token selection: config validation, PE properties, exact vs Monte-Carlo loss, the reduced
dynamics against full-matrix GD, the FCN risk."""

import dataclasses
import doctest
import importlib
import itertools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
import tasks.sparse_token_selection as sts

SMALL = sts.STSConfig(d=3, T=6, q=2, pe_sampler="onehot")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"q": 6}, "q"),
        ({"q": 7}, "q"),
        ({"q": 0}, "q"),
        ({"pe_sampler": "dictionary_onehot", "pe_dim": 5}, "pe_dim"),
        ({"pe_sampler": "haar_orthonormal", "pe_dim": 4}, "pe_dim"),
        ({"rho": -1.0}, "rho"),
        ({"rho": 0.0}, "rho"),
        ({"init_scale": -0.1}, "init_scale"),
        ({"pe_sampler": "nope"}, "pe_sampler"),
        ({"keys": "nope"}, "keys"),
        ({"x_query_mode": "nope"}, "x_query_mode"),
    ],
)
def test_bad_config_raises(changes, field):
    with pytest.raises(ValueError, match=field):
        SMALL.replace(**changes)


def test_config_errors_name_field_value_and_range():
    with pytest.raises(ValueError, match=r"STSConfig\.rho must be a finite number > 0, got -1\.0"):
        SMALL.replace(rho=-1.0)
    with pytest.raises(ValueError, match=r"STSConfig\.d must be an integer >= 1, got 2\.5"):
        SMALL.replace(d=2.5)
    with pytest.raises(ValueError, match="max_length"):
        SMALL.replace(max_length=8)
    infos = {info.name: info for info in dynamics.params(sts.STSConfig)}
    assert infos["pe_sampler"].allowed.choices == sts.PE_SAMPLERS and infos["max_length"].optional


def test_online_run_refuses_untestable_lengths():
    task = sts.STSConfig(d=2, T=6, q=2, pe_dim=8)
    with pytest.raises(ValueError, match="T_tests"):
        sts.online_run(task, jax.random.PRNGKey(0), T_tests=(9,))
    with pytest.raises(ValueError, match="q_tests"):
        sts.online_run(task, jax.random.PRNGKey(0), q_tests=(6,))
    assert sts.validation_lengths(sts.STSConfig(), 4) == (250, 300, 350, 400)
    assert sts.validation_sparsities(sts.STSConfig(), 3) == (4, 5, 6)


def test_pe_longer_than_served_raises():
    with pytest.raises(ValueError, match="max_length"):
        sts.sample_pe(sts.STSConfig(d=2, T=6, q=2, pe_dim=8), jax.random.PRNGKey(0), 9)


@pytest.mark.parametrize("sampler", ["dictionary_onehot", "haar_orthonormal"])
@pytest.mark.parametrize("fixed", [False, True])
def test_orthonormal_samplers(sampler, fixed):
    cfg = sts.STSConfig(d=2, T=5, q=2, pe_sampler=sampler, pe_dim=9, rho=1.5, fixed_pe=fixed)
    for k in range(3):
        E = np.asarray(sts.sample_pe(cfg, jax.random.PRNGKey(k), 7))
        assert E.shape == (9, 7)
        np.testing.assert_allclose(E.T @ E, 1.5**2 * np.eye(7), atol=1e-12)


def test_dictionary_is_random_injective_and_fixed_is_padded():
    cfg = sts.STSConfig(d=2, T=5, q=2, pe_dim=9)
    draws = [np.asarray(sts.sample_pe(cfg, jax.random.PRNGKey(k))) for k in range(5)]
    assert all(set(np.unique(E)) <= {0.0, 1.0} and (E.sum(0) == 1).all() for E in draws)
    assert len({E.argmax(0).tobytes() for E in draws}) > 1
    fixed = np.asarray(sts.sample_pe(cfg.replace(fixed_pe=True), jax.random.PRNGKey(1), 7))
    np.testing.assert_array_equal(fixed, np.eye(9, 7))


def test_fixed_random_draw_is_a_prefix():
    cfg = sts.STSConfig(d=2, T=5, q=2, pe_sampler="iid_sphere", pe_dim=16, fixed_pe=True, max_length=8)
    short = sts.sample_pe(cfg, jax.random.PRNGKey(1), 5)
    long = sts.sample_pe(cfg, jax.random.PRNGKey(2), 8)
    np.testing.assert_array_equal(np.asarray(long)[:, :5], np.asarray(short))


def test_iid_sphere_norms_and_near_orthogonality():
    n, m = 50, 4096
    E = sts.near_orthogonal_pe(jax.random.PRNGKey(0), n, m)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(E), axis=0), 1.0, atol=1e-12)
    delta = float(sts.coherence(E))
    assert 0 < delta <= np.sqrt(6 * np.log(n) / m)
    # selection margin: inside y >= 1 − (q−1)δ, outside <= qδ
    y = jnp.zeros(n).at[jnp.array([3, 10, 20])].set(1.0)
    scores = np.asarray(sts.selection_scores(E, y))
    inside, outside = scores[np.asarray(y) == 1], scores[np.asarray(y) == 0]
    assert inside.min() >= 1 - 2 * delta and outside.max() <= 3 * delta
    E2 = sts.iid_sphere_pe(jax.random.PRNGKey(1), 7, 5, 2.0)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(E2), axis=0), 2.0, atol=1e-12)


def test_sample_shapes_and_subsets():
    cfg = sts.STSConfig(d=3, T=6, q=2, pe_dim=10, x_query_mode="gaussian")
    batch = sts.sample(cfg, jax.random.PRNGKey(0), 64, T=8, q=3)
    assert batch.X.shape == (64, 3, 8) and batch.E.shape == (64, 10, 8) and batch.x_query.shape == (64, 3)
    np.testing.assert_array_equal(np.asarray(batch.y).sum(1), 3.0)
    # q may be traced (vmap over q_test)
    ys = jax.vmap(lambda q: sts.random_subset(jax.random.PRNGKey(0), 8, q))(jnp.arange(1, 5))
    np.testing.assert_array_equal(np.asarray(ys).sum(1), [1, 2, 3, 4])
    # every subset is reachable and roughly uniform
    counts = np.asarray(
        jax.vmap(lambda k: sts.random_subset(k, 4, 2))(jax.random.split(jax.random.PRNGKey(1), 3000))
    )
    freq = {c: 0 for c in itertools.combinations(range(4), 2)}
    for row in counts:
        freq[tuple(np.flatnonzero(row))] += 1
    assert min(freq.values()) > 140


@pytest.mark.parametrize("keys", ["tokens", "tokens_and_query"])
def test_forward_matches_definition(keys):
    """V Z softmax(Z^T W z_q) with Z formed explicitly (numpy), against the block-wise forward."""
    cfg = sts.STSConfig(d=2, T=4, q=2, pe_dim=5, keys=keys, x_query_mode="gaussian")
    model = sts.random_init(cfg.replace(init_scale=0.5), jax.random.PRNGKey(0))
    X, y, E, xq = (a[0] for a in sts.sample(cfg, jax.random.PRNGKey(1), 1))
    Z = np.concatenate([np.asarray(X), np.asarray(E)])
    zq = np.concatenate([np.asarray(xq), np.asarray(E) @ np.asarray(y)])
    K = np.concatenate([Z, zq[:, None]], axis=1) if keys == "tokens_and_query" else Z
    s = K.T @ np.asarray(model.W) @ zq
    p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    np.testing.assert_allclose(np.asarray(model(X, y, E, xq)), np.asarray(model.V) @ K @ p, rtol=1e-12)


def _x_independent(model, d):
    return sts.STSTransformer(model.W.at[:d, d:].set(0.0), model.V, d, model.keys)


@pytest.mark.parametrize("keys", [pytest.param("tokens", marks=pytest.mark.slow), "tokens_and_query"])
def test_exact_population_loss_matches_monte_carlo(keys):
    cfg = SMALL.replace(keys=keys, init_scale=0.8)
    model = _x_independent(sts.random_init(cfg, jax.random.PRNGKey(4)), cfg.d)
    exact = float(sts.exact_population_loss(model, sts.onehot_pe(cfg.T), sts.all_subsets(cfg.T, cfg.q)))
    mean, se = sts.mc_loss(model, cfg, jax.random.PRNGKey(5), 6000, chunk=6000)
    assert abs(float(mean) - exact) < 4 * float(se)
    assert float(se) < 0.05 * exact


@pytest.mark.slow
def test_bank_loss_matches_monte_carlo_stochastic_pe():
    cfg = sts.STSConfig(d=2, T=5, q=2, pe_sampler="haar_orthonormal", pe_dim=7, init_scale=0.8)
    model = _x_independent(sts.random_init(cfg, jax.random.PRNGKey(6)), cfg.d)
    E, y = sts.pe_bank(cfg, jax.random.PRNGKey(7), 3000)
    bank = float(sts.bank_population_loss(model, E, y))
    mean, se = sts.mc_loss(model, cfg, jax.random.PRNGKey(8), 3000, chunk=3000)
    assert abs(float(mean) - bank) < 4 * float(se) * np.sqrt(2.0)  # both are estimates of the same size


@pytest.mark.slow
def test_mc_loss_of_a_constant_model_under_jit_is_its_value_op_by_op():
    """Under an outer `jax.jit` a zero init is a compile-time constant; without the barrier in
    `mc_loss` its average over two chunks of 512 pairs came out inf or nan in most processes."""
    cfg = sts.STSConfig(d=5, T=20, q=3, pe_dim=40)

    def loss(key):
        model = sts.zero_init(cfg, dtype=jnp.float32)
        return sts.mc_loss(model, cfg, key, 1024, slots=True, dtype=jnp.float32)[0]

    key = jax.random.PRNGKey(0)
    np.testing.assert_allclose(jax.jit(loss)(key), loss(key), rtol=1e-5)


def test_lemma_a_refuses_x_dependent_attention():
    model = sts.random_init(SMALL, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="W_XE"):
        sts.exact_population_loss(model, sts.onehot_pe(SMALL.T), sts.all_subsets(SMALL.T, SMALL.q))


def test_reduced_loss_matches_model_on_invariant_set():
    for cfg in (SMALL, sts.STSConfig(d=2, T=5, q=2, pe_sampler="dictionary_onehot", pe_dim=7, rho=1.3)):
        model = sts.from_scalars(cfg, 0.8, 1.7)
        E = sts.sample_pe(cfg, jax.random.PRNGKey(0))
        exact = float(sts.exact_population_loss(model, E, sts.all_subsets(cfg.T, cfg.q)))
        reduced = float(sts.reduced_state_loss(cfg)({"gamma": jnp.asarray(0.8), "a": jnp.asarray(1.7)}))
        np.testing.assert_allclose(exact, reduced, rtol=1e-12)
    assert float(sts.reduced_loss(jnp.asarray(0.0), jnp.asarray(0.0), 3, 6, 2)) == pytest.approx(3 / 4)


def test_reduced_dynamics_equal_full_matrix_gd():
    cfg = SMALL
    E, subsets = sts.onehot_pe(cfg.T), sts.all_subsets(cfg.T, cfg.q)

    def loss(m):
        return sts.exact_population_loss(m, E, subsets)

    full = dynamics.train(
        loss,
        sts.zero_init(cfg),
        dynamics.gd(0.5),
        num_steps=60,
        save=dynamics.Save(fn=lambda step, m, args: (loss(m), m)),
    )
    red = sts.reduced_gd(cfg, 0.5, 60)
    L, models = full.values
    assert np.abs(np.asarray(L) - np.asarray(red.values["loss"])).max() < 1e-10
    on_set = jax.vmap(lambda g, a: sts.from_scalars(cfg, g, a))(red.values["gamma"], red.values["a"])
    assert np.abs(np.asarray(models.W) - np.asarray(on_set.W)).max() < 1e-10
    assert np.abs(np.asarray(models.V) - np.asarray(on_set.V)).max() < 1e-10
    assert float(red.values["a"][-1]) > 0


def test_reduced_flow_event_and_rate():
    cfg = sts.STSConfig(d=2, T=10, q=2, pe_sampler="onehot")
    eps = 1e-3
    ts = np.logspace(0, 4, 9)
    run = sts.reduced_flow(cfg, 1e4, ts, eps=eps, solver=diffrax.Tsit5())
    L = np.asarray(run.values["loss"])
    before = ts < float(run.t_stop)
    assert np.all(np.diff(L[before]) < 0) and np.all(np.isinf(L[~before]))
    assert dynamics.stop_reason(int(run.stop), int(run.event), ("loss_below",)) == "event:loss_below"
    assert float(run.t_stop) == pytest.approx((cfg.T - 1) / (4 * eps), rel=0.2)
    # the event is located exactly: the loss at the stop is eps, and an independent integration
    # to just before and just after t_stop is on either side of it
    assert float(sts.reduced_state_loss(cfg)(run.final)) == pytest.approx(eps, rel=1e-9)
    t = float(run.t_stop)
    around = sts.reduced_flow(cfg, 1e4, [0.0, t * (1 - 1e-6), t * (1 + 1e-6)], solver=diffrax.Tsit5())
    assert around.values["loss"][1] > eps > around.values["loss"][2]


def test_cosines():
    cfg = SMALL
    model = sts.from_scalars(cfg, 2.0, 3.0)
    cos = sts.direction_cosines(model, cfg)
    assert float(cos["cos_W_centred"]) == pytest.approx(1.0, abs=1e-12)
    assert float(cos["cos_W"]) == pytest.approx(np.sqrt((cfg.T - 1) / cfg.T), abs=1e-12)
    assert float(cos["cos_V"]) == pytest.approx(1.0, abs=1e-12)
    assert float(sts.cosine(jnp.zeros(3), jnp.ones(3))) == 0.0


def test_linear_readout_risk_brute_force():
    d, T, q, m = 2, 5, 2, 3
    A = np.random.default_rng(0).standard_normal((m, T * d))
    # brute force: enumerate subsets, conditional variance of each target coordinate
    P = A.T @ np.linalg.solve(A @ A.T, A)
    total = 0.0
    subsets = list(itertools.combinations(range(T), q))
    for y in subsets:
        u = np.zeros(T)
        u[list(y)] = 1 / q
        B = np.kron(u[:, None], np.eye(d))  # columns b_k
        total += 0.5 * np.trace(B.T @ (np.eye(T * d) - P) @ B)
    np.testing.assert_allclose(sts.linear_readout_risk(A, d, T, q), total / len(subsets), rtol=1e-12)
    assert sts.linear_readout_risk(np.zeros((0, T * d)), d, T, q) == pytest.approx(d / (2 * q))


@pytest.mark.parametrize("pe_sampler", ["dictionary_onehot", "haar_orthonormal"])
def test_to_scalars_inverts_from_scalars(pe_sampler):
    task = sts.STSConfig(d=3, T=6, q=2, pe_sampler=pe_sampler, pe_dim=8)
    gamma, a = sts.to_scalars(task, sts.from_scalars(task, 0.7, 1.3))
    assert (float(gamma), float(a)) == pytest.approx((0.7, 1.3), rel=1e-12)


@pytest.mark.slow
def test_definition4_blocks_train_only_W_EE_and_V_X():
    """Under Adam, which moves any entry with a non-zero gradient, the other blocks stay zero."""
    task = sts.STSConfig(d=2, T=6, q=2, pe_dim=8, init_scale=0.1)
    key = jax.random.PRNGKey(0)
    kwargs = dict(optimizer="adam", lr=0.1, batch_size=8, num_steps=3, every=3, init="random", num_eval=8)
    part = sts.online_run(task, key, blocks="definition4", **kwargs).final
    full = sts.online_run(task, key, **kwargs).final
    start = sts.random_init(task, jax.random.split(key, 3)[0], dtype=jnp.float32)
    assert jnp.array_equal(part.W, sts.definition4_part(part).W)
    assert jnp.array_equal(part.V, sts.definition4_part(part).V)
    assert not jnp.array_equal(part.W[2:, 2:], start.W[2:, 2:])
    assert not jnp.array_equal(part.V[:, :2], start.V[:, :2])
    assert not jnp.array_equal(full.W[:2, 2:], start.W[:2, 2:])
    with pytest.raises(ValueError, match="blocks"):
        sts.online_run(task, key, blocks="nope")
    with pytest.raises(ValueError, match="blocks"):
        sts.Online(blocks="nope")


@pytest.mark.slow
def test_fcn_forward_and_online_run_shapes():
    cfg = sts.STSConfig(d=2, T=6, q=2, pe_dim=8)
    fcn = sts.FCN(cfg.d, cfg.T, 5, jax.random.PRNGKey(0))
    X, y, E, xq = (a[0] for a in sts.sample(cfg, jax.random.PRNGKey(1), 1))
    assert fcn(X, y, E, xq).shape == (2,)
    sim = sts.Online(task=cfg, lr=0.5, batch_size=8, num_steps=2, every=1, num_T_tests=1, num_q_tests=2)
    runs, finite = dynamics.run_many(dataclasses.replace(sim, num_eval=8).run, dynamics.seed_keys(0, 2))
    out = runs.values
    assert (sim.T_tests, sim.q_tests) == ((8,), (3, 4))
    assert out["loss"].shape == (2, 3)
    assert out["loss_T"].shape == (2, 3, 1) and out["loss_q"].shape == (2, 3, 2)
    assert finite.all() and out["loss"][:, 0] == pytest.approx(cfg.trivial_loss, rel=0.5)


def test_reduced_module_examples_run():
    """The docstring examples of the reduced dynamics (`optimal_gamma` with a bias among them)."""
    result = doctest.testmod(importlib.import_module("tasks.sparse_token_selection._reduced"))
    assert result.attempted > 0 and result.failed == 0
