"""The paper's trainings compiled for questions a level does not ask: Result 1's flow with a given
`c`, saved at given times or from a given start, its explicit Euler scheme, and Result 2's start
one quantity at a time and its GD. Each is one program per shape, compiled once however often it is
called; the levels of `_simulate` run the same functions inside their own programs.

**Example:** τ of Result 1's flow on a small task with Result 1's `c`:

    >>> import jax.numpy as jnp
    >>> import tasks.decision_lists as dl
    >>> t = dl.DecisionLists.random(0, L=8, n=3, M=2)
    >>> population = dl.exact_population(t)
    >>> delta, gamma = dl.delta_gamma(t.arrays(), population)
    >>> c = dl.result1_c(t.n, t.L, delta)
    >>> tau = dl.result1_tau(t.arrays(), population, c, dl.result1_time_bound(t.M, t.L, gamma))
    >>> bool(0 < tau < dl.result1_time_bound(t.M, t.L, gamma))
    True
"""

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

import dynamics

from ._constants import fixed_point_c
from ._criteria import mu
from ._data import Population
from ._dynamics import (
    FLOW_CONTROLLER,
    _result1_loss,
    permutation_matrix,
    result1_flow,
    result1_gd,
    result1_time,
    result2_gd,
)
from ._model import DecisionListModel, margins, perfect, population_loss
from ._task import TaskArrays


@jax.jit
def result1_tau(
    arrays: TaskArrays, population: Population, c: Float[Array, ""], t1: Float[Array, ""]
) -> Float[Array, ""]:
    """τ of Result 1's flow with `V ≡ cP` up to `t1` ([`result1_time`][]; `inf` if not reached)."""
    return result1_time(arrays, population, c, t1=t1)[0]


@jax.jit
def result1_saved(
    arrays: TaskArrays, population: Population, c: Float[Array, ""], save_ts: Float[Array, " S"]
) -> dynamics.Run:
    """Result 1's flow with `V ≡ cP` to `save_ts[-1]` without its stopping event, saving the loss,
    `μ(W)` and `W` at `save_ts` ([`result1_flow`][])."""
    return result1_flow(
        arrays,
        population,
        c,
        t1=save_ts[-1],
        save_ts=save_ts,
        stop_at_perfect=False,
        save=lambda W: {"W": W},
        stepsize_controller=FLOW_CONTROLLER,
    )


@jax.jit
def classifies_perfectly(
    W: Float[Array, "L L"], V: Float[Array, "L L"], population: Population
) -> Bool[Array, ""]:
    """Whether `(W, V)` classifies every sequence of `population` ([`perfect`][])."""
    return perfect(DecisionListModel(W, V), population)


@functools.partial(jax.jit, static_argnames=("num_steps",))
def result1_gd_run(
    arrays: TaskArrays, population: Population, c: Float[Array, ""], step: Float[Array, ""], num_steps: int
) -> dynamics.Run:
    """GD of step `step` on `W` with `V ≡ cP`, stopped at the first step with `μ(W) > 0`, within
    `num_steps` ([`result1_gd`][])."""
    return result1_gd(arrays, population, c, step=step, num_steps=num_steps)


@jax.jit
def result1_margins(
    arrays: TaskArrays,
    population: Population,
    c: Float[Array, ""],
    W0: Float[Array, "L L"],
    save_ts: Float[Array, " S"],
) -> dynamics.Run:
    """Result 1's flow with `V ≡ cP` from `W0` at `save_ts[0]` to `save_ts[-1]`, without its
    stopping event, saving at `save_ts` the smallest label margin over `population` (`margin`;
    perfect classification ⟺ `margin > TAU_TIE`), `mu` (`μ(W)`), `loss` and `W`."""
    loss = _result1_loss(arrays, population, c)
    V = c * permutation_matrix(arrays, population.weights.dtype)

    def saved(t, W, args):
        margin = jnp.min(margins(DecisionListModel(W, V), population))
        return {"margin": margin, "mu": mu(W, arrays), "loss": loss(W), "W": W}

    return dynamics.gradient_flow(
        loss,
        W0,
        t0=save_ts[0],
        t1=save_ts[-1],
        save=dynamics.Save(ts=save_ts, fn=saved),
        stepsize_controller=FLOW_CONTROLLER,
    )


@jax.jit
def loss_at_zero(V: Float[Array, "L L"], population: Population) -> Float[Array, ""]:
    """The population loss at `W = 0`: `𝓛(0, V)`."""
    L = V.shape[0]
    return population_loss(DecisionListModel(jnp.zeros((L, L), V.dtype), V), population)


@functools.partial(jax.jit, static_argnames=("n",))
def result2_c(
    P: Float[Array, "L L"],
    U: Float[Array, "L L"],
    population: Population,
    n: int,
    delta: Float[Array, ""],
    eps: Float[Array, ""],
) -> tuple[Float[Array, ""], Int[Array, ""], Bool[Array, ""]]:
    """Result 2's `c` for the perturbation `U` ([`fixed_point_c`][] of `c -> 𝓛(0, cP + U)`):
    `(c, iterations, converged)`."""
    return fixed_point_c(lambda c: loss_at_zero(c * P + U, population), n=n, delta=delta, eps=eps)


@jax.jit
def loss_lambda_max(model: DecisionListModel, population: Population) -> Float[Array, ""]:
    """`λ_max` of the Hessian of the population loss in `(W, V)` at `model` (Lanczos, 100
    Hessian-vector products)."""
    return dynamics.landscape.hessian_max_eigenvalue(
        lambda m: population_loss(m, population), model, num_iters=100
    )


@functools.partial(jax.jit, static_argnames=("n", "num_steps", "every", "stop", "exact"))
def result2_run(
    arrays: TaskArrays,
    population: Population,
    V0: Float[Array, "L L"],
    c: Float[Array, ""],
    eta: Float[Array, ""],
    n: int,
    num_steps: int,
    every: int,
    stop: bool,
    exact: bool = True,
) -> dynamics.Run:
    """Result 2's GD from `(0, V0)` at step `eta` ([`result2_gd`][]), saving every `every` steps,
    stopped at the first perfect step when `stop`; enumerated when `exact`, else certified."""
    return result2_gd(
        arrays,
        population,
        V0,
        c,
        n,
        eta=eta,
        num_steps=num_steps,
        every=every,
        exact=exact,
        stop_at_perfect=stop,
    )
