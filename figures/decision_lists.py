"""Figures of "Provable Gradient-Descent-Based Learning of Decision Lists by Transformers"
(anonymous extended abstract). The abstract has no figures: these show its results on our
sampling distribution (`D = distinct`) and our δ, γ (both recon).

- `decision_lists_time_vs_bound`: Result 1, time to perfect classification τ against the bound
  4M/(log(L) γ) over a grid of (L, M), several random tasks per cell: a sweep of `Result1Flow` per L.
- `decision_lists_flow_one_task`: Result 1 on one task: loss, μ(W) and the attention scores of one
  query's list.
- `decision_lists_uniform_attention`: the conclusion's uniform-attention claim, GD on V with W = 0:
  κ(V), ρ(V, P) and the loss.

Each `fn(out_dir, full) -> list[Path]` writes PNG, PDF and JSON (numbers plotted + config).
"""

import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import dynamics
import tasks.decision_lists as dl
from theory.decision_lists import SECTION7_SIZES, closed_forms, section7_level
from theory.decision_lists import uniform_attention as section7_uniform

from ._save import caption, named_figures, save_figure

GRID = {
    "quick": {"n": 3, "L": (8, 12, 16), "M": (2, 3, 4), "tasks": 4},
    "full": {"n": 4, "L": (10, 12, 16, 20, 24), "M": (2, 3, 4, 5), "tasks": 8},
}
"""The (L, M) grid of `decision_lists_time_vs_bound`, the sequence length and the random tasks per cell."""

FLOW_CONFIG = {"rtol": dl.FLOW_CONTROLLER.rtol, "atol": dl.FLOW_CONTROLLER.atol}
"""The tolerances of Result 1's flow (Tsit5), as recorded in the figures' JSON."""


def time_vs_bound_grid(n: int, Ls, Ms, num_tasks: int, seed: int = 0) -> dict:
    """τ and the bound for `num_tasks` random tasks in every (L, M) cell (Result 1): for each `L`,
    one sweep of [`Result1Flow`][tasks.decision_lists.Result1Flow] over `task.M` × seeds (a sweep's
    points share their shapes, and `W` is L × L), run `s` of a cell on the task
    `DecisionLists.random(seed + s, L=L, n=n, M=M)`.

    **Returns:** a dict of arrays of shape `(len(Ls), len(Ms), num_tasks)`: `tau`, `bound`, `c`,
    `gamma`, `ratio` = τ/bound.
    """
    sweeps = [
        dynamics.sweep(
            dl.Result1Flow(task=dl.DecisionListsConfig(L=L, n=n)),
            {"task.M": list(Ms)},
            num_seeds=num_tasks,
            seed=seed,
        )
        for L in Ls
    ]
    out = {
        key: np.stack([ds[f"final.{key}"].values for ds in sweeps]) for key in ("tau", "bound", "c", "gamma")
    }
    out["ratio"] = out["tau"] / out["bound"]
    return out


def _zero_floor(values: np.ndarray) -> float:
    """Where τ = 0 is drawn on a log axis: a third of the smallest positive value (1 if none)."""
    positive = values[values > 0]
    return float(positive.min()) / 3 if positive.size else 1.0


def _mark_zeros(ax, x, values, floor: float, colors) -> None:
    """Draw the entries of `values` (shape `(len(x), len(colors), k)`) that are 0 as open triangles at
    `floor`, with a dotted line there and one legend entry (nothing if no entry is 0).

    **Arguments:**

    - `ax`: the log-scaled axes.
    - `x`: the abscissae (one per row of `values`).
    - `values`: the plotted quantity, τ or τ/bound.
    - `floor`: the height a zero is drawn at (see `_zero_floor`).
    - `colors`: one colour per column of `values`.
    """
    zeros = values == 0
    if not zeros.any():
        return
    for j, color in enumerate(colors):
        rows = zeros[:, j].any(axis=1)
        ax.scatter(x[rows], np.full(rows.sum(), floor), marker="v", s=60, facecolors="none", edgecolors=color)
    ax.axhline(floor, color="gray", ls=":", lw=1)
    label = f"τ = 0 (drawn at {floor:.1e})"
    ax.scatter([], [], marker="v", facecolors="none", edgecolors="gray", label=label)


