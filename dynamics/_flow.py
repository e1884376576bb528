"""Continuous-time dynamics: any ODE on a PyTree state, and gradient flow dθ/dt = −R ⊙ ∇L(θ)."""

from collections.abc import Callable, Mapping

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, ArrayLike, Float, PyTree

from ._compiled import one_program
from ._params import is_count
from ._progress import flow_meter
from ._rates import Rates, scale_tree
from ._run import Run, StopReason, all_finite

Predicate = Callable[[PyTree], ArrayLike]
"""A function of the state returning a boolean scalar, e.g. `lambda p: loss(p) < 1e-3`."""


class Crossing(eqx.Module):
    """An event located exactly: the run stops where `fn(state)` changes sign, at the time a root
    finder (Newton on Diffrax's dense interpolant) places the crossing, so `Run.t_stop` and
    `Run.final` are those of the crossing itself rather than of the end of a solver step (where a
    boolean `Predicate` fires).

    **Fields:** `fn`: `state -> real scalar`, e.g. `lambda p: loss(p) - 1e-3`.

    **Example:** dy/dt = −y from y(0) = 1 (float64) stops where y = ½, at t = ln 2:

        >>> import math
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> half = dynamics.Crossing(lambda y: y - 0.5)
        >>> run = dynamics.ode_flow(lambda t, y, args: -y, jnp.array(1.0), t1=5.0, events={"half": half})
        >>> dynamics.stop_reason(run.stop, run.event, run.event_names)
        'event:half'
        >>> round(float(run.t_stop), 8) == round(math.log(2.0), 8), round(float(run.final), 8)
        (True, 0.5)
    """

    fn: Callable[[PyTree], Float[Array, ""]]


def _steps_tuple(steps) -> tuple | None:
    """`Save.steps` as a tuple (hashable: it is static), from a sequence or a 1-D array; anything
    else is kept for `Save`'s check to refuse."""
    if hasattr(steps, "shape") and hasattr(steps, "tolist"):
        steps = steps.tolist()
    return tuple(steps) if isinstance(steps, list | tuple | range) else steps


