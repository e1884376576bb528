"""Simulations behind the decision-list checks, cached, so a paper run integrates each of them
once: Result 1's flows, the uniform-attention runs and their joint variant run the paper's levels
(`tasks.decision_lists.Result1Flow`, `UniformAttentionGD`, `JointGD`) through `dynamics.simulate`;
the flows saved at times of a check's own, the refinement of τ by enumeration, small-step GD and
Result 2's runs (whose λ_max must be the very number its step is made of) call the paper's trainings
compiled for such questions (`tasks.decision_lists.result1_tau`, `result1_saved`, `result1_margins`,
`result1_gd_run`, `result2_c`, `loss_lambda_max`, `result2_run`, ...).

Everything runs in float64 on the exact population of `D` (recon): `distinct` unless a task says
`iid` (the checks `*_iid`), where the population is every multiset of `n` tokens with its
multinomial probability (derived, see [`iid_population`][]).
"""

import dataclasses
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

import dynamics
import tasks.decision_lists as dl

from . import closed_forms

RESULT1_SIZES = {
    "quick": [(8, 3, 2, 0), (10, 4, 3, 0)],
    "full": [(8, 3, 2, 0), (10, 4, 3, 0), (12, 4, 4, 1), (16, 4, 3, 0), (24, 5, 3, 0)],
}
"""Result 1's tasks `(L, n, M, seed)`: the test sizes, plus the standard and larger sizes in full.
(With `V = cP` the loss splits over the columns of `W`, one per query token, and a column's flow
depends on its list only through its length: τ depends on a task only through its list lengths.)"""


def f64(x) -> jax.Array:
    return jnp.asarray(x, jnp.float64)


@functools.cache
def task(
    L: int, n: int, M: int, seed: int, fixed_m: int | None = None, distribution: str = "distinct"
) -> dl.DecisionLists:
    """A random task (`DecisionLists.random`, recon) with `D = distribution` (default `distinct`)."""
    return dl.DecisionLists.random(seed, L=L, n=n, M=M, fixed_m=fixed_m, distribution=distribution)


def iid_population(t: dl.DecisionLists) -> dl.Population:
    """The exact population of `D = iid` as multisets: every multiset of `n` tokens, once, in
    increasing order, with its probability `n!/Π_b k_b! · L^{−n}` (`k_b` the count of token `b`).

    Exact (derived): the model is equivariant to permutations of positions, so the per-sequence loss,
    the set of margins and the presence events behind `δ`, `γ` do not depend on the order; the
    `C(L + n − 1, n)` multisets replace the `L^n` sequences of `tasks.decision_lists.support`.

    **Arguments:** `t`: a task (its `distribution` is not read).

    **Returns:** the [`tasks.decision_lists.Population`][], weights summing to 1.
    """
    rows = np.asarray(list(itertools.combinations_with_replacement(range(t.L), t.n)), np.int32)
    counts = np.stack([np.bincount(row, minlength=t.L) for row in rows])
    orderings = np.asarray([math.factorial(t.n) / math.prod(math.factorial(k) for k in c) for c in counts])
    return dl.make_population(t.arrays(), rows, orderings / float(t.L) ** t.n)


@functools.cache
def population(t: dl.DecisionLists) -> dl.Population:
    """The exact population of `t`'s `D`: the `C(L, n)` subsets under `distinct`, the multisets of
    [`iid_population`][] under `iid`."""
    return iid_population(t) if t.distribution == "iid" else dl.exact_population(t)


@functools.cache
def task_constants(t: dl.DecisionLists) -> closed_forms.Constants:
    return closed_forms.constants(t, population(t))


@dataclasses.dataclass(frozen=True)
class Result1:
    """One Result 1 run: τ (the crossing of `μ` located by the flow's event), the bound and the
    constants."""

    task: dl.DecisionLists
    c: float
    tau: float
    bound: float
    constants: closed_forms.Constants


def _final(level: dynamics.AbstractSimulation) -> dict[str, np.ndarray]:
    """The final state of the run of seed 0 of `level` (its task fixed by `task.seed`)."""
    ds = dynamics.simulate(level, num_seeds=1)
    return {
        name.removeprefix("final."): ds[name].values[0] for name in ds.data_vars if name.startswith("final.")
    }