@caption(
    r"Result 1 over a grid of $(L, M)$ with several random tasks per cell ($n = 3$, $L \in \{8, 12, "
    r"16\}$, $M \in \{2, 3, 4\}$, 4 tasks in quick mode; $n = 4$, $L \in \{10, \dots, 24\}$, $M \in "
    r"\{2, \dots, 5\}$, 8 tasks with `--full`), a sweep of the `result1_flow` level per $L$. Top: "
    r"$\tau$/bound (median and range) against $L$; bottom: median $\tau$ (solid) and bound (dashed). A "
    r"run with $\tau = 0$ is drawn as an open triangle on a dotted floor. Look for every ratio below "
    r"1, usually by orders of magnitude.",
    checks=("result1_time_within_bound",),
)
def time_vs_bound(out_dir: Path, full: bool) -> list[Path]:
    """Result 1: τ/bound over the (L, M) grid (top) and τ and the bound against L (bottom). A run
    with τ = 0 (perfect from the start) cannot sit on the log axes: it is drawn as an open triangle on
    a dotted floor at a third of the smallest positive value, named in the legend.
    """
    cfg = GRID["full" if full else "quick"]
    data = time_vs_bound_grid(cfg["n"], cfg["L"], cfg["M"], cfg["tasks"])
    fig, (ax0, ax1) = plt.subplots(2, 1, figsize=(6.4, 6.4), sharex=True, layout="constrained")
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(cfg["M"])))
    Ls = np.asarray(cfg["L"], float)
    ratio_floor, tau_floor = _zero_floor(data["ratio"]), _zero_floor(np.median(data["tau"], axis=2))
    for j, (M, color) in enumerate(zip(cfg["M"], colors)):
        ratio = np.maximum(data["ratio"][:, j], ratio_floor)
        ax0.errorbar(
            Ls,
            np.median(ratio, axis=1),
            yerr=[np.median(ratio, 1) - ratio.min(1), ratio.max(1) - np.median(ratio, 1)],
            color=color,
            marker="o",
            capsize=3,
            label=f"M={M}",
        )
        tau = np.maximum(np.median(data["tau"][:, j], axis=1), tau_floor)
        ax1.plot(Ls, tau, color=color, marker="o", label=f"τ, M={M}")
        ax1.plot(Ls, np.median(data["bound"][:, j], axis=1), color=color, ls="--", label=f"bound, M={M}")
    _mark_zeros(ax0, Ls, data["ratio"], ratio_floor, colors)
    _mark_zeros(ax1, Ls, np.median(data["tau"], axis=2)[..., None], tau_floor, colors)
    ax0.set(ylabel="τ / bound", yscale="log", title=f"Result 1: τ / (4M/(log L γ)), n={cfg['n']}")
    ax1.set(xlabel="L", ylabel="time", yscale="log", title="τ (solid) and the bound (dashed), medians")
    ax0.legend(fontsize=9)
    ax1.legend(fontsize=9, ncol=3)
    config = cfg | {
        "dtype": "float64",
        "distribution": "distinct",
        "delta": "gamma",
        "gamma": "joint",
        "flow": FLOW_CONFIG,
        "full": full,
    }
    return save_figure(
        fig,
        out_dir,
        "decision_lists_time_vs_bound",
        data=data | {"L": cfg["L"], "M": cfg["M"]},
        config=config,
    )


