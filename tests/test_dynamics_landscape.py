"""Critical points and Hessian spectra against landscapes known in closed form (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import dynamics
from dynamics import CriticalPointStatus

from .helpers import tree_allclose

SINGULAR_VALUES = jnp.array([3.0, 2.0, 1.0])
"""The target A = diag(s₁ > s₂ > s₃) of the two-layer linear network."""


def _two_layer_loss(params):
    """½‖W₂W₁ − A‖²_F, a two-layer linear network of hidden width 3."""
    return 0.5 * jnp.sum((params["W2"] @ params["W1"] - jnp.diag(SINGULAR_VALUES)) ** 2)


def _cubic(theta):
    """x³/3 − x + y²/2: a saddle at (−1, 0), a minimum at (1, 0)."""
    return theta[0] ** 3 / 3 - theta[0] + 0.5 * theta[1] ** 2


def _separable_logistic(w):
    """The logistic loss of four linearly separable points in the plane: its infimum 0 is at infinity."""
    X = jnp.array([[1.0, 2.0], [2.0, 1.0], [-1.0, -1.5], [-2.0, -0.5]])
    y = jnp.array([1.0, 1.0, -1.0, -1.0])
    return jnp.mean(jax.nn.softplus(-y * (X @ w)))


def test_hessian_spectrum_matches_dense(getkey):
    params = {"W": jax.random.normal(getkey(), (2, 2)), "v": jax.random.normal(getkey(), (3,))}

    def loss(p):
        return jnp.sum(jnp.tanh(p["W"]) ** 2) * jnp.sum(p["v"] ** 3) + jnp.sum(jnp.sin(p["v"]))

    flat, unravel = ravel_pytree(params)
    dense = np.asarray(jax.hessian(lambda f: loss(unravel(f)))(flat))
    eigenvalues, eigenvectors = dynamics.hessian_spectrum(loss, params)
    np.testing.assert_allclose(eigenvalues, np.linalg.eigvalsh(dense), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense @ eigenvectors, eigenvectors * eigenvalues, atol=1e-10)


def test_quadratic_saddle_is_found_with_its_spectrum_index_and_escape_direction(getkey):
    curvatures = jnp.array([0.5, -3.0, 2.0, -1.0])  # two negative: a saddle of index 2
    linear = jax.random.normal(getkey(), (4,))

    def loss(p):
        theta = jnp.concatenate([p["a"], p["b"]])
        return 0.5 * jnp.sum(curvatures * theta**2) + linear @ theta

    start = {"a": jax.random.normal(getkey(), (2,)), "b": jax.random.normal(getkey(), (2,))}
    found = dynamics.critical_point(loss, start)
    assert int(found.status) == CriticalPointStatus.converged and bool(found.is_converged())
    stationary = -linear / curvatures
    np.testing.assert_allclose(ravel_pytree(found.point)[0], stationary, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(found.eigenvalues, jnp.sort(curvatures), rtol=1e-12)
    np.testing.assert_allclose(found.loss, 0.5 * stationary @ linear, rtol=1e-12)
    assert int(found.index) == 2
    escape = ravel_pytree(found.escape_direction)[0]
    np.testing.assert_allclose(escape, [0.0, 1.0, 0.0, 0.0], atol=1e-12)  # the axis of λ = −3
    np.testing.assert_allclose(found.distance, jnp.linalg.norm(ravel_pytree(start)[0] - stationary))


def test_two_layer_linear_network_critical_points_match_the_closed_form(getkey):
    """Near the critical point that has learned the top k singular values (k = 0..3), the polish
    lands on a critical point of loss ½ Σ_{i>k} s_i²: a saddle for k < 3, the global minimum at 3."""
    starts = []
    for k in range(4):
        learned = jnp.diag(jnp.where(jnp.arange(3) < k, jnp.sqrt(SINGULAR_VALUES), 0.0))
        noise = 1e-3 * jax.random.normal(getkey(), (2, 3, 3))
        starts.append({"W1": learned + noise[0], "W2": learned + noise[1]})
    starts = jax.tree.map(lambda *leaves: jnp.stack(leaves), *starts)
    found = jax.jit(jax.vmap(lambda start: dynamics.critical_point(_two_layer_loss, start)))(starts)
    assert found.is_converged().tolist() == [True] * 4
    closed_form = [0.5 * float(jnp.sum(SINGULAR_VALUES[k:] ** 2)) for k in range(4)]
    np.testing.assert_allclose(found.loss, closed_form, rtol=0, atol=1e-10)
    assert (found.index > 0).tolist() == [True, True, True, False]
    products = found.point["W2"] @ found.point["W1"]
    for k in range(4):
        np.testing.assert_allclose(products[k], jnp.diag(SINGULAR_VALUES.at[k:].set(0.0)), atol=1e-8)
    escape_directions = jax.vmap(lambda direction: ravel_pytree(direction)[0])(found.escape_direction)
    escape_norms = jnp.linalg.norm(escape_directions, axis=1)
    np.testing.assert_allclose(escape_norms, [1.0, 1.0, 1.0, 0.0], atol=1e-12)


def test_vmap_over_starting_points_equals_a_loop_of_jitted_calls():
    starts = jnp.array([[-1.2, 0.3], [0.8, 0.1], [1.5, -2.0]])
    polish = jax.jit(lambda start: dynamics.critical_point(_cubic, start))
    batched = jax.vmap(polish)(starts)
    looped = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[polish(start) for start in starts])
    assert tree_allclose(batched, looped, rtol=1e-12, atol=1e-14)
    assert batched.is_converged().tolist() == [True, True, True]
    assert batched.index.tolist() == [1, 0, 0]
    np.testing.assert_allclose(batched.point, [[-1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], atol=1e-12)


def test_a_loss_with_its_infimum_at_infinity_has_no_critical_point():
    """Separable logistic loss: Newton runs off along a separating direction and the gradient
    shrinks towards 0 without vanishing; the result says so, with finite values, and never raises."""
    found = dynamics.critical_point(_separable_logistic, jnp.zeros(2), max_steps=50)
    assert int(found.status) == CriticalPointStatus.max_steps and not bool(found.is_converged())
    assert int(found.num_steps) == 50 and float(found.distance) > 20.0
    assert bool(dynamics.all_finite(found)) and 0.0 < float(found.grad_norm) < 1e-10

    capped = dynamics.critical_point(_separable_logistic, jnp.zeros(2), max_distance=10.0)
    assert int(capped.status) == CriticalPointStatus.diverged and not bool(capped.is_converged())
    assert 10.0 < float(capped.distance) and int(capped.num_steps) < 50


def test_status_names_a_stall_and_a_nonfinite_start():
    linear = dynamics.critical_point(lambda theta: jnp.sum(theta), jnp.ones(2))
    assert int(linear.status) == CriticalPointStatus.stalled and int(linear.num_steps) == 0
    nan_start = dynamics.critical_point(lambda theta: jnp.sum(theta**2), jnp.array([jnp.nan, 1.0]))
    assert int(nan_start.status) == CriticalPointStatus.nonfinite


def test_float32_is_refused_with_the_fix():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match=r"float64.*jax_enable_x64"):
            dynamics.critical_point(_cubic, np.array([1.0, 0.0], np.float32))
    finally:
        jax.config.update("jax_enable_x64", True)
