"""Critical points of a loss (minima and saddles alike) and the Hessian spectrum there."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, PyTree

from ._compiled import one_program
from ._hessian import hvp
from ._landscape_result import CriticalPoint, CriticalPointStatus

_ARMIJO = 1e-4
"""The fraction of the predicted decrease of ‖∇L‖² a Newton step must achieve."""
_MAX_HALVINGS = 30
"""How many times the line search halves the Newton step before giving up."""
_MAX_STEPS, _GTOL, _EIG_TOL = 100, 1e-12, 1e-8
"""The defaults of [`critical_point`][dynamics.landscape.critical_point]'s `max_steps`, `gtol` and
`eig_tol`."""
_RUNNING = -1
"""The status of an iteration that has not stopped yet (never returned)."""
_HESSIAN_BATCH = 32
"""How many columns of a dense Hessian are formed at once: all n at once batches the work into
arrays n times the size of the loss's own intermediates, which leave the cache (at 10³
parameters, 32 at a time is two to three times faster)."""
_BISECTIONS = 60
"""How many times bisection halves the Gershgorin interval of a tridiagonal matrix's extreme
eigenvalues: to below rounding of its norm."""


@one_program
def hessian_spectrum(
    loss: Callable[[PyTree], Float[Array, ""]], params: PyTree
) -> tuple[Float[Array, " n"], Float[Array, "n n"]]:
    """The eigenvalues (ascending) and eigenvectors of the dense Hessian of `loss` at `params`.

    The Hessian is formed on the parameters flattened by `ravel_pytree`, one Hessian-vector product
    ([`hvp`][dynamics.landscape.hvp]) per parameter (32 at a time), then diagonalised by `jnp.linalg.eigh`:
    n² memory and n³ time for n parameters, fine up to a few thousand.

    **Arguments:**

    - `loss`: `params -> scalar`.
    - `params`: the point (any PyTree of float arrays).

    **Returns:** `(eigenvalues, eigenvectors)`: `eigenvalues` of shape `(n,)`, ascending, and
    `eigenvectors` of shape `(n, n)` whose column `i` is the unit eigenvector of `eigenvalues[i]`,
    in the order of `ravel_pytree(params)[0]`.

    **Example:** L(θ) = ½ θᵀHθ has Hessian H, with eigenvalues 1 and 3:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> H = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        >>> loss = lambda theta: 0.5 * theta @ H @ theta
        >>> eigenvalues, eigenvectors = dynamics.landscape.hessian_spectrum(loss, jnp.zeros(2))
        >>> [round(float(v), 8) for v in eigenvalues], [round(abs(float(v)), 4) for v in eigenvectors[:, 1]]
        ([1.0, 3.0], [0.7071, 0.7071])
    """
    flat, unravel = ravel_pytree(params)
    return jnp.linalg.eigh(_dense_hessian(lambda f: loss(unravel(f)), flat))


def _dense_hessian(
    flat_loss: Callable[[Float[Array, " n"]], Float[Array, ""]], flat: Float[Array, " n"]
) -> Float[Array, "n n"]:
    """The Hessian of `flat_loss` at `flat`, symmetrised: one [`hvp`][dynamics.landscape.hvp] per column,
    `_HESSIAN_BATCH` columns at a time."""
    basis = jnp.eye(flat.shape[0], dtype=flat.dtype)
    columns = jax.lax.map(lambda v: hvp(flat_loss, flat, v), basis, batch_size=_HESSIAN_BATCH)
    return (columns + columns.T) / 2


def _count_below(diagonal, off_diagonal_squared, pivmin, shifts):
    """How many eigenvalues of the symmetric tridiagonal matrix T (given by its diagonal and
    squared off-diagonal) lie below each of `shifts`: the negative pivots of T − x I (Sturm), a
    pivot not above `pivmin` counted negative and moved to −`pivmin`, as in LAPACK's bisection."""

    def pivot(q):
        small = q <= pivmin
        return jnp.where(small, jnp.minimum(q, -pivmin), q), small.astype(jnp.int32)

    def step(carry, entries):
        q, count = carry
        d, e2 = entries
        q, negative = pivot(d - shifts - e2 / q)
        return (q, count + negative), None

    (_, count), _ = jax.lax.scan(step, pivot(diagonal[0] - shifts), (diagonal[1:], off_diagonal_squared))
    return count


