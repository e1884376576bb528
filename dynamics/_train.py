"""Discrete training: optax steps under `jax.lax.scan`, full-batch or on fresh mini-batches."""

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree

from ._compiled import one_program
from ._flow import Predicate, Save, save_with_carry
from ._params import is_count
from ._progress import scan_ticker
from ._run import Run, StopReason, all_finite


def _select(pred, on_true: PyTree, on_false: PyTree) -> PyTree:
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


@one_program
def train(
    loss: Callable[..., Float[Array, ""]],
    params: PyTree,
    optimizer: optax.GradientTransformation,
    *,
    num_steps: int,
    save: Save | None = None,
    key: PRNGKeyArray | None = None,
    sample: Callable[[PRNGKeyArray], PyTree] | None = None,
    events: Mapping[str, Predicate] | None = None,
) -> Run:
    """Run `num_steps` optimizer steps under `jax.lax.scan`, saving what and when `save` says.

    Full-batch when `sample` is `None` (`loss(params)`, e.g. a population loss: GD is then
    explicit Euler on the gradient flow); otherwise step k draws a fresh mini-batch
    `sample(fold_in(key, k))` and descends `loss(params, batch)` (SGD, momentum, Adam).

    Before each step the `events` are evaluated on the current parameters; the first that
    holds freezes the run there (`Run.stop = event`). A step that would make the parameters
    non-finite is not taken and the run is frozen (`Run.stop = nonfinite`), so a diverging run
    keeps its last finite parameters and never spoils others in the same `vmap`. Traced inside
    [`progress_inside`][], the steps show a progress bar.

    **Arguments:**

    - `loss`: `params -> scalar` (full batch) or `(params, batch) -> scalar` (with `sample`).
    - `params`: the initial parameters.
    - `optimizer`: an optax transformation producing the updates (see [`gd`][],
      [`heavy_ball`][], [`adam`][]).
    - `num_steps`: the number of steps, a multiple of the save period (with save `steps`: at
      least the last).
    - `save`: a [`Save`][] with `every` (default 1) and `fn(step, params, opt_state)`, the
      optimiser's state after that step as its `args` (and its `carry` last, with one): saved at
      steps 0, every, 2·every, ..., num_steps, or at its `steps`; default: the parameters at
      every step.
    - `key`: the PRNG key of the mini-batch stream (required with `sample`).
    - `sample`: `key -> batch`, a task's sampler.
    - `events`: named predicates of the parameters that stop the run.

    **Returns:** a [`Run`][] with `ts` = the saved step numbers.

    **Example:** full-batch GD with η = 0.5 on L(θ) = ½‖θ‖² halves θ at every step; the loss is
    saved every 5 steps and an event stops the run once it is below 10⁻⁶ (at step 11):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * jnp.sum(theta**2)
        >>> run = dynamics.train(
        ...     loss,
        ...     jnp.array([1.0, 2.0]),
        ...     dynamics.gd(0.5),
        ...     num_steps=20,
        ...     save=dynamics.Save(every=5, fn=lambda step, theta, args: loss(theta)),
        ...     events={"converged": lambda theta: loss(theta) < 1e-6},
        ... )
        >>> run.ts.tolist(), [f"{float(v):.3g}" for v in run.values]
        ([0, 5, 10, 15, 20], ['2.5', '0.00244', '2.38e-06', '5.96e-07', '5.96e-07'])
        >>> dynamics.stop_reason(run.stop, run.event, run.event_names), int(run.t_stop)
        ('event:converged', 11)

    SGD on fresh mini-batches: `loss` takes the batch, and `sample` draws it from a key:

        >>> import jax
        >>> run = dynamics.train(
        ...     lambda m, batch: 0.5 * jnp.mean((m - batch) ** 2),
        ...     jnp.array(0.0),
        ...     dynamics.gd(0.1),
        ...     num_steps=200,
        ...     key=jax.random.PRNGKey(0),
        ...     sample=lambda key: 2.0 + jax.random.normal(key, (8,)),
        ... )
        >>> bool(abs(run.final - 2.0) < 0.2)
        True
    """
    save = Save() if save is None else save
    if sample is not None and key is None:
        raise ValueError("key must be given when training on sampled mini-batches")
    predicates = [events[name] for name in (events or {})]
    grad = jax.grad(loss)
    tick = scan_ticker(num_steps)

    def gradient(p, step):
        if sample is None:
            return grad(p)
        return grad(p, sample(jax.random.fold_in(key, step)))

    def one_step(carry, step):
        p, opt_state, stop, event, t_stop = carry
        if predicates:
            fired = jnp.stack([jnp.asarray(pred(p), bool) for pred in predicates])
            hit = jnp.any(fired) & (stop == StopReason.completed)
            stop = jnp.where(hit, StopReason.event, stop)
            event = jnp.where(hit, jnp.argmax(fired), event)
            t_stop = jnp.where(hit, step, t_stop)
        running = stop == StopReason.completed
        updates, new_state = optimizer.update(gradient(p, step), opt_state, p)
        new_p = optax.apply_updates(p, updates)
        diverged = running & ~all_finite(new_p)
        stop = jnp.where(diverged, StopReason.nonfinite, stop)
        t_stop = jnp.where(diverged, step, t_stop)
        accept = running & ~diverged
        carry = (_select(accept, new_p, p), _select(accept, new_state, opt_state), stop, event, t_stop)
        if tick is not None:
            tick(step)
        return carry, None

    init = (
        params,
        optimizer.init(params),
        jnp.array(StopReason.completed),
        jnp.array(-1),
        jnp.array(num_steps),
    )
    carry, ts, values, _ = scan_with_saves(one_step, init, save, num_steps=num_steps)
    final, _, stop, event, t_stop = carry
    return Run(
        ts=ts,
        values=values,
        final=final,
        stop=stop,
        event=event,
        t_stop=t_stop,
        num_steps=jnp.asarray(t_stop),
        event_names=tuple(events or {}),
    )