@functools.cache
def result1(size: tuple[int, int, int, int], c_scale: float = 1.0, fixed_m: int | None = None) -> Result1:
    """Result 1's flow ([`tasks.decision_lists.Result1Flow`][]) on the task `size = (L, n, M,
    seed)` (with `fixed_m`, one list length for every token) with `c = c_scale · 4 n log(L)/δ`, up
    to the time bound."""
    L, n, M, seed = size
    config = dl.DecisionListsConfig(L=L, n=n, M=M, fixed_m=fixed_m, seed=seed)
    final = _final(dl.Result1Flow(task=config, c_scale=c_scale))
    t = config.draw()
    return Result1(t, float(final["c"]), float(final["tau"]), float(final["bound"]), task_constants(t))


def result1_fixed_c(t: dl.DecisionLists, c: float, t1: float) -> float:
    """τ of Result 1's flow on `t` with a given `c`, up to `t1` (`inf` if not reached)."""
    return float(dl.result1_tau(t.arrays(), population(t), f64(c), f64(t1)))


def result1_dense(t: dl.DecisionLists, c: float, save_ts) -> dynamics.Run:
    """Result 1's flow without the stopping event, saving the loss, μ and `W` at `save_ts`."""
    return dl.result1_saved(t.arrays(), population(t), f64(c), f64(save_ts))


def perfect_at(t: dl.DecisionLists, W, c: float) -> bool:
    """Perfect classification (enumerated) of `(W, cP)`."""
    return bool(dl.classifies_perfectly(f64(W), c * t.permutation_matrix(), population(t)))


def result1_gd_time(t: dl.DecisionLists, c: float, step: float) -> float:
    """τ_GD(h) = (first step with μ > 0) · h; `inf` if not within 20000 steps."""
    run = dl.result1_gd_run(t.arrays(), population(t), f64(c), f64(step), 20_000)
    return float(run.t_stop) * step if int(run.event) == 0 else math.inf


# --------------------------------------------------------------------------------------
# Result 1 under D = iid: the first perfect time by enumeration
# --------------------------------------------------------------------------------------

RESULT1_IID_SIZES = {
    "quick": [(8, 3, 2, 0), (10, 4, 3, 0)],
    "full": [(8, 3, 2, 0), (10, 4, 3, 0), (12, 4, 4, 1), (16, 4, 3, 0)],
}
"""Result 1's tasks `(L, n, M, seed)` under `D = iid` (`L^n` ≤ 65 536 sequences, enumerated as
`C(L + n − 1, n)` ≤ 3876 multisets): Result 1's sizes that can be enumerated."""

ENUMERATED_SAVES = 121
"""The saves of each grid of [`enumerated_time`][]: `t = 0` and log-spaced times from
`1e-8 · t1` to `t1`, then each refinement evenly spaced over the bracket."""

ENUMERATED_REFINEMENTS = 3
"""The refinements of [`enumerated_time`][]: each divides the bracket by `ENUMERATED_SAVES − 1`
(from about 17% of τ to about 1e-7 of τ, below the flow's `rtol = 1e-6`)."""


def margin_saves(t: dl.DecisionLists, c: float, save_ts, W0=None) -> dict[str, np.ndarray]:
    """Result 1's flow on `t` (no stopping event) from `W0` at `save_ts[0]` (default `W = 0`),
    saving at `save_ts` the smallest label margin over the enumerated population (`margin`;
    perfect classification ⟺ `margin > TAU_TIE`), `μ(W)` (`mu`), the loss (`loss`) and `W`.

    **Arguments:** `t`: the task (its `D` decides the population); `c`: `V = cP`; `save_ts`: the
    increasing save times, the first the start; `W0`: the start.

    **Returns:** the saved values as numpy arrays, keyed as above.
    """
    W0 = jnp.zeros((t.L, t.L), jnp.float64) if W0 is None else f64(W0)
    run = dl.result1_margins(t.arrays(), population(t), f64(c), W0, f64(save_ts))
    return {name: np.asarray(value) for name, value in run.values.items()}


@dataclasses.dataclass(frozen=True)
class EnumeratedTime:
    """τ of Result 1's flow located by enumeration (see [`enumerated_time`][]).

    **Fields:** `tau`: the first refined save that classifies perfectly (`inf` if no save of the
    first grid does); `width`: the last bracket's width (the save at τ − width is not perfect);
    `ts`, `margin`, `mu`: the first grid and its saved smallest margins and `μ(W)`; `mu_at_tau`,
    `mu_before`: `μ(W)` at τ and at the save before it (τ − `width`).
    """

    tau: float
    width: float
    ts: np.ndarray
    margin: np.ndarray
    mu: np.ndarray
    mu_at_tau: float
    mu_before: float

    def failures_after(self) -> int:
        """The saves of the first grid at or after τ that do not classify perfectly."""
        after = self.ts >= self.tau
        return int(np.sum(self.margin[after] <= dl.TAU_TIE))


