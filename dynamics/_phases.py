"""The phases of a run: plateaus, where the loss stalls in log-time near a saddle, and the
transitions between them; and the saddle each plateau sits near, with how the run escaped it."""

import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PyTree

from ._compiled import one_program
from ._landscape import newton_polish, require_float64

_STILL = 1e-3
"""The relative rate (the loss's change per e-fold of time, over its height) below which the loss
counts as still: slower rates are all equal, so that a converged loss's rounding noise, or a start
that has not moved yet, is one plateau rather than many."""

_NEIGHBOURS = 8
"""The most saves on each side that enter the slope of the loss at a save (those within `window`)."""

_CANDIDATES_PER_PHASE = 16
"""The valleys examined per plateau returned: the first 16 · `max_phases` in time order, so that
the work grows with the saves, not with their square."""


class Plateaus(eqx.Module):
    """The plateaus of one run, found by [`phases`][dynamics.landscape.phases], in time order, padded to
    `max_phases`.

    Plateau p occupies the saves `start_index[p]` to `end_index[p]`; the transition after it runs
    from its last save to the first save of plateau p + 1 (or to the end of the run). Entries past
    `count` are padding: NaN for the times, losses and measures, −1 for the save indices. Every field
    is an array, so results can be `vmap`ped over runs (each field then gains a leading axis).

    **Fields:**

    - `start_time`, `end_time`: the times of the plateau's first and last saves, shape `(P,)`.
    - `loss`: the loss at `save_index`.
    - `save_index`: the save of lowest gradient norm on the plateau, the one nearest the saddle
      (without gradient norms: the save where the loss changes slowest).
    - `start_index`, `end_index`: the plateau's first and last saves.
    - `after_index`: the first save after the plateau, where the run has begun to escape it; −1
      where the plateau lasts to the last usable save.
    - `depth`: how sure the plateau is: how many times faster (relatively) the loss moves in the
      faster of the transitions beside it than at the plateau's slowest save; at least `min_depth`.
      Infinite for a run that is still throughout.
    - `flatness`: the loss's relative rate at the plateau's slowest save (see `rate`); at most
      10⁻³ is still.
    - `count`: the number of plateaus found among the first 16 · `P` valleys; when it exceeds `P`,
      only the first `P` are returned.
    - `rate`: at every save, the relative rate of the loss, |dL/d log t| / (L − L_min + `floor` ·
      (L_max − L_min)), no less than twice the standard error of the slope, shape `(T,)`: what
      [`phases`][dynamics.landscape.phases] splits.

    **Example:** a loss that drops from 2 to 1 around t = 1 and from 1 to 0 around t = 100, each
    drop a sigmoid in log t, has three plateaus: at 2, at 1 and at 0:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(-2.0, 4.0, 61)
        >>> losses = 1.0 - jnp.tanh(4 * jnp.log(ts)) / 2 - jnp.tanh(4 * jnp.log(ts / 100)) / 2
        >>> found = dynamics.landscape.phases(ts, losses, max_phases=4)
        >>> int(found.count), [round(float(v), 4) for v in found.loss]
        (3, [2.0, 1.0, 0.0, nan])
        >>> found.start_index.tolist(), found.end_index.tolist(), found.after_index.tolist()
        ([0, 22, 43, -1], [18, 39, 60, -1], [19, 40, -1, -1])
    """

    start_time: Float[Array, " P"]
    end_time: Float[Array, " P"]
    loss: Float[Array, " P"]
    save_index: Int[Array, " P"]
    start_index: Int[Array, " P"]
    end_index: Int[Array, " P"]
    after_index: Int[Array, " P"]
    depth: Float[Array, " P"]
    flatness: Float[Array, " P"]
    count: Int[Array, ""]
    rate: Float[Array, " T"]


