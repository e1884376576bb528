"""Figures of Huang, Liang and Yang (NeurIPS 2024, arXiv 2409.17335), Section 7.

- `ntp_partial_order_fig2`: Figure 2's six panels for the |V| = 20 experiment (Recipe B seed 0;
  `full` adds a band over seeds 0-4): stage-1 loss, direction and norm of `W_ov`; stage-2 loss,
  direction and norm of `W_kq` (direction measured against the QP solution of Eqn 3).
- `ntp_partial_order_wkq_column`: the learned `W_kq` column of one query against `W*_kq` (QP)
  and Proposition 2's closed form.

Each writes PNG, PDF and a JSON file with the numbers plotted and the config. Float64.
"""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import dynamics
import tasks.ntp_partial_order as ntp
from theory.ntp_partial_order import cosine
from theory.ntp_partial_order.closed_forms import (
    hall_columns,
    w_kq_closed_form,
    w_kq_star_qp,
    w_ov_star_closed,
)

from ._save import caption, named_figures, save_figure

STEPS = 900


def _series(W: np.ndarray, star: np.ndarray) -> dict[str, np.ndarray]:
    norms = np.linalg.norm(W, axis=(1, 2))
    unit = W / np.where(norms > 0, norms, 1.0)[:, None, None]
    cos = np.einsum("tij,ij->t", unit, star) / np.linalg.norm(star)
    dist = np.linalg.norm(unit - star / np.linalg.norm(star), axis=(1, 2))
    return {"cos": cos, "one_minus_cos": 1 - cos, "unit_distance": dist, "norm": norms}


def run_experiments(num_seeds: int, steps: int = STEPS) -> list[dict]:
    """Algorithm 1 on Recipe B seeds 0, ..., `num_seeds` − 1 with the paper's sizes, in one
    `dynamics.simulate` of [`Algorithm1`][tasks.ntp_partial_order.Algorithm1] saving both stages at
    every step; per seed, the metrics of every step."""
    sim = ntp.Algorithm1(num_steps1=steps, num_steps2=steps, every=1, save_stage1=True)
    runs = dynamics.simulate(sim, num_seeds=num_seeds)
    experiments = []
    for seed in range(num_seeds):
        d = sim.task.dataset(seed)
        W_kq = runs["W_kq"].values[seed]
        star_kq = w_kq_star_qp(d).W
        experiments.append(
            {
                "dataset": d,
                "t": runs["time"].values[seed],
                "L0": runs["loss0"].values[seed],
                "L": runs["loss"].values[seed],
                "W_kq_final": W_kq[-1],
                "stage1": _series(runs["W_ov"].values[seed], w_ov_star_closed(d)),
                "stage2": _series(W_kq, star_kq),
                "star_kq": star_kq,
                "cos_closed_form": cosine(W_kq[-1], w_kq_closed_form(d)),
                "hall_all": bool(hall_columns(d).all()),
            }
        )
    return experiments


@caption(
    r"Figure 2's six panels for the $\lvert V\rvert = 20$ experiment (Recipe B seed 0; with `--full`, "
    r"a band over seeds 0 to 4): the stage-1 loss $L_0$, $\cos(W_{ov}^{(t)}, W^*_{ov})$ and $\lVert "
    r"W_{ov}^{(t)}\rVert$; the stage-2 loss $L$, $\cos(W_{kq}^{(t)}, W^*_{kq})$ against the QP "
    r"solution and $\lVert W_{kq}^{(t)}\rVert$, each over the 900 iterations of its stage, losses "
    r"also on a log scale. Look for: both losses falling, the stage-1 cosine at 1 from the first step "
    r"(the exact trajectory), the stage-2 cosine rising towards 1, and both norms growing linearly "
    r"with slopes $\eta_0$ and at most $\eta$.",
    checks=(
        "prop1_norm_linear",
        "prop1_direction",
        "prop1_loss_closed_form",
        "thm1_norm_bounds",
        "thm1_direction_monotone",
    ),
)
def fig2(out_dir: Path, full: bool) -> list[Path]:
    """Figure 2 (Section 7 of the paper): three panels per stage, iterations 0..900."""
    seeds = list(range(5)) if full else [0]
    runs = run_experiments(len(seeds))
    t = runs[0]["t"]
    fig, axes = plt.subplots(3, 2, figsize=(6.4, 7.8), sharex=True, layout="constrained")
    panels = [
        ("L0", None, "stage-1 loss $L_0(W_{ov}^{(t)})$"),
        ("stage1", "cos", r"$\cos(W_{ov}^{(t)}, W^*_{ov})$"),
        ("stage1", "norm", r"$\|W_{ov}^{(t)}\|$"),
        ("L", None, r"stage-2 loss $L(\theta^{(t)})$"),
        ("stage2", "cos", r"$\cos(W_{kq}^{(t)}, W^*_{kq})$"),
        ("stage2", "norm", r"$\|W_{kq}^{(t)}\|$"),
    ]
    for ax, (key, sub, title) in zip(axes.T.flat, panels):
        ys = np.stack([r[key] if sub is None else r[key][sub] for r in runs])
        first = 1 if sub == "cos" else 0  # the direction is undefined at W = 0
        ts, ys = t[first:], ys[:, first:]
        ax.plot(ts, ys[0], color="C0", label="Recipe B seed 0")
        if len(runs) > 1:
            ax.fill_between(
                ts, ys.min(axis=0), ys.max(axis=0), color="C0", alpha=0.25, label=f"seeds 0-{seeds[-1]}"
            )
        if sub is None:
            twin = ax.twinx()
            twin.semilogy(ts, ys[0], color="C3", ls="--", lw=1)
            twin.set_ylabel("log scale", color="C3")
        if sub == "cos":  # a cosine is at most 1: its axis reaches 1, so a cosine flat at 1 reads as 1
            low = min(float(ys.min()), 0.95)
            ax.set_ylim(low - 0.05 * (1 - low), 1 + 0.05 * (1 - low))
            ax.axhline(1, color="0.6", ls=":", lw=1)
        ax.set_title(title)
    for ax in axes[-1]:
        ax.set_xlabel("iteration t of the stage")
    axes[0, 0].legend(loc="upper right")
    fig.suptitle(
        "Algorithm 1 on a random realizable dataset (Recipe B, |V| = d = 20),\n"
        r"$\eta_0 = 0.2/\sqrt{d}$, $\eta = 0.05/\sqrt{d}$; $W^*_{kq}$ = QP solution of Eqn 3",
        fontsize=10,
    )
    data = {"t": t, "seeds": seeds}
    for s, r in zip(seeds, runs):
        data[f"seed{s}"] = {
            "L0": r["L0"],
            "L": r["L"],
            "stage1": r["stage1"],
            "stage2": r["stage2"],
            "cos_final_vs_closed_form": r["cos_closed_form"],
            "hall_all_queries": r["hall_all"],
        }
    config = {
        "recipe": "B",
        "vocab_size": 20,
        "steps_per_stage": STEPS,
        "eta0": "0.2/sqrt(20)",
        "eta": "0.05/sqrt(20)",
        "dtype": "float64",
        "full": full,
    }
    return save_figure(fig, out_dir, "ntp_partial_order_fig2", data=data, config=config)


