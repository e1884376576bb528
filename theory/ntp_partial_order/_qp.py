"""Convex quadratic programs solved by Clarabel (interior point, float64), with KKT residuals: the
max-margin problems of Eqns 2-3 (`_maxmargin.solve_columns`), column by column."""

import dataclasses

import clarabel
import numpy as np
import scipy.sparse as sp
from jaxtyping import Float


@dataclasses.dataclass(frozen=True)
class QPSolution:
    """The solution of `min ½ xᵀPx + qᵀx  s.t.  G x ≥ h` and how well it satisfies KKT.

    **Fields:**

    - `x`: the primal solution.
    - `dual`: the multipliers `λ ≥ 0` of `G x ≥ h`.
    - `status`: the solver's status, e.g. `"Solved"`.
    - `primal_violation`: `max(0, max(h − G x))`, how far a constraint is violated.
    - `dual_violation`: `max(0, −min λ)`.
    - `complementarity`: `max |λ_i (G x − h)_i|`.
    - `stationarity`: `‖P x + q − Gᵀλ‖_∞`.
    - `refined`: whether the active-set refinement replaced the interior-point iterate.

    **Example:** min ½‖x‖² − x₁ − x₂ s.t. x₁ + x₂ ≥ 3 and x₁ ≥ 0: the first constraint is active
    (multiplier ½), the second is not (multiplier 0):

        >>> import numpy as np
        >>> from theory.ntp_partial_order import solve_qp
        >>> G = np.array([[1.0, 1.0], [1.0, 0.0]])
        >>> solution = solve_qp(np.eye(2), np.array([-1.0, -1.0]), G, np.array([3.0, 0.0]))
        >>> solution.status, [round(float(v), 8) for v in solution.dual]
        ('Solved', [0.5, 0.0])
        >>> solution.kkt_residual < 1e-10, solution.stationarity < 1e-10
        (True, True)
    """

    x: np.ndarray
    dual: np.ndarray
    status: str
    primal_violation: float
    dual_violation: float
    complementarity: float
    stationarity: float
    refined: bool

    @property
    def kkt_residual(self) -> float:
        """The largest of the four KKT residuals."""
        return max(self.primal_violation, self.dual_violation, self.complementarity, self.stationarity)


def kkt_residuals(P, q, G, h, x, lam) -> tuple[float, float, float, float]:
    """KKT residuals of `(x, λ)` for `min ½ xᵀPx + qᵀx s.t. G x ≥ h`.

    **Returns:** `(primal violation, dual violation, complementarity, stationarity)`, see [`QPSolution`][].

    **Example:** for min ½‖x‖² − x₁ − x₂ s.t. x₁ + x₂ ≥ 3, the unconstrained minimiser (1, 1)
    violates the constraint by 1, while (1.5, 1.5) with multiplier ½ satisfies KKT exactly:

        >>> import numpy as np
        >>> from theory.ntp_partial_order import kkt_residuals
        >>> P, q, G, h = np.eye(2), np.array([-1.0, -1.0]), np.array([[1.0, 1.0]]), np.array([3.0])
        >>> kkt_residuals(P, q, G, h, np.array([1.0, 1.0]), np.array([0.0]))
        (1.0, 0.0, 0.0, 0.0)
        >>> kkt_residuals(P, q, G, h, np.array([1.5, 1.5]), np.array([0.5]))
        (0.0, 0.0, 0.0, 0.0)
    """
    slack = G @ x - h
    primal = float(max(0.0, -slack.min())) if slack.size else 0.0
    dual = float(max(0.0, -lam.min())) if lam.size else 0.0
    comp = float(np.abs(lam * slack).max()) if lam.size else 0.0
    stat = float(np.abs(P @ x + q - G.T @ lam).max()) if x.size else 0.0
    return primal, dual, comp, stat


def _refine(P, q, G, h, x, lam, threshold: float):
    """Solve the equality KKT system on the active set found by the interior point."""
    active = lam > threshold * max(1.0, float(lam.max(initial=0.0)))
    Ga = G[active]
    n, m = x.size, int(active.sum())
    kkt = np.block([[P, -Ga.T], [Ga, np.zeros((m, m))]])
    sol = np.linalg.lstsq(kkt, np.concatenate([-q, h[active]]), rcond=None)[0]
    x_new, lam_new = sol[:n], np.zeros_like(lam)
    lam_new[active] = sol[n:]
    return x_new, lam_new


def solve_qp(
    P: Float[np.ndarray, "n n"],
    q: Float[np.ndarray, " n"],
    G: Float[np.ndarray, "m n"],
    h: Float[np.ndarray, " m"],
    *,
    tol: float = 1e-12,
    refine: bool = True,
) -> QPSolution:
    """Solve the convex QP `min ½ xᵀPx + qᵀx  s.t.  G x ≥ h` (float64).

    Clarabel's interior point gives the solution and the active set; when `refine`, the
    equality-constrained KKT system on that active set is then solved directly, and the refined
    pair is kept if its KKT residual is smaller (interior points stop at ~1e-9; the refined pair
    is exact to rounding). Redundant (duplicate) constraints are fine.

    **Arguments:**

    - `P`: symmetric positive semi-definite matrix.
    - `q`: linear term.
    - `G`, `h`: the inequality constraints `G x ≥ h` (`m` may be 0).
    - `tol`: Clarabel's gap and feasibility tolerances.
    - `refine`: run the active-set refinement.

    **Returns:** a [`QPSolution`][].

    **Raises:** `ValueError` on inconsistent shapes or if the solver does not report `Solved`.

    **Example:** the point of the half-plane x₁ + x₂ ≥ 3 closest to (1, 1), i.e.
    min ½‖x‖² − x₁ − x₂ s.t. x₁ + x₂ ≥ 3:

        >>> import numpy as np
        >>> from theory.ntp_partial_order import solve_qp
        >>> P, q, G, h = np.eye(2), np.array([-1.0, -1.0]), np.array([[1.0, 1.0]]), np.array([3.0])
        >>> solution = solve_qp(P, q, G, h)
        >>> solution.status, [round(float(v), 8) for v in solution.x]
        ('Solved', [1.5, 1.5])
        >>> [round(float(v), 8) for v in solution.dual]
        [0.5]
        >>> solution.kkt_residual < 1e-10
        True
    """
    P, q, G, h = (np.asarray(a, np.float64) for a in (P, q, G, h))
    n = q.size
    G = G.reshape(-1, n)
    if P.shape != (n, n) or h.shape != (G.shape[0],):
        raise ValueError(
            f"shapes must be P (n, n), q (n,), G (m, n), h (m,); got {P.shape}, {q.shape}, "
            f"{G.shape}, {h.shape}"
        )
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    settings.tol_ktratio = tol
    cones = [clarabel.NonnegativeConeT(G.shape[0])] if G.shape[0] else []
    solver = clarabel.DefaultSolver(sp.csc_matrix(np.triu(P)), q, sp.csc_matrix(-G), -h, cones, settings)
    result = solver.solve()
    status = str(result.status)
    if not status.endswith("Solved"):
        raise ValueError(f"the QP was not solved: status {status}")
    x, lam = np.asarray(result.x), np.asarray(result.z)
    best = kkt_residuals(P, q, G, h, x, lam)
    refined = False
    if refine and G.shape[0]:
        x_r, lam_r = _refine(P, q, G, h, x, lam, threshold=1e-6)
        res = kkt_residuals(P, q, G, h, x_r, lam_r)
        if max(res) < max(best):
            x, lam, best, refined = x_r, lam_r, res, True
    return QPSolution(x, lam, status, *best, refined=refined)