@one_program
def phases(
    ts: Float[ArrayLike, " T"],
    losses: Float[ArrayLike, " T"],
    grad_norms: Float[ArrayLike, " T"] | None = None,
    *,
    max_phases: int = 8,
    min_depth: float = 3.0,
    leave: float = 0.2,
    window: float = 0.05,
    floor: float = 1e-3,
) -> Plateaus:
    r"""Split the saves of one run into plateaus and the transitions between them.

    A plateau is a valley of the loss's relative rate in log-time: where the loss moves at least
    `min_depth` times slower, relative to its height above the lowest level it reaches, than in the
    transitions on either side. Every test is relative, so the result does not change when time or
    the loss is rescaled or the loss shifted.

    1. The rate at save j is |dL/d log t| / (L_j − L_min + `floor` · (L_max − L_min)): the slope a
       least-squares line through the saves within `window` of log t_j (at least its neighbours, at
       most 8 each side), taken no smaller than twice its standard error, so that noise in a
       Monte-Carlo loss does not read as a stop; rates below 10⁻³ count as 10⁻³ (still).
    2. Its valleys: the turning points of the log of the rate that rise and fall by at least
       log(`min_depth`) (a zigzag over the saves). The run's start and its end are valleys like the
       others when the rate rises after the start or has fallen at the end.
    3. A plateau is the saves about a valley's slowest save whose loss has moved less than `leave`
       of the way to the loss at the fastest save of the transition on each side: it ends where the
       loss leaves it.
    4. With gradient norms, a valley is a plateau only where the gradient is small: its lowest
       gradient norm at least √`min_depth` times below the largest in the transitions beside it
       (up to the valleys next to it). The start of an exponential decay, where the gradient is at
       its largest, is none.

    Saves with a non-finite time, loss or gradient norm, or t ≤ 0, are on no plateau and do not
    count towards L_min or L_max. The saves should be log-spaced and dense enough to resolve the
    transitions (tens per decade); a run that stays still throughout is one plateau.

    **Arguments:**

    - `ts`: the save times, increasing, shape `(T,)`.
    - `losses`: the loss at each save, shape `(T,)`.
    - `grad_norms`: ‖∇L‖ at each save, shape `(T,)`; default: no gradient test.
    - `max_phases`: the most plateaus returned (the length `P` of the fields).
    - `min_depth`: how many times faster the transitions beside a plateau must move the loss (> 1).
    - `leave`: the fraction of the way to the next transition's fastest save at which the loss
      has left the plateau (in (0, 1)).
    - `window`: the half-width in log t of the saves that enter each slope.
    - `floor`: the fraction of the loss range added to the loss's height, see above.

    **Returns:** a [`Plateaus`][dynamics.landscape.Plateaus]. Pure JAX: jits and `vmap`s over runs (the
    settings static).

    **Raises:** `ValueError` for a setting out of its range
    ([`check_phase_settings`][dynamics.landscape.check_phase_settings]).

    **Example:** $L(t) = e^{-t}$, the loss of the flow on $\tfrac12\theta^2$ from $\theta^2 = 2$, has one
    plateau: its end, once it has converged. Its start is none: the loss changes slowly in log-time
    there, but the gradient is at its largest:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(-3.0, 3.0, 121)
        >>> found = dynamics.landscape.phases(ts, jnp.exp(-ts), jnp.sqrt(2 * jnp.exp(-ts)), max_phases=3)
        >>> int(found.count), [round(float(v), 4) for v in found.loss]
        (1, [0.0, nan, nan])
        >>> round(float(found.start_time[0]), 1), float(found.end_time[0])
        (7.9, 1000.0)
    """
    check_phase_settings(max_phases=max_phases, min_depth=min_depth, leave=leave, window=window, floor=floor)
    losses = jnp.asarray(losses)
    if not jnp.issubdtype(losses.dtype, jnp.floating):
        losses = losses.astype(jnp.asarray(0.0).dtype)
    dtype = losses.dtype
    ts = jnp.asarray(ts, dtype)
    no_gradient = grad_norms is None
    grad_norms = jnp.zeros_like(losses) if no_gradient else jnp.asarray(grad_norms, dtype)
    num_saves = losses.shape[0]
    indices = jnp.arange(num_saves)
    usable = jnp.isfinite(ts) & (ts > 0) & jnp.isfinite(losses) & jnp.isfinite(grad_norms)
    log_t = jnp.log(jnp.where(usable, ts, 1.0))
    low = jnp.min(jnp.where(usable, losses, jnp.inf))
    high = jnp.max(jnp.where(usable, losses, -jnp.inf))
    height = losses - low + floor * (high - low)
    rate, fitted = _relative_rate(log_t, losses, height, usable, window)
    level = jnp.log(jnp.maximum(rate, _STILL))
    kind, at = _turning_points(level, fitted, math.log(min_depth))

    valley = kind == _VALLEY
    turns = jnp.sum(kind != 0)
    left = jnp.where(indices >= 1, at[jnp.clip(indices - 1, 0)], -1)
    right = jnp.where(indices + 1 < turns, at[jnp.clip(indices + 1, 0, num_saves - 1)], -1)
    before = jnp.where(indices >= 2, at[jnp.clip(indices - 2, 0)], 0)  # the valleys beside, or the ends
    beyond = jnp.where(indices + 2 < turns, at[jnp.clip(indices + 2, 0, num_saves - 1)], num_saves - 1)
    still_throughout = (
        (turns == 0) & jnp.any(fitted) & (jnp.max(jnp.where(fitted, level, -jnp.inf)) <= math.log(_STILL))
    )
    valley = valley.at[0].set(valley[0] | still_throughout)
    at = at.at[0].set(jnp.where(still_throughout, jnp.argmin(jnp.where(fitted, rate, jnp.inf)), at[0]))

    candidates = min(num_saves, _CANDIDATES_PER_PHASE * max_phases)  # masks of candidates x saves
    order = jnp.argsort(~valley, stable=True)[:candidates]  # the valleys first, in time order
    bottom, left, right, before, beyond = at[order], left[order], right[order], before[order], beyond[order]
    start_index, end_index = _leaving(losses, usable, bottom, left, right, leave)
    on_stretch = (indices[None, :] >= start_index[:, None]) & (indices[None, :] <= end_index[:, None])
    on_stretch &= usable[None, :]
    sides = jnp.stack([left, right])  # the transitions' fastest saves, −1: none
    depth = jnp.exp(
        jnp.min(jnp.where(sides >= 0, level[jnp.clip(sides, 0)], jnp.inf), axis=0) - level[bottom]
    )
    around = (indices[None, :] >= before[:, None]) & (indices[None, :] <= beyond[:, None]) & usable[None, :]
    lowest_gradient = jnp.min(jnp.where(on_stretch, grad_norms[None, :], jnp.inf), axis=1)
    largest_gradient = jnp.max(jnp.where(around, grad_norms[None, :], -jnp.inf), axis=1)
    small = largest_gradient >= math.sqrt(min_depth) * lowest_gradient
    kept = valley[order] & (no_gradient | small)

    order = jnp.argsort(~kept, stable=True)[:max_phases]  # the plateaus first, in time order
    valid = kept[order]
    start_index, end_index, on_stretch = start_index[order], end_index[order], on_stretch[order]
    nearest = rate if no_gradient else grad_norms
    save_index = jnp.argmin(jnp.where(on_stretch, nearest[None, :], jnp.inf), axis=1)
    later = (indices[None, :] > end_index[:, None]) & usable[None, :]
    after_index = jnp.where(jnp.any(later, axis=1), jnp.argmax(later, axis=1), -1)

    def pad_index(index):
        return jnp.where(valid, index, -1).astype(jnp.int32)

    def pad(values):
        return jnp.where(valid, values, jnp.nan)

    return Plateaus(
        start_time=pad(ts[start_index]),
        end_time=pad(ts[end_index]),
        loss=pad(losses[save_index]),
        save_index=pad_index(save_index),
        start_index=pad_index(start_index),
        end_index=pad_index(end_index),
        after_index=pad_index(after_index),
        depth=pad(depth[order]),
        flatness=pad(rate[bottom[order]]),
        count=jnp.sum(kept, dtype=jnp.int32),
        rate=rate,
    )


