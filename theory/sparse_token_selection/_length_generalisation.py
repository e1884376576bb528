"""Fig. 2 at the paper's size: online GD with stochastic and with fixed PE at T = 200, q = 3,
validated at T_test = 250, 300, 350, 400 (quick: the reduced size d = 5, T = 20, N = 40,
T_test = 25..40), next to the closed forms of both losses along population GD: Theorem 3's for
stochastic PE, `closed_forms.fixed_pe_loss` for fixed PE; the same runs at unseen q_test at the
training length (Fig. 4, bottom); and why the full model's online run at the paper's size lags
population GD (mini-batch noise in the token-key block W_XE)."""

import dataclasses
import functools

import jax
import numpy as np

import dynamics
import tasks.sparse_token_selection as sts

from .._check import Measured, claim, relative_error
from . import closed_forms as F
from ._checks import ONLINE

PAPER_ONLINE = dynamics.with_settings(ONLINE, {"task.d": 10, "task.T": 200, "task.pe_dim": 400})
"""The paper's Fig. 2 size: T = 200, q = 3, T_test = 250..400 (paper); d = 10, N = 400 slots (recon)."""

FOLLOWS_TOLERANCE = 0.25
"""Relative error allowed between an online loss and its closed form along population GD."""

CONVERGED = 0.05
"""The stochastic-PE loss / L_0 read as "converged to about 0" at every T_test."""


def _sim(full: bool) -> sts.Online:
    """Mini-batch GD, lr 1, zero init, batch 256: 10⁴ steps at the paper's size, 2000 reduced."""
    base, steps = (PAPER_ONLINE, 10_000) if full else (ONLINE, 2000)
    return dataclasses.replace(
        base,
        optimizer="gd",
        lr=1.0,
        batch_size=256,
        num_steps=steps,
        every=steps // 10,
        num_eval=1024,
        num_q_tests=3,
    )


FIXED_HORIZON = 100_000
"""Steps of the fixed-PE population path: past the closed form's minimum, on towards the floor."""


@functools.cache
def _runs(full: bool) -> dict:
    """The saved loss_T / L_0 and loss_q / L_0 (`name` and `name_q`, mean over seeds) of stochastic
    PE (the full model and Definition 4's, only W_EE and V_X trained) and of fixed PE, the closed
    forms along population GD (the stochastic path every 10 steps up to the run's end, the fixed
    path every 100 steps up to `FIXED_HORIZON`, each of shape (saves, T_tests), with its steps;
    at the q_tests, `name_q_closed` at the run's last step), and the settings.

    Population GD from zero init stays on the invariant set: with stochastic PE (dictionary,
    N slots) it is the reduced recursion of the task; with fixed PE only slots 1..T are trained and
    it is the recursion of one-hot PE at T. At the training length both read the same closed form
    L_{T,q'}(γ, a): a score shift common to all positions (the centring of W_EE) cancels in the
    softmax."""
    sim = _sim(full)
    seeds = 1 if full else 2
    keys = dynamics.seed_keys(0, seeds)
    task = sim.task
    L0 = task.trivial_loss
    T_tests = sts.validation_lengths(task, sim.num_T_tests)
    q_tests = sts.validation_sparsities(task, sim.num_q_tests)
    out = {"sim": sim, "T_tests": T_tests, "q_tests": q_tests}
    variants = (
        ("stochastic", sim),
        ("definition4", dataclasses.replace(sim, blocks="definition4")),
        ("fixed", dynamics.with_settings(sim, {"task.fixed_pe": True})),
    )
    for name, s in variants:
        run, _ = dynamics.run_many(s.run, keys)
        out[name] = np.asarray(run.values["loss_T"], np.float64).mean(axis=0) / L0
        out[f"{name}_q"] = np.asarray(run.values["loss_q"], np.float64).mean(axis=0) / L0
    stochastic = sts.reduced_gd(task, sim.lr, sim.num_steps, every=10)
    out["stochastic_steps"] = np.asarray(stochastic.ts)
    out["stochastic_path"] = (
        np.stack(
            [np.asarray(jax.vmap(sts.reduced_state_loss(task, T=T))(stochastic.values)) for T in T_tests],
            axis=1,
        )
        / L0
    )
    onehot = sts.STSConfig(d=task.d, T=task.T, q=task.q, pe_sampler="onehot")
    fixed = sts.reduced_gd(onehot, sim.lr, FIXED_HORIZON, every=100)
    gamma, a = np.asarray(fixed.values["gamma"]), np.asarray(fixed.values["a"])
    out["fixed_steps"] = np.asarray(fixed.ts)
    out["fixed_path"] = (
        np.stack([F.fixed_pe_loss(gamma, a, sim.task.d, sim.task.T, sim.task.q, T) for T in T_tests], axis=1)
        / L0
    )
    out["stochastic_closed"] = out["stochastic_path"][-1]
    out["fixed_closed"] = out["fixed_path"][out["fixed_steps"] == sim.num_steps][0]
    last = {
        "stochastic": (task, jax.tree.map(lambda x: x[-1], stochastic.values)),
        "fixed": (onehot, jax.tree.map(lambda x: x[out["fixed_steps"] == sim.num_steps][0], fixed.values)),
    }
    for name, (config, state) in last.items():
        losses = [float(sts.reduced_state_loss(config, q=q)(state)) for q in q_tests]
        out[f"{name}_q_closed"] = np.array(losses) / L0
    out["note"] = (
        f"d={task.d}, T={task.T}, q={task.q}, dictionary_onehot N={task.pe_dim}, T_test={list(T_tests)}, "
        f"zero init, mini-batch GD lr={sim.lr} batch {sim.batch_size}, {sim.num_steps} steps, "
        f"{seeds} seed(s), {sim.num_eval} antithetic validation pairs, float32; final loss_T / (d/2q): "
        f"stochastic {_rounded(out['stochastic'][-1])}, its closed form "
        f"{_rounded(out['stochastic_closed'])}; Definition 4's model (only W_EE, V_X trained) "
        f"{_rounded(out['definition4'][-1])}; fixed {_rounded(out['fixed'][-1])}, its closed form "
        f"{_rounded(out['fixed_closed'])}"
    )
    return out


