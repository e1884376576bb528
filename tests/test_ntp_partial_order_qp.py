"""Convex QPs with KKT residuals (`theory.ntp_partial_order.solve_qp`, the solver of the max-margin
problems), against the second solver (`least_distance`) and SciPy's SLSQP."""

import numpy as np
import pytest
import scipy.optimize

from theory.ntp_partial_order import kkt_residuals, least_distance, solve_qp


def test_spec_example_is_not_the_closed_form():
    # relations a>c, a>d, a>q, b>q: tokens a, b, c, d, q = 0..4
    pairs = [(0, 2), (0, 3), (0, 4), (1, 4)]
    G = np.stack([np.eye(5)[o] - np.eye(5)[x] for o, x in pairs])
    sol = solve_qp(np.eye(5), np.zeros(5), G, np.ones(4))
    assert sol.kkt_residual <= 1e-8
    np.testing.assert_allclose(sol.x, least_distance(G, np.ones(4)), atol=1e-8)
    closed = np.array([3 / 5, 3 / 5, -2 / 5, -2 / 5, -2 / 5])
    assert np.abs(sol.x - closed).max() > 1e-3


@pytest.mark.parametrize("seed", range(5))
def test_random_qps_kkt_and_agreement(seed):
    rng = np.random.default_rng(seed)
    n, m = 6, 9
    A = rng.normal(size=(n, n))
    P = A @ A.T + 0.1 * np.eye(n)
    q = rng.normal(size=n)
    G = rng.normal(size=(m, n))
    h = G @ rng.normal(size=n) - rng.random(m)  # feasible
    sol = solve_qp(P, q, G, h)
    assert sol.status == "Solved"
    assert sol.kkt_residual <= 1e-8
    ref = scipy.optimize.minimize(
        lambda x: 0.5 * x @ P @ x + q @ x,
        np.zeros(n),
        jac=lambda x: P @ x + q,
        constraints=[{"type": "ineq", "fun": lambda x: G @ x - h, "jac": lambda x: G}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    np.testing.assert_allclose(sol.x, ref.x, atol=1e-6)
    res = kkt_residuals(P, q, G, h, sol.x, sol.dual)
    assert max(res) == pytest.approx(sol.kkt_residual)


def test_duplicates_unconstrained_and_errors():
    G = np.array([[1.0, -1.0], [1.0, -1.0]])
    sol = solve_qp(np.eye(2), np.zeros(2), G, np.ones(2))
    np.testing.assert_allclose(sol.x, [0.5, -0.5], atol=1e-12)
    free = solve_qp(np.eye(2), np.asarray([1.0, -2.0]), np.zeros((0, 2)), np.zeros(0))
    np.testing.assert_allclose(free.x, [-1.0, 2.0], atol=1e-10)
    with pytest.raises(ValueError, match="not solved"):
        solve_qp(np.eye(1), np.zeros(1), np.array([[1.0], [-1.0]]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="shapes"):
        solve_qp(np.eye(2), np.zeros(2), np.ones((1, 2)), np.ones(3))