@one_program
def scan_with_saves(
    one_step: Callable[[PyTree, Array], tuple[PyTree, PyTree]],
    init: PyTree,
    save: Save,
    *,
    num_steps: int,
) -> tuple[PyTree, Int[Array, " S"], PyTree, PyTree]:
    """A training loop's steps under `jax.lax.scan`, recording what `save` says at steps 0,
    every, 2·every, ..., num_steps: the loop of [`train`][], for a task that steps in its own way.
    Called outside `jit`, it compiles as one program, which a later call with the same `one_step`
    and `save` on a new `init` reuses.

    **Arguments:**

    - `one_step`: `(carry, step) -> (carry, output)`; the carry starts with the state and the
      optimiser's state, which `save.fn` sees as its `y` and `args`.
    - `init`: the carry before step 0.
    - `save`: a [`Save`][] with `every` (default 1) or `steps`, `fn(step, y, args)` (`None`: `y`)
      and, with a `carry`, `fn(step, y, args, carry) -> (record, carry)`.
    - `num_steps`: the steps, a multiple of the save period (with `steps`: at least the last).

    **Returns:** `(carry, ts, values, outputs)`: the carry after the last step, the S saved step
    numbers, the records stacked along a leading save axis, and the steps' outputs stacked as
    (S − 1, every, ...) (with `steps`: as (num_steps, ...)).

    **Raises:** `ValueError` as `saved_steps`.

    **Example:** halving y every step and counting the steps, y saved every 2 steps:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> def halve(carry, step):
        ...     y, count = carry
        ...     return (y / 2, count + 1), step
        >>> carry, ts, values, outputs = dynamics.scan_with_saves(
        ...     halve, (jnp.array(1.0), jnp.array(0)), dynamics.Save(every=2), num_steps=4
        ... )
        >>> ts.tolist(), [float(v) for v in values], int(carry[1]), outputs.tolist()
        ([0, 2, 4], [1.0, 0.25, 0.0625], 4, [[0, 1], [2, 3]])
    """
    saved = saved_steps(save, num_steps)
    if save.steps is not None:
        return _scan_to_steps(one_step, init, save, saved, num_steps)
    every = 1 if save.every is None else save.every
    start, fn = save_with_carry(save)

    def block(both, first_step):
        carry, kept = both
        carry, outputs = jax.lax.scan(one_step, carry, first_step + jnp.arange(every))
        record, kept = fn(first_step + every, carry[0], carry[1], kept)
        return (carry, kept), (record, outputs)

    at_start, kept = fn(jnp.asarray(0), init[0], init[1], start(init[0]))
    (carry, _), (saved, outputs) = jax.lax.scan(block, (init, kept), jnp.arange(0, num_steps, every))
    values = jax.tree.map(lambda first, rest: jnp.concatenate([first[None], rest]), at_start, saved)
    return carry, jnp.arange(0, num_steps + 1, every), values, outputs