def _largest_magnitude(hessian: Float[Array, "n n"], eig_tol: float):
    """max|λ| of a symmetric matrix, and whether every |λ| > `eig_tol · max|λ|`, without its
    eigenvectors: a Householder reduction to a tridiagonal matrix T (the same eigenvalues),
    bisection for T's two extreme eigenvalues, and Sturm counts of its eigenvalues below
    ±eig_tol·max|λ|."""
    n = hessian.shape[0]
    _, diagonal, off_diagonal, _ = jax.lax.linalg.tridiagonal(hessian, lower=True)
    off_diagonal_squared = off_diagonal**2
    zero = jnp.zeros(1, diagonal.dtype)
    radius = jnp.concatenate([jnp.abs(off_diagonal), zero]) + jnp.concatenate([zero, jnp.abs(off_diagonal)])
    lower, upper = jnp.min(diagonal - radius), jnp.max(diagonal + radius)  # Gershgorin
    finfo = jnp.finfo(diagonal.dtype)
    pivmin = finfo.tiny * jnp.maximum(1.0, jnp.max(off_diagonal_squared, initial=0.0))
    margin = 2 * finfo.eps * jnp.maximum(-lower, upper) + pivmin
    targets = jnp.array([0, n - 1], jnp.int32)  # the indices of the extreme eigenvalues, ascending

    def bisect(_, interval):
        low, high = interval
        middle = (low + high) / 2
        above = _count_below(diagonal, off_diagonal_squared, pivmin, middle) > targets
        return jnp.where(above, low, middle), jnp.where(above, middle, high)

    start = (jnp.full(2, lower - margin), jnp.full(2, upper + margin))
    low, high = jax.lax.fori_loop(0, _BISECTIONS, bisect, start)
    largest = jnp.max(jnp.abs((low + high) / 2))
    threshold = eig_tol * largest
    below = _count_below(diagonal, off_diagonal_squared, pivmin, jnp.stack([-threshold, threshold]))
    return largest, (largest > 0) & (below[0] == below[1])


def require_float64(analysis: str) -> None:
    """Refuse, before any work, an analysis that polishes in float64 while JAX's float64 mode is off.

    **Raises:** `ValueError` naming `analysis` and the fix."""
    if not jax.config.read("jax_enable_x64"):
        raise ValueError(f"{analysis} works in float64: call jax.config.update('jax_enable_x64', True) first")