_VALLEY, _PEAK = 1, 2


_SETTING_RANGES = {
    "max_phases": (lambda value: isinstance(value, int) and value >= 1, "an integer >= 1"),
    "min_depth": (lambda value: value > 1, "a number > 1"),
    "leave": (lambda value: 0 < value < 1, "a number in (0, 1)"),
    "window": (lambda value: value >= 0, "a number >= 0"),
    "floor": (lambda value: value >= 0, "a number >= 0"),
}
"""Each setting of [`phases`][dynamics.landscape.phases]: whether a value is in its range, and the range in
words."""


def check_phase_settings(**settings) -> None:
    """Refuse settings of [`phases`][dynamics.landscape.phases] (and
    [`sweep_phases`][dynamics.landscape.sweep_phases]) out of their ranges, before any work: the keyword
    arguments given, each by its name (`max_phases`, `min_depth`, `leave`, `window`, `floor`).

    **Raises:** `ValueError` naming every setting out of range and what it must be, or a name that
    is not a setting.

    **Example:**

        >>> import dynamics
        >>> dynamics.landscape.check_phase_settings(min_depth=2.0)
        >>> dynamics.landscape.check_phase_settings(min_depth=1.0, leave=1.5)
        Traceback (most recent call last):
        ...
        ValueError: phases: min_depth must be a number > 1, got 1.0; leave must be a number in (0, 1), got 1.5
    """
    unknown = sorted(set(settings) - set(_SETTING_RANGES))
    if unknown:
        raise ValueError(
            f"phases has no setting {', '.join(unknown)} (its settings: {', '.join(_SETTING_RANGES)})"
        )
    wrong = [
        f"{name} must be {_SETTING_RANGES[name][1]}, got {value!r}"
        for name, value in settings.items()
        if not _SETTING_RANGES[name][0](value)
    ]
    if wrong:
        raise ValueError("phases: " + "; ".join(wrong))


