"""The largest Hessian eigenvalue of a loss at a point, from Hessian-vector products only."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ._compiled import one_program

HESSIAN_METHODS = ("lanczos", "power")
"""The ways [`hessian_max_eigenvalue`][dynamics.landscape.hessian_max_eigenvalue] can estimate λ_max:
Lanczos iteration or power iteration, both on Hessian-vector products."""


@one_program
def hvp(loss: Callable[[PyTree], Float[Array, ""]], params: PyTree, tangent: PyTree) -> PyTree:
    """The Hessian-vector product ∇²L(θ) v, forward-over-reverse (`jax.jvp` of `jax.grad`).

    **Arguments:** `loss`: `params -> scalar`; `params`: the point θ; `tangent`: v, a PyTree like θ.

    **Returns:** ∇²L(θ) v, a PyTree like θ.

    **Example:** for L(θ) = ½ θᵀHθ the product is H v, without forming H:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> dynamics.landscape.hvp(loss, jnp.zeros(2), jnp.array([1.0, 0.0])).tolist()
        [2.0, 1.0]
    """
    return jax.jvp(jax.grad(loss), (params,), (tangent,))[1]


@one_program
def hessian_max_eigenvalue(
    loss: Callable[[PyTree], Float[Array, ""]],
    params: PyTree,
    *,
    num_iters: int = 100,
    method: str = "lanczos",
    key: PRNGKeyArray | None = None,
) -> Float[Array, ""]:
    """λ_max, the largest (algebraic) eigenvalue of the Hessian of `loss` at `params`.

    Never forms the Hessian: each iteration costs one Hessian-vector product on the
    parameters flattened by `ravel_pytree`.

    - `lanczos`: `num_iters` Lanczos steps with full re-orthogonalisation; the largest Ritz
      value of the tridiagonal matrix (exact once `num_iters` reaches the dimension). If it meets
      an invariant subspace early (a residual below √ε times the largest ‖Hv‖ met, e.g. past the
      Hessian's rank), the remaining steps add zero Ritz values, so an all-negative spectrum
      would be reported as 0.
    - `power`: power iteration on H + s I with the heuristic shift s = 2 ‖H v₀‖ (meant to exceed
      |λ_min|, so that it converges to the largest algebraic eigenvalue rather than the one of
      largest magnitude; not guaranteed); returns the Rayleigh quotient of the last iterate.
      Converges more slowly than Lanczos.

    **Arguments:**

    - `loss`: `params -> scalar`.
    - `params`: the point (any PyTree of float arrays).
    - `num_iters`: Lanczos steps (capped at the dimension) or power iterations.
    - `method`: one of `HESSIAN_METHODS`.
    - `key`: PRNG key of the random start vector; default `PRNGKey(0)`.

    **Returns:** the estimate of λ_max, a scalar of the parameters' dtype.

    **Example:** a quadratic whose Hessian has eigenvalues 1 and 3 (float64), and the largest
    stable GD step size 2/λ_max:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> lam = dynamics.landscape.hessian_max_eigenvalue(loss, jnp.zeros(2))
        >>> round(float(lam), 8), lam.dtype
        (3.0, dtype('float64'))
        >>> round(float(dynamics.landscape.hessian_max_eigenvalue(loss, jnp.zeros(2), method="power")), 8)
        3.0
        >>> round(2.0 / float(lam), 4)
        0.6667
    """
    if method not in HESSIAN_METHODS:
        raise ValueError(f"method must be one of {HESSIAN_METHODS}, got {method!r}")
    matvec, v0 = _flat_problem(loss, params, num_iters, key)
    if method == "power":
        return _power(matvec, v0, num_iters)
    alphas, betas, _ = _lanczos(matvec, v0, min(num_iters, v0.shape[0]))
    return jnp.linalg.eigvalsh(_tridiagonal(alphas, betas))[-1]


_WARM_WEIGHT = 0.1
"""How much of the fixed random start a warm-started Lanczos run mixes into the vector it starts
from (see [`top_eigenpair`][dynamics.landscape.top_eigenpair]): enough that a new top eigenvector orthogonal
to the last one is still found."""


@one_program
def top_eigenpair(
    loss: Callable[[PyTree], Float[Array, ""]],
    params: PyTree,
    *,
    num_iters: int,
    start: Float[Array, " n"] | None = None,
) -> tuple[Float[Array, ""], Float[Array, " n"]]:
    """λ_max of the Hessian of `loss` at `params` and its Ritz vector, by Lanczos warm-started from
    `start`: the run starts from `start` + 0.1 × the fixed random start of
    [`hessian_max_eigenvalue`][dynamics.landscape.hessian_max_eigenvalue], normalised. Along a run the top
    eigenvector moves little between saves, so starting from the last one reaches a given accuracy in fewer
    steps.

    **Arguments:**

    - `loss`, `params`: as for [`hessian_max_eigenvalue`][dynamics.landscape.hessian_max_eigenvalue].
    - `num_iters`: Lanczos steps (capped at the dimension).
    - `start`: a vector of the flattened parameters' size (`ravel_pytree`), e.g. the Ritz vector
      of the last call; `None` or zeros: the fixed random start alone, as
      [`hessian_max_eigenvalue`][dynamics.landscape.hessian_max_eigenvalue].

    **Returns:** `(λ_max, v)`: the largest Ritz value and its unit Ritz vector, flattened.

    **Example:** on a quadratic in 50 parameters with Hessian eigenvalues spread over [1, 5], three
    Lanczos steps from the random start find 4.458; three from the top eigenvector (found by 50
    steps) find 4.9996:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.diag(jnp.linspace(1.0, 5.0, 50))
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> round(float(dynamics.landscape.hessian_max_eigenvalue(loss, jnp.zeros(50), num_iters=3)), 4)
        4.458
        >>> exact, top = dynamics.landscape.top_eigenpair(loss, jnp.zeros(50), num_iters=50)
        >>> round(float(exact), 8), round(abs(float(top[-1])), 8)
        (5.0, 1.0)
        >>> round(float(dynamics.landscape.top_eigenpair(loss, jnp.zeros(50), num_iters=3, start=top)[0]), 4)
        4.9996
    """
    matvec, v0 = _flat_problem(loss, params, num_iters, None)
    if start is not None:
        v0 = start + _WARM_WEIGHT * v0
        v0 = v0 / jnp.linalg.norm(v0)
    alphas, betas, basis = _lanczos(matvec, v0, min(num_iters, v0.shape[0]))
    values, vectors = jnp.linalg.eigh(_tridiagonal(alphas, betas))
    ritz = basis.T @ vectors[:, -1]
    return values[-1], ritz / jnp.linalg.norm(ritz)


def _flat_problem(loss, params, num_iters: int, key):
    """The Hessian-vector product on the flattened parameters and the unit random start vector."""
    if num_iters < 1:
        raise ValueError(f"num_iters must be >= 1, got {num_iters}")
    flat, unravel = ravel_pytree(params)
    key = jax.random.PRNGKey(0) if key is None else key
    v0 = jax.random.normal(key, flat.shape, flat.dtype)
    v0 = v0 / jnp.linalg.norm(v0)

    def matvec(v):
        return ravel_pytree(hvp(loss, params, unravel(v)))[0]

    return matvec, v0


def _tridiagonal(alphas, betas):
    return jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)


def _power(matvec, v0, num_iters: int):
    shift = 2.0 * jnp.linalg.norm(matvec(v0))

    def body(_, v):
        w = matvec(v) + shift * v
        return w / jnp.linalg.norm(w)

    v = jax.lax.fori_loop(0, num_iters, body, v0)
    return jnp.vdot(v, matvec(v))


def _lanczos(matvec, v0, k: int):
    """`k` Lanczos steps from the unit vector `v0`, re-orthogonalising fully: the diagonal and
    off-diagonal of the tridiagonal matrix and the basis (rows). A residual below √ε times the
    largest ‖H v‖ met is the end of the Krylov space (the Hessian's rank, or an invariant
    subspace, reached): normalising it would turn rounding into a vector that is not orthogonal
    to the basis, and Ritz values beyond λ_max. The steps after that end add zeros."""
    dim = v0.shape[0]
    basis = jnp.zeros((k, dim), v0.dtype).at[0].set(v0)
    alphas = jnp.zeros((k,), v0.dtype)
    betas = jnp.zeros((k,), v0.dtype)
    breakdown = jnp.sqrt(jnp.finfo(v0.dtype).eps)

    def body(i, state):
        basis, alphas, betas, scale = state
        w = matvec(basis[i])
        scale = jnp.maximum(scale, jnp.linalg.norm(w))
        alpha = jnp.vdot(basis[i], w)
        mask = (jnp.arange(k) <= i).astype(v0.dtype)
        for _ in range(2):  # full re-orthogonalisation, twice for stability
            w = w - basis.T @ (mask * (basis @ w))
        beta = jnp.linalg.norm(w)
        beta = jnp.where(beta > breakdown * scale, beta, jnp.zeros_like(beta))
        safe = jnp.where(beta > 0, beta, jnp.ones_like(beta))
        nxt = jnp.where(beta > 0, w / safe, jnp.zeros_like(w))
        basis = jnp.where(i + 1 < k, basis.at[jnp.minimum(i + 1, k - 1)].set(nxt), basis)
        return basis, alphas.at[i].set(alpha), betas.at[i].set(beta), scale

    start = (basis, alphas, betas, jnp.zeros((), v0.dtype))
    basis, alphas, betas, _ = jax.lax.fori_loop(0, k, body, start)
    return alphas, betas, basis
