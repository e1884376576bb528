"""Decision lists: the paper's constants and bounds as functions of the task (spec §4.3, §5, §6).

Which quantities are the paper's and which are ours:

- **[paper]** `c = 4 n log(L)/δ` and the time bound `4M/(log(L) γ)` (Result 1); `c = 10 n² 𝓛_0/δ + 4εn`,
  the hypotheses `𝓛_0 − 6ε/n > A`, `A² > 4 m 𝓛_0/ε`, the step `η ≤ 1/λ_max` and the window
  `T ∈ [2 m 𝓛_0/(A² η), ε/(2η)]` (Result 2).
- **[ours]** the definitions of `δ` and `γ` (the abstract only says they depend on the smallest
  probability mass of "certain quantities"), `m := M`, and the fixed-point procedure for the circular
  `c` of Result 2 (spec §4.3, §6).
"""

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import tasks.decision_lists as dl

GAMMA_DEFINITIONS = ("joint", "conditional")
"""`joint` (default): `γ = min_{a,k≤m_a} p_{a,k}`, `p_{a,k} = P(a ∈ s, a_k ∈ s, a_1..a_{k−1} ∉ s)`;
`conditional`: the same probabilities conditioned on `a ∈ s` (spec §4.3, both **[ours]**)."""

DELTA_DEFINITIONS = ("gamma", "presence")
"""`gamma` (default): `δ := γ`; `presence`: `δ = min_a P(a ∈ s)` (spec §4.3, both **[ours]**)."""


@dataclasses.dataclass(frozen=True)
class Constants:
    """`δ` and `γ` of a task with the definitions that produced them."""

    delta: float
    gamma: float
    delta_definition: str
    gamma_definition: str

    def describe(self) -> dict:
        return dataclasses.asdict(self)


def constants(
    task: dl.DecisionLists,
    population: dl.Population | None = None,
    *,
    gamma_definition: str = "joint",
    delta_definition: str = "gamma",
) -> Constants:
    """`δ`, `γ` computed from `D` (spec §4.3, **[ours]**): exactly from the support, or from a frozen
    population when one is given.

    **Raises:** `ValueError` for an unknown definition.
    """
    if gamma_definition not in GAMMA_DEFINITIONS:
        raise ValueError(f"gamma_definition must be one of {GAMMA_DEFINITIONS}, got {gamma_definition!r}")
    if delta_definition not in DELTA_DEFINITIONS:
        raise ValueError(f"delta_definition must be one of {DELTA_DEFINITIONS}, got {delta_definition!r}")
    population = dl.exact_population(task) if population is None else population
    arrays = task.arrays()
    p = np.asarray(dl.event_probabilities(arrays, population))
    presence = np.asarray(dl.presence_probabilities(task.L, population))
    valid = np.arange(task.M)[None, :] < np.asarray(arrays.lengths)[:, None]
    if gamma_definition == "conditional":
        p = p / presence[:, None]
    gamma = float(np.min(p[valid]))
    delta = gamma if delta_definition == "gamma" else float(np.min(presence))
    return Constants(delta, gamma, delta_definition, gamma_definition)


def distinct_constants(task: dl.DecisionLists) -> Constants:
    """`δ = γ = min_{a,k≤m_a} p_{a,k}` (the default definitions) in closed form under `distinct`
    (spec §4.3, **[derived]**), for supports too large to enumerate.

    **Raises:** `ValueError` unless `task.distribution` is `distinct`.
    """
    if task.distribution != "distinct":
        raise ValueError(f"distribution must be 'distinct' for the closed form, got {task.distribution!r}")
    p = dl.distinct_event_probabilities(task)
    valid = np.arange(task.M)[None, :] < np.asarray([len(e) for e in task.lists])[:, None]
    gamma = float(np.min(p[valid]))
    return Constants(gamma, gamma, "gamma", "joint")


def result1_c(n: int, L: int, delta: float) -> float:
    """Result 1 [paper]: `c = 4 n log(L)/δ`."""
    return 4.0 * n * math.log(L) / delta


def result1_time_bound(M: int, L: int, gamma: float) -> float:
    """Result 1 [paper]: perfect classification within time `4M/(log(L) γ)`."""
    return 4.0 * M / (math.log(L) * gamma)


def zero_attention_loss(L: int, n: int, c: float) -> float:
    """`𝓛(0, cP) = log(n + (L − n) e^{−c/n})` under `distinct` (spec §6, **[derived]**)."""
    return math.log(n + (L - n) * math.exp(-c / n))


@dataclasses.dataclass(frozen=True)
class Result2Setting:
    """Result 2's constants for one task: `c` (fixed point), `𝓛_0`, the hypotheses and the window.

    `feasible` says whether some `A` satisfies both hypotheses; `A` is then taken just below
    `𝓛_0 − 6ε/n` (the widest window). `T_min`, `T_max` are the window in steps for the step `eta`.
    """

    c: float
    loss0: float
    eps: float
    m: int
    delta: float
    c_iterations: int
    c_converged: bool
    A: float
    feasible: bool
    eta: float
    T_min: float
    T_max: int

    def describe(self) -> dict:
        return dataclasses.asdict(self)


def result2_c(
    loss0_of_c: Callable[[float], float], *, n: int, delta: float, eps: float, max_iter: int = 200
) -> tuple[float, int, bool]:
    """The circular `c = 10 n² 𝓛_0(c)/δ + 4εn` solved by fixed-point iteration from `c = 4εn`
    until the relative change is below 1e-10 (spec §6 step 2, **[ours]**).

    **Returns:** `(c, iterations, converged)`; `converged` is False when it grows without bound.
    """
    c = 4.0 * eps * n
    for it in range(1, max_iter + 1):
        new = 10.0 * n**2 * loss0_of_c(c) / delta + 4.0 * eps * n
        if not math.isfinite(new) or new > 1e12:
            return new, it, False
        if abs(new - c) <= 1e-10 * abs(new):
            return new, it, True
        c = new
    return c, max_iter, False


def result2_setting(
    loss0: float,
    c: float,
    *,
    n: int,
    eps: float,
    m: int,
    delta: float,
    eta: float,
    iterations=0,
    converged=True,
) -> Result2Setting:
    """Result 2's hypotheses and window (spec §6 step 3): feasible iff
    `𝓛_0 − 6ε/n > sqrt(4 m 𝓛_0/ε)`; `A = (1 − 1e-9)(𝓛_0 − 6ε/n)`; `T ∈ [2 m 𝓛_0/(A² η), ⌊ε/(2η)⌋]`."""
    A = (1.0 - 1e-9) * (loss0 - 6.0 * eps / n)
    feasible = A > 0 and A**2 > 4.0 * m * loss0 / eps
    T_min = 2.0 * m * loss0 / (A**2 * eta) if A > 0 else math.inf
    return Result2Setting(
        c=c,
        loss0=loss0,
        eps=eps,
        m=m,
        delta=delta,
        c_iterations=iterations,
        c_converged=converged,
        A=A,
        feasible=bool(feasible),
        eta=eta,
        T_min=T_min,
        T_max=int(math.floor(eps / (2.0 * eta))),
    )


def perturbation(key, L: int, eps: float):
    """`U`, entries i.i.d. Uniform[−ε/2, ε/2] (spec §6 step 1, **[ours]**)."""
    return jax.random.uniform(key, (L, L), jnp.float64, -eps / 2.0, eps / 2.0)