def _relative_rate(log_t, losses, height, usable, window):
    """|dL/d log t| / `height` at every save, and which saves have a slope (two usable saves or
    more at distinct times about them): the slope of a least-squares line through the saves within
    `window` of the save in log t (at least its usable neighbours, at most `_NEIGHBOURS` each side),
    taken no smaller than twice its standard error."""
    num_saves = losses.shape[0]
    offsets = jnp.arange(-_NEIGHBOURS, _NEIGHBOURS + 1)
    around = jnp.arange(num_saves)[:, None] + offsets[None, :]
    clipped = jnp.clip(around, 0, num_saves - 1)
    du = log_t[clipped] - log_t[:, None]
    inside = (around >= 0) & (around < num_saves) & usable[clipped] & usable[:, None]
    inside &= (jnp.abs(du) <= window) | (jnp.abs(offsets)[None, :] <= 1)
    count = jnp.sum(inside, axis=1).astype(losses.dtype)
    du = jnp.where(inside, du, 0.0)
    dl = jnp.where(inside, losses[clipped] - losses[:, None], 0.0)
    du = jnp.where(inside, du - (jnp.sum(du, 1) / jnp.maximum(count, 1))[:, None], 0.0)
    dl = jnp.where(inside, dl - (jnp.sum(dl, 1) / jnp.maximum(count, 1))[:, None], 0.0)
    spread = jnp.sum(du * du, axis=1)
    fitted = usable & (spread > 0)
    spread = jnp.where(fitted, spread, 1.0)
    slope = jnp.sum(du * dl, axis=1) / spread
    residual = jnp.sum((dl - slope[:, None] * du) ** 2, axis=1)
    error = jnp.sqrt(residual / jnp.maximum(count - 2, 1) / spread)
    rate = jnp.maximum(jnp.abs(slope), 2.0 * error) / height
    return jnp.where(fitted, rate, jnp.nan), fitted


def _turning_points(level, fitted, rise):
    """The valleys and peaks of `level` over the saves where `fitted`, each at least `rise` below
    (a valley) or above (a peak) its neighbours (a zigzag), in time order: `kind` (`_VALLEY`,
    `_PEAK`, or 0 past the last) and `at` (the save), each of length T; the last entry of the
    zigzag, the running extreme at the run's end, counts when the level has moved `rise` from the
    turning point before it."""
    num_saves = level.shape[0]
    seeking_none, seeking_peak, seeking_valley = 0, 1, 2
    saves = jnp.arange(num_saves)
    none = jnp.zeros((), saves.dtype)

    def step(state, save):
        mode, low, low_at, high, high_at = state
        value, ok, j = save
        new_low, new_high = value < low, value > high
        low, low_at = jnp.where(new_low, value, low), jnp.where(new_low, j, low_at)
        high, high_at = jnp.where(new_high, value, high), jnp.where(new_high, j, high_at)
        rose = (mode != seeking_peak) & (value - low >= rise)
        fell = (mode != seeking_valley) & ~rose & (high - value >= rise)
        event = jnp.where(rose, _VALLEY, jnp.where(fell, _PEAK, 0))
        where = jnp.where(rose, low_at, high_at)
        mode = jnp.where(rose, seeking_peak, jnp.where(fell, seeking_valley, mode))
        low, low_at = jnp.where(fell, value, low), jnp.where(fell, j, low_at)
        high, high_at = jnp.where(rose, value, high), jnp.where(rose, j, high_at)
        new = (mode, low, low_at, high, high_at)
        return jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, state), (jnp.where(ok, event, 0), where)

    state = (
        jnp.int32(seeking_none),
        jnp.asarray(jnp.inf, level.dtype),
        none,
        -jnp.asarray(jnp.inf, level.dtype),
        none,
    )
    (mode, _, low_at, _, high_at), (events, where) = jax.lax.scan(step, state, (level, fitted, saves))
    last = jnp.where(mode == seeking_valley, _VALLEY, jnp.where(mode == seeking_peak, _PEAK, 0))
    events = jnp.concatenate([events, last[None]])
    where = jnp.concatenate([where, jnp.where(mode == seeking_valley, low_at, high_at)[None]])
    slot = jnp.where(events > 0, jnp.cumsum(events > 0) - 1, num_saves + 1)
    kind = jnp.zeros(num_saves + 1, jnp.int32).at[slot].set(events, mode="drop")
    at = jnp.zeros(num_saves + 1, saves.dtype).at[slot].set(where, mode="drop")
    return kind[:num_saves], at[:num_saves]