def _bracket(saves: dict[str, np.ndarray], ts: np.ndarray):
    """The first perfect save of a grid and the save before it: `(i, lo, hi)`, or `None` when no
    save after the first is perfect."""
    good = saves["margin"][1:] > dl.TAU_TIE
    if not np.any(good):
        return None
    i = 1 + int(np.argmax(good))
    return i, ts[i - 1], ts[i]


def enumerated_time(t: dl.DecisionLists, c: float, t1: float) -> EnumeratedTime:
    """τ, the first time Result 1's flow classifies perfectly, by the enumeration predicate (the
    route when `μ(W) > 0` does not decide, e.g. under `D = iid`).

    The predicate (every margin of every enumerated sequence `> TAU_TIE`) is evaluated at the saves
    of a first grid ([`ENUMERATED_SAVES`][] times up to `t1`, read from the solver's dense output);
    the first perfect save and the one before bracket τ. The bracket is then refined
    [`ENUMERATED_REFINEMENTS`][] times: the flow restarts from the saved `W` at the bracket's left
    end and is saved on as many evenly spaced times across the bracket. At `W = 0` every score ties,
    so the save at `t = 0` is never perfect.

    **Arguments:** `t`: the task (its `D` decides the population); `c`: `V = cP`; `t1`: the horizon.

    **Returns:** an [`EnumeratedTime`][].
    """
    ts = t1 * np.concatenate([[0.0], np.geomspace(1e-8, 1.0, ENUMERATED_SAVES - 1)])
    first = margin_saves(t, c, ts)
    found = _bracket(first, ts)
    if found is None:
        return EnumeratedTime(math.inf, math.inf, ts, first["margin"], first["mu"], math.nan, math.nan)
    i, lo, hi = found
    W_lo, mu_at, mu_before = first["W"][i - 1], first["mu"][i], first["mu"][i - 1]
    for _ in range(ENUMERATED_REFINEMENTS):
        grid = np.linspace(lo, hi, ENUMERATED_SAVES)
        saves = margin_saves(t, c, grid, W_lo)
        found = _bracket(saves, grid)
        if found is None:  # the restarted flow reaches hi a hair short of perfect: keep the bracket
            break
        j, lo, hi = found
        W_lo, mu_at, mu_before = saves["W"][j - 1], saves["mu"][j], saves["mu"][j - 1]
    margin, mu = first["margin"], first["mu"]
    return EnumeratedTime(float(hi), float(hi - lo), ts, margin, mu, float(mu_at), float(mu_before))


@dataclasses.dataclass(frozen=True)
class Result1Enumerated:
    """One Result 1 run whose τ is located by enumeration: the task, `c`, the bound, the constants
    and the [`EnumeratedTime`][]."""

    task: dl.DecisionLists
    c: float
    bound: float
    constants: closed_forms.Constants
    time: EnumeratedTime


@functools.cache
def result1_enumerated(t: dl.DecisionLists) -> Result1Enumerated:
    """Result 1's flow on `t` with `c = 4 n log(L)/δ` (δ, γ of `t`'s `D`, enumerated), τ located
    by [`enumerated_time`][] up to the bound `4M/(log(L) γ)`."""
    k = task_constants(t)
    c = float(closed_forms.result1_c(t.n, t.L, k.delta))
    bound = float(closed_forms.result1_time_bound(t.M, t.L, k.gamma))
    return Result1Enumerated(t, c, bound, k, enumerated_time(t, c, bound))


# --------------------------------------------------------------------------------------
# Result 2
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Result2:
    """One Result 2 run on an exact population: the setting, the first perfect step and the
    invariants along `t ≤ T`."""

    task: dl.DecisionLists
    setting: closed_forms.Result2Setting
    lambda0: float
    first_perfect: float
    max_dist_cP: float
    max_grad_V: float
    lambdas: np.ndarray
    steps: np.ndarray
    losses: np.ndarray


