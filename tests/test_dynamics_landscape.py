"""Critical points and Hessian spectra against landscapes known in closed form (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import dynamics
from dynamics.landscape import CriticalPointStatus

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
    eigenvalues, eigenvectors = dynamics.landscape.hessian_spectrum(loss, params)
    np.testing.assert_allclose(eigenvalues, np.linalg.eigvalsh(dense), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense @ eigenvectors, eigenvectors * eigenvalues, atol=1e-10)


def test_quadratic_saddle_is_found_with_its_spectrum_index_and_escape_direction(getkey):
    curvatures = jnp.array([0.5, -3.0, 2.0, -1.0])  # two negative: a saddle of index 2
    linear = jax.random.normal(getkey(), (4,))

    def loss(p):
        theta = jnp.concatenate([p["a"], p["b"]])
        return 0.5 * jnp.sum(curvatures * theta**2) + linear @ theta

    start = {"a": jax.random.normal(getkey(), (2,)), "b": jax.random.normal(getkey(), (2,))}
    found = dynamics.landscape.critical_point(loss, start)
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
    found = jax.jit(jax.vmap(lambda start: dynamics.landscape.critical_point(_two_layer_loss, start)))(starts)
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
    polish = jax.jit(lambda start: dynamics.landscape.critical_point(_cubic, start))
    batched = jax.vmap(polish)(starts)
    looped = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[polish(start) for start in starts])
    assert tree_allclose(batched, looped, rtol=1e-12, atol=1e-14)
    assert batched.is_converged().tolist() == [True, True, True]
    assert batched.index.tolist() == [1, 0, 0]
    np.testing.assert_allclose(batched.point, [[-1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], atol=1e-12)


def test_a_loss_with_its_infimum_at_infinity_has_no_critical_point():
    """Separable logistic loss: Newton runs off along a separating direction and the gradient
    shrinks towards 0 without vanishing; the result says so, with finite values, and never raises."""
    found = dynamics.landscape.critical_point(_separable_logistic, jnp.zeros(2), max_steps=50)
    assert int(found.status) == CriticalPointStatus.max_steps and not bool(found.is_converged())
    assert int(found.num_steps) == 50 and float(found.distance) > 20.0
    assert bool(dynamics.all_finite(found)) and 0.0 < float(found.grad_norm) < 1e-10

    capped = dynamics.landscape.critical_point(_separable_logistic, jnp.zeros(2), max_distance=10.0)
    assert int(capped.status) == CriticalPointStatus.diverged and not bool(capped.is_converged())
    assert 10.0 < float(capped.distance) and int(capped.num_steps) < 50


def test_status_names_a_stall_and_a_nonfinite_start():
    linear = dynamics.landscape.critical_point(lambda theta: jnp.sum(theta), jnp.ones(2))
    assert int(linear.status) == CriticalPointStatus.stalled and int(linear.num_steps) == 0
    nan_start = dynamics.landscape.critical_point(lambda theta: jnp.sum(theta**2), jnp.array([jnp.nan, 1.0]))
    assert int(nan_start.status) == CriticalPointStatus.nonfinite


def test_float32_is_refused_with_the_fix():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match=r"float64.*jax_enable_x64"):
            dynamics.landscape.critical_point(_cubic, np.array([1.0, 0.0], np.float32))
    finally:
        jax.config.update("jax_enable_x64", True)


def _reference_polish(loss, start, *, max_steps=100, gtol=1e-12, eig_tol=1e-8):
    """The polish as documented, one iterate at a time in numpy: the dense Hessian by `jax.hessian`,
    its full eigen-decomposition by `numpy.linalg.eigh` at every iterate, the pseudo-inverse Newton
    step and the halving line search on ‖∇L‖² (no `max_distance`)."""
    flat, unravel = ravel_pytree(start)
    flat_loss = lambda f: loss(unravel(f))  # noqa: E731
    grad_of, hessian_of = jax.jit(jax.grad(flat_loss)), jax.jit(jax.hessian(flat_loss))
    start = theta = np.asarray(flat, np.float64)

    def derivatives(theta):
        hessian = np.asarray(hessian_of(theta))
        return np.asarray(grad_of(theta)), *np.linalg.eigh((hessian + hessian.T) / 2)

    def status_at(theta, grad, eigenvalues, num_steps):
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(eigenvalues))):
            return CriticalPointStatus.nonfinite
        if np.linalg.norm(grad) <= gtol * np.max(np.abs(eigenvalues)) * (1 + np.linalg.norm(theta)):
            return CriticalPointStatus.converged
        return CriticalPointStatus.max_steps if num_steps >= max_steps else None

    grad, eigenvalues, eigenvectors = derivatives(theta)
    num_steps, status = 0, status_at(theta, grad, eigenvalues, 0)
    while status is None:
        kept = np.abs(eigenvalues) > eig_tol * np.max(np.abs(eigenvalues))
        coefficients = eigenvectors.T @ grad
        direction = -eigenvectors @ np.where(kept, coefficients / np.where(kept, eigenvalues, 1.0), 0.0)
        merit, predicted = grad @ grad, 2 * np.sum(coefficients[kept] ** 2)
        for halvings in range(31):
            t = 0.5**halvings
            trial = np.sum(np.asarray(grad_of(theta + t * direction)) ** 2)
            if trial < merit and trial <= merit - 1e-4 * t * predicted:
                break
        else:
            status = CriticalPointStatus.stalled
            break
        theta, num_steps = theta + t * direction, num_steps + 1
        grad, eigenvalues, eigenvectors = derivatives(theta)
        status = status_at(theta, grad, eigenvalues, num_steps)
    index = int(np.sum(eigenvalues < -eig_tol * np.max(np.abs(eigenvalues))))
    return {
        "point": theta,
        "loss": float(flat_loss(theta)),
        "grad_norm": np.linalg.norm(grad),
        "eigenvalues": eigenvalues,
        "eigenvectors": eigenvectors,
        "index": index,
        "distance": np.linalg.norm(theta - start),
        "num_steps": num_steps,
        "status": int(status),
    }


def _random_problems(key):
    """Random losses with a saddle near a random start, each with the tolerance of its point: a
    cubic-quartic loss with a regular Hessian; the same through a wide random matrix, whose Hessian
    is singular everywhere; a two-layer linear network, whose Hessian is regular near its saddle and
    singular on it. Its critical points there form a manifold (W₁ → GW₁, W₂ → W₂G⁻¹) along which
    Newton steps, of condition numbers up to 1/eig_tol, carry rounding errors uncorrected: faithful
    polishes land up to ~10⁻¹⁰ apart on it (the previous implementation and this reference do)."""
    keys = iter(jax.random.split(key, 12))
    n, k = 6, 4
    A = jax.random.normal(next(keys), (n, n))
    A = (A + A.T) / 2 - 0.5 * jnp.eye(n)
    c = jax.random.normal(next(keys), (n,))

    def regular(theta):
        return 0.5 * theta @ A @ theta + jnp.sum(c * theta**3) / 3 + 0.25 * jnp.sum(theta**2) ** 2

    B = jax.random.normal(next(keys), (n, n + 3)) / 3  # rank n: 3 null directions

    def singular(p):
        return regular(B @ jnp.concatenate([p["u"], p["v"]]))

    U, _ = jnp.linalg.qr(jax.random.normal(next(keys), (k, k)))
    V, _ = jnp.linalg.qr(jax.random.normal(next(keys), (k, k)))
    s = jnp.array([4.0, 3.0, 2.0, 1.0])
    target = U @ jnp.diag(s) @ V.T

    def network(p):
        return 0.5 * jnp.sum((p["W2"] @ p["W1"] - target) ** 2)

    learned = jnp.where(jnp.arange(k) < 2, jnp.sqrt(s), 0.0)  # the saddle of the top 2 modes
    noise = 1e-3 * jax.random.normal(next(keys), (2, k, k))
    return [
        (regular, 0.1 * jax.random.normal(next(keys), (n,)), 1e-12),
        (singular, {"u": 0.1 * jax.random.normal(next(keys), (4,)), "v": jnp.zeros(5)}, 1e-12),
        (network, {"W1": jnp.diag(learned) @ V.T + noise[0], "W2": U @ jnp.diag(learned) + noise[1]}, 1e-9),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_polish_matches_a_reference_newton_with_a_full_eigen_decomposition_per_step(seed):
    """The polish (a linear solve per step while no eigenvalue is left out, the eigenvalues it needs
    from a tridiagonal reduction) takes the same steps as the documented algorithm carried out with
    a full eigen-decomposition at every iterate, and returns the same point and spectrum, on regular
    and singular saddles."""
    singular_seen = False
    for loss, start, tolerance in _random_problems(jax.random.PRNGKey(seed)):
        found, eigenvectors = jax.jit(lambda p, loss=loss: dynamics._landscape.newton_polish(loss, p))(start)
        reference = _reference_polish(loss, start)
        assert int(found.status) == reference["status"] == CriticalPointStatus.converged
        assert int(found.num_steps) == reference["num_steps"] and int(found.index) == reference["index"]
        scale = np.max(np.abs(reference["eigenvalues"]))
        singular_seen |= bool(np.min(np.abs(reference["eigenvalues"])) <= 1e-8 * scale)
        point = ravel_pytree(found.point)[0]
        np.testing.assert_allclose(point, reference["point"], rtol=0, atol=tolerance)
        np.testing.assert_allclose(found.loss, reference["loss"], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(
            found.eigenvalues, reference["eigenvalues"], rtol=0, atol=10 * tolerance * scale
        )
        np.testing.assert_allclose(found.distance, reference["distance"], rtol=0, atol=tolerance)
        converged = 1e-12 * scale * (1 + np.linalg.norm(reference["point"]))
        assert float(found.grad_norm) <= converged and reference["grad_norm"] <= converged
        # The escape direction is the eigenvector of the lowest eigenvalue (up to sign: the same).
        escape = ravel_pytree(found.escape_direction)[0]
        np.testing.assert_allclose(
            escape,
            reference["eigenvectors"][:, 0] * np.sign(escape @ reference["eigenvectors"][:, 0]),
            atol=1e3 * tolerance,
        )
        np.testing.assert_allclose(np.abs(eigenvectors[:, 0] @ escape), 1.0, rtol=1e-12)
    assert singular_seen
