"""The sparse contextual bigram (SCB) data model (Eqn 1): transition matrix P (column
convention), its stationary distribution μ and the sparse attention vectors q⁽ᵏ⁾ stacked as Q⋆;
Assumption 2.1 checked with clear errors; random instances like the experiments."""

import dataclasses

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from dynamics import Interval, check_params, param

_UNIT = Interval(0, 1, low_open=True)


@dataclasses.dataclass(frozen=True)
class Assumption:
    """The constants of Assumption 2.1 (structure (paper), values (recon): the paper's constants were lost).

    **Fields:** `sparsity`, `c_q`, `c_mu`, `k_p_min`, `t_exponent`, each setting the part (a)-(d) of
    Assumption 2.1 its doc names; `dynamics.params(Assumption)` lists them with what each allows.
    """

    sparsity: int | None = param(
        None,
        Interval(1),
        doc="Q, the most non-zero entries of any q⁽ᵏ⁾ (a); none uses the largest support",
    )
    c_q: float = param(0.5, _UNIT, doc="every non-zero q⁽ᵏ⁾_t >= c_q / Q (b)")
    c_mu: float = param(0.5, _UNIT, doc="c_mu / N <= μ_k <= 1 / (c_mu N) (b)")
    k_p_min: float = param(0.05, Interval(0), doc="K_P = ‖P − μ1ᵀ‖²_μ >= k_p_min (c)")
    t_exponent: float | None = param(None, doc="when given, T >= (N Q)^t_exponent (d); none asks only Q <= T")

    def __post_init__(self):
        check_params(self)


class Instance(eqx.Module):
    """One SCB instance: the ground truth (V⋆, Q⋆) = (P, Q⋆) of the learner.

    **Fields:** `P` (N, N), columns = next-token distributions; `mu` (N,), P μ = μ; `Q_star`
    (T, N), column k = q⁽ᵏ⁾ over the T context positions.
    """

    P: Float[Array, "N N"]
    mu: Float[Array, " N"]
    Q_star: Float[Array, "T N"]

    @property
    def N(self) -> int:
        """Vocabulary size."""
        return self.P.shape[0]

    @property
    def T(self) -> int:
        """Number of context positions."""
        return self.Q_star.shape[0]


def stationary(P) -> np.ndarray:
    """The stationary distribution of a column-stochastic P: the Perron eigenvector, normalised."""
    P = np.asarray(P, np.float64)
    values, vectors = np.linalg.eig(P)
    v = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    v = v / v.sum()
    for _ in range(50):  # polish to machine precision
        v = P @ v
        v = v / v.sum()
    return v


def mu_inner(A, B, mu):
    """⟨A, B⟩_μ = Σ_k μ_k ⟨A[:,k], B[:,k]⟩, the inner product of the paper's μ-norm (its exact
    form is recon)."""
    return jnp.sum(mu * jnp.sum(A * B, axis=0))


def k_p(inst: Instance):
    """K_P = ‖P − μ1ᵀ‖²_μ (Assumption 2.1(c))."""
    Pbar = inst.P - inst.mu[:, None]
    return mu_inner(Pbar, Pbar, inst.mu)


def k_q(inst: Instance):
    """K_Q = ‖Q⋆ − 11ᵀ/T‖²_μ."""
    Qbar = inst.Q_star - jnp.asarray(1.0 / inst.T, inst.Q_star.dtype)
    return mu_inner(Qbar, Qbar, inst.mu)