def _rounded(values) -> list[float]:
    return np.round(np.asarray(values, np.float64), 4).tolist()


def _steps_to_converge(sim: sts.Online, T_test: int, chunk: int = 1000) -> int:
    """The first multiple of `chunk` steps at which Theorem 3's closed form at `T_test` along
    population GD is below `CONVERGED` · L_0 (searched up to 10⁶ steps; −1 if never)."""
    task = sim.task
    run = sts.reduced_gd(task, sim.lr, 1_000_000, every=chunk, save=sts.reduced_state_loss(task, T=T_test))
    below = np.flatnonzero(np.asarray(run.values) <= CONVERGED * task.trivial_loss)
    return int(run.ts[below[0]]) if below.size else -1


def _matching_steps(steps: np.ndarray, path: np.ndarray, final: np.ndarray) -> list[int]:
    """For each T_test (a column of `path`, the closed form at `steps`), the last step at which the
    closed form is still at or above the final online loss `final`: how far along the population
    path the online run has got."""
    matched = []
    for closed, value in zip(path.T, final):
        above = np.flatnonzero(closed >= value)
        matched.append(int(steps[above[-1]]) if above.size else 0)
    return matched


def _follows(simulated: np.ndarray, closed: np.ndarray, note: str, deviation: str | None = None) -> Measured:
    """The worst relative error over T_test between the final online losses and their closed form."""
    errors = [relative_error(c, s) for c, s in zip(closed, simulated)]
    worst = int(np.argmax(errors))
    return Measured(
        predicted=float(closed[worst]),
        simulated=float(simulated[worst]),
        error=float(errors[worst]),
        note=note + ".",
        deviation=deviation,
    )


