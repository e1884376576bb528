"""The phases of a run: plateaus, where the loss stalls in log-time near a saddle, and the
transitions between them; and the saddle each plateau sits near, with how the run escaped it."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PyTree

from ._compiled import one_program
from ._landscape import newton_polish


class Plateaus(eqx.Module):
    """The plateaus of one run, found by [`phases`][], in time order, padded to `max_phases`.

    Plateau p occupies the saves `start_index[p]` to `end_index[p]`; the transition after it runs
    from its last save to the first save of plateau p + 1 (or to the end of the run). Entries past
    `count` are padding: NaN for the times and losses, −1 for the save indices. Every field is an
    array, so results can be `vmap`ped over runs (each field then gains a leading axis).

    **Fields:**

    - `start_time`, `end_time`: the times of the plateau's first and last saves, shape `(P,)`.
    - `loss`: the loss at `save_index`.
    - `save_index`: the save of lowest gradient norm on the plateau, the one nearest the saddle
      (without gradient norms: the save where the loss changes slowest).
    - `start_index`, `end_index`: the plateau's first and last saves.
    - `after_index`: the first save after the plateau, where the run has begun to escape it; −1
      where the plateau lasts to the last usable save.
    - `count`: the number of plateaus found; when it exceeds `P`, only the first `P` are returned.
    - `slow`: which saves passed both tests of [`phases`][], shape `(T,)`, before the shortest
      stretches were dropped.

    **Example:** a loss that drops from 2 to 1 around t = 1 and from 1 to 0 around t = 100, each
    drop a sigmoid in log t, has three plateaus: at 2, at 1 and at 0:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(-2.0, 4.0, 61)
        >>> losses = 1.0 - jnp.tanh(4 * jnp.log(ts)) / 2 - jnp.tanh(4 * jnp.log(ts / 100)) / 2
        >>> found = dynamics.phases(ts, losses, max_phases=4)
        >>> int(found.count), [round(float(v), 4) for v in found.loss]
        (3, [2.0, 1.0, 0.0, nan])
        >>> found.after_index.tolist()
        [18, 38, -1, -1]
    """

    start_time: Float[Array, " P"]
    end_time: Float[Array, " P"]
    loss: Float[Array, " P"]
    save_index: Int[Array, " P"]
    start_index: Int[Array, " P"]
    end_index: Int[Array, " P"]
    after_index: Int[Array, " P"]
    count: Int[Array, ""]
    slow: Bool[Array, " T"]


@one_program
def phases(
    ts: Float[ArrayLike, " T"],
    losses: Float[ArrayLike, " T"],
    grad_norms: Float[ArrayLike, " T"] | None = None,
    *,
    max_phases: int = 8,
    loss_tol: float = 0.1,
    grad_tol: float = 0.01,
    floor: float = 1e-3,
    min_span: float = 0.5,
) -> Plateaus:
    """Split the saves of one run into plateaus and the transitions between them.

    Every test is in log-time and relative, so the result does not change when time or the loss is
    rescaled or the loss shifted. Save j is slow when both hold:

    - the loss changes slowly in log-time: |dL/d log t| ≤ `loss_tol` · (L_j − L_min + `floor` ·
      (L_max − L_min)), the derivative a central difference over saves j − 1 and j + 1 (one-sided
      at the ends), L_min and L_max the run's lowest and highest losses. The loss is measured from
      the lowest level it reaches, so a plateau high above it and the final approach to it both
      count; the floor keeps a loss that has converged, down to rounding noise, slow.
    - the gradient is small: ‖∇L‖_j ≤ `grad_tol` · the largest gradient norm of the run.

    A plateau is a maximal stretch of consecutive slow saves spanning at least `min_span` in
    log t (t_last / t_first ≥ e^min_span); a shorter stretch, such as the turn of a transition, is
    none. The run's start, before the first transition, and its end, once the loss has converged,
    are plateaus like the others. Saves with a non-finite time, loss or gradient norm, or t ≤ 0,
    are never slow, and do not count towards L_min, L_max or the largest gradient norm. The saves
    should be log-spaced and dense enough to resolve the transitions (tens per decade).

    **Arguments:**

    - `ts`: the save times, increasing, shape `(T,)`.
    - `losses`: the loss at each save, shape `(T,)`.
    - `grad_norms`: ‖∇L‖ at each save, shape `(T,)`; default: no gradient test.
    - `max_phases`: the most plateaus returned (the length `P` of the fields).
    - `loss_tol`: the relative loss change per unit log t below which the loss is slow.
    - `grad_tol`: the fraction of the run's largest gradient norm below which the gradient is small.
    - `floor`: the fraction of the loss range added to the loss scale, see above.
    - `min_span`: the shortest plateau, in units of log t (natural logarithm).

    **Returns:** a [`Plateaus`][]. Pure JAX: jits and `vmap`s over runs (`max_phases` static).

    **Example:** L(t) = e^{−t}, the loss of the flow on ½θ² from θ² = 2, has one plateau: its end,
    once it has converged. Its start is none: the loss changes slowly in log-time there, but the
    gradient is at its largest:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(-3.0, 3.0, 121)
        >>> found = dynamics.phases(ts, jnp.exp(-ts), jnp.sqrt(2 * jnp.exp(-ts)), max_phases=3)
        >>> int(found.count), [round(float(v), 4) for v in found.loss]
        (1, [0.0, nan, nan])
        >>> round(float(found.start_time[0]), 1), float(found.end_time[0])
        (12.6, 1000.0)
    """
    losses = jnp.asarray(losses)
    if not jnp.issubdtype(losses.dtype, jnp.floating):
        losses = losses.astype(jnp.asarray(0.0).dtype)
    dtype = losses.dtype
    ts = jnp.asarray(ts, dtype)
    no_gradient = grad_norms is None
    grad_norms = jnp.zeros_like(losses) if no_gradient else jnp.asarray(grad_norms, dtype)
    num_saves = losses.shape[0]
    usable = jnp.isfinite(ts) & (ts > 0) & jnp.isfinite(losses) & jnp.isfinite(grad_norms)
    log_t = jnp.log(jnp.where(usable, ts, 1.0))

    low = jnp.min(jnp.where(usable, losses, jnp.inf))
    high = jnp.max(jnp.where(usable, losses, -jnp.inf))
    indices = jnp.arange(num_saves)
    before = jnp.clip(indices - 1, 0, num_saves - 1)
    after = jnp.clip(indices + 1, 0, num_saves - 1)
    before = jnp.where(usable[before], before, indices)
    after = jnp.where(usable[after], after, indices)
    span = log_t[after] - log_t[before]
    rate = jnp.abs(losses[after] - losses[before]) / jnp.where(span > 0, span, 1.0)
    loss_slow = (span > 0) & (rate <= loss_tol * (losses - low + floor * (high - low)))
    largest = jnp.max(jnp.where(usable, grad_norms, 0.0))
    grad_small = grad_norms <= grad_tol * largest
    slow = usable & loss_slow & grad_small

    first = slow & ~jnp.concatenate([jnp.zeros(1, bool), slow[:-1]])
    stretch = jnp.where(slow, jnp.cumsum(first) - 1, num_saves)  # num_saves: no stretch
    start_index = jax.ops.segment_min(indices, stretch, num_segments=num_saves)
    end_index = jax.ops.segment_max(indices, stretch, num_segments=num_saves)
    exists = jnp.arange(num_saves) < jnp.sum(first)
    start_index = jnp.where(exists, start_index, 0)
    end_index = jnp.where(exists, end_index, 0)
    kept = exists & (log_t[end_index] - log_t[start_index] >= min_span)
    order = jnp.argsort(~kept, stable=True)[:max_phases]  # the kept stretches first, in time order
    valid = kept[order]
    start_index, end_index = start_index[order], end_index[order]

    on_stretch = (indices[None, :] >= start_index[:, None]) & (indices[None, :] <= end_index[:, None])
    nearest = rate if no_gradient else grad_norms
    save_index = jnp.argmin(jnp.where(on_stretch, nearest[None, :], jnp.inf), axis=1)
    later = (indices[None, :] > end_index[:, None]) & usable[None, :]
    after_index = jnp.where(jnp.any(later, axis=1), jnp.argmax(later, axis=1), -1)

    def pad_index(index):
        return jnp.where(valid, index, -1).astype(jnp.int32)

    return Plateaus(
        start_time=jnp.where(valid, ts[start_index], jnp.nan),
        end_time=jnp.where(valid, ts[end_index], jnp.nan),
        loss=jnp.where(valid, losses[save_index], jnp.nan),
        save_index=pad_index(save_index),
        start_index=pad_index(start_index),
        end_index=pad_index(end_index),
        after_index=pad_index(after_index),
        count=jnp.sum(kept, dtype=jnp.int32),
        slow=slow,
    )


class PlateauSaddles(eqx.Module):
    """The saddle under each plateau of a run, found by [`plateau_saddles`][], and how the run
    escaped it.

    Each field has a leading plateau axis of length P; entries for a padded plateau (save index
    −1) are NaN, and −1 for `index` and `status`.

    **Fields:**

    - `point`: the polished critical point, a PyTree like one save.
    - `loss`: the loss there.
    - `grad_norm`: ‖∇L‖ there.
    - `index`: the number of negative Hessian eigenvalues: positive at a saddle, 0 at a minimum.
    - `escape_direction`: the unit eigenvector of the most negative eigenvalue, a PyTree like one
      save; all zeros at a minimum. See [`CriticalPoint`][].
    - `status`: a [`CriticalPointStatus`][]; only `converged` makes `point` a critical point.
    - `escape_overlap`: how much of the run's escape lies along the saddle's escape: ‖P d‖ / ‖d‖,
      where d is the displacement from the plateau's save to the first save after the plateau and P
      the orthogonal projection onto the eigenspace of the most negative Hessian eigenvalue (the
      eigenvalues within `eig_tol · max|λ|` of it). In [0, 1]; where that eigenvalue is simple it
      is |cos(d, escape_direction)|. NaN at a minimum and where no save follows the plateau.

    **Example:** on L(x, y) = ½x² − ½y² + y⁴/4, a save near the saddle at the origin and a later
    one on the way to the minimum at (0, 1); the second plateau is padding:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2 + 0.25 * theta[1] ** 4
        >>> saves = jnp.array([[0.01, 0.001], [0.0, 0.5]])
        >>> saddles = dynamics.plateau_saddles(loss, saves, jnp.array([0, -1]), jnp.array([1, -1]))
        >>> saddles.index.tolist(), saddles.status.tolist(), saddles.point.tolist()
        ([1, -1], [0, -1], [[0.0, 0.0], [nan, nan]])
        >>> round(float(saddles.escape_overlap[0]), 4), round(0.499 / (0.01**2 + 0.499**2) ** 0.5, 4)
        (0.9998, 0.9998)
    """

    point: PyTree
    loss: Float[Array, " P"]
    grad_norm: Float[Array, " P"]
    index: Int[Array, " P"]
    escape_direction: PyTree
    status: Int[Array, " P"]
    escape_overlap: Float[Array, " P"]


def plateau_saddles(
    loss: Callable[[PyTree], Float[Array, ""]],
    params_saves: PyTree,
    plateau_save_indices: Int[ArrayLike, " P"],
    after_save_indices: Int[ArrayLike, " P"] | None = None,
    *,
    eig_tol: float = 1e-8,
    **kwargs,
) -> PlateauSaddles:
    """Polish the parameters saved on each plateau of one run to the critical point near them, and
    measure how the run's escape from the plateau lines up with the saddle's escape direction.

    Each plateau's save is polished by [`critical_point`][] (one call of one compiled program per
    plateau, in a Python loop, float64: a later call with the same loss and settings compiles
    nothing). The run's escape is the displacement from the plateau's save to the
    first save after the plateau; its overlap with the saddle's escape is defined in
    [`PlateauSaddles`][]. For one run: `vmap` over runs is not supported.

    **Arguments:**

    - `loss`: `params -> scalar`, the loss the run followed.
    - `params_saves`: the saved parameters, a PyTree whose leaves have a leading save axis
      (`Run.values` where the save returns the parameters).
    - `plateau_save_indices`: the save to polish on each plateau, e.g. `Plateaus.save_index`;
      −1 for a padded plateau.
    - `after_save_indices`: the first save after each plateau, e.g. `Plateaus.after_index`; −1
      where none; default: no escape overlap (all NaN).
    - `eig_tol`: as in [`critical_point`][]; also the tolerance within which eigenvalues count as
      the most negative one, for the overlap.
    - `**kwargs`: everything else [`critical_point`][] takes (`max_steps`, `gtol`, ...).

    **Returns:** a [`PlateauSaddles`][].

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`), or when the two index
    arrays differ in length.

    **Example:** on L(x, y) = ½x² − ½y² + y⁴/4 the flow from (1, 10⁻⁶) rests near the saddle at
    the origin, then leaves it along y for the minimum at (0, 1):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2 + 0.25 * theta[1] ** 4
        >>> ts = jnp.logspace(-1.0, 2.0, 61)
        >>> run = dynamics.gradient_flow(loss, jnp.array([1.0, 1e-6]), t1=100.0, save=dynamics.Save(ts=ts))
        >>> saddles = dynamics.plateau_saddles(loss, run.values, jnp.array([40, 60]), jnp.array([48, -1]))
        >>> saddles.index.tolist(), abs(float(saddles.loss[0])) < 1e-12, round(float(saddles.loss[1]), 10)
        ([1, 0], True, -0.25)
        >>> saddles.escape_direction.tolist()[0], round(float(saddles.escape_overlap[0]), 6)
        ([0.0, 1.0], 1.0)
    """
    if not jax.config.read("jax_enable_x64"):
        raise ValueError(
            "plateau_saddles works in float64: call jax.config.update('jax_enable_x64', True) first"
        )
    plateau_save_indices = np.asarray(plateau_save_indices, dtype=np.int64).reshape(-1)
    if after_save_indices is None:
        after_save_indices = np.full_like(plateau_save_indices, -1)
    after_save_indices = np.asarray(after_save_indices, dtype=np.int64).reshape(-1)
    if after_save_indices.shape != plateau_save_indices.shape:
        raise ValueError(
            f"after_save_indices has {after_save_indices.size} entries, plateau_save_indices "
            f"{plateau_save_indices.size}: give one per plateau"
        )
    params_saves = jax.tree.map(lambda leaf: np.asarray(leaf, np.float64), params_saves)

    def save(index):
        return jax.tree.map(lambda leaf: leaf[index], params_saves)

    first = save(0)
    shapes = eqx.filter_eval_shape(_polish_plateau, loss, first, first, np.True_, eig_tol, kwargs)
    padding = jax.tree.map(
        lambda leaf: np.full(leaf.shape, -1 if np.issubdtype(leaf.dtype, np.integer) else np.nan, leaf.dtype),
        shapes,
    )
    results = []
    for index, escape in zip(plateau_save_indices.tolist(), after_save_indices.tolist()):
        if index < 0:
            results.append(padding)
        else:
            escaped = save(escape) if escape >= 0 else save(index)
            polished = _polish_plateau(loss, save(index), escaped, np.bool_(escape >= 0), eig_tol, kwargs)
            results.append(jax.device_get(polished))
    if not results:
        return jax.tree.map(lambda leaf: jnp.zeros((0, *leaf.shape), leaf.dtype), padding)
    return jax.tree.map(lambda *leaves: jnp.asarray(np.stack(leaves)), *results)


@one_program
def _polish_plateau(
    loss: Callable[[PyTree], Float[Array, ""]],
    start: PyTree,
    escaped: PyTree,
    has_escape: Bool[Array, ""],
    eig_tol: float,
    options: dict,
) -> PlateauSaddles:
    """One plateau of [`plateau_saddles`][]: `start` polished to its critical point, and the
    overlap of the escape `escaped − start` with the saddle's escape eigenspace (NaN without an
    escape or at a minimum). One compiled program per loss, settings and shapes."""
    found, eigenvectors = newton_polish(loss, start, eig_tol=eig_tol, **options)
    eigenvalues = found.eigenvalues
    lowest = eigenvalues[0]
    tolerance = eig_tol * jnp.max(jnp.abs(eigenvalues))
    in_eigenspace = eigenvalues <= lowest + tolerance
    displacement = ravel_pytree(escaped)[0] - ravel_pytree(start)[0]
    projection = jnp.where(in_eigenspace, eigenvectors.T @ displacement, 0.0)
    overlap = jnp.linalg.norm(projection) / jnp.linalg.norm(displacement)
    overlap = jnp.where(has_escape & (found.index > 0), overlap, jnp.nan)
    return PlateauSaddles(
        point=found.point,
        loss=found.loss,
        grad_norm=found.grad_norm,
        index=found.index,
        escape_direction=found.escape_direction,
        status=found.status,
        escape_overlap=overlap,
    )
