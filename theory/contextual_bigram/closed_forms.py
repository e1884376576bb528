"""The closed forms of the sparse contextual bigram paper that the checks hold against simulation.

Those the simulations use too are defined with the model in `tasks.contextual_bigram` and
re-exported here: the exact expected gradients (Lemma B.7, [`expected_gradients`][]) and
preconditioned gradients (Lemma B.8, [`expected_preconditioned`][]); the population lines of
Eqn 7 ([`on_line`][]); the 2-D ODE of Eqn 8 for the line coordinates (α, β)
([`line_vector_field`][], integrated by [`solve_line_ode`][]).

Defined below, in NumPy: the line recursion (Eqn 7) and the line-restricted loss whose
preconditioned gradient flow Eqn 8 is; the error dynamics off the lines (Lemmas C.5-C.6); the
Stage-1 linearisation, its exit-time estimate and the near-optimum Jacobian.
"""

import numpy as np
import scipy.linalg

from tasks.contextual_bigram import (
    Instance,
    expected_gradients,
    expected_preconditioned,
    k_p,
    k_q,
    line_vector_field,
    on_line,
    solve_line_ode,
)


def line_recursion(alpha0, beta0, K_P, K_Q, T, eta, steps) -> np.ndarray:
    """Eqn 7, population GD on the lines: α⁺ = α + η K_P β (1 − αβ),
    β⁺ = β + η [K_Q α (1 − αβ) + (1 − β)/T].

    **Returns:** (steps + 1, 2) array of (α, β), float64.
    """
    out = np.empty((steps + 1, 2))
    a, b = float(alpha0), float(beta0)
    out[0] = a, b
    for i in range(steps):
        a, b = a + eta * K_P * b * (1 - a * b), b + eta * (K_Q * a * (1 - a * b) + (1 - b) / T)
        out[i + 1] = a, b
    return out


def line_loss(alpha, beta, K_P, K_Q, T, mu_sq):
    """The population loss on the lines (loss constant 1/2):
    ½[1 − ‖μ‖² − 2βK_P(1/T + αK_Q) + β²K_P(1/T + α²K_Q)]; Eqn 8 is its preconditioned gradient
    flow, d(α, β)/dt = −(∂_α L / K_Q, ∂_β L / K_P)."""
    return 0.5 * (
        1 - mu_sq - 2 * beta * K_P * (1 / T + alpha * K_Q) + beta**2 * K_P * (1 / T + alpha**2 * K_Q)
    )


def stage1_linear(ts, K_P, K_Q, T) -> np.ndarray:
    """Stage-1 linearisation of Eqn 8 near (0, 0), with its drift: x(t) = A⁻¹(e^{At} − I) b with
    A = [[0, K_P], [K_Q, −1/T]], b = (0, 1/T).

    **Returns:** (len(ts), 2) array of (α, β).
    """
    A = np.array([[0.0, K_P], [K_Q, -1.0 / T]])
    b = np.array([0.0, 1.0 / T])
    Ainv = np.linalg.inv(A)
    return np.stack([Ainv @ (scipy.linalg.expm(A * t) - np.eye(2)) @ b for t in np.atleast_1d(ts)])


def first_crossing(ts, values, level) -> float:
    """The first time `values` reaches `level` (linear interpolation between saves); NaN if never."""
    idx = np.flatnonzero(values >= level)
    if idx.size == 0:
        return float("nan")
    i = idx[0]
    if i == 0:
        return float(ts[0])
    frac = (level - values[i - 1]) / (values[i] - values[i - 1])
    return float(ts[i - 1] + frac * (ts[i] - ts[i - 1]))


def stage1_exit_time_log(delta1, K_P, K_Q, T) -> float:
    """The logarithmic estimate of the Stage-1 exit time, t₁ ≈ (1/w) ln(2 T δ₁ min(K_Q, w)) with
    w = √(K_P K_Q): when the first of α, β reaches δ₁."""
    w = np.sqrt(K_P * K_Q)
    return float(np.log(2 * T * delta1 * min(K_Q, w)) / w)


def near_optimum_jacobian(K_P, K_Q, T) -> np.ndarray:
    """Jacobian of Eqn 8 at (1, 1) in (1 − α, 1 − β) coordinates: −[[K_P, K_P], [K_Q, K_Q + 1/T]]."""
    return -np.array([[K_P, K_P], [K_Q, K_Q + 1.0 / T]])


def error_step(alpha, beta, dV, dQ, inst: Instance, eta):
    """One population step of the line coordinates and of the errors off the lines
    (Lemmas C.5, C.6).

    **Arguments:** `alpha`, `beta`; `dV` (N, N), `dQ` (T, N) the errors ΔV, ΔQ; `inst`; `eta`.

    **Returns:** `(alpha⁺, beta⁺, dV⁺, dQ⁺)`.
    """
    mu = np.asarray(inst.mu)
    K_P, K_Q, T = float(k_p(inst)), float(k_q(inst)), inst.T
    dV, dQ = np.asarray(dV), np.asarray(dQ)
    dVmu = dV @ mu
    dV2 = float(np.sum(mu * np.sum(dV * dV, axis=0))) - float(dVmu @ dVmu)
    dQ2 = float(np.sum(mu * np.sum(dQ * dQ, axis=0)))
    A2 = beta**2 * K_P + dV2
    c2 = 1 / T + alpha**2 * K_Q + dQ2
    a_new = alpha + eta * (K_P * beta * (1 - alpha * beta) - alpha * dV2)
    b_new = beta + eta * (K_Q * alpha * (1 - alpha * beta) + (1 - beta) / T - beta * dQ2)
    dQ_new = (1 - eta * A2) * dQ
    dV_new = (1 - eta * c2) * dV + eta * (c2 - 1) * np.outer(dVmu, np.ones(inst.N))
    return a_new, b_new, dV_new, dQ_new


__all__ = [
    "error_step",
    "expected_gradients",
    "expected_preconditioned",
    "first_crossing",
    "line_loss",
    "line_recursion",
    "line_vector_field",
    "near_optimum_jacobian",
    "on_line",
    "solve_line_ode",
    "stage1_exit_time_log",
    "stage1_linear",
]