class Save(eqx.Module):
    r"""What a run records, and when: `fn(t, y, args)` at the times `ts` of a flow (Diffrax's
    `SubSaveAt`), or every `every` steps of discrete training ([`train`][]), or at the training
    steps `steps` (e.g. log-spaced: [`log_spaced_steps`][], where a plateau's start and end are
    both seen without saving every step).

    **Fields:**

    - `ts`: a flow's save times; default `[t0, t1]`.
    - `fn`: `(t, y, args) -> PyTree`: the time (for training, the step number), the state (the
      parameters) and the vector field's `args` (in training, the optimiser's state); default:
      the state.
    - `every`: [`train`][]'s save period in steps: it saves at steps 0, every, 2·every, ...,
      num_steps; default 1.
    - `steps`: [`train`][]'s save steps instead: strictly increasing integers ≥ 0, each a
      number of steps taken (0: the start), at most the run's `num_steps`; the run goes on to
      `num_steps` after the last. One of `ts`, `every` and `steps`, not two.
    - `carry`: in training only, `state -> PyTree`, what `fn` starts with at the first save: `fn`
      is then `(t, y, args, carry) -> (record, carry)` and each save hands its `carry` to the next
      (e.g. the last top Hessian eigenvector, to start the next Lanczos run from). Default: none,
      and `fn` takes no `carry`.

    **Raises:** `ValueError` for two of `ts`, `every` and `steps`, an `every` that is not an integer
    ≥ 1, `steps` that are not strictly increasing integers ≥ 0, or a `carry` with `ts` (a flow's
    saves are independent of each other).

    **Example:** save $y^2$ at $t = 0, 1, 2$ along $dy/dt = -y$, so $y^2 = e^{-2t}$; then the same
    function every 2 steps of gradient descent on $\tfrac12 y^2$ with step 0.5, which halves $y$ at
    each step:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> square = lambda t, y, args: {"y2": y**2}
        >>> save = dynamics.Save(ts=jnp.array([0.0, 1.0, 2.0]), fn=square)
        >>> run = dynamics.ode_flow(lambda t, y, args: -y, jnp.array(1.0), t1=2.0, save=save)
        >>> [round(float(v), 4) for v in run.values["y2"]]
        [1.0, 0.1353, 0.0183]
        >>> loss = lambda y: 0.5 * y**2
        >>> every_two = dynamics.Save(every=2, fn=square)
        >>> run = dynamics.train(loss, jnp.array(1.0), dynamics.gd(0.5), num_steps=4, save=every_two)
        >>> run.ts.tolist(), [float(v) for v in run.values["y2"]]
        ([0, 2, 4], [1.0, 0.0625, 0.00390625])

    At the steps 0, 1, 3 of the same descent instead, y halving at each step:

        >>> at = dynamics.Save(steps=(0, 1, 3), fn=square)
        >>> run = dynamics.train(loss, jnp.array(1.0), dynamics.gd(0.5), num_steps=4, save=at)
        >>> run.ts.tolist(), [float(v) for v in run.values["y2"]], float(run.final)
        ([0, 1, 3], [1.0, 0.25, 0.015625], 0.0625)

    A `carry` passed from save to save: here the largest |y| met so far, which the run's saves
    alone cannot tell (they only see y now):

        >>> def largest(step, y, args, seen):
        ...     seen = jnp.maximum(seen, jnp.abs(y))
        ...     return {"y": y, "largest": seen}, seen
        >>> record = dynamics.Save(every=1, fn=largest, carry=jnp.abs)
        >>> run = dynamics.train(loss, jnp.array(1.0), dynamics.gd(3.0), num_steps=3, save=record)
        >>> [float(v) for v in run.values["y"]], [float(v) for v in run.values["largest"]]
        ([1.0, -2.0, 4.0, -8.0], [1.0, 2.0, 4.0, 8.0])
    """

    ts: Float[ArrayLike, " T"] | None = None
    fn: Callable[..., PyTree] | None = None
    every: int | None = eqx.field(default=None, static=True)
    carry: Callable[[PyTree], PyTree] | None = None
    steps: tuple[int, ...] | None = eqx.field(default=None, static=True, converter=_steps_tuple)

    def __check_init__(self):
        given = [name for name in ("ts", "every", "steps") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(
                "Save takes one of ts (a flow's save times), every (a training's period) and steps (a "
                f"training's save steps), got {' and '.join(given)}"
            )
        if self.ts is not None and self.carry is not None:
            raise ValueError("a carry passes from save to save in training (every=...), not at a flow's ts")
        if self.every is not None and (
            isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1
        ):
            raise ValueError(f"Save: every must be an integer >= 1, got {self.every!r}")
        if self.steps is not None:
            steps = self.steps if isinstance(self.steps, tuple) else ()
            whole = steps and all(is_count(n, 0) for n in steps)
            if not (whole and all(a < b for a, b in zip(steps, steps[1:]))):
                raise ValueError(f"Save: steps must be strictly increasing integers >= 0, got {self.steps!r}")


def save_with_carry(save: Save) -> tuple[Callable[[PyTree], PyTree], Callable[..., tuple[PyTree, PyTree]]]:
    """`save`'s function as one that keeps a carry, whether it has one or not (how
    [`scan_with_saves`][] and [`train_stages`][] read a training save).

    **Returns:** `(start, fn)`: `start(state)` the carry at the first save (`None` for a `save`
    without one) and `fn(t, y, args, carry) -> (record, carry)`; the record is the state when
    `save.fn` is `None`.
    """
    if save.carry is not None:
        return save.carry, save.fn
    fn = _the_state if save.fn is None else save.fn
    return _no_carry, lambda t, y, args, carry: (fn(t, y, args), carry)


def _the_state(t, y, args) -> PyTree:
    return y


def _no_carry(state: PyTree) -> None:
    return None


Event = Predicate | Crossing
"""A named stopping condition of a flow: a boolean `Predicate` of the state (checked at the
end of each solver step) or a real-valued [`Crossing`][] (located by root finding)."""

_DEFAULT_CONTROLLER = diffrax.PIDController(rtol=1e-8, atol=1e-10)
"""The step-size controller of [`ode_flow`][] when none is given."""


@one_program
def ode_flow(
    vector_field: Callable[[Float[Array, ""], PyTree, PyTree], PyTree],
    y0: PyTree,
    *,
    t1: float | Float[ArrayLike, ""],
    t0: float | Float[ArrayLike, ""] = 0.0,
    args: PyTree = None,
    save: Save | None = None,
    events: Mapping[str, Event] | None = None,
    solver: diffrax.AbstractSolver | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    dt0: float | None = None,
    max_steps: int = 100_000,
    adjoint: diffrax.AbstractAdjoint | None = None,
) -> Run:
    """Integrate dy/dt = vector_field(t, y, args) with adaptive step control (Diffrax).

    The run stops at `t1`, or earlier when one of `events` becomes true or the state stops
    being finite; `Run.stop` and `Run.event` say which. Traced inside [`progress_inside`][], the
    solve shows Diffrax's progress bar.

    **Arguments:**

    - `vector_field`: `(t, y, args) -> dy/dt`, a PyTree like `y`.
    - `y0`: the initial state (any PyTree of arrays, e.g. an Equinox model).
    - `t1`, `t0`: the time interval.
    - `args`: passed through to `vector_field`.
    - `save`: what to save and when, a [`Save`][]; default: the state at `t0` and `t1`.
    - `events`: named `Event`s: boolean predicates of the state, or [`Crossing`][]s located
      exactly by root finding; the first to fire stops the run, and `Run.event_names` keeps the
      names.
    - `solver`: a Diffrax solver; default `Tsit5()`.
    - `stepsize_controller`: a Diffrax step-size controller; default
      `diffrax.PIDController(rtol=1e-8, atol=1e-10)`. Pass e.g.
      `diffrax.PIDController(rtol=1e-10, atol=1e-12)` for tighter tolerances, or
      `diffrax.ConstantStepSize()` (with `dt0`) for fixed steps.
    - `dt0`: the first step; default chosen by the controller.
    - `max_steps`: the solver's step budget; a run that exhausts it stops with
      `StopReason.max_steps` at the time it reached (`Run.t_stop`).
    - `adjoint`: how to differentiate through the solve; default Diffrax's
      `RecursiveCheckpointAdjoint` (reverse mode, exact for the discretised solve).

    **Returns:** a [`Run`][].

    **Example:** $dy/dt = -a y$ with `a` passed as `args`, saved at 5 times (float64), ends at
    $y(2) = e^{-2a}$:

        >>> import math
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> run = dynamics.ode_flow(
        ...     lambda t, y, args: -args * y,
        ...     jnp.array(1.0),
        ...     t1=2.0,
        ...     args=0.5,
        ...     save=dynamics.Save(ts=jnp.linspace(0.0, 2.0, 5)),
        ... )
        >>> run.ts.shape, run.values.shape
        ((5,), (5,))
        >>> round(float(run.final), 8) == round(math.exp(-1.0), 8)
        True
        >>> dynamics.stop_reason(run.stop, run.event, run.event_names), float(run.t_stop)
        ('completed', 2.0)
    """
    save = Save() if save is None else save
    if save.every is not None or save.steps is not None:
        raise ValueError("a flow saves at times, Save(ts=...), not every few steps or at steps")
    save_ts = jnp.asarray([t0, t1] if save.ts is None else save.ts)
    if save.carry is not None:
        raise ValueError("a flow's saves keep no carry: Save(carry=...) is for training")
    save_fn = (lambda t, y, args: y) if save.fn is None else save.fn
    names = tuple(events or {})
    conditions = [_condition(events[name]) for name in names]
    conditions.append(lambda t, y, args, **kw: jnp.logical_not(all_finite(y)))
    event = diffrax.Event(conditions, root_finder=_root_finder(events or {}, y0))
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field),
        diffrax.Tsit5() if solver is None else solver,
        t0=t0,
        t1=t1,
        dt0=dt0,
        y0=y0,
        args=args,
        saveat=diffrax.SaveAt(
            subs=[
                diffrax.SubSaveAt(ts=save_ts, fn=save_fn),
                diffrax.SubSaveAt(t1=True),
            ]
        ),
        stepsize_controller=_DEFAULT_CONTROLLER if stepsize_controller is None else stepsize_controller,
        event=event,
        max_steps=max_steps,
        adjoint=diffrax.RecursiveCheckpointAdjoint() if adjoint is None else adjoint,
        progress_meter=flow_meter(),
        throw=False,
    )
    (save_times, final_times), (values, final) = sol.ts, sol.ys
    final = jax.tree.map(lambda x: x[0], final)
    fired = jnp.stack(sol.event_mask)  # one flag per predicate; the last is the non-finite check
    event_index = jnp.where(jnp.any(fired[:-1]), jnp.argmax(fired[:-1]), -1) if names else jnp.array(-1)
    stop = jnp.where(
        sol.result == diffrax.RESULTS.event_occurred,
        jnp.where(fired[-1] | ~all_finite(final), StopReason.nonfinite, StopReason.event),
        jnp.where(
            sol.result == diffrax.RESULTS.successful,
            StopReason.completed,
            jnp.where(
                sol.result == diffrax.RESULTS.max_steps_reached,
                StopReason.max_steps,
                StopReason.solver_failure,
            ),
        ),
    )
    return Run(
        ts=save_times,
        values=values,
        final=final,
        stop=stop,
        event=jnp.where(stop == StopReason.event, event_index, -1),
        t_stop=final_times[0],
        num_steps=sol.stats["num_steps"],
        event_names=names,
    )


