"""The closed forms of the decoder dynamics of Scan and Snap (Tian et al. 2023, arXiv 2305.16380)
that the simulation levels use: with frozen attention and `Y(0) = 0`, the decoder dynamics collapse
onto one scalar `h` (Lemmas 5-6); the speed control coefficient `γ(t)` of Eqn 85 is built on it,
and the Gram matrix Q of the vectors ζ_n and the matrix E' enter Theorem 1's flow. The closed forms
that only the checks and figures need (the discrete `h*`, `Γ(t)`, Theorem 4's `B_n(t)` and its
transition times, `ω_1`, `ζ_n`) are in `theory.scan_snap.closed_forms`.

All functions are pure JAX: they `jit` (the scalar closed forms are jitted already),
`vmap` and `grad`, and they compute in the floating dtype of their floating inputs
(the default float for Python floats). Integer sizes `M`, `K` are cast to that dtype
explicitly, so everything works under strict dtype promotion.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

_NEWTON_STEPS = 12
"""Newton steps in `h_continuous`. From its start point the iteration reaches the root to
rounding (float32 and float64) within 7 steps over the whole grid `M ∈ [2, 1e8]`,
`M η_Y t ∈ [0, 1e16]`."""


def _float_dtype(*xs: ArrayLike) -> jnp.dtype:
    """The floating dtype of the floating inputs (weak types respected); the default
    float when every input is an integer."""
    floats = [x for x in xs if jnp.issubdtype(jnp.result_type(x), jnp.floating)]
    return jnp.result_type(*floats) if floats else jnp.result_type(float)


# --------------------------------------------------------------------------------------
# h*(s) and h(t): Lemmas 5-6
# --------------------------------------------------------------------------------------


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
# Eqn 85
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# q_0, q_1, Q: helpers of Lemma 5 and Theorem 1
# --------------------------------------------------------------------------------------


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
