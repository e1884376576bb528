"""Gradients of outcomes of whole simulated runs match finite differences."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics


def attention_entropy(logits):
    p = jax.nn.softmax(logits)
    return -jnp.sum(p * jnp.log(p))


def toy_attention_loss(z):
    """A softmax attention over 4 keys trained to point at key 2 (a miniature of the papers' Z)."""
    values = jnp.array([0.3, -0.2, 1.0, 0.1])
    return -jnp.log(jax.nn.softmax(z) @ jax.nn.softmax(3.0 * values))


def final_entropy_of_flow(eta, z0):
    tight = diffrax.PIDController(rtol=1e-11, atol=1e-12)
    run = dynamics.gradient_flow(toy_attention_loss, z0, rates=eta, t1=5.0, stepsize_controller=tight)
    return attention_entropy(run.final)


def final_entropy_of_sgd(eta, z0):
    run = dynamics.train(toy_attention_loss, z0, dynamics.heavy_ball(eta, momentum=0.9), num_steps=25)
    return attention_entropy(run.final)


def central_difference(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.slow
def test_grad_of_flow_outcome_wrt_rate_and_initial_logit():
    z0 = jnp.array([0.1, 0.0, -0.1, 0.2])
    eta = jnp.array(0.7)
    d_eta = jax.grad(final_entropy_of_flow, argnums=0)(eta, z0)
    fd_eta = central_difference(lambda e: final_entropy_of_flow(e, z0), eta, 1e-5)
    np.testing.assert_allclose(d_eta, fd_eta, rtol=1e-6)
    d_z0 = jax.grad(final_entropy_of_flow, argnums=1)(eta, z0)
    e0 = jnp.eye(4)[0]
    fd_z0 = central_difference(lambda s: final_entropy_of_flow(eta, z0 + s * e0), 0.0, 1e-5)
    np.testing.assert_allclose(d_z0[0], fd_z0, rtol=1e-6)
    assert abs(float(d_eta)) > 1e-3  # a non-trivial dependence


def test_grad_of_discrete_run_outcome_wrt_learning_rate():
    z0 = jnp.array([0.1, 0.0, -0.1, 0.2])
    eta = jnp.array(0.3)
    grad = jax.grad(final_entropy_of_sgd)(eta, z0)
    fd = central_difference(lambda e: final_entropy_of_sgd(e, z0), eta, 1e-6)
    np.testing.assert_allclose(grad, fd, rtol=1e-6)
    assert abs(float(grad)) > 1e-3
