"""The column-wise optax steps of dynamics/_proximal.py against hand computations."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import dynamics


class Pair(eqx.Module):
    A: jax.Array
    B: jax.Array


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    return Pair(A=jnp.asarray(rng.normal(size=(4, 3))), B=jnp.asarray(rng.normal(size=(5, 3))))


def test_soft_threshold_hand_values():
    x = jnp.array([-2.0, -0.5, 0.0, 0.3, 1.5])
    np.testing.assert_allclose(dynamics._proximal.soft_threshold(x, 0.5), [-1.5, 0.0, 0.0, 0.0, 1.0])


def test_proximal_equals_hand_computation():
    rng = np.random.default_rng(1)
    p = jnp.asarray(rng.dirichlet(np.ones(5), size=3).T)  # columns sum to 1
    step = jnp.asarray(0.05 * rng.normal(size=(5, 3)))
    t = 0.04
    tx = dynamics.proximal_l1(t, column_sum=1.0)
    u, _ = tx.update(step, tx.init(p), p)
    z = np.asarray(p + step)
    hand = np.where(z > t, z - t, np.where(z < -t, z + t, 0.0))
    hand = hand + (1.0 - hand.sum(axis=0)) / 5.0
    np.testing.assert_allclose(np.asarray(p + u), hand, atol=1e-15)
    np.testing.assert_allclose(np.asarray(p + u).sum(axis=0), 1.0, atol=1e-14)


def test_proximal_mask_and_predicate_select_leaves():
    params, step = _pair(2), _pair(3)
    for mask in (Pair(A=False, B=True), lambda path, leaf: leaf.shape[0] == 5):
        tx = dynamics.proximal_l1(0.3, mask=mask, column_sum=1.0)
        u, _ = tx.update(step, tx.init(params), params)
        np.testing.assert_allclose(u.A, step.A)  # untouched leaf passes through
        z = np.asarray(params.B + step.B)
        hand = np.sign(z) * np.maximum(np.abs(z) - 0.3, 0.0)
        hand = hand + (1.0 - hand.sum(axis=0)) / 5.0
        np.testing.assert_allclose(np.asarray(params.B + u.B), hand, atol=1e-14)


def test_proximal_without_projection_and_needs_params():
    tx = dynamics.proximal_l1(0.1)
    p = jnp.zeros((2, 2))
    u, _ = tx.update(jnp.array([[0.05, 0.2], [-0.3, 0.0]]), tx.init(p), p)
    np.testing.assert_allclose(u, [[0.0, 0.1], [-0.2, 0.0]], atol=1e-15)
    with pytest.raises(ValueError, match="params"):
        tx.update(p, tx.init(p), None)


def test_preconditioning_and_centring_keep_column_sums():
    rng = np.random.default_rng(4)
    params = Pair(
        A=jnp.asarray(rng.dirichlet(np.ones(4), size=3).T), B=jnp.asarray(rng.dirichlet(np.ones(5), 3).T)
    )
    grads = _pair(5)
    w = jnp.array([2.0, 0.5, 3.0])
    tx = optax.chain(dynamics.scale_columns(Pair(A=w, B=None)), dynamics.center_columns(), dynamics.gd(0.7))
    u, _ = tx.update(grads, tx.init(params), params)
    new = optax.apply_updates(params, u)
    np.testing.assert_allclose(np.asarray(new.A).sum(0), 1.0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(new.B).sum(0), 1.0, atol=1e-14)
    g = np.asarray(grads.A) * np.asarray(w)
    np.testing.assert_allclose(np.asarray(u.A), -0.7 * (g - g.mean(0)), atol=1e-15)
    gB = np.asarray(grads.B)
    np.testing.assert_allclose(np.asarray(u.B), -0.7 * (gB - gB.mean(0)), atol=1e-15)


def test_centring_mask_leaves_others():
    grads = _pair(6)
    tx = dynamics.center_columns(Pair(A=True, B=False))
    u, _ = tx.update(grads, tx.init(grads))
    np.testing.assert_allclose(np.asarray(u.A).sum(0), 0.0, atol=1e-14)
    np.testing.assert_allclose(u.B, grads.B)


def test_proximal_in_jit_with_traced_threshold():
    p = jnp.full((3, 2), 1.0 / 3.0)

    @jax.jit
    def go(t):
        tx = dynamics.proximal_l1(t, column_sum=1.0)
        return tx.update(jnp.ones((3, 2)) * 0.1, tx.init(p), p)[0]

    np.testing.assert_allclose(np.asarray(p + go(0.01)).sum(0), 1.0, atol=1e-14)
