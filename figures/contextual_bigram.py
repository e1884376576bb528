"""Figures of the sparse contextual bigram paper (Ren, Wang, Lee, NeurIPS 2024): Fig. 1
(Algorithm 1 vs SGD), Fig. 2 (softmax vs linear attention), the (α, β) phase portrait of
Eqn 8 against simulated iterates, and the Stage-1 success rate vs batch size (poly(T) samples).
Every setting is a recon default (the paper's numbers were lost); float64 (the CLI
enables it; each figure refuses to run without it)."""

from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import dynamics
import tasks.contextual_bigram as cb
from theory.contextual_bigram import STAGE1_STEPS, stage1_success
from theory.contextual_bigram import closed_forms as cf

from ._save import caption, named_figures, save_figure


def _need_x64():
    if not jax.config.read("jax_enable_x64"):
        raise ValueError(
            "the contextual_bigram figures need float64: call jax.config.update('jax_enable_x64', True) first"
        )


def _band(ax, x, values, color, label):
    values = np.asarray(values, float)
    q1, med, q3 = np.nanpercentile(values, [25, 50, 75], axis=0)
    ax.plot(x, med, color=color, label=label)
    ax.fill_between(x, q1, q3, color=color, alpha=0.2)
    return med


def _inst_config(inst) -> dict:
    return {
        "instance": "random_instance(seed=0, N=3, Q=2, T) (recon)",
        "N": inst.N,
        "T": inst.T,
        "Q": int(cb.sparsity(inst)),
        "K_P": float(cb.k_p(inst)),
        "K_Q": float(cb.k_q(inst)),
        "dtype": "float64",
    }