@one_program
def critical_point(
    loss: Callable[[PyTree], Float[Array, ""]],
    params: PyTree,
    *,
    max_steps: int = _MAX_STEPS,
    gtol: float = _GTOL,
    eig_tol: float = _EIG_TOL,
    max_distance: float = float("inf"),
) -> CriticalPoint:
    """Polish a starting point to the critical point of `loss` near it, be it a minimum or a saddle.

    Newton's method on the gradient (root finding of ∇L, not minimisation of L), in float64 on the
    flattened parameters. Each step forms the dense Hessian H = V diag(λ) Vᵀ and moves by
    −t V diag(1/λ) Vᵀ ∇L, the directions with |λ| ≤ `eig_tol · max|λ|` left out (a pseudo-inverse):
    the step heads for the critical point whatever the signs of the curvatures, and stays defined
    where the Hessian is singular, as it is along the symmetries of a network (a whole manifold of
    critical points). The step length t is the first of 1, ½, ¼, … that reduces ‖∇L‖² by at least
    1e-4 of the decrease the Newton model predicts (at most 30 halvings), so ‖∇L‖ decreases at
    every step.

    While no direction is left out the step is −t H⁻¹∇L, a linear solve (LU). What that and the
    convergence test below need of the spectrum (max|λ|, and whether some |λ| ≤ `eig_tol · max|λ|`)
    comes from a reduction of H to tridiagonal form, bisection and Sturm counts; H is diagonalised
    only for a step that leaves directions out, and once at the point found, for its spectrum.

    The point has converged when ‖∇L(θ)‖ ≤ `gtol` · max|λ| · (1 + ‖θ‖): the gradient is at
    rounding level compared with the size ‖H‖‖θ‖ of the terms it is computed from (for a quadratic,
    ∇L = H(θ − θ*)). A gradient that merely shrinks because the iterates run off to infinity, where
    the Hessian shrinks with it, does not pass this test, unless both underflow to exactly zero (far
    out on an exponential tail, after hundreds of steps), where the loss looks locally constant:
    `max_distance` rules such runs out.

    **Arguments:**

    - `loss`: `params -> scalar`.
    - `params`: the starting point θ₀ (any PyTree of float arrays; cast to float64).
    - `max_steps`: the most Newton steps.
    - `gtol`: the relative gradient tolerance of the convergence test above.
    - `eig_tol`: eigenvalues with |λ| ≤ `eig_tol · max|λ|` count as zero: they are left out of
      the Newton step and do not count towards the index.
    - `max_distance`: stop, with status `diverged`, once an iterate is farther than this from the
      starting point (Euclidean norm over all leaves); default: no limit.

    **Returns:** a [`CriticalPoint`][dynamics.landscape.CriticalPoint]; its `status` says whether a critical
    point was found.

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`).

    **Example:** L(x, y) = x³/3 − x + y²/2 has a saddle at (−1, 0) (Hessian diag(−2, 1)) and a
    minimum at (1, 0) (Hessian diag(2, 1)); a vmap polishes two starting points at once:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: theta[0] ** 3 / 3 - theta[0] + 0.5 * theta[1] ** 2
        >>> found = dynamics.landscape.critical_point(loss, jnp.array([-1.2, 0.3]))
        >>> bool(found.is_converged()), [round(float(v), 10) for v in found.point]
        (True, [-1.0, 0.0])
        >>> [round(float(v), 10) for v in found.eigenvalues], int(found.index)
        ([-2.0, 1.0], 1)
        >>> found.escape_direction.tolist()
        [1.0, 0.0]
        >>> starts = jnp.array([[-1.2, 0.3], [0.8, 0.1]])
        >>> both = jax.vmap(lambda start: dynamics.landscape.critical_point(loss, start))(starts)
        >>> both.is_converged().tolist(), both.index.tolist(), [round(float(v), 10) for v in both.loss]
        ([True, True], [1, 0], [0.6666666667, -0.6666666667])
    """
    require_float64("critical_point")
    found, _ = newton_polish(
        loss, params, max_steps=max_steps, gtol=gtol, eig_tol=eig_tol, max_distance=max_distance
    )
    return found


