"""The paper's max-margin solutions and closed forms (Huang, Liang and Yang, NeurIPS 2024), in
token coordinates (one-hot embeddings):

- Eqn 2, the feed-forward max-margin problem: [`w_ov_star_qp`][] (solved) and its closed form
  [`w_ov_star_closed`][] `P_n − J/|V|` (derived);
- Eqn 3, the attention max-margin problem, one convex QP per query column: [`w_kq_star_qp`][];
- Proposition 2's closed form [`w_kq_closed_form`][], exact where the Hall-type condition
  [`hall_columns`][] holds;
- the exact stage-1 loss of Algorithm 1 from zero, [`stage1_loss`][] (derived).
"""

import numpy as np

from tasks.ntp_partial_order import Dataset, hall_condition

from ._maxmargin import MaxMargin, solve_columns


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


def w_ov_star_qp(dataset: Dataset) -> MaxMargin:
    """Eqn 2, `min ‖W‖ s.t. (e_{n(x)} − e_v)ᵀ W x ≥ 1`, one QP per column (Clarabel + refinement)."""
    return solve_columns(dataset.vocab_size, lambda x: eqn2_constraints(dataset, x))


def w_ov_star_closed(dataset: Dataset) -> np.ndarray:
    """Eqn 2's solution (derived): column `x` is `e_{n(x)} − 1/|V|` (0 without collocation), norm
    `√(|V| − 1)` when every token has one."""
    V, nxt = dataset.vocab_size, dataset.collocation()
    W = np.zeros((V, V))
    for x in range(V):
        if nxt[x] >= 0:
            W[:, x] = np.eye(V)[nxt[x]] - 1.0 / V
    return W


def w_kq_star_qp(dataset: Dataset) -> MaxMargin:
    """Eqn 3, `min ‖W‖ s.t. (x_{ℓ*} − x_ℓ)ᵀ W x_L ≥ 1` for all samples, `ℓ* ∈ I(n)`, `ℓ ∉ I(n)`;
    with one-hot embeddings it separates into one QP per query column."""
    return solve_columns(dataset.vocab_size, lambda q: eqn3_constraints(dataset, q))


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
    """Boolean per query: the Hall-type condition under which Proposition 2's closed form is the
    exact solution of Eqn 3's column."""
    return np.array([hall_condition(dataset, q) for q in range(dataset.vocab_size)])


def stage1_loss(t: np.ndarray, eta0: float, vocab_size: int) -> np.ndarray:
    """(derived) The stage-1 loss of Algorithm 1 from zero with a full collocation:
    `L_0(W_ov^(t)) = |V| log(1 + (|V|−1) exp(−tη_0/√(|V|−1)))`, since `W_ov^(t) = tη_0 W*_ov/‖W*_ov‖`.

    **Arguments:** `t`: step numbers; `eta0`: the stage-1 step size; `vocab_size`: `|V|`.

    **Returns:** `L_0` at each `t`.
    """
    V = vocab_size
    return V * np.log1p((V - 1) * np.exp(-t * eta0 / np.sqrt(V - 1)))


__all__ = [
    "MaxMargin",
    "eqn2_constraints",
    "eqn3_constraints",
    "hall_columns",
    "stage1_loss",
    "w_kq_closed_form",
    "w_kq_star_qp",
    "w_ov_star_closed",
    "w_ov_star_qp",
]
