"""The closed forms of Scan and Snap that the checks hold against simulation, in one place.

Those the simulation levels use too are defined with the model in `tasks.scan_snap` and
re-exported here:

- Lemma 1 (Eqns 3-4): [`lemma1_update`][]; Lemma 2 (Eqn 5): [`class_attention`][],
  [`normalized_attention_features`][]; their expectation, the population gradient:
  [`population_gradient_formula`][].
- The decoder scalar of Lemma 6: [`h_continuous`][] (Eqn 45), and [`q0`][], [`q1`][],
  [`q_matrix`][].
- Theorem 1 (Eqn 9): [`speed_gamma`][] (Eqn 85), [`e_prime`][], [`backprop_gradient`][],
  [`xi`][].

Those only the checks and figures need are defined here, in JAX (they `jit`, `vmap` and `grad`,
and compute in the floating dtype of their floating inputs):

- Lemma 5: the discrete decoder scalar [`h_discrete`][] (Eqn 33) and the vectors [`zeta`][].
- Theorem 4 (Eqns 13-14, 124-129): [`gamma_integral`][], [`phase_B_exact`][],
  [`phase_B_paper`][], [`phase_B_early`][], [`phase_B_late`][], [`omega_1`][] (Lemma 8),
  [`transition_times`][] (Lemma 9).

and in NumPy: the Lemma 18 concentration band, γ(t) from a given h and its two Lemma 9
asymptotes, and the growth factor χ_l with the Theorem 3 bounds on it.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from tasks.scan_snap import (
    backprop_gradient,
    class_attention,
    e_prime,
    h_continuous,
    lemma1_update,
    normalized_attention_features,
    population_gradient_formula,
    q0,
    q1,
    q_matrix,
    speed_gamma,
    xi,
)
from tasks.scan_snap._decoder import _float_dtype

_OMEGA_NEWTON_STEPS = 16
"""Newton steps in [`omega_1`][]."""


# --------------------------------------------------------------------------------------
# Lemma 5, Lemma 8, Theorem 4: in JAX
# --------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=0)
def h_discrete(num_steps: int, M: ArrayLike, eta_y: ArrayLike) -> Float[Array, " num_steps+1"]:
    """The discrete decoder scalar `h*(s)` of Lemma 5, Eqn 33:
    `h*(0) = 0`, `h*(s) = h*(s-1) + η_Y / ((M-1) + exp(M h*(s-1)))`.

    After `s` batch-1 gradient-ascent steps on class `n` alone (from `Y = 0`, frozen
    attention), `w_n(s) = (M-1) h*(s) ζ_n`.

    **Arguments:**

    - `num_steps`: number of updates `s_max` (a static Python int).
    - `M`: vocabulary size (scalar, `M ≥ 2`).
    - `eta_y`: decoder learning rate `η_Y` (scalar).

    **Returns:**

    `h*(s)` for `s = 0, ..., num_steps`, shape `(num_steps + 1,)`.
    """
    dtype = _float_dtype(M, eta_y)
    M = jnp.asarray(M, dtype)
    eta_y = jnp.asarray(eta_y, dtype)

    def step(h, _):
        h_next = h + eta_y / ((M - 1) + jnp.exp(M * h))
        return h_next, h_next

    h0 = jnp.zeros((), dtype)
    _, hs = jax.lax.scan(step, h0, None, length=num_steps)
    return jnp.concatenate([h0[None], hs])


@jax.jit
def omega_1(M: ArrayLike) -> Float[Array, "*batch"]:
    """The constant `ω_1` of Lemma 8: the positive root of
    `M^ω = ((M-1)/M) (1 + ω) ln M`, so that `exp(M h) ≤ (M-1) M h` exactly up to
    `h = (1 + ω_1) ln(M) / M`. `ω_1 = Θ(ln ln M / ln M)`: 0.436 (M = 50), 0.403 (100),
    0.320 (1000), 0.267 (1e4).

    Newton on the convex, increasing `ψ(ω) = ω ln M - ln(1+ω) - ln((M-1) ln(M) / M)`
    from `ω = 0` (`ψ(0) < 0` for `M ≥ 4`).

    **Arguments:**

    - `M`: vocabulary size, `M ≥ 4` (any shape).

    **Returns:**

    `ω_1(M)`, same shape as `M`.
    """
    M = jnp.asarray(M, _float_dtype(M))
    log_m = jnp.log(M)
    offset = jnp.log((M - 1) / M * log_m)

    def newton(_, w):
        psi = w * log_m - jnp.log1p(w) - offset
        return w - psi / (log_m - 1 / (1 + w))

    return jax.lax.fori_loop(0, _OMEGA_NEWTON_STEPS, newton, jnp.zeros_like(M))


@jax.jit
def gamma_integral(
    t: ArrayLike, M: ArrayLike, K: ArrayLike, eta_y: ArrayLike, eta_z: ArrayLike
) -> Float[Array, "*batch"]:
    """`Γ(t) := η_Z ∫_0^t γ(s) ds = η_Z K (M-1)² h(t/K)² / (2 η_Y)` (Eqns 125-128).

    **Arguments:**

    - `t`: time(s) `t ≥ 0`.
    - `M`: vocabulary size.
    - `K`: number of classes.
    - `eta_y`: decoder learning rate `η_Y`.
    - `eta_z`: attention learning rate `η_Z`.

    **Returns:**

    `Γ(t)`, with the broadcast shape of the arguments.
    """
    dtype = _float_dtype(t, M, K, eta_y, eta_z)
    K = jnp.asarray(K, dtype)
    M = jnp.asarray(M, dtype)
    eta_y = jnp.asarray(eta_y, dtype)
    h = h_continuous(jnp.asarray(t, dtype) / K, M, eta_y)
    return jnp.asarray(eta_z, dtype) * K * (M - 1) ** 2 * h**2 / (2 * eta_y)


@jax.jit
def phase_B_exact(
    t: ArrayLike, M: ArrayLike, K: ArrayLike, eta_y: ArrayLike, eta_z: ArrayLike, C0: ArrayLike
) -> Float[Array, "*batch"]:
    """`B_n(t) = ¼ ln(1 + 4 Γ(t) / C_0)`: the exact solution, with `B_n(0) = 0`, of the
    Theorem 4 model `ż = -C_0^{-1} η_Z γ e^{4z}`, `Ḃ = C_0^{-1} η_Z γ e^{4z}`, `z(0) = 0`
    (then `e^{-4 z(t)} = 1 + 4Γ/C_0`), `C_0 = ρ_0⁴ / K` (Eqn 13).

    **Arguments:**

    - `t`: time(s) `t ≥ 0`.
    - `M`: vocabulary size.
    - `K`: number of classes.
    - `eta_y`: decoder learning rate `η_Y`.
    - `eta_z`: attention learning rate `η_Z`.
    - `C0`: the constant `C_0 > 0`.

    **Returns:**

    `B_n(t)`, with the broadcast shape of the arguments.
    """
    dtype = _float_dtype(t, M, K, eta_y, eta_z, C0)
    gamma_int = gamma_integral(t, M, K, eta_y, eta_z).astype(dtype)
    return jnp.log1p(4 * gamma_int / jnp.asarray(C0, dtype)) / 4


@jax.jit
def phase_B_paper(
    t: ArrayLike, M: ArrayLike, K: ArrayLike, eta_y: ArrayLike, eta_z: ArrayLike, C0: ArrayLike
) -> Float[Array, "*batch"]:
    """`B_n(t) = ¼ ln(C_0 + 4 Γ(t))`, the paper's printed form (Eqns 124, 129); it differs
    from `phase_B_exact` by the constant `¼ ln C_0` when `4Γ ≫ C_0` and equals it for
    `C_0 = 1` (the printed form drops the constant of integration).

    **Arguments:** as `phase_B_exact`.

    **Returns:**

    `B_n(t)`, with the broadcast shape of the arguments.
    """
    dtype = _float_dtype(t, M, K, eta_y, eta_z, C0)
    gamma_int = gamma_integral(t, M, K, eta_y, eta_z).astype(dtype)
    return jnp.log(jnp.asarray(C0, dtype) + 4 * gamma_int) / 4


@jax.jit
def phase_B_early(
    t: ArrayLike, M: ArrayLike, K: ArrayLike, eta_y: ArrayLike, eta_z: ArrayLike, C0: ArrayLike
) -> Float[Array, "*batch"]:
    """Eqn 14, scanning phase `t < t'_0 = K ln(M)/η_Y` (paper convention):
    `B_n(t) = ¼ ln(C_0 + (2 (M-1)² / (K M²)) η_Y η_Z t²)`.

    **Arguments:** as `phase_B_exact`.

    **Returns:**

    The early-phase approximation of `B_n(t)`.
    """
    dtype = _float_dtype(t, M, K, eta_y, eta_z, C0)
    t, M, K, eta_y, eta_z, C0 = (jnp.asarray(x, dtype) for x in (t, M, K, eta_y, eta_z, C0))
    return jnp.log(C0 + 2 * (M - 1) ** 2 / (K * M**2) * eta_y * eta_z * t**2) / 4


@jax.jit
def phase_B_late(
    t: ArrayLike, M: ArrayLike, K: ArrayLike, eta_y: ArrayLike, eta_z: ArrayLike, C0: ArrayLike
) -> Float[Array, "*batch"]:
    """Eqn 14, snapping phase `t ≥ t_0 = 2 (1 + ω_1) K ln(M)/η_Y` (paper convention):
    `B_n(t) = ¼ ln(C_0 + (2 K (M-1)² / M²) (η_Z/η_Y) ln²(M η_Y t / K))`.

    **Arguments:** as `phase_B_exact`.

    **Returns:**

    The late-phase approximation of `B_n(t)`.
    """
    dtype = _float_dtype(t, M, K, eta_y, eta_z, C0)
    t, M, K, eta_y, eta_z, C0 = (jnp.asarray(x, dtype) for x in (t, M, K, eta_y, eta_z, C0))
    log_term = jnp.log(M * eta_y * t / K)
    return jnp.log(C0 + 2 * K * (M - 1) ** 2 / M**2 * (eta_z / eta_y) * log_term**2) / 4


@jax.jit
def transition_times(
    M: ArrayLike, K: ArrayLike, eta_y: ArrayLike
) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
    """The two transition times of Lemma 9 / Theorem 4.

    **Arguments:**

    - `M`: vocabulary size.
    - `K`: number of classes.
    - `eta_y`: decoder learning rate `η_Y`.

    **Returns:**

    `(t0_prime, t0)` with `t'_0 = K ln(M)/η_Y` (end of the scanning phase, where
    `e^{M h(t/K)}` reaches `M-1`) and `t_0 = 2 (1 + ω_1) K ln(M)/η_Y` (start of the
    snapping phase, Eqn 14).
    """
    dtype = _float_dtype(M, K, eta_y)
    M = jnp.asarray(M, dtype)
    t0_prime = jnp.asarray(K, dtype) * jnp.log(M) / jnp.asarray(eta_y, dtype)
    return t0_prime, 2 * (1 + omega_1(M)) * t0_prime


def zeta(n: Int[ArrayLike, ""], M: int, dtype: jnp.dtype | None = None) -> Float[Array, " M"]:
    """`ζ_n = (M/(M-1)) (e_n - 1/M)`: 1 at entry `n`, `-1/(M-1)` elsewhere (Lemma 5).

    **Arguments:**

    - `n`: the index (0-based).
    - `M`: vocabulary size (a static Python int, it sets the length).
    - `dtype`: floating dtype of the result; the default float when `None`.

    **Returns:**

    `ζ_n`, shape `(M,)`.
    """
    dtype = jnp.result_type(float) if dtype is None else dtype
    off = -1 / jnp.asarray(M - 1, dtype)
    return jnp.where(jnp.arange(M) == n, jnp.ones((), dtype), off)


# --------------------------------------------------------------------------------------
# In NumPy
# --------------------------------------------------------------------------------------


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
