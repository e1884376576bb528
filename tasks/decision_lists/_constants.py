"""The paper's constants of a task, traceable so that a simulation can draw its task inside a
batched run: `δ` and `γ` from the sampling distribution `D` (our definitions), `γ` in closed form
under `distinct`, Result 1's `c` and time bound, and Result 2's circular `c` by fixed-point
iteration."""

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._data import Population, event_probabilities, presence_probabilities
from ._task import TaskArrays

GAMMA_DEFINITIONS = ("joint", "conditional")
"""`joint` (default): `γ = min_{a,k≤m_a} p_{a,k}`, `p_{a,k} = P(a ∈ s, a_k ∈ s, a_1..a_{k−1} ∉ s)`;
`conditional`: the same probabilities conditioned on `a ∈ s` (both recon: the abstract only says
that `γ` depends on the smallest mass `D` puts on certain events)."""

DELTA_DEFINITIONS = ("gamma", "presence")
"""`gamma` (default): `δ := γ`; `presence`: `δ = min_a P(a ∈ s)` (both recon)."""


def delta_gamma(
    arrays: TaskArrays,
    population: Population,
    *,
    gamma_definition: str = "joint",
    delta_definition: str = "gamma",
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """`δ` and `γ` of a task under the population's distribution (traceable).

    **Arguments:**

    - `arrays`, `population`: the task and its population (the exact support of `D`, or a sample).
    - `gamma_definition`: one of [`GAMMA_DEFINITIONS`][].
    - `delta_definition`: one of [`DELTA_DEFINITIONS`][].

    **Returns:** `(δ, γ)`.

    **Raises:** `ValueError` for an unknown definition.
    """
    if gamma_definition not in GAMMA_DEFINITIONS:
        raise ValueError(f"gamma_definition must be one of {GAMMA_DEFINITIONS}, got {gamma_definition!r}")
    if delta_definition not in DELTA_DEFINITIONS:
        raise ValueError(f"delta_definition must be one of {DELTA_DEFINITIONS}, got {delta_definition!r}")
    L, M = arrays.lists.shape
    p = event_probabilities(arrays, population)
    presence = presence_probabilities(L, population)
    valid = jnp.arange(M, dtype=arrays.lengths.dtype)[None, :] < arrays.lengths[:, None]
    if gamma_definition == "conditional":
        p = p / presence[:, None]
    gamma = jnp.min(jnp.where(valid, p, jnp.inf))
    delta = gamma if delta_definition == "gamma" else jnp.min(presence)
    return delta, gamma


def distinct_gamma(lengths: Int[Array, " L"], n: int, M: int, dtype=jnp.float64) -> Float[Array, ""]:
    """`γ = min_{a,k≤m_a} p_{a,k}` (the `joint` definition) in closed form under `distinct`, from the
    list lengths alone (traceable): `p_{a,k} = C(L−k−1, n−2)/C(L, n)` for `k < m_a` (smallest at
    `k = m_a − 1`) and `p_{a,m_a} = C(L−m_a, n−1)/C(L, n)`.

    **Arguments:** `lengths`: the `(L,)` list lengths `m_a`; `n`: the sequence length; `M`: the
    largest list length; `dtype`: of the result.

    **Returns:** `γ`.
    """
    L, total = lengths.shape[0], math.comb(lengths.shape[0], n)
    by_length = np.full(M + 1, np.inf)
    for m in range(1, M + 1):
        last = math.comb(L - m, n - 1) / total
        before = math.comb(L - m, n - 2) / total if m > 1 else math.inf
        by_length[m] = min(last, before)
    return jnp.min(jnp.asarray(by_length, dtype)[lengths])


def result1_c(n: int, L: int, delta: Float[Array, ""]) -> Float[Array, ""]:
    """Result 1: `c = 4 n log(L)/δ`, the value scale of `V = cP` (traceable in `δ`)."""
    return 4.0 * n * math.log(L) / delta


def result1_time_bound(M: int, L: int, gamma: Float[Array, ""]) -> Float[Array, ""]:
    """Result 1: gradient flow on `W` classifies perfectly within time `4M/(log(L) γ)` (traceable
    in `γ`)."""
    return 4.0 * M / (math.log(L) * gamma)


def fixed_point_c(
    loss0_of_c: Callable[[Float[Array, ""]], Float[Array, ""]],
    *,
    n: int,
    delta: Float[Array, ""],
    eps: Float[Array, ""],
    max_iter: int = 200,
) -> tuple[Float[Array, ""], Int[Array, ""], Array]:
    """Result 2's circular `c = 10 n² 𝓛_0(c)/δ + 4εn` by fixed-point iteration from `c = 4εn` until
    the relative change is below 1e-10 (our procedure, recon; traceable, a `lax.while_loop`). The
    iteration stops without converging when `c` is not finite or exceeds 1e12 (it grows without
    bound under `iid`) or after `max_iter` iterations.

    **Arguments:**

    - `loss0_of_c`: `c -> 𝓛(0, cP + U)`, the loss at the start for the perturbation `U`.
    - `n`: the sequence length; `delta`: `δ`; `eps`: `ε`.
    - `max_iter`: the most iterations.

    **Returns:** `(c, iterations, converged)`: the last iterate, the iterations run and whether it
    converged.
    """

    def cond(state):
        _, iterations, done, _ = state
        return ~done & (iterations < max_iter)

    def body(state):
        c, iterations, _, _ = state
        new = 10.0 * n**2 * loss0_of_c(c) / delta + 4.0 * eps * n
        diverged = ~jnp.isfinite(new) | (new > 1e12)
        converged = ~diverged & (jnp.abs(new - c) <= 1e-10 * jnp.abs(new))
        return new, iterations + 1, diverged | converged, converged

    c0 = 4.0 * eps * n * jnp.ones_like(delta)
    c, iterations, _, converged = jax.lax.while_loop(
        cond, body, (c0, jnp.asarray(0), jnp.asarray(False), jnp.asarray(False))
    )
    return c, iterations, converged
