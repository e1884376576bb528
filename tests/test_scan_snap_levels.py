"""The Scan and Snap simulation levels on the engine: monotone flows, rates, gradients of outcomes."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.scan_snap as ss

CLASSES = ss.Dataset2.syn_small().build()
ARRAYS = CLASSES.arrays(jnp.float64)


def test_population_flow_loss_never_increases():
    model = ss.YZModel.uniform(jax.random.PRNGKey(0), CLASSES.M, dtype=jnp.float64)
    save_ts = jnp.linspace(0.0, 300.0, 301)
    run = ss.population_flow(model, ARRAYS, eta_y=2.0, eta_z=1.0, t1=300.0, save_ts=save_ts)
    loss = np.asarray(run.values["population_loss"])
    assert loss[-1] < 0.05 * loss[0]
    assert np.all(np.diff(loss) <= 1e-12), np.max(np.diff(loss))


def test_population_flow_moves_each_group_at_its_rate():
    """At t = 0 the flow's velocity is (η_Y ∂_Y, η_Z ∂_Z) of the closed-form population gradient."""
    model = ss.YZModel.uniform(jax.random.PRNGKey(1), CLASSES.M, dtype=jnp.float64)
    dt = 1e-6
    run = ss.population_flow(
        model, ARRAYS, eta_y=3.0, eta_z=0.5, t1=dt, save_ts=jnp.array([0.0, dt]), save=lambda m: m,
        stepsize_controller=diffrax.PIDController(rtol=1e-13, atol=1e-16),
    )  # fmt: skip
    Y_dot, Z_dot = ss.population_gradient_formula(model, ARRAYS)
    np.testing.assert_allclose((run.final.Y - model.Y) / dt, 3.0 * Y_dot, rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose((run.final.Z - model.Z) / dt, 0.5 * Z_dot, rtol=1e-4, atol=1e-9)


def final_entropy_after_flow(eta_z):
    run = ss.population_flow(
        ss.YZModel.zeros(CLASSES.M, dtype=jnp.float64), ARRAYS, eta_y=1.0, eta_z=eta_z, t1=30.0,
        save_ts=jnp.array([30.0]), save=lambda m: ss.distinct_token_entropy(m, ARRAYS),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )  # fmt: skip
    return run.values[-1]


@pytest.mark.slow
def test_grad_of_final_attention_entropy_wrt_attention_rate_matches_finite_differences():
    eta_z = jnp.array(1.0)
    grad = jax.grad(final_entropy_after_flow)(eta_z)
    h = 1e-4
    fd = (final_entropy_after_flow(eta_z + h) - final_entropy_after_flow(eta_z - h)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5)
    assert float(grad) < 0  # a faster attention layer ends sparser (Fig. 6)