def _leaving(losses, usable, bottom, left, right, leave):
    """The first and last saves of the plateau about each valley's slowest save `bottom`: those
    between the transitions' fastest saves `left` and `right` (−1: none) whose loss has moved less
    than `leave` of the way from the loss at `bottom` to the loss there."""
    num_saves = losses.shape[0]
    indices = jnp.arange(num_saves)
    level = losses[bottom][:, None]

    def moved(side):
        gap = jnp.abs(losses[jnp.clip(side, 0)] - losses[bottom])
        far = jnp.abs(losses[None, :] - level) >= leave * gap[:, None]
        return jnp.where((side >= 0)[:, None], far, False) | ~usable[None, :]

    before = (indices[None, :] < bottom[:, None]) & (indices[None, :] >= jnp.maximum(left, 0)[:, None])
    before &= moved(left)
    after = (indices[None, :] > bottom[:, None]) & (
        indices[None, :] <= jnp.where(right >= 0, right, num_saves - 1)[:, None]
    )
    after &= moved(right)
    first_usable = jnp.argmax(usable)
    last_usable = num_saves - 1 - jnp.argmax(usable[::-1])
    start = jnp.where(
        jnp.any(before, 1),
        num_saves - jnp.argmax(before[:, ::-1], 1),
        jnp.maximum(jnp.maximum(left, 0), first_usable),
    )
    end = jnp.where(jnp.any(after, 1), jnp.argmax(after, 1) - 1, jnp.where(right >= 0, right, last_usable))
    return start, end


