"""The closed forms of Scan and Snap that the checks hold against simulation, in one place.

Most are defined with the model in `tasks.scan_snap` (where the simulation levels use them too)
and re-exported here:

- Lemma 1 (Eqns 3-4): [`lemma1_update`][]; Lemma 2 (Eqn 5): [`class_attention`][],
  [`normalized_attention_features`][]; their expectation, the population gradient:
  [`population_gradient_formula`][].
- The decoder scalar of Lemmas 5-7: [`h_discrete`][] (Eqn 33), [`h_continuous`][] (Eqn 45),
  [`zeta`][], [`q0`][], [`q1`][], [`q_matrix`][].
- Theorem 1 (Eqn 9): [`speed_gamma`][] (Eqn 85), [`e_prime`][], [`backprop_gradient`][],
  [`xi`][].
- Theorem 4 (Eqns 13-14, 124-129): [`gamma_integral`][], [`phase_B_exact`][],
  [`phase_B_paper`][], [`phase_B_early`][], [`phase_B_late`][], [`omega_1`][],
  [`transition_times`][].

The few that only the checks need are defined below, in NumPy: the Lemma 18 concentration band,
γ(t) from a given h and its two Lemma 9 asymptotes, and the growth factor χ_l with the Theorem 3
bounds on it.
"""

import numpy as np

from tasks.scan_snap import (
    backprop_gradient,
    class_attention,
    e_prime,
    gamma_integral,
    h_continuous,
    h_discrete,
    lemma1_update,
    normalized_attention_features,
    omega_1,
    phase_B_early,
    phase_B_exact,
    phase_B_late,
    phase_B_paper,
    population_gradient_formula,
    q0,
    q1,
    q_matrix,
    speed_gamma,
    transition_times,
    xi,
    zeta,
)


def hoeffding_band(num_context, delta: float) -> np.ndarray:
    """Lemma 18: with probability at least 1 − δ, every empirical token frequency of a sequence
    with `num_context` = T − 1 contextual tokens lies within sqrt(ln(2/δ) / (2(T − 1))) of
    P(l|n).

    **Arguments:**

    - `num_context`: T − 1 (array-like).
    - `delta`: the failure probability δ.

    **Returns:** the half-width of the band, shaped like `num_context`.
    """
    return np.sqrt(np.log(2 / delta) / (2 * num_context))


def gamma_of_h(h, M) -> np.ndarray:
    """The speed control coefficient of Eqn 85 from a value of the decoder scalar,
    γ = (M − 1)² h / ((M − 1) + e^{Mh}), with h = h(t/K) (exact, or integrated from Eqn 44).

    **Arguments:** `h`: values of h; `M`: the vocabulary size.

    **Returns:** γ, shaped like `h`.
    """
    return (M - 1) ** 2 * h / ((M - 1) + np.exp(M * h))


def gamma_scanning(t, K, eta_y) -> np.ndarray:
    """Lemma 9, scanning stage (t ≤ t'_0 = K ln M / η_Y): γ(t) ≈ η_Y t / K.

    **Arguments:** `t`: times; `K`: the number of classes; `eta_y`: η_Y.

    **Returns:** the asymptote at `t`.
    """
    return eta_y * t / K


def gamma_snapping(t, M, K, eta_y) -> np.ndarray:
    """Lemma 9, snapping stage (t ≥ t_0 = 2(1 + ω_1) K ln M / η_Y):
    γ(t) ≈ K ln(M η_Y t / K) / (η_Y t).

    **Arguments:** `t`: times; `M`: the vocabulary size; `K`: the number of classes; `eta_y`: η_Y.

    **Returns:** the asymptote at `t`.
    """
    return K * np.log(M * eta_y * t / K) / (eta_y * t)


def growth_factor(z, z0) -> np.ndarray:
    """χ_l(t) = e^{2(z_l(t) − z_l(0))}, the growth of a distinct token's attention logit
    (Theorem 3: r_{l/l'|n}(t) = r_{l/l'|n}(0) χ_l(t), Eqn 11).

    **Arguments:** `z`: z_l(t) (any shape); `z0`: z_l(0), broadcast against it.

    **Returns:** χ_l(t).
    """
    return np.exp(2 * (z - z0))


def eqn12_bounds(f0, B) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 3, Eqn 12: e^{2 f_{n l0}(0)² B_n(t)} ≤ χ_{l0}(t) ≤ e^{2 B_n(t)} for the dominant
    distinct token l0 of class n.

    **Arguments:** `f0`: f_{n l0}(0); `B`: B_n(t).

    **Returns:** `(lower, upper)`, shaped like `B`.
    """
    return np.exp(2 * f0**2 * B), np.exp(2 * B)


__all__ = [
    "backprop_gradient",
    "class_attention",
    "e_prime",
    "eqn12_bounds",
    "gamma_integral",
    "gamma_of_h",
    "gamma_scanning",
    "gamma_snapping",
    "growth_factor",
    "h_continuous",
    "h_discrete",
    "hoeffding_band",
    "lemma1_update",
    "normalized_attention_features",
    "omega_1",
    "phase_B_early",
    "phase_B_exact",
    "phase_B_late",
    "phase_B_paper",
    "population_gradient_formula",
    "q0",
    "q1",
    "q_matrix",
    "speed_gamma",
    "transition_times",
    "xi",
    "zeta",
]