def _condition(event: Event) -> Callable:
    if isinstance(event, Crossing):
        return lambda t, y, args, **kw: event.fn(y)
    return lambda t, y, args, **kw: event(y)


def _root_finder(events: Mapping[str, Event], y0: PyTree) -> optx.AbstractRootFinder | None:
    """Newton to a hundred machine epsilons of the state's precision, when a crossing needs it."""
    if not any(isinstance(e, Crossing) for e in events.values()):
        return None
    dtypes = [jnp.result_type(x) for x in jax.tree.leaves(y0)]
    inexact = [d for d in dtypes if jnp.issubdtype(d, jnp.inexact)]
    tol = 100 * float(jnp.finfo(jnp.result_type(*inexact) if inexact else float).eps)
    return optx.Newton(rtol=tol, atol=tol)


@one_program
def gradient_flow(
    loss: Callable[[PyTree], Float[Array, ""]],
    params: PyTree,
    *,
    rates: Rates = None,
    **kwargs,
) -> Run:
    r"""Gradient flow dθ/dt = −R ⊙ ∇L(θ), each parameter group at its own rate.

    **Arguments:**

    - `loss`: `params -> scalar`, e.g. a population loss.
    - `params`: the initial parameters θ(0) (any PyTree, e.g. an Equinox model).
    - `rates`: `R`, one rate per parameter group (see [`Rates`][]); default 1 everywhere.
    - `**kwargs`: everything [`ode_flow`][] takes (`t1`, `save`, `events`, ...).

    **Returns:** a [`Run`][] whose state is the parameters.

    **Example:** on $L(\theta) = \tfrac12 \lVert\theta\rVert^2$, $\theta(t) = \theta(0)\, e^{-Rt}$; here group
    `b` flows at twice the rate of `a`:

        >>> import math
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * (theta["a"] ** 2 + theta["b"] ** 2)
        >>> theta0 = {"a": jnp.array(1.0), "b": jnp.array(1.0)}
        >>> run = dynamics.gradient_flow(loss, theta0, rates={"a": 1.0, "b": 2.0}, t1=1.0)
        >>> round(float(run.final["a"]), 6), round(math.exp(-1.0), 6)
        (0.367879, 0.367879)
        >>> round(float(run.final["b"]), 6), round(math.exp(-2.0), 6)
        (0.135335, 0.135335)
    """
    grad = jax.grad(loss)

    def vector_field(t, theta, args):
        del t, args
        return scale_tree(rates, grad(theta), sign=-1.0)

    return ode_flow(vector_field, params, **kwargs)


def loss_below(loss: Callable[[PyTree], Float[Array, ""]], eps: float) -> Predicate:
    """An event predicate that fires once `loss(state) < eps` (at the end of the solver step where it
    first holds; `Crossing(lambda state: loss(state) - eps)` locates the time exactly).

    **Example:** stop a gradient flow once the loss is below 10⁻⁴:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * theta**2
        >>> events = {"converged": dynamics.loss_below(loss, 1e-4)}
        >>> run = dynamics.gradient_flow(loss, jnp.array(1.0), t1=100.0, events=events)
        >>> dynamics.stop_reason(run.stop, run.event, run.event_names)
        'event:converged'
        >>> bool(loss(run.final) < 1e-4), bool(run.t_stop < 100.0)
        (True, True)
    """
    return lambda state: loss(state) < eps