@caption(
    r"Result 1 on one task ($(10,4,3)$, or $(16,4,3)$ with `--full`, seed 0): the population loss, "
    r"$\mu(W)$, and for the query with the longest list the scores $W[a_k, a]$ of its list entries "
    r"against the best score outside the list, on a log time axis with $\tau$ marked. Look for $\mu$ "
    r"crossing 0 at $\tau$ and the list entries sorting themselves in list order above every outside "
    r"token.",
    checks=("result1_perfect_reached", "result1_loss_monotone"),
)
def flow_one_task(out_dir: Path, full: bool) -> list[Path]:
    """Result 1 on one task: the population loss, μ(W) and, for the query with the longest list,
    the scores W[a_k, a] of its list entries against the best score outside the list."""
    L, n, M = (16, 4, 3) if full else (10, 4, 3)
    level = dl.Result1Flow(task=dl.DecisionListsConfig(L=L, n=n, M=M, seed=0))
    first = dynamics.simulate(level, num_seeds=1)
    tau, bound, c, delta, gamma = (
        float(first[f"final.{key}"][0]) for key in ("tau", "bound", "c", "delta", "gamma")
    )
    k = closed_forms.Constants(delta, gamma, level.delta_definition, level.gamma_definition)
    task = level.task.draw()
    a = int(np.argmax([len(e) for e in task.lists]))
    entries = list(task.lists[a])
    outside = np.setdiff1d(np.arange(L), entries)
    # the saves: t = 0, then 120 log-spaced times from τ/100 to 20τ, the flow not stopped at τ
    long = dataclasses.replace(
        level,
        horizon=20 * tau / bound,
        num_saves=121,
        first_save=1 / 2000,
        stop_at_perfect=False,
        save_W=True,
    )
    run = dynamics.simulate(long, num_seeds=1)
    ts = run["time"].values[0]
    values = {name: run[name].values[0] for name in ("loss", "mu")}
    column = run["W"].values[0][:, :, a]
    fig, axes = plt.subplots(3, 1, figsize=(6.4, 7.2), sharex=True, layout="constrained")
    axes[0].plot(ts[1:], values["loss"][1:])
    axes[0].set(xscale="log", ylabel="population loss", title="loss along the W flow")
    axes[1].plot(ts[1:], values["mu"][1:])
    axes[1].axhline(0.0, color="k", lw=0.5)
    axes[1].set(xscale="log", ylabel="μ(W)", title="μ(W) > 0 ⟺ perfect classification")
    for kk, b in enumerate(entries):
        axes[2].plot(ts[1:], column[1:, b], label=f"W[a_{kk + 1}={b}, a]")
    axes[2].plot(ts[1:], column[1:, outside].max(axis=1), "k--", label="max outside list")
    axes[2].set(xscale="log", xlabel="t", ylabel="score", title=f"query a={a}, list {entries}")
    axes[2].legend(fontsize=9, loc="upper left")
    for ax in axes:
        ax.axvline(tau, color="r", lw=0.8, ls=":", label=f"τ = {tau:.3g}: first perfect classification")
    axes[0].legend(fontsize=9)
    config = {
        "simulation": long.describe(),
        "L": L,
        "n": n,
        "M": M,
        "seed": 0,
        "c": c,
        "bound": bound,
        "tau": tau,
        "constants": k.describe(),
        "dtype": "float64",
        "distribution": "distinct",
        "flow": FLOW_CONFIG,
        "full": full,
    }
    data = {
        "t": ts,
        "loss": values["loss"],
        "mu": values["mu"],
        "column": column,
        "query": a,
        "list": entries,
    }
    return save_figure(fig, out_dir, "decision_lists_flow_one_task", data=data, config=config)


@caption(
    r"The uniform-attention claim, GD on $V$ with $W = 0$ from $V_0 = 0$ (step 1, 2000 steps) on "
    r"$(10,4,3)$ and $(12,3,4)$, plus $(16,4,3)$ with `--full`: $\kappa(V)$, $\rho(V, P)$ and the "
    r"loss against the step. Look for $\kappa$ reaching 1 and $\rho$ rising, then drifting down "
    r"slowly as $V$ also fits co-occurrence statistics.",
    checks=("section7_kappa", "section7_rho"),
)
def uniform_attention(out_dir: Path, full: bool) -> list[Path]:
    """The uniform-attention claim of the conclusion: κ(V), ρ(V, P) and the loss along GD on V with
    uniform attention (W = 0)."""
    sizes = SECTION7_SIZES["full" if full else "quick"]
    fig, axes = plt.subplots(3, 1, figsize=(6.4, 7.2), sharex=True, layout="constrained")
    data = {}
    for L, n, M in sizes:
        steps, saved = section7_uniform((L, n, M))
        values = {key: saved[key] for key in ("loss", "kappa", "rho")}
        label = f"L={L}, n={n}, M={M}"
        for ax, key in zip(axes, ("kappa", "rho", "loss")):
            ax.plot(steps, values[key], label=label)
        data[label] = {"step": steps, **values}
    axes[0].set(ylabel="κ(V)", title="column argmax = π(b)")
    axes[1].set(ylabel="ρ(V, P)", title="centred cosine with P")
    axes[2].set(xlabel="GD step", ylabel="population loss", yscale="log", title="loss (W = 0)")
    axes[0].legend(fontsize=9)
    level = section7_level(sizes[0])
    config = {
        "sizes": sizes,
        "steps": level.num_steps,
        "step": level.step,
        "V0": "zeros",
        "W": "0 (uniform attention)",
        "dtype": "float64",
        "distribution": "distinct",
        "full": full,
    }
    return save_figure(fig, out_dir, "decision_lists_uniform_attention", data=data, config=config)


FIGURES = named_figures(__name__, [time_vs_bound, flow_one_task, uniform_attention])