def _result2_start(t: dl.DecisionLists, pop, delta: float, key_U, eps: float):
    """Result 2's start on population `pop`: `U` drawn with `key_U`, the fixed point `c`,
    `V_0 = cP + U`, `λ_max` at `(0, V_0)` by Lanczos and the setting with `η = 1/λ_max`.

    **Returns:** `(c, V_0, λ_max, Result2Setting)`.
    """
    P = t.permutation_matrix()
    U = dl.perturbation(key_U, t.L, eps)
    c, iterations, converged = (
        x.item() for x in dl.result2_c(jnp.asarray(P), U, pop, t.n, f64(delta), f64(eps))
    )
    V0 = c * P + U
    loss0 = float(dl.loss_at_zero(V0, pop))
    lam = float(dl.loss_lambda_max(dl.DecisionListModel(jnp.zeros_like(V0), V0), pop))
    setting = closed_forms.result2_setting(
        loss0,
        c,
        n=t.n,
        eps=eps,
        m=t.M,
        delta=delta,
        eta=1.0 / lam,
        iterations=iterations,
        converged=converged,
    )
    return c, V0, lam, setting


@functools.cache
def result2(t: dl.DecisionLists, eps: float, seed: int = 0, num_saves: int = 10) -> Result2:
    """Result 2 on `t`: `U` seeded, the fixed point `c`, `λ_max` at initialisation by
    Lanczos, `η = 1/λ_max`, `T = ⌊ε/(2η)⌋`; GD stopped at the first perfect step, and GD to `T`
    checking `‖V_t − cP‖_max ≤ ε` and `max |∇_V 𝓛| ≤ 1` at every step and re-estimating `λ_max` at
    `num_saves + 1` evenly spaced steps."""
    pop, k = population(t), task_constants(t)
    c, V0, lam, setting = _result2_start(t, pop, k.delta, jax.random.PRNGKey(seed), eps)
    T = setting.T_max
    first = dl.result2_run(t.arrays(), pop, V0, f64(c), f64(setting.eta), t.n, T, T, True)
    first_perfect = float(first.t_stop) if int(first.event) == 0 else math.inf
    run = dl.result2_run(t.arrays(), pop, V0, f64(c), f64(setting.eta), t.n, T, 1, False)
    models = run.values["model"]
    picks = np.unique(np.linspace(0, T, num_saves + 1).astype(int))
    lambdas = np.asarray(
        [float(dl.loss_lambda_max(jax.tree.map(lambda x, i=i: x[i], models), pop)) for i in picks]
    )
    return Result2(
        task=t,
        setting=setting,
        lambda0=lam,
        first_perfect=first_perfect,
        max_dist_cP=float(jnp.max(run.values["dist_cP"])),
        max_grad_V=float(jnp.max(run.values["grad_V_max"])),
        lambdas=lambdas,
        steps=np.asarray(run.ts)[picks],
        losses=np.asarray(run.values["loss"]),
    )


RESULT2_HYPOTHESES = {
    "quick": {"size": (40, 30, 2, 0), "eps": 4.1, "K": 2**10, "num_steps": 20},
    "full": {"size": (40, 30, 2, 0), "eps": 4.1, "K": 2**14, "num_steps": 20},
}
"""Result 2 inside its hypotheses: `(L, n, M, seed)` of the task, `ε`, the size `K`
of the frozen Monte-Carlo population and the GD steps run. `n = 30` admits only `M = 2` and
`ε ∈ [4.1, 7.4]` (derived, with `𝓛_0 ≈ log n` and `m := M`); `L = 40` is about the smallest
vocabulary with `L − M ≥ n` whose hypotheses hold at `ε = 4.1`, the lower end of the interval: the
certificate `(c/n)(1 − e^{−μ}) > 2‖V − cP‖_max` (derived) asks less of `μ` when `ε` is small.
Quick mode only shrinks `K` (the hypotheses are checked on the population actually used)."""


@dataclasses.dataclass(frozen=True)
class Result2Sampled:
    """One Result 2 run on a frozen Monte-Carlo population: the setting, the first certified step
    (`tasks.decision_lists.certified`; `inf` if none within `num_steps`) and the invariants along
    the run."""

    task: dl.DecisionLists
    K: int
    setting: closed_forms.Result2Setting
    lambda0: float
    num_steps: int
    first_certified: float
    certified_steps: int
    mu: np.ndarray
    threshold: np.ndarray
    max_dist_cP: float
    max_grad_V: float
    losses: np.ndarray


