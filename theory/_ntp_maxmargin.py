"""The max-margin problems of Huang, Liang and Yang (NeurIPS 2024): Eqn 2 (feed-forward, closed
form and QP) and Eqn 3 (attention, one convex QP per query column), Proposition 2's closed form,
and an independent second solver (Lawson-Hanson least-distance programming by NNLS)."""

import dataclasses

import numpy as np
import scipy.optimize

import dynamics
from tasks.ntp_partial_order import Dataset, hall_condition


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


def eqn2_constraints(dataset: Dataset, token: int) -> np.ndarray:
    """Rows `e_{n(x)} − e_v` (`v ≠ n(x)`) of Eqn 2's column `x = token` (none without collocation)."""
    V, target = dataset.vocab_size, int(dataset.collocation()[token])
    if target < 0:
        return np.zeros((0, V))
    rows = [np.eye(V)[target] - np.eye(V)[v] for v in range(V) if v != target]
    return np.stack(rows)


def eqn3_constraints(dataset: Dataset, query: int) -> np.ndarray:
    """Rows `e_o − e_x` for every pair `o ≻_q x` of Eqn 3's column `q` (duplicates removed)."""
    V = dataset.vocab_size
    pairs = sorted(dataset.relation(query))
    return np.stack([np.eye(V)[o] - np.eye(V)[x] for o, x in pairs]) if pairs else np.zeros((0, V))


def _solve_columns(V: int, constraint_rows) -> MaxMargin:
    W, kkt, duals, slacks = np.zeros((V, V)), 0.0, [], []
    for col in range(V):
        G = constraint_rows(col)
        if not G.shape[0]:
            duals.append(np.zeros(0))
            slacks.append(np.zeros(0))
            continue
        sol = dynamics.solve_qp(np.eye(V), np.zeros(V), G, np.ones(G.shape[0]))
        W[:, col] = sol.x
        kkt = max(kkt, sol.kkt_residual)
        duals.append(sol.dual)
        slacks.append(G @ sol.x - 1.0)
    return MaxMargin(W, kkt, tuple(duals), tuple(slacks))


def w_ov_star_qp(dataset: Dataset) -> MaxMargin:
    """Eqn 2, `min ‖W‖ s.t. (e_{n(x)} − e_v)ᵀ W x ≥ 1`, one QP per column (Clarabel + refinement)."""
    return _solve_columns(dataset.vocab_size, lambda x: eqn2_constraints(dataset, x))


def w_ov_star_closed(dataset: Dataset) -> np.ndarray:
    """Eqn 2's solution [derived, spec §5.1]: column `x` is `e_{n(x)} − 1/|V|` (0 without collocation)."""
    V, nxt = dataset.vocab_size, dataset.collocation()
    W = np.zeros((V, V))
    for x in range(V):
        if nxt[x] >= 0:
            W[:, x] = np.eye(V)[nxt[x]] - 1.0 / V
    return W


def w_kq_star_qp(dataset: Dataset) -> MaxMargin:
    """Eqn 3, `min ‖W‖ s.t. (x_{ℓ*} − x_ℓ)ᵀ W x_L ≥ 1` for all samples, `ℓ* ∈ I(n)`, `ℓ ∉ I(n)`;
    with one-hot embeddings it separates into one QP per query column (spec §5.2)."""
    return _solve_columns(dataset.vocab_size, lambda q: eqn3_constraints(dataset, q))


def w_kq_closed_form(dataset: Dataset) -> np.ndarray:
    """Proposition 2: column `q` holds `m/(k+m)` on `O_q`, `−k/(k+m)` on `N_q`, 0 elsewhere."""
    V = dataset.vocab_size
    W = np.zeros((V, V))
    for q in range(V):
        t = dataset.token_types(q)
        k, m = len(t.optimal), len(t.non_optimal)
        if k and m:
            W[list(t.optimal), q] = m / (k + m)
            W[list(t.non_optimal), q] = -k / (k + m)
    return W


def hall_columns(dataset: Dataset) -> np.ndarray:
    """Boolean per query: the Hall-type condition of spec §5.4 (Proposition 2 applies)."""
    return np.array([hall_condition(dataset, q) for q in range(dataset.vocab_size)])


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


def cosine(A: np.ndarray, B: np.ndarray) -> float:
    """`⟨A, B⟩ / (‖A‖ ‖B‖)` (Frobenius)."""
    return float(np.sum(A * B) / (np.linalg.norm(A) * np.linalg.norm(B)))
