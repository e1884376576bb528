"""Closed forms of sparse token selection (½-normalised loss, summed over the d outputs), used by the
checks, the figures and the benchmark. Each says whether it restates the paper (paper) or is
derived from its definitions (derived); none is a printed constant of the paper, whose full text
is lost. P1-P5 name the predictions of Theorem 1 listed under "Training dynamics" on the
sparse_token_selection page of the documentation."""

import math

import numpy as np
from scipy.stats import hypergeom


def trivial_loss(d: int, q: int) -> float:
    """L_0 = d / (2q): the loss of the zero output, e.g. at zero init (derived)."""
    return d / (2 * q)


def theorem1_eps_max(d: int, T: int, q: int) -> float:
    """The upper end of Theorem 1's ε range, dT / (100 (T − q) q), a hypothesis of Theorem 1 (paper)."""
    return d * T / (100 * (T - q) * q)


def theorem1_step_max(d: int) -> float:
    """Theorem 1's step-size condition η <= 1 / (20 d²), a hypothesis (paper)."""
    return 1.0 / (20 * d * d)


def rate_constant(block_norm_sq: float, rho: float = 1.0) -> float:
    """P2 (derived): L(t) · t → ||M||_F² / (4 ρ⁴) under gradient flow in time t = η k; (T − 1)/4
    for one-hot PE: the constant of Theorem 1's O(1/t) rate, the rate being the paper's."""
    return block_norm_sq / (4 * rho**4)


def attention_scale(t: float, d: int, T: int, q: int) -> float:
    """P3 (derived): a(t) ≈ ½ ln(2 d (T − q) t / (q² (T − 1))) for large t (one-hot PE, ρ = 1)."""
    return 0.5 * math.log(2 * d * (T - q) * t / (q * q * (T - 1)))


def value_excess(a: float, T: int, q: int) -> float:
    """P4 (derived): γ − 1 ≈ (T − q) e^{−a} / q for large a."""
    return (T - q) * math.exp(-a) / q


def t_eps(eps: float, block_norm_sq: float, rho: float = 1.0) -> float:
    """The gradient-flow time to reach L <= ε predicted by P2, ||M||² / (4 ρ⁴ ε) (exact up to the
    plateau time; derived)."""
    return rate_constant(block_norm_sq, rho) / eps


def ood_ratio_limit(T: int, q: int, T_new: int, q_new: int) -> float:
    """Our reading of Theorem 3 (derived): L_{T',q'} / L_{T,q} → R =
    q² [q' ((T−q)/q − (T'−q')/q')² + (T' − q')] / (q'² (T − q)) along the GD trajectory."""
    gap = (T - q) / q - (T_new - q_new) / q_new
    return q * q * (q_new * gap * gap + (T_new - q_new)) / (q_new * q_new * (T - q))


def fixed_pe_floor(d: int, T: int, q: int, T_test: int) -> float:
    """The limit loss at T_test of the fixed (padded one-hot) PE model trained by GD from zero init
    (derived): with k = |y ∩ [T]| ~ Hypergeometric(T_test, T, q),
    (d/2) E[1/k − 1/q; k >= 1] + (d/2) P(k = 0) (1/q − 1/T_test)."""
    k = np.arange(0, q + 1)
    pmf = hypergeom(T_test, T, q).pmf(k)
    inside = np.sum(pmf[1:] * (1.0 / k[1:] - 1.0 / q))
    return 0.5 * d * (inside + pmf[0] * (1.0 / q - 1.0 / T_test))


