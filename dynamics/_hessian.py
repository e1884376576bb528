"""The largest Hessian eigenvalue of a loss at a point, from Hessian-vector products only."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

HESSIAN_METHODS = ("lanczos", "power")
"""The ways [`hessian_max_eigenvalue`][] can estimate λ_max: Lanczos iteration or power iteration,
both on Hessian-vector products."""


def hvp(loss: Callable[[PyTree], Float[Array, ""]], params: PyTree, tangent: PyTree) -> PyTree:
    """The Hessian-vector product ∇²L(θ) v, forward-over-reverse (`jax.jvp` of `jax.grad`).

    **Arguments:** `loss`: `params -> scalar`; `params`: the point θ; `tangent`: v, a PyTree like θ.

    **Returns:** ∇²L(θ) v, a PyTree like θ.

    **Example:** for L(θ) = ½ θᵀHθ the product is H v, without forming H:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> dynamics.hvp(loss, jnp.zeros(2), jnp.array([1.0, 0.0])).tolist()
        [2.0, 1.0]
    """
    return jax.jvp(jax.grad(loss), (params,), (tangent,))[1]


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
        >>> lam = dynamics.hessian_max_eigenvalue(loss, jnp.zeros(2))
        >>> round(float(lam), 8), lam.dtype
        (3.0, dtype('float64'))
        >>> round(float(dynamics.hessian_max_eigenvalue(loss, jnp.zeros(2), method="power")), 8)
        3.0
        >>> round(2.0 / float(lam), 4)
        0.6667
    """
    if method not in HESSIAN_METHODS:
        raise ValueError(f"method must be one of {HESSIAN_METHODS}, got {method!r}")
    if num_iters < 1:
        raise ValueError(f"num_iters must be >= 1, got {num_iters}")
    flat, unravel = ravel_pytree(params)
    dim = flat.shape[0]
    key = jax.random.PRNGKey(0) if key is None else key
    v0 = jax.random.normal(key, (dim,), flat.dtype)
    v0 = v0 / jnp.linalg.norm(v0)

    def matvec(v):
        return ravel_pytree(hvp(loss, params, unravel(v)))[0]

    if method == "power":
        return _power(matvec, v0, num_iters)
    return _lanczos(matvec, v0, min(num_iters, dim))


def _power(matvec, v0, num_iters: int):
    shift = 2.0 * jnp.linalg.norm(matvec(v0))

    def body(_, v):
        w = matvec(v) + shift * v
        return w / jnp.linalg.norm(w)

    v = jax.lax.fori_loop(0, num_iters, body, v0)
    return jnp.vdot(v, matvec(v))


def _lanczos(matvec, v0, k: int):
    """The largest Ritz value of `k` Lanczos steps from the unit vector `v0`, re-orthogonalising
    fully. A residual below √ε times the largest ‖H v‖ met is the end of the Krylov space (the
    Hessian's rank, or an invariant subspace, reached): normalising it would turn rounding into
    a vector that is not orthogonal to the basis, and Ritz values beyond λ_max. The steps after
    that end add zeros."""
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
    _, alphas, betas, _ = jax.lax.fori_loop(0, k, body, start)
    tridiagonal = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
    return jnp.linalg.eigvalsh(tridiagonal)[-1]