class PlateauSaddles(eqx.Module):
    """The saddle under each plateau of a run, found by
    [`plateau_saddles`][dynamics.landscape.plateau_saddles], and how the run escaped it.

    Each field has a leading plateau axis of length P; entries for a padded plateau (save index
    −1) are NaN, and −1 for `index` and `status`.

    **Fields:**

    - `point`: the polished critical point, a PyTree like one save.
    - `loss`: the loss there.
    - `grad_norm`: ‖∇L‖ there.
    - `index`: the number of negative Hessian eigenvalues: positive at a saddle, 0 at a minimum.
    - `zero_count`: the number of Hessian eigenvalues within `eig_tol`·max|λ| of 0 (flat
      directions: a degenerate saddle, a valley of critical points).
    - `distance`: how far the polish moved from the plateau's save.
    - `escape_direction`: the unit eigenvector of the most negative eigenvalue, a PyTree like one
      save; all zeros at a minimum. See [`CriticalPoint`][dynamics.landscape.CriticalPoint].
    - `status`: a [`CriticalPointStatus`][dynamics.landscape.CriticalPointStatus]; only `converged` makes
      `point` a critical point.
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
        >>> saddles = dynamics.landscape.plateau_saddles(loss, saves, jnp.array([0, -1]), jnp.array([1, -1]))
        >>> saddles.index.tolist(), saddles.status.tolist(), saddles.point.tolist()
        ([1, -1], [0, -1], [[0.0, 0.0], [nan, nan]])
        >>> round(float(saddles.escape_overlap[0]), 4), round(0.499 / (0.01**2 + 0.499**2) ** 0.5, 4)
        (0.9998, 0.9998)
    """

    point: PyTree
    loss: Float[Array, " P"]
    grad_norm: Float[Array, " P"]
    index: Int[Array, " P"]
    zero_count: Int[Array, " P"]
    distance: Float[Array, " P"]
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

    Each plateau's save is polished by [`critical_point`][dynamics.landscape.critical_point] (one call of
    one compiled program per plateau, in a Python loop, float64: a later call with the same loss and
    settings compiles nothing). The run's escape is the displacement from the plateau's save to the first
    save after the plateau; its overlap with the saddle's escape is defined in
    [`PlateauSaddles`][dynamics.landscape.PlateauSaddles]. For one run: `vmap` over runs is not supported.

    **Arguments:**

    - `loss`: `params -> scalar`, the loss the run followed.
    - `params_saves`: the saved parameters, a PyTree whose leaves have a leading save axis
      (`Run.values` where the save returns the parameters).
    - `plateau_save_indices`: the save to polish on each plateau, e.g. `Plateaus.save_index`;
      −1 for a padded plateau.
    - `after_save_indices`: the first save after each plateau, e.g. `Plateaus.after_index`; −1
      where none; default: no escape overlap (all NaN).
    - `eig_tol`: as in [`critical_point`][dynamics.landscape.critical_point]; also the tolerance within
      which eigenvalues count as the most negative one, for the overlap.
    - `**kwargs`: everything else [`critical_point`][dynamics.landscape.critical_point] takes (`max_steps`,
      `gtol`, ...).

    **Returns:** a [`PlateauSaddles`][dynamics.landscape.PlateauSaddles].

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`), or when the two index
    arrays differ in length.

    **Example:** on L(x, y) = ½x² − ½y² + y⁴/4 the flow from (1, 10⁻⁶) rests near the saddle at
    the origin, then leaves it along y for the minimum at (0, 1):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2 + 0.25 * theta[1] ** 4
        >>> ts = jnp.logspace(-1.0, 2.0, 61)
        >>> run = dynamics.gradient_flow(loss, jnp.array([1.0, 1e-6]), t1=100.0, save=dynamics.Save(ts=ts))
        >>> at, after = jnp.array([40, 60]), jnp.array([48, -1])
        >>> saddles = dynamics.landscape.plateau_saddles(loss, run.values, at, after)
        >>> saddles.index.tolist(), abs(float(saddles.loss[0])) < 1e-12, round(float(saddles.loss[1]), 10)
        ([1, 0], True, -0.25)
        >>> saddles.escape_direction.tolist()[0], round(float(saddles.escape_overlap[0]), 6)
        ([0.0, 1.0], 1.0)
    """
    require_float64("plateau_saddles")
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
        return PlateauSaddles(**jax.tree.map(lambda leaf: jnp.zeros((0, *leaf.shape), leaf.dtype), padding))
    return PlateauSaddles(**jax.tree.map(lambda *leaves: jnp.asarray(np.stack(leaves)), *results))


@one_program
def _polish_plateau(
    loss: Callable[[PyTree], Float[Array, ""]],
    start: PyTree,
    escaped: PyTree,
    has_escape: Bool[Array, ""],
    eig_tol: float,
    options: dict,
) -> dict[str, PyTree]:
    """One plateau of [`plateau_saddles`][dynamics.landscape.plateau_saddles]: `start` polished to its
    critical point, and the overlap of the escape `escaped − start` with the saddle's escape eigenspace (NaN
    without an escape or at a minimum), as the fields of one plateau of a
    [`PlateauSaddles`][dynamics.landscape.PlateauSaddles]. One compiled program per loss, settings and
    shapes."""
    found, eigenvectors = newton_polish(loss, start, eig_tol=eig_tol, **options)
    eigenvalues = found.eigenvalues
    lowest = eigenvalues[0]
    tolerance = eig_tol * jnp.max(jnp.abs(eigenvalues))
    zero_count = jnp.sum(jnp.abs(eigenvalues) <= tolerance)
    in_eigenspace = eigenvalues <= lowest + tolerance
    displacement = ravel_pytree(escaped)[0] - ravel_pytree(start)[0]
    projection = jnp.where(in_eigenspace, eigenvectors.T @ displacement, 0.0)
    overlap = jnp.linalg.norm(projection) / jnp.linalg.norm(displacement)
    overlap = jnp.where(has_escape & (found.index > 0), overlap, jnp.nan)
    return {
        "point": found.point,
        "loss": found.loss,
        "grad_norm": found.grad_norm,
        "index": found.index,
        "zero_count": zero_count,
        "distance": found.distance,
        "escape_direction": found.escape_direction,
        "status": found.status,
        "escape_overlap": overlap,
    }