@caption(
    r"Fig. 1: distances $\lVert V - P\rVert_F$, $\lVert Q - Q^*\rVert_F$, their normalised versions "
    r"($\hat Q$ thresholded and renormalised, $\hat V = V_{LS}(\hat Q)$) and the cosine similarities "
    r"against iteration, for Algorithm 1 (fixed switch $\tau_1 = 20$) and vanilla SGD at $\eta = 0.5$ "
    r"and $0.05$; medians and quartile bands over 8 / 32 seeds. Look for Algorithm 1's distances "
    r"falling after the switch while SGD stalls (large step, often diverging) or creeps (small step); "
    r"the normalised metric hides most of the gap because it re-solves $V$ with the oracle.",
    checks=("algorithm1_recovers", "sgd_large_step_worse", "sgd_small_step_worse"),
)
def fig1(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 1: distances (raw and normalised) and cosine similarities to (P, Q*) vs iteration for
    Algorithm 1 (fixed switch τ₁ = 20, as in the experiments) and vanilla SGD at η = 0.5 and 0.05;
    medians with quartile bands over seeds (8 quick / 32 full)."""
    _need_x64()
    inst = cb.default_instance()
    seeds = 32 if full else 8
    cfg = cb.Algorithm1(switch="fixed", tau1=20, stage2_steps=4000 if full else 2000)
    alg = dynamics.sweep(cfg, {}, num_seeds=seeds, seed=1)
    steps = alg["time"].values[0]  # the fixed switch: every seed's saves at the same steps
    sgd_cfg = cb.SGD(batch=cfg.batch, num_steps=cfg.stage2_steps, every=cfg.every, c_f=cfg.c_f)
    sgd_runs = dynamics.sweep(sgd_cfg, {"eta": [cfg.eta1, cfg.eta2]}, num_seeds=seeds, seed=1)
    sgd = {eta: sgd_runs.sel(eta=eta) for eta in (cfg.eta1, cfg.eta2)}
    panels = [
        ("dist_V", r"$\|V - P\|_F$"),
        ("dist_Q", r"$\|Q - Q^*\|_F$"),
        ("dist_V_hat", r"normalised $\|\hat V - P\|_F$"),
        ("dist_Q_hat", r"normalised $\|\hat Q - Q^*\|_F$"),
        ("cos_V", r"cos$(V, P)$"),
        ("cos_Q", r"cos$(Q, Q^*)$"),
    ]
    fig, axes = plt.subplots(3, 2, figsize=(6.4, 7.6), sharex=True, layout="constrained")
    data = {"alg_steps": steps, "sgd_steps": sgd_runs["time"].values[0, 0]}
    for ax, (key, title) in zip(axes.ravel(), panels):
        data[f"alg_{key}"] = _band(ax, steps, alg[key].values, "C0", "Algorithm 1 (prox GD)")
        for eta, color in zip(sgd, ("C3", "C2")):
            v = np.asarray(sgd[eta][key].values, float)
            v = np.where(np.isfinite(v), v, np.nan)
            diverged = int(np.sum(sgd[eta]["stop"].values == dynamics.StopReason.nonfinite))
            label = f"SGD $\\eta={eta}$ ({diverged}/{seeds} diverged)"
            data[f"sgd{eta}_{key}"] = _band(ax, data["sgd_steps"], v, color, label)
        ax.axvline(cfg.tau1, color="gray", linestyle=":", linewidth=1)
        ax.set_title(title)
        if key.startswith("dist"):
            ax.set_yscale("log")
            ax.set_ylim(1e-5, 10.0)
    for ax in axes[-1]:
        ax.set_xlabel("iteration")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=9)
    fig.suptitle(
        f"SCB N={inst.N}, Q={cb.sparsity(inst)}, T={inst.T}, B={cfg.batch}: median and quartiles of "
        f"{seeds} seeds",
        fontsize=10,
    )
    data["sgd_diverged"] = {
        str(eta): int(np.sum(o["stop"].values == dynamics.StopReason.nonfinite)) for eta, o in sgd.items()
    }
    return save_figure(
        fig,
        out_dir,
        "contextual_bigram_fig1",
        data=data,
        config={
            **_inst_config(inst),
            "algorithm": cfg.describe(),
            "sgd": "vanilla SGD (no preconditioning, projection or prox), same init and batch",
            "sgd_level": sgd_cfg.describe() | {"eta": [cfg.eta1, cfg.eta2]},
            "seeding": "integer seeds 1, 2, ... (dynamics.seed_key), the same for both algorithms",
            "normalised": "Qhat = threshold-and-renormalise (c_F/Q), Vhat = population least squares "
            "V_LS(Qhat) (oracle)",
            "seeds": seeds,
            "full": full,
            "note": "a diverged SGD run keeps its last finite (huge) parameters; distance axes are clipped "
            "at 10. At step 0 the oracle-normalised V equals P exactly (uniform Q gives c1 = c2)",
        },
    )


@caption(
    "Fig. 2: heatmaps of the learned attention and output layer of the softmax model (plain SGD from "
    "$W = 0$) and of the linear model (end of Stage 2), next to $Q^*$ and $P$, and both losses "
    "against iteration with the Bayes risk $L^*$. Look for the same attention pattern and similar "
    "final losses."
)
def fig2(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 2: learned attention and output layers of the softmax model (plain SGD on (V, W) from
    W = 0, rates 0.05 / 25; the paper's optimiser is not stated, so this one is recon) and of the
    linear model (Algorithm 1), with the ground truth, and their losses on a fixed evaluation batch."""
    _need_x64()
    inst = cb.default_instance()
    steps = 4000 if full else 2000
    every = 100
    eval_batch = cb.sample(jax.random.PRNGKey(12345), inst, 8192)
    init = cb.scratch_init(inst)
    sm0 = cb.SoftmaxSCB(V=init.V, W=jnp.zeros_like(init.Q))
    rates = cb.SoftmaxSCB(V=0.05, W=25.0)
    sm = dynamics.train(
        cb.batch_loss,
        sm0,
        dynamics.gd(rates),
        num_steps=steps,
        key=jax.random.PRNGKey(2),
        sample=lambda k: cb.sample(k, inst, 256),
        save=dynamics.Save(every=every, fn=lambda step, p, args: cb.batch_loss(p, eval_batch)),
    )
    cfg = cb.Algorithm1(switch="fixed", tau1=20, stage2_steps=steps, every=every)
    lin = dynamics.sweep(cfg, {}, num_seeds=1, seed=2).isel(seed=0)
    lin_losses = lin["loss"].values
    L_star = float(cb.population_loss(cb.LinearSCB(V=inst.P, Q=inst.Q_star), inst))
    att = {
        "softmax attention": np.asarray(sm.final.attention_matrix()),
        "linear Q (end of Stage 2)": lin["final.stage2_model.Q"].values,
        "ground truth Q*": np.asarray(inst.Q_star),
    }
    outs = {
        "softmax V": np.asarray(sm.final.V),
        "linear V (end of Stage 2)": lin["final.stage2_model.V"].values,
        "ground truth P": np.asarray(inst.P),
    }
    fig = plt.figure(figsize=(6.4, 8.6), layout="constrained")
    grid = fig.add_gridspec(4, 2, height_ratios=[1, 1, 1, 1.2])
    for i, (name, A) in enumerate(att.items()):
        ax = fig.add_subplot(grid[i, 0])
        im = ax.imshow(A, aspect="auto", cmap="viridis", vmin=min(0.0, A.min()), vmax=1.0)
        ax.set_title(name)
        ax.set_xticks(range(A.shape[1]))  # the tokens, not half-way between them
        ax.set_xlabel("last token k")
        ax.set_ylabel("position t")
        fig.colorbar(im, ax=ax)
    for i, (name, A) in enumerate(outs.items()):
        ax = fig.add_subplot(grid[i, 1])
        im = ax.imshow(A, cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(name)
        ax.set_xticks(range(A.shape[1]))
        ax.set_yticks(range(A.shape[0]))
        ax.set_xlabel("token j")  # P[i, j]: the probability of token i after token j
        ax.set_ylabel("next token i")
        fig.colorbar(im, ax=ax)
    ax = fig.add_subplot(grid[3, :])
    ax.plot(np.asarray(sm.ts), np.asarray(sm.values), label="softmax (SGD), eval batch")
    ax.plot(lin["time"].values, lin_losses, label="linear (Algorithm 1), population")
    ax.axhline(L_star, color="k", linestyle=":", label="Bayes risk $L^*$")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss")
    ax.set_ylim(L_star - 0.01, None)
    ax.legend(fontsize=9)
    return save_figure(
        fig,
        out_dir,
        "contextual_bigram_fig2",
        data={
            "attention": att,
            "output": outs,
            "softmax_steps": np.asarray(sm.ts),
            "softmax_eval_loss": np.asarray(sm.values),
            "linear_steps": lin["time"].values,
            "linear_population_loss": lin_losses,
            "bayes_risk": L_star,
            "softmax_attention_distance": float(
                np.linalg.norm(att["softmax attention"] - att["ground truth Q*"])
            ),
        },
        config={
            **_inst_config(inst),
            "softmax": "f = V X softmax(W[:, last]), W0 = 0, V0 = mu1^T, plain SGD, rates V 0.05, W "
            "25 (recon: the paper's optimiser is not stated)",
            "linear": cfg.describe(),
            "batch": 256,
            "eval_batch": 8192,
            "full": full,
        },
    )


@caption(
    r"The $(\alpha, \beta)$ plane with the vector field of Eqn 8, the ODE solution from $(0, 0)$, "
    r"population GD ($\eta = 0.5$), mini-batch projected SGD ($\lambda = 0$, $\eta = 0.05$, $B = "
    r"256$, 4 / 8 seeds) projected on the lines, the curve $\alpha\beta = 1$, the optimum $(1, 1)$ "
    r"and the saddle. Look for all three following the same path to $(1, 1)$, the mini-batch runs "
    r"hovering near $\alpha\beta = 1$.",
    checks=("line_recursion", "ode_first_order", "matrix_flow_on_lines"),
)
def phase(out_dir: Path, full: bool) -> list[Path]:
    """The (α, β) plane: the vector field of Eqn 8, its solution from (0, 0), population GD
    (η = 0.5) and mini-batch preconditioned projected SGD (λ = 0, η = 0.05, B = 256) projected
    onto the lines (Lemma C.1)."""
    _need_x64()
    inst = cb.default_instance()
    KP, KQ, T = float(cb.k_p(inst)), float(cb.k_q(inst)), inst.T
    eta, steps = 0.05, 3000 if full else 1500
    ts = eta * np.arange(0, steps + 1, 10)
    ode = cf.solve_line_ode([0.0, 0.0], KP, KQ, T, ts)
    gd = cb.population_gd(inst, cb.scratch_init(inst), 0.5, 300)
    cfg = cb.SGD(kind="projected", eta=eta, batch=256, num_steps=steps, every=10)
    seeds = 8 if full else 4
    sims = dynamics.sweep(cfg, {}, num_seeds=seeds, seed=3)
    fig, ax = plt.subplots(figsize=(7, 6))
    a, b = np.meshgrid(np.linspace(-0.5, 1.6, 25), np.linspace(-0.5, 1.6, 25))
    field = np.asarray(cf.line_vector_field(0.0, jnp.stack([a.ravel(), b.ravel()]), (KP, KQ, float(T))))
    ax.streamplot(a, b, field[0].reshape(a.shape), field[1].reshape(a.shape), color="lightgray", density=1.2)
    xs = np.linspace(0.3, 1.6, 100)
    ax.plot(xs, 1 / xs, "k:", linewidth=1, label=r"$\alpha\beta = 1$")
    for i in range(seeds):
        ax.plot(
            sims["alpha"].values[i],
            sims["beta"].values[i],
            color="C1",
            alpha=0.5,
            linewidth=1,
            label="mini-batch (B=256, $\\eta$=0.05)" if i == 0 else None,
        )
    ax.plot(ode[:, 0], ode[:, 1], "C0", linewidth=2, label="ODE (Eqn 8)")
    ax.plot(
        np.asarray(gd.values["alpha"]),
        np.asarray(gd.values["beta"]),
        "C3.",
        markersize=3,
        label=r"population GD $\eta$=0.5",
    )
    ax.plot([1], [1], "k*", markersize=12)
    ax.plot([-1 / (T * KQ)], [0], "kx", markersize=8, label="saddle")
    ax.set_xlabel(r"$\alpha$ (attention line)")
    ax.set_ylabel(r"$\beta$ (output line)")
    ax.set_xlim(-0.5, 1.6)
    ax.set_ylim(-0.5, 1.6)
    ax.legend(fontsize=9, loc="lower right")
    ax.set_title(f"(alpha, beta) phase portrait, K_P={KP:.3f}, K_Q={KQ:.3f}, T={T}")
    sim_steps = sims["time"].values[0]
    ode_at = cf.solve_line_ode([0.0, 0.0], KP, KQ, T, eta * sim_steps)
    return save_figure(
        fig,
        out_dir,
        "contextual_bigram_phase",
        data={
            "ode_t": ts,
            "ode": ode,
            "population_gd_alpha": np.asarray(gd.values["alpha"]),
            "population_gd_beta": np.asarray(gd.values["beta"]),
            "sim_steps": sim_steps,
            "sim_alpha": sims["alpha"].values,
            "sim_beta": sims["beta"].values,
            "sim_dV_norm": sims["dV_norm"].values,
            "sim_dQ_norm": sims["dQ_norm"].values,
            "ode_at_sim_steps": ode_at,
        },
        config={
            **_inst_config(inst),
            "eta_sgd": eta,
            "batch": 256,
            "seeds": seeds,
            "full": full,
            "ode": "Diffrax Dopri8 rtol 1e-10",
            "population_gd_eta": 0.5,
        },
    )


@caption(
    r"The fraction of seeds whose Stage 1 ends on the positive branch ($\alpha > 0$ after 40 steps at "
    r"$\eta_1 = 0.5$) against the batch size, for $T = 50$ and $T = 200$ (16 / 64 seeds). Look for "
    r"the $T = 200$ curve sitting to the right of the $T = 50$ one: a longer context needs a larger "
    r"batch.",
    checks=("stage1_needs_poly_T", "stage1_batch_exponent", "stage1_large_batch"),
)
def stage1_batch(out_dir: Path, full: bool) -> list[Path]:
    """Stage 1 needs poly(T) samples: the fraction of seeds whose Stage 1 (fixed length, η₁ = 0.5)
    ends on the positive branch (α > 0) vs batch size, T ∈ {50, 200}."""
    _need_x64()
    seeds = 64 if full else 16
    batches = [8, 16, 32, 64, 128, 256, 512, 1024] if full else [8, 16, 32, 64, 128, 256]
    rates = {T: np.array([stage1_success(T, B, seeds).mean() for B in batches]) for T in (50, 200)}
    fig, ax = plt.subplots(figsize=(6, 4))
    # T = 200 as hollow squares on a dashed line over T = 50's dots: where both rates are equal,
    # both stay visible.
    ax.plot(batches, rates[50], "o-", color="C0", label="T=50")
    ax.plot(batches, rates[200], "s--", color="C3", markerfacecolor="none", markersize=9, label="T=200")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("Stage-1 success rate")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="lower right")  # the rates reach 1 at large B: the lower right is empty
    ax.set_title(f"Stage 1 success vs B ({seeds} seeds)")
    return save_figure(
        fig,
        out_dir,
        "contextual_bigram_stage1_batch",
        data={"batches": batches, "success": {str(T): r for T, r in rates.items()}},
        config={
            "instances": "random_instance(seed=0, N=3, Q=2, T) for T in {50, 200} (recon)",
            "success": f"alpha > 0 after {STAGE1_STEPS} Stage-1 steps (eta1 = 0.5, lambda = 0); failures "
            "are runs locked on the negative branch (alpha, beta < 0)",
            "seeds": seeds,
            "full": full,
            "dtype": "float64",
        },
    )


FIGURES = named_figures(__name__, [fig1, fig2, phase, stage1_batch])
