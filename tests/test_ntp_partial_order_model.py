"""Model, losses and Algorithm 1 of ntp_partial_order."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.ntp_partial_order as ntp
from tasks.ntp_partial_order import attend


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _random_model(key, V, d=None):
    d = V if d is None else d
    k1, k2 = jax.random.split(key)
    return ntp.NTPModel(
        jax.random.normal(k1, (V, d), jnp.float64), jax.random.normal(k2, (d, d), jnp.float64)
    )


def _slow_loss(model, dataset, E):
    """Brute force: one sentence at a time with explicit matrices."""
    Wov, Wkq = np.asarray(model.W_ov), np.asarray(model.W_kq)
    total = 0.0
    for s, y, w in zip(dataset.sentences, dataset.labels, dataset.weights):
        X = E[:, list(s)]
        a = _softmax(X.T @ Wkq @ X[:, -1])
        z = Wov @ X @ a
        total += w * (np.log(np.sum(np.exp(z - z.max()))) + z.max() - z[y])
    return total


def test_loss_matches_brute_force_one_hot_and_orthonormal(getkey):
    d = ntp.svop()
    model = _random_model(getkey(), 4)
    np.testing.assert_allclose(
        ntp.loss(model, ntp.make_batch(d)), _slow_loss(model, d, np.eye(4)), rtol=1e-13
    )
    E = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 4)))[0]
    model6 = _random_model(getkey(), 4, 6)
    np.testing.assert_allclose(
        ntp.loss(model6, ntp.make_batch(d, embeddings=E)), _slow_loss(model6, d, E), rtol=1e-13
    )
    # change of basis: W_kq -> E^T W_kq E, W_ov -> W_ov E gives the one-hot model
    one_hot = ntp.NTPModel(model6.W_ov @ jnp.asarray(E), jnp.asarray(E.T) @ model6.W_kq @ jnp.asarray(E))
    np.testing.assert_allclose(
        ntp.loss(one_hot, ntp.make_batch(d)), ntp.loss(model6, ntp.make_batch(d, embeddings=E)), rtol=1e-12
    )


@pytest.mark.slow
def test_padding_does_not_change_the_loss(getkey):
    d = ntp.RecipeB(vocab_size=6, k_max=2, m_max=3).build(0)
    model = _random_model(getkey(), 6)
    tight = ntp.loss(model, ntp.make_batch(d))
    padded = ntp.loss(model, ntp.make_batch(d, num_rows=d.num_sentences + 5, length=d.max_length + 2))
    np.testing.assert_allclose(padded, tight, rtol=1e-14)
    g1 = jax.grad(ntp.loss)(model, ntp.make_batch(d))
    g2 = jax.grad(ntp.loss)(model, ntp.make_batch(d, num_rows=d.num_sentences + 5, length=d.max_length + 2))
    np.testing.assert_allclose(g2.W_kq, g1.W_kq, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="num_rows"):
        ntp.make_batch(d, num_rows=2)
    with pytest.raises(ValueError, match="orthonormal"):
        ntp.make_batch(d, embeddings=np.ones((6, 6)))


@pytest.mark.slow
def test_gradients_match_eqns_5_and_6(getkey):
    d = ntp.RecipeB(vocab_size=6, k_max=2, m_max=3).build(1)
    model = _random_model(getkey(), 6)
    batch, colloc = ntp.make_batch(d), ntp.make_batch(d, collocation=True)
    Wov, Wkq = np.asarray(model.W_ov), np.asarray(model.W_kq)
    nxt = d.collocation()
    g5 = sum(np.outer(_softmax(Wov[:, x]) - np.eye(6)[nxt[x]], np.eye(6)[x]) for x in range(6))
    np.testing.assert_allclose(jax.grad(ntp.loss)(model, colloc).W_ov, g5, rtol=1e-12, atol=1e-15)
    g6 = np.zeros((6, 6))
    for s, y, w in zip(d.sentences, d.labels, d.weights):
        X = np.eye(6)[:, list(s)]
        a = _softmax(X.T @ Wkq @ X[:, -1])
        T = _softmax(Wov @ X @ a)
        g6 += w * X @ (np.diag(a) - np.outer(a, a)) @ X.T @ Wov.T @ np.outer(T - np.eye(6)[y], X[:, -1])
    np.testing.assert_allclose(jax.grad(ntp.loss)(model, batch).W_kq, g6, rtol=1e-11, atol=1e-15)


def test_cross_entropy_stable_at_large_margins():
    z = jnp.asarray([[60.0, 0.0, 0.0], [0.0, 1.0, 2.0]])
    labels = jnp.asarray([0, 2])
    ce = ntp.cross_entropy(z, labels)
    np.testing.assert_allclose(ce[0], 2 * np.exp(-60.0), rtol=1e-14)
    g = jax.grad(lambda z: jnp.sum(ntp.cross_entropy(z, labels)))(z)
    np.testing.assert_allclose(g[0], [-2 * np.exp(-60.0), np.exp(-60.0), np.exp(-60.0)], rtol=1e-13)
    np.testing.assert_allclose(g[1], _softmax(np.array([0.0, 1.0, 2.0])) - np.eye(3)[2], rtol=1e-13)


@pytest.mark.parametrize("gap", [1.0, 10.0, 40.0, 100.0, 300.0, 700.0])
def test_attend_gradient_keeps_its_digits_when_the_attention_saturates(gap):
    """Two positions, scores (0, −gap), values v_0, v_1, cotangent c: the exact gradient of
    c (a_0 v_0 + a_1 v_1) with respect to the second score is a_0 a_1 c (v_1 − v_0). The textbook
    form a_1 (g_1 − ḡ) loses every digit once a_1 < 1e-16; attend keeps them to 1e-300."""
    v = jnp.array([[[1.5, -0.5], [-2.0, 0.25]]])
    c = jnp.array([0.75, 2.0])
    grad = jax.grad(lambda s: (attend(s, v) @ c)[0])(jnp.array([[0.0, -gap]]))
    a1 = 1.0 / (1.0 + np.exp(gap))
    a0 = 1.0 / (1.0 + np.exp(-gap))
    exact = a0 * a1 * float((v[0, 1] - v[0, 0]) @ c)
    np.testing.assert_allclose(float(grad[0, 1]), exact, rtol=1e-12)
    np.testing.assert_allclose(float(grad[0, 0]), -exact, rtol=1e-12)


def test_attend_gradient_equals_the_textbook_softmax_gradient_away_from_saturation(getkey):
    scores = jax.random.normal(getkey(), (5, 6), jnp.float64)
    scores = scores.at[:, 4:].set(-jnp.inf)  # padding
    values = jax.random.normal(getkey(), (5, 6, 3), jnp.float64)
    c = jax.random.normal(getkey(), (5, 3), jnp.float64)

    def textbook(s, v):
        return jnp.einsum("nl,nlv->nv", jax.nn.softmax(s, axis=-1), v)

    ours = jax.grad(lambda s, v: jnp.sum(attend(s, v) * c), argnums=(0, 1))(scores, values)
    plain = jax.grad(lambda s, v: jnp.sum(textbook(s, v) * c), argnums=(0, 1))(scores, values)
    np.testing.assert_allclose(np.asarray(attend(scores, values)), np.asarray(textbook(scores, values)))
    for a, b in zip(ours, plain):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15)


def test_algorithm1_exact_stage1_and_step_sizes():
    d = ntp.RecipeB(vocab_size=6, k_max=2, m_max=3).build(2)
    eta0, eta = ntp.paper_step_sizes(6)
    first, second = ntp.algorithm1(
        ntp.make_batch(d),
        ntp.make_batch(d, collocation=True),
        eta0=eta0,
        eta=eta,
        num_steps1=30,
        num_steps2=30,
    )
    W = np.asarray(first.values.W_ov)
    np.testing.assert_allclose(np.linalg.norm(W, axis=(1, 2)), eta0 * np.arange(31), rtol=1e-12)
    P = np.eye(6)[:, d.collocation()]  # P[n(x), x] = 1
    star = P - 1 / 6
    np.testing.assert_allclose(W[-1], 30 * eta0 * star / np.linalg.norm(star), rtol=1e-12, atol=1e-14)
    assert np.all(np.asarray(second.values.W_ov) == W[-1])
    steps = np.linalg.norm(np.diff(np.asarray(second.values.W_kq), axis=0), axis=(1, 2))
    np.testing.assert_allclose(steps, eta, rtol=1e-12)
    with pytest.raises(ValueError, match="eta0"):
        ntp.algorithm1(
            ntp.make_batch(d),
            ntp.make_batch(d, collocation=True),
            eta0=0.0,
            eta=eta,
            num_steps1=1,
            num_steps2=1,
        )