@claim(
    r"Fig. 2: stochastic PE generalises to longer $T_{\text{test}}$; Theorem 3: its loss there is "
    r"$L_{T',q}(\gamma_k, a_k)$ along population GD",
    method=r"`online` GD lr 1, zero init, batch 256, 1024 pairs, at the paper's size ($d = 10$, $T = "
    r"200$, $N = 400$, $T_{\text{test}} = 250..400$, $10^4$ steps, 1 seed) / quick at $d = 5$, "
    r"$T = 20$, $N = 40$ (2000 steps, 2 seeds): final loss against the closed form at the same "
    r"step, worst relative error; an expected deviation only when the same run of Definition "
    r"4's model (`blocks='definition4'`) is within the tolerance",
    tolerance=FOLLOWS_TOLERANCE,
    provenance="derived",
    sized=True,
)
def fig2_stochastic_follows_theorem3(full: bool = False) -> Measured:
    """Fig. 2 with stochastic PE: the online loss at every T_test at the end of training against
    Theorem 3's closed form L_{T',q}(γ_k, a_k) along population GD at the same step. A miss is an
    expected deviation only when the online run of Definition 4's model (only W_EE and V_X trained,
    the same batches) follows the closed form within the tolerance: the miss then comes from the
    mini-batch noise of the other blocks (see `fig2_token_key_noise`)."""
    r = _runs(full)
    steps = _matching_steps(r["stochastic_steps"], r["stochastic_path"], r["stochastic"][-1])
    closed = r["stochastic_closed"]
    full_error = max(relative_error(c, s) for c, s in zip(closed, r["stochastic"][-1]))
    def4_errors = [relative_error(c, s) for c, s in zip(closed, r["definition4"][-1])]
    explained = full_error > FOLLOWS_TOLERANCE and max(def4_errors) <= FOLLOWS_TOLERANCE
    return _follows(
        r["stochastic"][-1],
        closed,
        f"{r['note']}; the final online losses are the closed form's at steps {steps} of population GD; "
        f"Definition 4's model is within {_rounded(def4_errors)} of the closed form",
        deviation=(
            "mini-batch noise in the token-key block W_XE (zero population gradient) tilts the attention "
            "output on the plateau and lowers the value scale, which slows the growth of a "
            "(fig2_token_key_noise); Definition 4's model, trained on the same batches without that block, "
            f"follows the closed form (worst relative error {max(def4_errors):.3f})"
            if explained
            else None
        ),
    )


@claim(
    r"Fig. 2: fixed PE does not generalise; its loss at $T_{\text{test}}$ is `fixed_pe_loss` along "
    r"population GD",
    method="the same runs with fixed PE: final loss against the closed form at the same step, worst "
    "relative error",
    tolerance=FOLLOWS_TOLERANCE,
    provenance="derived",
    sized=True,
)
def fig2_fixed_follows_closed_form(full: bool = False) -> Measured:
    """Fig. 2 with fixed PE: the online loss at every T_test at the end of training against
    `closed_forms.fixed_pe_loss` along population GD at the same step."""
    r = _runs(full)
    return _follows(
        r["fixed"][-1],
        r["fixed_closed"],
        r["note"],
    )


@claim(
    r"Fig. 2: stochastic PE converges within about $10^4$ steps on every $T_{\text{test}}$",
    method=r"the same runs: largest final loss $/L_0$ over $T_{\text{test}}$, at most 0.05",
    tolerance=CONVERGED,
    provenance="recon",
    sized=True,
)
def fig2_stochastic_converges(full: bool = False) -> Measured:
    """Fig. 2: the stochastic-PE loss at every T_test ends below `CONVERGED` · L_0 (the largest
    over T_test). A miss is an expected deviation only when Theorem 3's closed form along population
    GD is itself above `CONVERGED` · L_0 at the run's last step."""
    r = _runs(full)
    sim, longest = r["sim"], r["T_tests"][-1]
    final = r["stochastic"][-1]
    closed_max = float(np.max(r["stochastic_closed"]))
    k = _steps_to_converge(sim, longest)
    return Measured(
        predicted=0.0,
        simulated=float(np.max(final)),
        error=float(np.max(final)),
        note=f"{r['note']}; the closed form at T_test={longest} reaches {CONVERGED} L₀ after {k} steps.",
        deviation=f"by Theorem 3 the loss at T_test is a growing multiple of the training-length loss (the "
        f"ratio tends to R), which falls like (N − 1)/(4ηk): after {sim.num_steps} steps the closed form "
        f"itself is {closed_max:.3f} L_0 at T_test={longest}, still falling like 1/k"
        if closed_max > CONVERGED
        else None,
    )


