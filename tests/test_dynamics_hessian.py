"""λ_max from Hessian-vector products against the dense `jax.hessian` on small problems."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import dynamics


def _loss(params):
    """A small non-convex loss on a two-leaf PyTree (a 3x3 matrix and a vector of 4)."""
    W, v = params["W"], params["v"]
    logits = jnp.tanh(W) @ v[:3] + v[3] * jnp.sum(W**2, axis=0)
    return jax.nn.logsumexp(logits) - logits[0] + jnp.asarray(0.1, W.dtype) * jnp.sum(v**4)


def _dense_max(params):
    flat, unravel = ravel_pytree(params)
    hess = jax.jit(jax.hessian(lambda f: _loss(unravel(f))))(flat)
    return float(np.linalg.eigvalsh(np.asarray(hess))[-1])


@pytest.fixture
def params(getkey):
    return {
        "W": jax.random.normal(getkey(), (3, 3), jnp.float64),
        "v": jax.random.normal(getkey(), (4,), jnp.float64),
    }


def test_hvp_matches_dense(params, getkey):
    flat, unravel = ravel_pytree(params)
    tangent = jax.random.normal(getkey(), flat.shape, jnp.float64)
    dense = jax.jit(jax.hessian(lambda f: _loss(unravel(f))))(flat) @ tangent
    np.testing.assert_allclose(
        ravel_pytree(dynamics.landscape.hvp(_loss, params, unravel(tangent)))[0], dense, rtol=1e-10
    )


def test_lanczos_matches_dense(params):
    estimate = dynamics.landscape.hessian_max_eigenvalue(_loss, params, num_iters=100, method="lanczos")
    np.testing.assert_allclose(float(estimate), _dense_max(params), rtol=1e-9)


def test_power_matches_dense(params):
    estimate = dynamics.landscape.hessian_max_eigenvalue(_loss, params, num_iters=3000, method="power")
    np.testing.assert_allclose(float(estimate), _dense_max(params), rtol=1e-5)


def test_lanczos_is_jittable_and_partial_iterations_bound_below(params):
    fn = jax.jit(lambda p: dynamics.landscape.hessian_max_eigenvalue(_loss, p, num_iters=4))
    assert float(fn(params)) <= _dense_max(params) + 1e-10


def test_bad_method_raises(params):
    with pytest.raises(ValueError, match="method"):
        dynamics.landscape.hessian_max_eigenvalue(_loss, params, method="qr")


def _features_loss(features, offsets):
    """Σ softplus(Aθ − c)²: a loss of the few linear features Aθ, whose Hessian has their rank."""
    return lambda theta: jnp.sum(jax.nn.softplus(features @ theta - offsets) ** 2)


@functools.partial(jax.jit, static_argnames="num_iters")
def _top_of_features_loss(features, offsets, theta, num_iters):
    return dynamics.landscape.hessian_max_eigenvalue(
        _features_loss(features, offsets), theta, num_iters=num_iters
    )


@pytest.mark.parametrize("seed", range(3))
def test_lanczos_past_the_rank_of_the_hessian_stays_at_its_top_eigenvalue(seed):
    """A loss of 6 linear features of 80 parameters has a Hessian of rank 6: Lanczos meets the end
    of its Krylov space after 6 steps, and more steps (up to the dimension) must neither lose
    nor exceed λ_max (normalising the rounding left there made Ritz values of 10³ λ_max)."""
    rng = np.random.default_rng(seed)
    features, offsets = jnp.asarray(rng.normal(size=(6, 80))), jnp.asarray(rng.normal(size=6))
    theta = jnp.asarray(rng.normal(size=80))
    dense = np.linalg.eigvalsh(np.asarray(jax.hessian(_features_loss(features, offsets))(theta)))[-1]
    for num_iters in (20, 80):
        top = _top_of_features_loss(features, offsets, theta, num_iters)
        np.testing.assert_allclose(top, dense, rtol=1e-12, err_msg=f"{num_iters} steps")