@functools.cache
def result2_sampled(t: dl.DecisionLists, eps: float, K: int, num_steps: int, seed: int = 0) -> Result2Sampled:
    """Result 2 on `t` with a frozen population of `K` sequences drawn from `D = distinct`:
    `δ = γ` in closed form (derived), `U` seeded, the fixed point `c` and `𝓛_0` on the population,
    `λ_max` at initialisation by Lanczos (100 HVPs), `η = 1/λ_max`, `T = ⌊ε/(2η)⌋`; `num_steps` GD
    steps (at most `T`) saving the certificate, `μ(W)`, `‖V_t − cP‖_max` and `max |∇_V 𝓛|` at every
    step. `seed` draws the population and `U`. `threshold[t]` is the `μ` the certificate needs at
    step `t`: `−log(1 − 2n‖V_t − cP‖_max/c)`."""
    key_population, key_U = jax.random.split(jax.random.PRNGKey(seed))
    pop = dl.sampled_population(t, key_population, K)
    k = closed_forms.distinct_constants(t)
    c, V0, lam, setting = _result2_start(t, pop, k.delta, key_U, eps)
    steps = min(num_steps, setting.T_max)
    run = dl.result2_run(t.arrays(), pop, V0, f64(c), f64(setting.eta), t.n, steps, 1, False, exact=False)
    good = np.asarray(run.values["perfect"])
    dist = np.asarray(run.values["dist_cP"])
    return Result2Sampled(
        task=t,
        K=K,
        setting=setting,
        lambda0=lam,
        num_steps=steps,
        first_certified=float(np.argmax(good)) if np.any(good) else math.inf,
        certified_steps=int(np.sum(good)),
        mu=np.asarray(run.values["mu"]),
        threshold=-np.log1p(-2.0 * t.n * dist / c),
        max_dist_cP=float(np.max(dist)),
        max_grad_V=float(np.max(np.asarray(run.values["grad_V_max"]))),
        losses=np.asarray(run.values["loss"]),
    )


# --------------------------------------------------------------------------------------
# The uniform-attention claim of the conclusion (checks `section7_*`)
# --------------------------------------------------------------------------------------

SECTION7_SIZES = {"quick": [(10, 4, 3), (12, 3, 4)], "full": [(10, 4, 3), (12, 3, 4), (16, 4, 3)]}
"""The tasks `(L, n, M)` of the uniform-attention checks (task seed 0)."""

JOINT_INIT_STD = 0.01
"""The joint variant's start: entries of `W_0` and `V_0` i.i.d. `N(0, JOINT_INIT_STD²)`."""


def _one_run(level: dynamics.AbstractSimulation) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The run of seed 0 of `level` (its task fixed by `task.seed`), shared with the figures that
    make it too ([`dynamics.store.shared_store`][]): `(saved steps, saved values)`."""
    store = dynamics.store.shared_store(level, {}, num_seeds=1)
    ds = dynamics.simulate(level, num_seeds=1, store=store)
    names = [name for name in ds.data_vars if "save" in ds[name].dims and name != "time"]
    return ds["time"].values[0], {name: ds[name].values[0] for name in names}


def section7_level(size: tuple[int, int, int]) -> dl.UniformAttentionGD:
    """The uniform-attention claim's run on the task `size = (L, n, M)` of seed 0: `W ≡ 0`, 2,000
    GD steps of size 1 on `V` from `V_0 = 0`, saving κ, ρ and the loss every 10 steps
    ([`tasks.decision_lists.UniformAttentionGD`][]); the checks `section7_*` and the figure
    `decision_lists_uniform_attention` run it."""
    L, n, M = size
    task = dl.DecisionListsConfig(L=L, n=n, M=M, seed=0)
    return dl.UniformAttentionGD(task=task, step=1.0, num_steps=2000, every=10)


@functools.cache
def uniform_attention(size: tuple[int, int, int]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The run of [`section7_level`][]. **Returns:** `(steps, values dict of numpy arrays)`."""
    return _one_run(section7_level(size))


@functools.cache
def joint_attention(
    size: tuple[int, int, int], num_steps: int = 2000, step: float = 1.0, every: int = 10
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The joint variant of the uniform-attention claim (the paper's Sec. II, Conclusion) on the
    task `size = (L, n, M)` of seed 0: full-batch GD on `(W, V)` from `W_0`, `V_0` with i.i.d.
    `N(0, JOINT_INIT_STD²)` entries drawn from `PRNGKey(0)` ([`tasks.decision_lists.JointGD`][]),
    saving the loss, `μ(W)`, `κ(V)`, `ρ(V)` and perfect classification (enumerated) every `every`
    steps.

    **Returns:** `(steps, values dict of numpy arrays)`.
    """
    L, n, M = size
    task = dl.DecisionListsConfig(L=L, n=n, M=M, seed=0)
    level = dl.JointGD(task=task, step=step, init_std=JOINT_INIT_STD, num_steps=num_steps, every=every)
    return _one_run(level)