@claim(
    r"Fig. 2: fixed PE stays above a positive constant on every $T_{\text{test}}$",
    method=r"the same fixed-PE runs: smallest saved loss against the minimum of `fixed_pe_loss` over "
    r"$10^5$ steps of population GD (lower bound, worst $T_{\text{test}}$)",
    tolerance=0.1,
    provenance="derived",
    bound="lower",
    sized=True,
    printed="Fig. 4 caption: “all of the fixed PE end up with validation loss at least 0.15” (its "
    "dimension and loss scale not given: the sign compares, not the number)",
)
def fig2_fixed_stays_above_constant(full: bool = False) -> Measured:
    """Fig. 2: the fixed-PE loss at every T_test stays above a positive constant: the smallest value
    of the closed form over the whole population-GD path (`FIXED_HORIZON` steps, past its minimum,
    on to the floor). Compares the smallest saved online loss with it (lower bound, worst T_test)."""
    r = _runs(full)
    sim, T_tests = r["sim"], r["T_tests"]
    L0 = sim.task.trivial_loss
    path = r["fixed_path"]
    constant = path.min(axis=0)
    floors = np.array([F.fixed_pe_floor(sim.task.d, sim.task.T, sim.task.q, T) for T in T_tests]) / L0
    lowest = r["fixed"].min(axis=0)
    at_minimum = r["fixed_steps"][path.argmin(axis=0)].tolist()
    ratios = lowest / constant
    worst = int(np.argmin(ratios))
    return Measured(
        predicted=float(constant[worst]),
        simulated=float(lowest[worst]),
        error=max(0.0, 1.0 - float(ratios[worst])),
        note=f"{r['note']}; smallest saved fixed loss_T / (d/2q) {_rounded(lowest)}, the constant "
        f"{_rounded(constant)} (closed-form minimum at step {at_minimum}), "
        f"which then rises to the floor {_rounded(floors)} as a grows.",
    )


@claim(
    r"Fig. 4 bottom: both PE types reach 0 on unseen $q_{\text{test}}$ (the caption: stochastic "
    r"slightly faster); at the training length both follow $L_{T,q'}(\gamma_k, a_k)$ along their own "
    r"population GD, fixed PE ahead",
    method="the Fig. 2 check runs at $q' = q+1..q+3$: final ratio of the fixed- to the stochastic-PE "
    "loss against the ratio of the two closed forms, worst relative error; an expected "
    "deviation only when the ratio with Definition 4's model is within the tolerance",
    tolerance=FOLLOWS_TOLERANCE,
    provenance="derived",
    sized=True,
)
def fig4_unseen_q_follows_speed(full: bool = False) -> Measured:
    """Fig. 4, bottom: at the training length T, the ratio of the fixed-PE to the stochastic-PE loss
    at each unseen q_test at the end of training, against the same ratio of the closed forms
    L_{T,q'}(γ_k, a_k) along each PE type's own population GD. Both read the same closed form at
    length T, so the ratio is how far fixed PE (T trained slots) has got ahead of stochastic PE
    (N slots, each trained in about T/N of the steps). A miss is an expected deviation only when
    the ratio with Definition 4's stochastic-PE model (the same batches) is within the tolerance
    (the full model's lag, see `fig2_token_key_noise`)."""
    r = _runs(full)
    closed = r["fixed_q_closed"] / r["stochastic_q_closed"]
    simulated = r["fixed_q"][-1] / r["stochastic_q"][-1]
    def4 = r["fixed_q"][-1] / r["definition4_q"][-1]
    errors = [relative_error(c, s) for c, s in zip(closed, simulated)]
    def4_errors = [relative_error(c, s) for c, s in zip(closed, def4)]
    worst = int(np.argmax(errors))
    explained = max(errors) > FOLLOWS_TOLERANCE and max(def4_errors) <= FOLLOWS_TOLERANCE
    return Measured(
        predicted=float(closed[worst]),
        simulated=float(simulated[worst]),
        error=float(errors[worst]),
        note=f"{r['note']}; q_test={list(r['q_tests'])}: final loss_q / (d/2q) stochastic "
        f"{_rounded(r['stochastic_q'][-1])}, its closed form {_rounded(r['stochastic_q_closed'])}; "
        f"Definition 4's model {_rounded(r['definition4_q'][-1])}; fixed {_rounded(r['fixed_q'][-1])}, "
        f"its closed form {_rounded(r['fixed_q_closed'])}; ratio fixed / stochastic {_rounded(simulated)} "
        f"(with Definition 4's model {_rounded(def4)}), closed forms {_rounded(closed)}.",
        deviation="the full stochastic-PE model lags population GD by the mini-batch noise in W_XE "
        "(fig2_token_key_noise), which widens fixed PE's lead; with Definition 4's model, trained on "
        f"the same batches without that block, the ratio is within {max(def4_errors):.3f} of the "
        "closed forms'"
        if explained
        else None,
    )


