"""The population processes: the 2-D ODE of the line coordinates (α, β) (Eqn 8), integrated with
Diffrax; the matrix population process, population GD (Eqns 4-6 on the exact population loss)
and the matrix flow dθ/dt = −E G(θ), run with the engine."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

import dynamics

from ._algorithm import preconditioned_step
from ._data import Instance
from ._metrics import line_coordinates
from ._model import LinearSCB, population_loss, precondition

FLOW_CONTROLLER = diffrax.PIDController(rtol=1e-10, atol=1e-12)
"""The default step-size controller of the population flows (Dopri8 at rtol 1e-10, atol 1e-12)."""


def line_vector_field(t, y: Float[Array, "2"], args) -> Float[Array, "2"]:
    """Eqn 8: d(α, β)/dt = (1 − αβ) `[[0, K_P], [K_Q, 0]]` (α, β) + (1/T)(0, 1 − β).

    **Arguments:** `t` (unused); `y` = (α, β); `args` = (K_P, K_Q, T).
    """
    del t
    K_P, K_Q, T = args
    a, b = y[0], y[1]
    return jnp.stack([K_P * b * (1 - a * b), K_Q * a * (1 - a * b) + (1 - b) / T])


def line_flow(
    y0, args, save_ts, *, save=None, stepsize_controller=FLOW_CONTROLLER, max_steps: int = 100_000
) -> dynamics.Run:
    """Integrate Eqn 8 with Diffrax (Dopri8) from `y0 = (α₀, β₀)` up to `save_ts[-1]` (traceable).

    **Arguments:** `y0` (2,); `args` = (K_P, K_Q, T) as arrays; `save_ts`; `save`: a function of
    (α, β) to save (default: the state); `stepsize_controller`: a Diffrax step-size controller;
    `max_steps`: the solver's step budget.

    **Returns:** the `dynamics.Run`.
    """
    return dynamics.ode_flow(
        line_vector_field,
        y0,
        t1=save_ts[-1],
        args=args,
        save=dynamics.Save(ts=save_ts, fn=None if save is None else lambda t, y, args: save(y)),
        solver=diffrax.Dopri8(),
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
    )


def solve_line_ode(y0, K_P, K_Q, T, save_ts, stepsize_controller=FLOW_CONTROLLER) -> np.ndarray:
    """Eqn 8 in float64 from `y0 = (α₀, β₀)`, saved at `save_ts` ([`line_flow`][], under
    `stepsize_controller`).

    **Returns:** (len(save_ts), 2) array of (α, β).
    """
    args = tuple(jnp.asarray(v, jnp.float64) for v in (K_P, K_Q, T))
    run = line_flow(
        jnp.asarray(y0, jnp.float64),
        args,
        jnp.asarray(save_ts, jnp.float64),
        stepsize_controller=stepsize_controller,
    )
    return np.asarray(run.values)


def _line_state(p: LinearSCB, inst: Instance) -> dict:
    line = line_coordinates(p, inst)
    return {k: line[k] for k in ("alpha", "beta", "dV_norm", "dQ_norm")}


def population_gd(inst: Instance, model: LinearSCB, eta, steps: int, lam=0.0, every: int = 1) -> dynamics.Run:
    """The matrix population process: `steps` Algorithm-1 steps (Eqns 4-6) on the exact
    population loss, run with the engine (`dynamics.train`, full batch).

    **Returns:** the `dynamics.Run` (saved: α, β, ‖ΔV‖_μ, ‖ΔQ‖_μ).
    """
    return dynamics.train(
        lambda p: population_loss(p, inst),
        model,
        preconditioned_step(inst.mu, eta, lam),
        num_steps=steps,
        save=dynamics.Save(every=every, fn=lambda step, p, args: _line_state(p, inst)),
    )


def matrix_flow(
    inst: Instance, model: LinearSCB, save_ts, stepsize_controller=FLOW_CONTROLLER
) -> dynamics.Run:
    """The matrix population flow dθ/dt = −E G(θ), G the preconditioned gradient (Eqn 4), with
    Diffrax (Dopri8) under `stepsize_controller`.

    **Returns:** the `dynamics.Run` (saved: α, β, ‖ΔV‖_μ, ‖ΔQ‖_μ).
    """

    def field(t, p, args):
        del t, args
        G = precondition(jax.grad(population_loss)(p, inst), inst.mu)
        return jax.tree.map(lambda g: -g, G)

    return dynamics.ode_flow(
        field,
        model,
        t1=float(save_ts[-1]),
        save=dynamics.Save(ts=jnp.asarray(save_ts, jnp.float64), fn=lambda t, p, args: _line_state(p, inst)),
        solver=diffrax.Dopri8(),
        stepsize_controller=stepsize_controller,
    )
