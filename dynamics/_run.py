"""The result of one simulated run, shared by continuous flows and discrete training."""

import enum

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Int, PyTree, Real


class StopReason(enum.IntEnum):
    """Why a run stopped, the value of `Run.stop`.

    - `completed`: it reached its final time or step.
    - `event`: a user event fired (`Run.event` says which).
    - `nonfinite`: the state stopped being finite.
    - `solver_failure`: the ODE solver gave up (e.g. an implicit solver's root finding failed).
    - `max_steps`: a flow used its whole step budget (its `max_steps`) before its end time;
      `Run.t_stop` is the time it reached.

    **Example:** GD with η = 1 on L(θ) = ¼θ⁴ converges from θ₀ = 0.5 and diverges from 10;
    `runs.stop == StopReason.nonfinite` flags the diverged runs of a batch:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> loss = lambda theta: 0.25 * theta**4
        >>> runs = jax.vmap(lambda theta0: dynamics.train(loss, theta0, dynamics.gd(1.0), num_steps=10))(
        ...     jnp.array([0.5, 10.0])
        ... )
        >>> [dynamics.StopReason(int(stop)).name for stop in runs.stop]
        ['completed', 'nonfinite']
        >>> (runs.stop == dynamics.StopReason.nonfinite).tolist(), runs.t_stop.tolist()
        ([False, True], [10, 5])
    """

    completed = 0
    event = 1
    nonfinite = 2
    solver_failure = 3
    max_steps = 4


STOP_REASONS = tuple(reason.name for reason in StopReason)
"""The names of the [`StopReason`][]s, indexed by `Run.stop` (stored with every sweep)."""


class Run(eqx.Module):
    """One run: saved values at save times, the final state, and why it stopped.

    Every field is an array, so runs can be `vmap`ped (each field then gains a leading seed axis),
    differentiated, and written as a dataset by [`sweep`][] and [`simulate`][].

    **Fields:**

    - `ts`: the save times (continuous time for flows, step numbers for discrete training).
      Saves that fall after a run stopped early hold `inf` (flows) or repeat the stopped state
      (discrete training).
    - `values`: a PyTree; each leaf has a leading axis over `ts`.
    - `final`: the state when the run stopped.
    - `stop`: a [`StopReason`][].
    - `event`: the index of the user event that stopped the run, −1 if none did.
    - `t_stop`: the time (or step) at which the run stopped.
    - `num_steps`: the steps taken: solver steps, accepted and rejected (flows; each costs
      one vector-field evaluation per solver stage), or optimizer steps (discrete training).
    - `event_names`: the names of the events, in the order `event` indexes (static: not an array).

    **Example:** 4 GD steps saved every 2, stopped by an event at step 3:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> run = dynamics.train(
        ...     lambda theta: 0.5 * theta**2,
        ...     jnp.array(1.0),
        ...     dynamics.gd(0.5),
        ...     num_steps=4,
        ...     save=dynamics.Save(every=2),
        ...     events={"small": lambda theta: theta < 0.2},
        ... )
        >>> run.ts.tolist(), [round(float(v), 4) for v in run.values], round(float(run.final), 4)
        ([0, 2, 4], [1.0, 0.25, 0.125], 0.125)
        >>> run.event_names, int(run.event), int(run.t_stop), bool(run.is_successful())
        (('small',), 0, 3, True)
    """

    ts: Real[Array, " T"]
    values: PyTree
    final: PyTree
    stop: Int[Array, ""]
    event: Int[Array, ""]
    t_stop: Real[Array, ""]
    num_steps: Int[Array, ""]
    event_names: tuple[str, ...] = eqx.field(static=True, default=())

    def is_successful(self) -> Bool[Array, "..."]:
        """True where the run completed or stopped on a user event (per run, for a batch)."""
        return (self.stop == StopReason.completed) | (self.stop == StopReason.event)


def all_finite(tree: PyTree) -> Bool[Array, ""]:
    """True when every inexact leaf of `tree` is finite.

    **Example:**

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> bool(dynamics.all_finite({"a": jnp.array([1.0, 2.0]), "steps": jnp.array(3)}))
        True
        >>> bool(dynamics.all_finite({"a": jnp.array([1.0, jnp.inf]), "steps": jnp.array(3)}))
        False
    """
    checks = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(eqx.filter(tree, eqx.is_inexact_array))]
    return jnp.all(jnp.stack(checks)) if checks else jnp.array(True)


def stop_reason(
    run_stop: int | Int[ArrayLike, ""], run_event: int | Int[ArrayLike, ""], event_names: tuple[str, ...]
) -> str:
    """A readable stop reason, e.g. `"completed"` or `"event:loss_below"`.

    **Example:**

        >>> import dynamics
        >>> dynamics.stop_reason(dynamics.StopReason.completed, -1, ())
        'completed'
        >>> dynamics.stop_reason(dynamics.StopReason.event, 1, ("diverged", "converged"))
        'event:converged'
    """
    reason = StopReason(int(run_stop))
    if reason == StopReason.event:
        return f"event:{event_names[int(run_event)]}"
    return reason.name