NOISE_BATCHES = {False: (64,), True: (64, 128, 256)}
"""The batch sizes of `fig2_token_key_noise`, by `full` (quick, full)."""


def _plateau_run(batch_size: int, blocks: str, num_steps: int) -> dict[str, float]:
    """One online GD run (lr 1, zero init, seed 0) at the paper's size: the final value scale
    γ̂ = tr(V_X)/d, score gap â = <W_EE, M>/||M||² and token-key bias E_y ||W_XE s_y||²."""
    sim = dataclasses.replace(
        PAPER_ONLINE,
        optimizer="gd",
        lr=1.0,
        batch_size=batch_size,
        num_steps=num_steps,
        every=num_steps,
        num_T_tests=0,
        num_q_tests=0,
        num_eval=64,
        blocks=blocks,
    )
    task = sim.task
    d, N = task.d, task.pe_dim
    run, _ = dynamics.run_many(sim.run, dynamics.seed_keys(0, 1))
    model = jax.tree.map(lambda x: x[0], run.final)
    gamma, a = sts.to_scalars(task, model)
    return {"gamma": float(gamma), "a": float(a), "bias": F.token_key_bias(model.W[:d, d:], N, task.q)}


@claim(
    r"why the full model lags population GD at the paper's size: noise in $W_{XE}$ lowers the "
    r"plateau's value scale to $p_{\text{in}} / (q p_{\text{in}}^2 + (T-q) p_{\text{out}}^2 + "
    r"\mathbb{E}_y\Vert W_{XE} s_y\Vert ^2/d)$; without $W_{XE}$ it is population GD's",
    method=r"`online` GD lr 1, zero init, 1 seed, at the paper's size, batch 64 / 64, 128, 256, 500 / "
    r"1000 steps: $\operatorname{tr} V_X / d$ of the full model against the formula at its own "
    r"$a$ and $W_{XE}$, and of Definition 4's model against population GD; worst relative error",
    tolerance=0.1,
    provenance="derived",
    sized=True,
)
def fig2_token_key_noise(full: bool = False) -> Measured:
    """Why the full model's online run lags population GD at the paper's size (derived): with
    x_query = 0 the token-key block W_XE gets no population gradient, but mini-batch GD leaves noise
    in it; the score of token i gains x_iᵀ W_XE s_y, which tilts the attention output by W_XE s_y. On
    the plateau that tilt (mean square `closed_forms.token_key_bias`) is comparable to the signal d/T,
    so the value scale settles at `sts.optimal_gamma` with that bias at the run's own score gap
    instead of about 1, and the score gap a, whose gradient is proportional to it, grows slower.

    Compares, after the plateau's first steps, the full model's value scale with that prediction at
    several batch sizes, and that of Definition 4's model (no W_XE, trained on the same batches) with
    population GD's at the same step; worst relative error."""
    task = PAPER_ONLINE.task
    num_steps = 1000 if full else 500
    population = sts.reduced_gd(task, 1.0, num_steps, every=num_steps)
    pop_gamma, pop_a = (float(population.values[k][-1]) for k in ("gamma", "a"))
    rows, predictions = [], []
    for B in NOISE_BATCHES[full]:
        for blocks in ("all", "definition4"):
            r = _plateau_run(B, blocks, num_steps)
            predicted = (
                float(sts.optimal_gamma(task.rho**2 * r["a"], task.d, task.T, task.q, bias=r["bias"]))
                if blocks == "all"
                else pop_gamma
            )
            predictions.append((relative_error(predicted, r["gamma"]), predicted, r["gamma"]))
            rows.append(
                f"B={B} {blocks}: γ {r['gamma']:.3f} against {predicted:.3f}, bias {r['bias']:.4f}, "
                f"a {r['a']:.4f}"
            )
    error, predicted, simulated = max(predictions)
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=error,
        note=f"d={task.d}, T={task.T}, q={task.q}, dictionary_onehot N={task.pe_dim}, GD lr 1, zero init, "
        f"{num_steps} steps, 1 seed, float32; signal d/T = {task.d / task.T:.3f}; {'; '.join(rows)}; "
        f"population GD: γ {pop_gamma:.3f}, a {pop_a:.4f}. The prediction is first order in the bias; "
        f"the tolerance covers its square (up to about 0.08 at B=64) and the value scale's lag behind "
        f"its moving optimum.",
    )