def newton_polish(
    loss: Callable[[PyTree], Float[Array, ""]],
    params: PyTree,
    *,
    max_steps: int = _MAX_STEPS,
    gtol: float = _GTOL,
    eig_tol: float = _EIG_TOL,
    max_distance: float = float("inf"),
) -> tuple[CriticalPoint, Float[Array, "n n"]]:
    """[`critical_point`][dynamics.landscape.critical_point] (see there; float64 assumed), with the
    eigenvectors of the Hessian at the point found, columns in the order of its eigenvalues: what a caller
    measuring directions there needs, without forming and diagonalising the Hessian again."""
    params = jax.tree.map(lambda leaf: jnp.asarray(leaf, jnp.float64), params)
    start, unravel = ravel_pytree(params)

    def flat_loss(flat):
        return loss(unravel(flat))

    flat_grad = jax.grad(flat_loss)

    def derivatives(flat):
        grad, hessian = flat_grad(flat), _dense_hessian(flat_loss, flat)
        # Every column has ‖H e_j‖ ≤ max|λ|: a gradient that passes the convergence test with the
        # largest of them in place of max|λ| has converged, and its Hessian needs no reduction
        # before its eigen-decomposition (after the loop).
        bound = jnp.max(jnp.linalg.norm(hessian, axis=0))
        surely_converged = jnp.linalg.norm(grad) <= gtol * bound * (1 + jnp.linalg.norm(flat))
        largest, regular = jax.lax.cond(
            surely_converged,
            lambda hessian: (bound, jnp.asarray(False)),
            lambda hessian: _largest_magnitude(hessian, eig_tol),
            hessian,
        )
        return grad, hessian, largest, regular

    def status_at(flat, grad, hessian, largest, num_steps):
        scale = largest * (1 + jnp.linalg.norm(flat))
        finite = jnp.all(jnp.isfinite(grad)) & jnp.all(jnp.isfinite(hessian)) & jnp.isfinite(largest)
        converged = jnp.linalg.norm(grad) <= gtol * scale
        diverged = jnp.linalg.norm(flat - start) > max_distance
        status = jnp.select(
            [~finite, diverged, converged, num_steps >= max_steps],
            [
                CriticalPointStatus.nonfinite,
                CriticalPointStatus.diverged,
                CriticalPointStatus.converged,
                CriticalPointStatus.max_steps,
            ],
            _RUNNING,
        )
        return status.astype(jnp.int32)

    def inverse_step(hessian, grad):
        # No eigenvalue is left out: the pseudo-inverse is the inverse, and an LU solve gives the
        # step; the predicted decrease 2 Σᵢ (vᵢᵀ∇L)² is then 2 ‖∇L‖².
        return -jnp.linalg.solve(hessian, grad), 2 * jnp.vdot(grad, grad)

    def pseudo_inverse_step(hessian, grad):
        eigenvalues, eigenvectors = jnp.linalg.eigh(hessian)
        kept = jnp.abs(eigenvalues) > eig_tol * jnp.max(jnp.abs(eigenvalues))
        coefficients = eigenvectors.T @ grad
        safe = jnp.where(kept, eigenvalues, 1.0)
        direction = -eigenvectors @ jnp.where(kept, coefficients / safe, 0.0)
        return direction, 2 * jnp.sum(jnp.where(kept, coefficients**2, 0.0))

    def newton_step(state):
        flat, grad, hessian, _, regular, num_steps, _ = state
        # predicted: −d‖∇L‖²/dt at t = 0
        direction, predicted = jax.lax.cond(regular, inverse_step, pseudo_inverse_step, hessian, grad)
        merit = jnp.vdot(grad, grad)

        def trial_merit(t):
            trial_grad = flat_grad(flat + t * direction)
            return jnp.vdot(trial_grad, trial_grad)

        def sufficient(t, trial):
            return (trial < merit) & (trial <= merit - _ARMIJO * t * predicted)

        def halve(search):
            t, _, halvings = search
            return t / 2, trial_merit(t / 2), halvings + 1

        t, trial, _ = jax.lax.while_loop(
            lambda search: ~sufficient(search[0], search[1]) & (search[2] < _MAX_HALVINGS),
            halve,
            (jnp.asarray(1.0, flat.dtype), trial_merit(1.0), jnp.asarray(0, jnp.int32)),
        )
        accepted = sufficient(t, trial)
        flat = jnp.where(accepted, flat + t * direction, flat)
        num_steps = num_steps + accepted.astype(num_steps.dtype)
        grad, hessian, largest, regular = derivatives(flat)
        status = jnp.where(
            accepted, status_at(flat, grad, hessian, largest, num_steps), CriticalPointStatus.stalled
        )
        return flat, grad, hessian, largest, regular, num_steps, status

    grad, hessian, largest, regular = derivatives(start)
    num_steps = jnp.asarray(0, jnp.int32)
    status = status_at(start, grad, hessian, largest, num_steps)
    initial = (start, grad, hessian, largest, regular, num_steps, status)
    flat, grad, hessian, _, _, num_steps, status = jax.lax.while_loop(
        lambda state: state[-1] == _RUNNING, newton_step, initial
    )
    eigenvalues, eigenvectors = jnp.linalg.eigh(hessian)
    index = jnp.sum(eigenvalues < -eig_tol * jnp.max(jnp.abs(eigenvalues)), dtype=jnp.int32)
    lowest = eigenvectors[:, 0]
    lowest = lowest * jnp.sign(lowest[jnp.argmax(jnp.abs(lowest))])
    found = CriticalPoint(
        point=unravel(flat),
        loss=flat_loss(flat),
        grad_norm=jnp.linalg.norm(grad),
        eigenvalues=eigenvalues,
        index=index,
        escape_direction=unravel(jnp.where(index > 0, lowest, 0.0)),
        distance=jnp.linalg.norm(flat - start),
        num_steps=num_steps,
        status=status,
    )
    return found, eigenvectors
