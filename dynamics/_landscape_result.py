"""The result of polishing a starting point to a critical point: the point, its Hessian spectrum,
and whether it is one."""

import enum

import equinox as eqx
from jaxtyping import Array, Bool, Float, Int, PyTree


class CriticalPointStatus(enum.IntEnum):
    """How [`critical_point`][dynamics.landscape.critical_point] ended, the value of `CriticalPoint.status`.

    - `converged`: the gradient vanished to rounding level: the point is a critical point.
    - `max_steps`: `max_steps` Newton steps did not get there. Typical of a loss with no critical
      point nearby, e.g. one whose infimum is at infinity: the iterates run off and the gradient
      shrinks without ever passing the test.
    - `stalled`: no step along the Newton direction reduced ‖∇L‖ enough: ‖∇L‖ is locally smallest
      but not zero, e.g. along directions where the Hessian vanishes but the gradient does not.
    - `nonfinite`: the loss's gradient or Hessian is not finite at the current point.
    - `diverged`: the iterate moved farther than `max_distance` from the starting point.

    Only `converged` makes the returned point a critical point; the other fields of the result
    then describe the last iterate.

    **Example:** the linear loss L(θ) = θ₁ + θ₂ has no critical point: its gradient is constant and
    its Hessian zero, so no Newton step exists:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> found = dynamics.landscape.critical_point(lambda theta: jnp.sum(theta), jnp.zeros(2))
        >>> dynamics.landscape.CriticalPointStatus(int(found.status)).name, bool(found.is_converged())
        ('stalled', False)
    """

    converged = 0
    max_steps = 1
    stalled = 2
    nonfinite = 3
    diverged = 4


class CriticalPoint(eqx.Module):
    """A point where the gradient of a loss vanishes, with its Hessian spectrum.

    Every field is an array (or a PyTree of arrays), so results can be `vmap`ped over starting
    points (each field then gains a leading axis).

    **Fields:**

    - `point`: the critical point θ*, a PyTree like the starting point (float64 leaves).
    - `loss`: L(θ*).
    - `grad_norm`: ‖∇L(θ*)‖ (Euclidean norm over all leaves).
    - `eigenvalues`: the Hessian's eigenvalues at θ*, ascending.
    - `index`: the number of eigenvalues below `−eig_tol · max|λ|`: 0 at a local minimum (or a
      degenerate saddle), positive at a strict saddle.
    - `escape_direction`: the unit eigenvector of the most negative eigenvalue, a PyTree like
      `point`, with its largest-magnitude entry positive; all zeros where `index` is 0. Where that
      eigenvalue is repeated, it is one unit vector of its eigenspace.
    - `distance`: ‖θ* − θ₀‖, the straight-line distance from the starting point θ₀.
    - `num_steps`: the Newton steps taken.
    - `status`: a [`CriticalPointStatus`][dynamics.landscape.CriticalPointStatus]; unless it is `converged`,
      the fields describe the last iterate, which is not a critical point.

    **Example:** L(x, y) = ½(x² − y²) has a saddle at the origin; its escape direction is ±y:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * (theta[0] ** 2 - theta[1] ** 2)
        >>> found = dynamics.landscape.critical_point(loss, jnp.array([0.3, -0.2]))
        >>> bool(found.is_converged()), found.point.tolist(), found.eigenvalues.tolist()
        (True, [0.0, 0.0], [-1.0, 1.0])
        >>> int(found.index), found.escape_direction.tolist(), int(found.num_steps)
        (1, [0.0, 1.0], 1)
    """

    point: PyTree
    loss: Float[Array, ""]
    grad_norm: Float[Array, ""]
    eigenvalues: Float[Array, " n"]
    index: Int[Array, ""]
    escape_direction: PyTree
    distance: Float[Array, ""]
    num_steps: Int[Array, ""]
    status: Int[Array, ""]

    def is_converged(self) -> Bool[Array, "..."]:
        """True where the point is a critical point (per starting point, for a batch)."""
        return self.status == CriticalPointStatus.converged
