"""Closed forms of the decoder dynamics of Scan and Snap (Tian et al. 2023, arXiv 2305.16380).

With frozen attention and `Y(0) = 0`, the decoder dynamics collapse onto one scalar `h`
(Lemmas 5-6). Everything here is built on it: the speed control coefficient `γ(t)` of
Eqn 85, its integral `Γ(t)`, the phase-transition curve `B_n(t)` of Theorem 4 (Eqns 13-14,
124-129) and its two transition times, and the helper vectors ζ_n and their Gram matrix Q.

All functions are pure JAX: they `jit` (the scalar closed forms are jitted already),
`vmap` and `grad`, and they compute in the floating dtype of their floating inputs
(the default float for Python floats). Integer sizes `M`, `K` are cast to that dtype
explicitly, so everything works under strict dtype promotion.
"""

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

_NEWTON_STEPS = 12
"""Newton steps in `h_continuous`. From its start point the iteration reaches the root to
rounding (float32 and float64) within 7 steps over the whole grid `M ∈ [2, 1e8]`,
`M η_Y t ∈ [0, 1e16]`."""

_OMEGA_NEWTON_STEPS = 16


def _float_dtype(*xs: ArrayLike) -> jnp.dtype:
    """The floating dtype of the floating inputs (weak types respected); the default
    float when every input is an integer."""
    floats = [x for x in xs if jnp.issubdtype(jnp.result_type(x), jnp.floating)]
    return jnp.result_type(*floats) if floats else jnp.result_type(float)


# --------------------------------------------------------------------------------------
# h*(s) and h(t): Lemmas 5-6
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


@jax.custom_jvp
def _h_newton(t: Array, M: Array, eta_y: Array) -> Array:
    # x = M h solves φ(x) = expm1(x) + (M-1) x - M η_Y t = 0 (Eqn 45 minus 1; expm1 keeps
    # full relative precision for small t). φ is increasing and convex, and both
    # a = A/(M-1) and ln A (A = M η_Y t + 1) satisfy φ ≥ 0, so their minimum is an upper
    # bound of the root: Newton from there decreases monotonically onto the root and never
    # leaves [root, x0] (this is the safeguard; exp(x) ≤ A cannot overflow).
    rhs = M * eta_y * t
    x0 = jnp.minimum(rhs / (M - 1) + 1 / (M - 1), jnp.log1p(rhs))

    def newton(_, x):
        phi = jnp.expm1(x) + (M - 1) * x - rhs
        return x - phi / (jnp.exp(x) + (M - 1))

    return jax.lax.fori_loop(0, _NEWTON_STEPS, newton, x0) / M


@_h_newton.defjvp
def _h_newton_jvp(primals, tangents):
    # Implicit function theorem on G(h; t, M, η) = e^{Mh} + (M-1) M h - M η t - 1 = 0:
    # dh = (M η dt + M t dη - (h e^{Mh} + (2M-1) h - η t) dM) / (M (e^{Mh} + M - 1)).
    t, M, eta_y = primals
    dt, dM, deta = tangents
    h = _h_newton(t, M, eta_y)
    e = jnp.exp(M * h)
    numerator = M * eta_y * dt + M * t * deta - (h * e + (2 * M - 1) * h - eta_y * t) * dM
    return h, numerator / (M * (e + (M - 1)))


@jax.jit
def h_continuous(t: ArrayLike, M: ArrayLike, eta_y: ArrayLike) -> Float[Array, "*batch"]:
    """The continuous decoder scalar `h(t)` of Lemma 6: the solution of
    `dh/dt = η_Y / ((M-1) + exp(M h))`, `h(0) = 0` (Eqn 44), i.e. the root of

        exp(M h) + (M-1) M h = M η_Y t + 1        (Eqn 45).

    Computed by a fixed number of Newton steps in `x = M h` from the upper bound
    `x0 = min(A/(M-1), ln A)`, `A = M η_Y t + 1` (monotone convergence; relative accuracy
    about 1e-15 in float64 for `t ∈ [0, 1e7]`). Differentiable in all arguments through the
    implicit-function derivative (`dh/dt = η_Y / ((M-1) + e^{M h})`), to any order.

    **Arguments:**

    - `t`: time(s) `t ≥ 0` (any shape; broadcast against `M` and `eta_y`).
    - `M`: vocabulary size, `M ≥ 2`.
    - `eta_y`: decoder learning rate `η_Y > 0`.

    **Returns:**

    `h(t)`, with the broadcast shape of the arguments.
    """
    dtype = _float_dtype(t, M, eta_y)
    t, M, eta_y = jnp.broadcast_arrays(*(jnp.asarray(x, dtype) for x in (t, M, eta_y)))
    return _h_newton(t, M, eta_y)