def fixed_pe_loss(gamma, a, d: int, T: int, q: int, T_test: int):
    """The loss at T_test of the fixed (padded one-hot) PE model on the invariant set W_EE = a M_T on
    slots 1..T, V = [γ I, 0] (derived): with k = |y ∩ [T]| ~ Hypergeometric(T_test, T, q), the
    scores are a(1 − k/T) on the k selected tokens inside [T], −ak/T on the other T − k and 0 on the
    T_test − T beyond T, of which q − k are selected; the loss is the Gaussian average
    (d/2) E Σ_j (γ p_j − 1[j ∈ y]/q)². It is L(γ, a) of the one-hot reduced loss at T_test = T
    and [`fixed_pe_floor`][] as a → ∞ with γ → 1.

    **Arguments:** `gamma`, `a` (numbers or numpy arrays of one shape), sizes `d`, `T`, `q` and the
    validation length `T_test` >= T.

    **Returns:** the loss, of the shape of `gamma` and `a`.

    **Example:** far along GD (a large, γ = 1) the loss is the floor:

        >>> limit = fixed_pe_loss(1.0, 60.0, d=10, T=200, q=3, T_test=400)
        >>> bool(abs(limit - fixed_pe_floor(10, 200, 3, 400)) < 1e-12)
        True
    """
    gamma, a = np.broadcast_arrays(np.asarray(gamma, float), np.asarray(a, float))
    total = np.zeros(gamma.shape)
    for k in range(q + 1):
        # weights relative to the largest score a(1 − k/T): selected inside, other inside, beyond T
        w_sel, w_other, w_out = np.ones_like(a), np.exp(-a), np.exp(-a * (1.0 - k / T))
        Z = k * w_sel + (T - k) * w_other + (T_test - T) * w_out
        # γ p_j, the weight of token j in the output
        gp_sel, gp_other, gp_out = gamma * w_sel / Z, gamma * w_other / Z, gamma * w_out / Z
        loss = (
            k * (gp_sel - 1.0 / q) ** 2
            + (T - k) * gp_other**2
            + (q - k) * (gp_out - 1.0 / q) ** 2
            + (T_test - T - q + k) * gp_out**2
        )
        total = total + hypergeom(T_test, T, q).pmf(k) * loss
    return 0.5 * d * total


def token_key_bias(W_XE, N: int, q: int) -> float:
    """E_y ||W_XE s_y||² over the q slots of a uniformly random subset of N dictionary slots (derived):
    (q/N) [(1 − c) ||W_XE||_F² + c ||W_XE 1||²], c = (q − 1)/(N − 1). With x_query = 0 the score of
    token i gains x_iᵀ W_XE s_y, which tilts the attention output Σ p_i x_i by W_XE s_y to first order.

    **Arguments:** `W_XE`, the (d, N) token-row, PE-column block of W; `N` slots; subset size `q`.

    **Example:** one column per slot, all equal to a unit vector u: then W_XE s_y = q u always:

        >>> import numpy as np
        >>> W = np.outer(np.eye(4)[0], np.ones(10))
        >>> token_key_bias(W, N=10, q=3)
        9.0
    """
    W = np.asarray(W_XE, float)
    c = (q - 1) / (N - 1)
    return float(q / N * ((1 - c) * np.sum(W**2) + c * np.sum(W.sum(axis=1) ** 2)))


def fcn_lower_bound(d: int, T: int, q: int, m: int) -> float:
    """Proposition C (derived; the paper states that an FCN needs width Ω̃(Td)): any FCN with
    first-layer width m <= Td has L >= (T − q)(Td − m) / (2 q T (T − 1)); 0 for m >= Td."""
    return max(T * d - m, 0) * (T - q) / (2 * q * T * (T - 1))


def fcn_min_risk(d: int, T: int, q: int, m: int) -> float:
    """The exact minimum over first layers of width m (Proposition C is tight; derived): the bound
    for d <= m <= Td, and (d − m)/(2T) + (T − q)(Td − d)/(2qT(T − 1)) for m < d."""
    if m >= d:
        return fcn_lower_bound(d, T, q, m)
    return (d - m) / (2 * T) + (T - q) * (T * d - d) / (2 * q * T * (T - 1))


def coordinate_risk(d: int, T: int, q: int, m: int) -> float:
    """The risk of a first layer reading m coordinates of vec X: (Td − m) / (2qT) (derived)."""
    return (T * d - m) / (2 * q * T)
