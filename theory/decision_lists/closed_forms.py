"""Decision lists: the paper's constants and bounds as functions of the task.

Which quantities are the paper's and which are reconstructed:

- (paper) `c = 4 n log(L)/δ` and the time bound `4M/(log(L) γ)` (Result 1); `c = 10 n² 𝓛_0/δ + 4εn`,
  the hypotheses `𝓛_0 − 6ε/n > A`, `A² > 4 m 𝓛_0/ε`, the step `η ≤ 1/λ_max` and the window
  `T ∈ [2 m 𝓛_0/(A² η), ε/(2η)]` (Result 2).
- (derived) the loss at uniform attention `𝓛(0, cP)` under `distinct`, and `δ`, `γ` in closed form
  under `distinct`.
- (recon) the definitions of `δ` and `γ` (the abstract only says they depend on the smallest
  probability mass of "certain quantities"), `m := M`, and the fixed-point procedure for the circular
  `c` of Result 2 (`tasks.decision_lists.fixed_point_c`).

Result 1's `c` and time bound, and the definitions of `δ` and `γ`, are those of `tasks.decision_lists`
(traceable there, for the simulations), re-exported here.
"""

import dataclasses
import math

import tasks.decision_lists as dl
from tasks.decision_lists import DELTA_DEFINITIONS, GAMMA_DEFINITIONS, result1_c, result1_time_bound

__all__ = [
    "DELTA_DEFINITIONS",
    "GAMMA_DEFINITIONS",
    "Constants",
    "Result2Setting",
    "constants",
    "distinct_constants",
    "result1_c",
    "result1_time_bound",
    "result2_setting",
    "zero_attention_loss",
]


@dataclasses.dataclass(frozen=True)
class Constants:
    """`δ` and `γ` of a task with the definitions that produced them."""

    delta: float
    gamma: float
    delta_definition: str
    gamma_definition: str

    def describe(self) -> dict:
        """The constants and their definitions as JSON-ready metadata."""
        return dataclasses.asdict(self)


def constants(
    task: dl.DecisionLists,
    population: dl.Population | None = None,
    *,
    gamma_definition: str = "joint",
    delta_definition: str = "gamma",
) -> Constants:
    """`δ`, `γ` computed from `D` (recon, see `tasks.decision_lists.delta_gamma`): exactly from the
    support, or from a frozen population when one is given.

    **Raises:** `ValueError` for an unknown definition.
    """
    population = dl.exact_population(task) if population is None else population
    delta, gamma = dl.delta_gamma(
        task.arrays(), population, gamma_definition=gamma_definition, delta_definition=delta_definition
    )
    return Constants(float(delta), float(gamma), delta_definition, gamma_definition)


def distinct_constants(task: dl.DecisionLists) -> Constants:
    """`δ = γ = min_{a,k≤m_a} p_{a,k}` (the default definitions) in closed form under `distinct`
    (derived, see `tasks.decision_lists.distinct_gamma`), for supports too large to enumerate.

    **Raises:** `ValueError` unless `task.distribution` is `distinct`.
    """
    if task.distribution != "distinct":
        raise ValueError(f"distribution must be 'distinct' for the closed form, got {task.distribution!r}")
    gamma = float(dl.distinct_gamma(task.arrays().lengths, task.n, task.M))
    return Constants(gamma, gamma, "gamma", "joint")


def zero_attention_loss(L: int, n: int, c: float) -> float:
    """`𝓛(0, cP) = log(n + (L − n) e^{−c/n})` under `distinct` (derived)."""
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
        """The setting as JSON-ready metadata."""
        return dataclasses.asdict(self)


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
    """Result 2's hypotheses and window: feasible iff
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