# --------------------------------------------------------------------------------------
# Lemma 8, Eqn 85, Theorem 4
# --------------------------------------------------------------------------------------


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
def speed_gamma(t: ArrayLike, M: ArrayLike, K: ArrayLike, eta_y: ArrayLike) -> Float[Array, "*batch"]:
    """The speed control coefficient of Theorem 1 (Eqn 85):
    `γ(t) = (M-1)² h(t/K) / ((M-1) + exp(M h(t/K)))`, with `h` the exact Lemma 6 solution.

    `t` counts batch-1 SGD steps; each of the `K` uniformly sampled classes has been seen
    `≈ t/K` times. Lemma 9: `γ ≈ η_Y t / K` for `t ≤ K ln(M)/η_Y` and
    `γ ≈ K ln(M η_Y t / K) / (η_Y t)` for `t ≥ 2 (1 + ω_1) K ln(M)/η_Y`.

    **Arguments:**

    - `t`: time(s) `t ≥ 0`.
    - `M`: vocabulary size.
    - `K`: number of classes (next tokens).
    - `eta_y`: decoder learning rate `η_Y`.

    **Returns:**

    `γ(t)`, with the broadcast shape of the arguments.
    """
    dtype = _float_dtype(t, M, K, eta_y)
    M = jnp.asarray(M, dtype)
    h = h_continuous(jnp.asarray(t, dtype) / jnp.asarray(K, dtype), M, jnp.asarray(eta_y, dtype))
    return (M - 1) ** 2 * h / ((M - 1) + jnp.exp(M * h))


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


# --------------------------------------------------------------------------------------
# ζ_n, q_0, q_1, Q: helpers of Lemma 5 and Theorem 1
# --------------------------------------------------------------------------------------


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


def q0(M: ArrayLike) -> Float[Array, "*batch"]:
    """`q_0 = ζ_j^T ζ_i = -M/(M-1)²` for `i ≠ j` (Eqns 85-89).

    **Arguments:**

    - `M`: vocabulary size.

    **Returns:**

    `q_0`.
    """
    M = jnp.asarray(M, _float_dtype(M))
    return -M / (M - 1) ** 2


def q1(M: ArrayLike) -> Float[Array, "*batch"]:
    """`q_1 = ζ_i^T ζ_i = 1 + 1/(M-1)` (Eqns 85-89).

    **Arguments:**

    - `M`: vocabulary size.

    **Returns:**

    `q_1`.
    """
    M = jnp.asarray(M, _float_dtype(M))
    return 1 + 1 / (M - 1)


def q_matrix(K: int, M: ArrayLike) -> Float[Array, "K K"]:
    """`Q = q_0 1 1^T + (q_1 - q_0) I` (K×K), the Gram matrix of `ζ_1, ..., ζ_K` (Eqn 9).

    **Arguments:**

    - `K`: number of classes (a static Python int).
    - `M`: vocabulary size (scalar).

    **Returns:**

    `Q`, shape `(K, K)`.
    """
    a, b = q0(M), q1(M)
    return jnp.full((K, K), a) + (b - a) * jnp.eye(K, dtype=a.dtype)


def e_prime(E: Float[Array, "K K"]) -> Float[Array, "K K"]:
    """`E' = I - (I + E)^{-1}` (Lemma 3, Eqn 26, with the sign that Lemma 14 and Theorem 5 require;
    App. D.1 prints `(I + E)^{-1} - I`, a typo).

    **Arguments:**

    - `E`: `F^T F - I`, shape `(K, K)`.

    **Returns:**

    `E'`, shape `(K, K)`.
    """
    eye = jnp.eye(E.shape[-1], dtype=E.dtype)
    return eye - jnp.linalg.solve(eye + E, eye)