def _scan_to_steps(one_step, init: PyTree, save: Save, saved: np.ndarray, num_steps: int):
    """[`scan_with_saves`][] at the steps `save.steps`: a scan over the saves, each taking the
    steps since the previous one in a loop of that length, then the steps after the last save;
    the steps' outputs stacked as (num_steps, ...)."""
    start, fn = save_with_carry(save)
    step_zero = jnp.asarray(0)
    shapes = jax.eval_shape(one_step, init, step_zero)[1]
    outputs = jax.tree.map(lambda out: jnp.zeros((num_steps, *out.shape), out.dtype), shapes)

    def advance(carry, outputs, first, count):
        def one(i, both):
            carry, outputs = both
            carry, out = one_step(carry, first + i)
            return carry, jax.tree.map(lambda kept, new: kept.at[first + i].set(new), outputs, out)

        return jax.lax.fori_loop(0, count, one, (carry, outputs))

    def segment(state, bounds):
        carry, kept, outputs = state
        first, count = bounds
        carry, outputs = advance(carry, outputs, first, count)
        record, kept = fn(first + count, carry[0], carry[1], kept)
        return (carry, kept, outputs), record

    firsts = np.concatenate([[0], saved[:-1]])
    bounds = (jnp.asarray(firsts, step_zero.dtype), jnp.asarray(saved - firsts, step_zero.dtype))
    (carry, _, outputs), values = jax.lax.scan(segment, (init, start(init[0]), outputs), bounds)
    last = jnp.asarray(saved[-1], step_zero.dtype)
    carry, outputs = advance(carry, outputs, last, jnp.asarray(num_steps, step_zero.dtype) - last)
    return carry, jnp.asarray(saved, step_zero.dtype), values, outputs


def saved_steps(save: Save, num_steps: int) -> np.ndarray:
    """The step numbers at which training with `save` for `num_steps` steps saves: 0, every,
    2·every, ..., num_steps, or `save.steps`.

    **Raises:** `ValueError` for a `save` with `ts`, `num_steps` not a positive multiple of its
    period, or save steps past `num_steps`.

    **Example:**

        >>> import dynamics
        >>> from dynamics._train import saved_steps
        >>> saved_steps(dynamics.Save(every=5), 20).tolist()
        [0, 5, 10, 15, 20]
        >>> saved_steps(dynamics.Save(steps=dynamics.log_spaced_steps(1000, 5)), 1000).tolist()
        [0, 1, 6, 32, 178, 1000]
    """
    if save.ts is not None:
        raise ValueError(
            "training saves every few steps or at steps, Save(every=...) or Save(steps=...), not at times ts"
        )
    if save.steps is not None:
        if num_steps < 1 or save.steps[-1] > num_steps:
            raise ValueError(
                f"num_steps must be >= 1 and reach the last save step, got num_steps={num_steps}, "
                f"last save step {save.steps[-1]}"
            )
        return np.asarray(save.steps)
    every = 1 if save.every is None else save.every
    if num_steps < 1 or num_steps % every:
        raise ValueError(
            f"num_steps must be a positive multiple of every >= 1, got num_steps={num_steps}, every={every}"
        )
    return np.arange(0, num_steps + 1, every)


def training_save(
    fn: Callable[..., PyTree] | None, *, num_steps: int, every: int, log_saves: int | None = None, **fields
) -> Save:
    """A simulation's training save from its settings: `fn` every `every` steps or, with
    `log_saves` ([`log_saves_param`][]), at [`log_spaced_steps`][]`(num_steps, log_saves)`.

    **Arguments:** `fn`: the save's function, `(step, params, opt_state) -> PyTree`; `num_steps`,
    `every`, `log_saves`: the simulation's settings; `fields`: other fields of the [`Save`][]
    (`carry`).

    **Example:**

        >>> import dynamics
        >>> dynamics.training_save(None, num_steps=1000, every=100, log_saves=3).steps
        (0, 1, 32, 1000)
        >>> dynamics.training_save(None, num_steps=1000, every=100).every
        100
    """
    if log_saves is None:
        return Save(every=every, fn=fn, **fields)
    return Save(steps=log_spaced_steps(num_steps, log_saves), fn=fn, **fields)


def log_spaced_steps(num_steps: int, num_saves: int) -> np.ndarray:
    """Save steps spaced evenly in log-time: 0, then the integers nearest to `num_saves` points
    from 1 to `num_steps` evenly spaced in log(step), repeats dropped (so fewer, early on, where
    consecutive steps are closer than the spacing). For a [`Save`][]'s `steps`: a plateau at
    step 10 and one at step 10⁴ each get a few saves, where saving every 10 steps would miss the
    first and saving every step would store 10⁴ values.

    **Arguments:** `num_steps`: the run's steps (the last save); `num_saves`: the log-spaced saves
    after step 0, at least 1.

    **Returns:** the steps, an int array starting at 0 and ending at `num_steps`.

    **Raises:** `ValueError` for `num_steps` or `num_saves` below 1.

    **Example:**

        >>> import dynamics
        >>> dynamics.log_spaced_steps(100, 5).tolist()
        [0, 1, 3, 10, 32, 100]
        >>> dynamics.log_spaced_steps(10, 20).tolist()
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    """
    for name, value in (("num_steps", num_steps), ("num_saves", num_saves)):
        if not is_count(value):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    points = np.rint(np.geomspace(1, num_steps, num_saves)).astype(np.int64)
    return np.unique(np.concatenate([[0], points, [num_steps]]))
