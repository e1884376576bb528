"""Normalized gradient descent per parameter block (dynamics._normalized)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import dynamics


def _quadratic(params):
    return (
        jnp.sum((params["a"] - 3.0) ** 2)
        + jnp.sum(jnp.sin(params["b"]["c"]))
        + jnp.sum(params["b"]["d"] ** 4)
    )


@pytest.fixture
def params():
    return {"a": jnp.arange(6.0).reshape(2, 3), "b": {"c": jnp.ones(4), "d": jnp.asarray([0.5, -1.5])}}


def test_each_block_moves_by_its_step(params):
    rates = {"a": jnp.asarray(0.3), "b": jnp.asarray(0.05)}
    opt = dynamics.normalized_gd(rates)
    state = opt.init(params)
    p = params
    for _ in range(5):
        updates, state = opt.update(jax.grad(_quadratic)(p), state, p)
        new = optax.apply_updates(p, updates)
        moved_a = float(jnp.linalg.norm(new["a"] - p["a"]))
        moved_b = float(
            jnp.sqrt(
                sum(jnp.sum((x - y) ** 2) for x, y in zip(jax.tree.leaves(new["b"]), jax.tree.leaves(p["b"])))
            )
        )
        assert moved_a == pytest.approx(0.3, rel=1e-14)
        assert moved_b == pytest.approx(0.05, rel=1e-14)
        p = new


def test_direction_is_the_gradient_direction(params):
    g = jax.grad(_quadratic)(params)
    opt = dynamics.normalized_gd({"a": jnp.asarray(1.0), "b": jnp.asarray(2.0)})
    updates, _ = opt.update(g, opt.init(params))
    nb = np.sqrt(sum(float(jnp.sum(x**2)) for x in jax.tree.leaves(g["b"])))
    np.testing.assert_allclose(updates["a"], -g["a"] / jnp.linalg.norm(g["a"]), rtol=1e-14)
    np.testing.assert_allclose(updates["b"]["c"], -2.0 * g["b"]["c"] / nb, rtol=1e-14)


def test_scalar_rate_is_global_normalisation(params):
    g = jax.grad(_quadratic)(params)
    opt = dynamics.normalized_gd(jnp.asarray(0.7))
    mine, _ = opt.update(g, opt.init(params))
    total = np.sqrt(sum(float(jnp.sum(x**2)) for x in jax.tree.leaves(g)))
    for u, x in zip(jax.tree.leaves(mine), jax.tree.leaves(g)):
        np.testing.assert_allclose(u, -0.7 * x / total, rtol=1e-14)


def test_none_normalises_each_leaf(params):
    g = jax.grad(_quadratic)(params)
    updates, _ = dynamics._normalized.normalize_by_block().update(g, optax.EmptyState())
    for u in jax.tree.leaves(updates):
        assert float(jnp.linalg.norm(u)) == pytest.approx(1.0, rel=1e-14)


def test_zero_gradient_block_does_not_move(params):
    g = jax.tree.map(jnp.zeros_like, params)
    g["a"] = jnp.ones((2, 3))
    opt = dynamics.normalized_gd({"a": jnp.asarray(1.0), "b": jnp.asarray(1.0)})
    updates, _ = opt.update(g, opt.init(params))
    assert all(np.all(np.asarray(u) == 0) for u in jax.tree.leaves(updates["b"]))
    assert np.all(np.isfinite(np.asarray(updates["a"])))


def test_train_norm_grows_linearly():
    # the gradient keeps one direction, so the iterates move along a line: ||p_t|| = t eta exactly
    run = dynamics.train(
        lambda p: jnp.logaddexp(0.0, -(p @ jnp.asarray([1.0, 2.0]))),
        jnp.zeros(2),
        dynamics.normalized_gd(jnp.asarray(0.1)),
        num_steps=20,
    )
    norms = np.linalg.norm(np.asarray(run.values), axis=1)
    np.testing.assert_allclose(norms, 0.1 * np.arange(21), rtol=1e-12, atol=1e-15)