@caption(
    "The learned column of $W_{kq}$ for one query of Recipe B seed 0 (the one with the most ordered "
    "tokens, preferring a query where the Hall-type condition fails) after 900 stage-2 steps (4500 "
    "with `--full`), rescaled to the norm of $W^*_{kq}$, against the QP solution of Eqn 3 and "
    "Proposition 2's closed form, tokens grouped as optimal, non-optimal and non-comparable. Look "
    "for: positive optimal entries, negative non-optimal ones, exact zeros on non-comparable tokens, "
    "and the learned column following the QP solution where it differs from the closed form.",
    checks=("thm3_noncomparable_entries_zero", "thm3_noncomparable_inserted"),
)
def wkq_column(out_dir: Path, full: bool) -> list[Path]:
    """The learned `W_kq` column of the query with the most ordered tokens (Recipe B seed 0) at
    t = 900 (rescaled to the norm of `W*_kq`) against the QP solution and Proposition 2."""
    steps = STEPS * 5 if full else STEPS
    sim = ntp.Algorithm1(num_steps1=steps, num_steps2=steps, every=steps)
    run = dynamics.simulate(sim, num_seeds=1)
    d = sim.task.dataset(0)
    r = {"t": run["time"].values[0], "W_kq_final": run["final.W_kq"].values[0], "star_kq": w_kq_star_qp(d).W}
    sizes = [len(d.token_types(q).optimal) + len(d.token_types(q).non_optimal) for q in range(d.vocab_size)]
    hall = hall_columns(d)
    q = int(np.argmax(np.asarray(sizes) + 100 * ~hall))  # prefer a query where Proposition 2 does not apply
    types = d.token_types(q)
    star, closed = r["star_kq"][:, q], w_kq_closed_form(d)[:, q]
    learned = r["W_kq_final"][:, q] * np.linalg.norm(r["star_kq"]) / np.linalg.norm(r["W_kq_final"])
    tokens = list(types.optimal) + list(types.non_optimal) + list(types.non_comparable)
    kinds = (
        ["optimal"] * len(types.optimal)
        + ["non-optimal"] * len(types.non_optimal)
        + ["non-comparable"] * len(types.non_comparable)
    )
    x = np.arange(len(tokens))
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    colors = {"optimal": "C2", "non-optimal": "C3", "non-comparable": "C7"}
    ax.bar(
        x - 0.2, learned[tokens], 0.4, color=[colors[k] for k in kinds], label=r"$W_{kq}^{(T_2)}$ (rescaled)"
    )
    ax.bar(x + 0.2, star[tokens], 0.4, color="none", edgecolor="k", label=r"$W^*_{kq}$ (QP, Eqn 3)")
    ax.scatter(x + 0.2, closed[tokens], marker="_", s=60, color="C1", zorder=3, label="Proposition 2")
    ax.axhline(0, color="k", lw=0.5)
    short = {"optimal": "opt", "non-optimal": "non-opt", "non-comparable": "non-cmp"}
    ax.set_xticks(x, [f"{tok} {short[k]}" for tok, k in zip(tokens, kinds)], fontsize=9, rotation=90)
    ax.set_title(
        f"query {q}: column of W_kq after {steps} stage-2 steps\nHall-type condition "
        f"{'holds' if hall[q] else 'fails'}; column cos = "
        f"{cosine(r['W_kq_final'][:, q : q + 1], r['star_kq'][:, q : q + 1]):.4f}",
        fontsize=10,
    )
    ax.legend(fontsize=9)
    data = {
        "query": q,
        "tokens": tokens,
        "types": kinds,
        "learned_rescaled": learned[tokens],
        "learned_raw": r["W_kq_final"][tokens, q],
        "star_qp": star[tokens],
        "prop2": closed[tokens],
        "hall": bool(hall[q]),
    }
    config = {
        "recipe": "B",
        "seed": 0,
        "vocab_size": 20,
        "stage2_steps": steps,
        "dtype": "float64",
        "full": full,
    }
    return save_figure(fig, out_dir, "ntp_partial_order_wkq_column", data=data, config=config)


FIGURES = named_figures(__name__, [fig2, wkq_column])
