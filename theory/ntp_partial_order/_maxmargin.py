"""Solvers of minimum-norm problems with linear margin constraints, one column at a time: a convex
QP (Clarabel, `_qp.solve_qp`) and an independent second solver (Lawson-Hanson
least-distance programming by NNLS)."""

import dataclasses
from collections.abc import Callable

import numpy as np
import scipy.optimize

from ._qp import solve_qp


@dataclasses.dataclass(frozen=True)
class MaxMargin:
    """A max-margin solution in token coordinates (one-hot; map with `E` for other embeddings).

    **Fields:**

    - `W`: the solution, `(|V|, |V|)`; column `q` is the query's (Eqn 3) or token `x`'s (Eqn 2).
    - `kkt`: the largest KKT residual over the columns' QPs (0 where a column has no constraint).
    - `duals`: per column, the multipliers of its constraints (empty where none).
    - `slacks`: per column, `margin − 1` of each constraint.
    """

    W: np.ndarray
    kkt: float
    duals: tuple[np.ndarray, ...]
    slacks: tuple[np.ndarray, ...]


def solve_columns(V: int, constraint_rows: Callable[[int], np.ndarray]) -> MaxMargin:
    """`min ‖w‖ s.t. G w ≥ 1` for each column `col` of a `(V, V)` matrix, `G = constraint_rows(col)`
    (a column without constraints is 0).

    **Returns:** the [`MaxMargin`][] of all columns.
    """
    W, kkt, duals, slacks = np.zeros((V, V)), 0.0, [], []
    for col in range(V):
        G = constraint_rows(col)
        if not G.shape[0]:
            duals.append(np.zeros(0))
            slacks.append(np.zeros(0))
            continue
        sol = solve_qp(np.eye(V), np.zeros(V), G, np.ones(G.shape[0]))
        W[:, col] = sol.x
        kkt = max(kkt, sol.kkt_residual)
        duals.append(sol.dual)
        slacks.append(G @ sol.x - 1.0)
    return MaxMargin(W, kkt, tuple(duals), tuple(slacks))


def least_distance(G: np.ndarray, h: np.ndarray) -> np.ndarray:
    """`argmin ‖x‖ s.t. G x ≥ h` by Lawson and Hanson's LDP algorithm (one NNLS), a second
    solver independent of the interior point.

    **Raises:** `ValueError` if the constraints are infeasible.
    """
    n = G.shape[1]
    E = np.vstack([G.T, h[None, :]])
    f = np.zeros(n + 1)
    f[-1] = 1.0
    u, _ = scipy.optimize.nnls(E, f, maxiter=50 * E.shape[1] + 100)
    r = E @ u - f
    if abs(r[-1]) < 1e-14:
        raise ValueError("least_distance: the constraints are infeasible")
    return -r[:n] / r[-1]