def check_assumption(P, mu, Q_star, assumption: Assumption = Assumption()) -> None:
    """Raise `ValueError` naming the violated part of the data model or of Assumption 2.1.

    **Arguments:** `P` (N, N), `mu` (N,), `Q_star` (T, N) (NumPy or JAX, checked in float64);
    `assumption`: its constants.
    """
    P, mu, Q_star = (np.asarray(a, np.float64) for a in (P, mu, Q_star))
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 2:
        raise ValueError(f"P must be a square N x N matrix with N >= 2, got shape {P.shape}")
    N = P.shape[0]
    if Q_star.ndim != 2 or Q_star.shape[1] != N:
        raise ValueError(f"Q_star must have shape (T, N={N}), got {Q_star.shape}")
    T = Q_star.shape[0]
    if np.any(P < 0) or np.max(np.abs(P.sum(axis=0) - 1.0)) > 1e-10:
        raise ValueError("P must be column-stochastic: entries >= 0 and every column summing to 1")
    if mu.shape != (N,) or np.any(mu <= 0) or abs(mu.sum() - 1.0) > 1e-10:
        raise ValueError("mu must be a positive probability vector of length N")
    if np.max(np.abs(P @ mu - mu)) > 1e-12:
        raise ValueError(f"mu must be stationary: ||P mu - mu||_inf = {np.max(np.abs(P @ mu - mu)):.3g}")
    if np.any(Q_star < 0) or np.max(np.abs(Q_star.sum(axis=0) - 1.0)) > 1e-10:
        raise ValueError("every attention vector q^(k) (column of Q_star) must be a probability vector")
    support = int((Q_star > 0).sum(axis=0).max())
    Q = assumption.sparsity if assumption.sparsity is not None else support
    if Q > T:
        raise ValueError(f"Assumption 2.1(a)/(d): sparsity Q={Q} must be <= T={T}")
    if support > Q:
        raise ValueError(f"Assumption 2.1(a): some q^(k) has {support} non-zero entries > sparsity Q={Q}")
    q_min = Q_star[Q_star > 0].min()
    if q_min < assumption.c_q / Q:
        raise ValueError(
            f"Assumption 2.1(b): smallest non-zero attention weight {q_min:.3g} < c_q/Q = "
            f"{assumption.c_q / Q:.3g}"
        )
    if mu.min() < assumption.c_mu / N or mu.max() > 1.0 / (assumption.c_mu * N):
        raise ValueError(
            f"Assumption 2.1(b): mu must lie in [c_mu/N, 1/(c_mu N)] = [{assumption.c_mu / N:.3g}, "
            f"{1 / (assumption.c_mu * N):.3g}], got [{mu.min():.3g}, {mu.max():.3g}]"
        )
    kp = float(np.sum(mu * np.sum((P - mu[:, None]) ** 2, axis=0)))
    if kp < assumption.k_p_min:
        raise ValueError(f"Assumption 2.1(c): K_P = {kp:.3g} < k_p_min = {assumption.k_p_min}")
    if assumption.t_exponent is not None and T < (N * Q) ** assumption.t_exponent:
        raise ValueError(
            f"Assumption 2.1(d): T={T} must be >= (N Q)^{assumption.t_exponent} = "
            f"{(N * Q) ** assumption.t_exponent:.3g}"
        )


def make_instance(P, Q_star, assumption: Assumption = Assumption(), dtype=jnp.float64) -> Instance:
    """Build an [`Instance`][] from P and Q⋆: μ is computed (Perron vector), then Assumption 2.1
    is checked.

    **Arguments:** `P` (N, N) column-stochastic; `Q_star` (T, N); `assumption`; `dtype` of the arrays.

    **Returns:** the [`Instance`][]. **Raises:** `ValueError` (see [`check_assumption`][]).
    """
    P = np.asarray(P, np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be a square N x N matrix, got shape {P.shape}")
    mu = stationary(P)
    check_assumption(P, mu, Q_star, assumption)
    return Instance(P=jnp.asarray(P, dtype), mu=jnp.asarray(mu, dtype), Q_star=jnp.asarray(Q_star, dtype))


def random_instance(
    seed: int, N: int, Q: int, T: int, assumption: Assumption | None = None, max_tries: int = 100_000
) -> Instance:
    """A random instance like the experiments (recon; the paper only says P and Q⋆ are random):
    columns of P ∼ Dirichlet(1_N), μ its stationary distribution; for each k, Q distinct positions
    uniform in [T] with weights ∼ Dirichlet(1_Q); rejection sampling until Assumption 2.1 holds.

    **Arguments:** `seed` (NumPy generator); `N`, `Q`, `T`; `assumption` (default: its defaults
    with sparsity Q); `max_tries`.

    **Returns:** the [`Instance`][] (float64).
    """
    if N < 2:
        raise ValueError(f"N must be >= 2, got {N}")
    if not 1 <= Q <= T:
        raise ValueError(f"Q must satisfy 1 <= Q <= T, got Q={Q}, T={T}")
    assumption = assumption or Assumption(sparsity=Q)
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        P = rng.dirichlet(np.ones(N), size=N).T
        Q_star = np.zeros((T, N))
        for k in range(N):
            Q_star[rng.choice(T, size=Q, replace=False), k] = rng.dirichlet(np.ones(Q))
        try:
            return make_instance(P, Q_star, assumption)
        except ValueError:
            continue
    raise ValueError(f"no instance satisfying Assumption 2.1 found in {max_tries} tries; relax the constants")


def extend_context(inst: Instance, T: int) -> Instance:
    """The same task at a longer context: P and the weights of Q⋆ unchanged, each column's support
    at the same positions, T − T₀ positions of weight 0 appended. What changes with T is only the
    number of positions the attention must rule out, so a sweep over T isolates the role of T.

    **Arguments:** `inst` (context length T₀); `T` ≥ T₀.

    **Returns:** the [`Instance`][] at context length T (Assumption 2.1 checked).

    **Example:**

        >>> from tasks import contextual_bigram as cb
        >>> inst = cb.extend_context(cb.default_instance(50), 200)
        >>> inst.Q_star.shape, float(inst.Q_star[50:].sum())
        ((200, 3), 0.0)
    """
    T0, N = inst.Q_star.shape
    if T < T0:
        raise ValueError(f"T must be >= the instance's {T0}, got {T}")
    Q_star = np.zeros((T, N))
    Q_star[:T0] = np.asarray(inst.Q_star)
    return make_instance(np.asarray(inst.P), Q_star, dtype=inst.P.dtype)
