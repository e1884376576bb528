"""Figures of "Transformers Provably Learn Sparse Token Selection While Fully-Connected Nets Cannot"
(Wang, Wei, Hsu, Lee, ICML 2024, arXiv 2406.06893).

- `sparse_token_selection_fig1`: training loss, inverse loss and cos(W, W*), cos(V, V*) vs step
  (stochastic PE, GD).
- `sparse_token_selection_fig2`: validation loss at each T_test, stochastic vs fixed PE (GD).
- `sparse_token_selection_fig3`: heat maps of W and V at random init and after training (Adam).
- `sparse_token_selection_fig4`: top: as Fig. 2; bottom: validation loss at unseen q_test (GD).
- `sparse_token_selection_fig5`: as Fig. 4, trained with Adam.
- `sparse_token_selection_thm1_rate`: 1/L vs t, reduced gradient flow and full-matrix GD,
  predicted slope 4/(T−1).
- `sparse_token_selection_sphere_floor`: the `iid_sphere` loss floor vs m_E (formula vs
  full-model Monte Carlo, with a reference table) and the reduced flow converging to it (not a
  paper figure).
- `sparse_token_selection_fcn_bound`: Proposition C against exact linear-readout risks and
  trained FCNs (not a paper figure).

Only the captions of Figs. 1-5 survive; every other setting is reconstructed (recon; see "What the
paper states and what is reconstructed" on the sparse_token_selection page of the documentation).
Quick sizes by default (d = 5, T = 20, q = 3, N = 40 slots, T_test = 1.25T..2T); `--full` uses the
paper's T = 200, q = 3, T_test ∈ {250, 300, 350, 400} with d = 10, N = 400. Figs. 6-8 are lost and
not drawn.
"""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import dynamics
import tasks.sparse_token_selection as sts
from theory.sparse_token_selection import closed_forms as F

from ._save import caption, named_figures, save_figure


def _sizes(full: bool) -> dict:
    """The online runs' settings (`Online` fields) and their number of seeds."""
    if full:
        online = {"task": sts.STSConfig(d=10, T=200, q=3, pe_dim=400), "num_steps": 20_000, "every": 1000}
        return {"online": online | {"batch_size": 256, "num_eval": 2048}, "seeds": 5}
    online = {"task": sts.STSConfig(d=5, T=20, q=3, pe_dim=40), "num_steps": 2000, "every": 100}
    return {"online": online | {"batch_size": 128, "num_eval": 512}, "seeds": 3}


LR = {"gd": 1.0, "adam": 1e-2}
"""Learning rates (recon): mini-batch GD at 1 (stable for q >= 1: the value-scale curvature is
about η/q), Adam at 1e-2."""


@functools.cache
def _length_runs(full: bool, optimizer: str) -> dict:
    """Stochastic and fixed PE online runs with validation at 4 longer T_test (up to the N slots)
    and at q_test = q + 1, q + 2, q + 3 (Figs. 2, 4, 5)."""
    s = _sizes(full)
    sim = sts.Online(
        **s["online"],
        optimizer=optimizer,
        lr=LR[optimizer],
        init="zeros" if optimizer == "gd" else "random",
        num_T_tests=4,
        num_q_tests=3,
    )
    out = {"sim": sim}
    for name, fixed in (("stochastic", False), ("fixed", True)):
        out[name] = _online_values(dynamics.with_settings(sim, {"task.fixed_pe": fixed}), s["seeds"])
    out["config"] = {"online": sim.describe(), "seeds": s["seeds"], "full": full}
    return out


def _online_values(sim: sts.Online, seeds: int) -> dict[str, np.ndarray]:
    """The saved values of `seeds` runs of `sim` (run i on key `seed_keys(0, seeds)[i]`), each with
    a leading seed axis; `steps`, the saved step numbers; `finite`, per seed."""
    runs, finite = dynamics.run_many(sim.run, dynamics.seed_keys(0, seeds))
    return dict(runs.values) | {"steps": runs.ts[0], "finite": finite}


def _median_band(ax, steps, values, color, label, style="-"):
    med = np.median(values, axis=0)
    ax.plot(steps, med, style, color=color, label=label)
    if values.shape[0] > 1:
        ax.fill_between(steps, values.min(0), values.max(0), color=color, alpha=0.15)


def _length_panel(ax, runs, which: str, tests, L0: float, title: str):
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(tests)))
    key = "loss_T" if which == "T" else "loss_q"
    for i, (t, c) in enumerate(zip(tests, colors)):
        _median_band(
            ax, runs["stochastic"]["steps"], runs["stochastic"][key][:, :, i] / L0, c, f"{which}={t} stoch."
        )
        _median_band(
            ax, runs["fixed"]["steps"], runs["fixed"][key][:, :, i] / L0, c, f"{which}={t} fixed", "--"
        )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss / (d/2q)")
    ax.set_title(title)
    ax.legend(fontsize=9, ncol=2, loc="lower left")


def _length_data(runs, L0: float) -> dict:
    return {
        name: {
            "steps": runs[name]["steps"],
            "loss_T_over_L0": runs[name]["loss_T"] / L0,
            "loss_q_over_L0": runs[name]["loss_q"] / L0,
            "loss_over_L0": runs[name]["loss"] / L0,
            "finite": runs[name]["finite"],
            "final_median_loss_T_over_L0": np.median(runs[name]["loss_T"][:, -1], axis=0) / L0,
            "final_median_loss_q_over_L0": np.median(runs[name]["loss_q"][:, -1], axis=0) / L0,
        }
        for name in ("stochastic", "fixed")
    }


@caption(
    r"Fig. 1: `online` GD (lr 1, zero init, stochastic dictionary one-hot PE) with the median and "
    r"range over seeds of the loss, of $1/L$ and of `cos_W`, `cos_W_centred`, `cos_V` against the "
    r"step; the population GD of the reduced recursion dashed and the line $4\eta k/(N-1)$. Look for "
    r"$1/L$ growing linearly along that line and the cosines rising to 1 (`cos_W` to "
    r"$\sqrt{(N-1)/N}$).",
    checks=("theorem1_inverse_loss_slope", "theorem1_direction_W", "theorem1_direction_V"),
)
def fig1(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 1: stochastic PE, zero init, mini-batch GD: loss and 1/loss vs step (top, middle) and
    the direction cosines with W*, V* (bottom); the reduced population dynamics (dashed) for reference.

    **Returns:** the PNG, PDF and JSON paths.
    """
    s = _sizes(full)
    sim = sts.Online(**s["online"], lr=LR["gd"], num_T_tests=0, num_q_tests=0)
    task = sim.task
    runs = _online_values(sim, s["seeds"])
    red = sts.reduced_gd(task, LR["gd"], sim.num_steps, every=sim.every)
    steps = runs["steps"]
    fig, axes = plt.subplots(3, 1, figsize=(6.4, 7.6), sharex=True, layout="constrained")
    _median_band(axes[0], steps, runs["loss"], "C0", "mini-batch GD (median, range)")
    axes[0].plot(steps, np.asarray(red.values["loss"]), "k--", label="population GD (reduced)")
    axes[0].set_yscale("log")
    axes[0].set_title("training loss")
    _median_band(axes[1], steps, 1.0 / runs["loss"], "C0", "mini-batch GD")
    axes[1].plot(steps, 1.0 / np.asarray(red.values["loss"]), "k--", label="population GD (reduced)")
    slope = 4 * LR["gd"] / (task.m_E - 1)
    axes[1].plot(steps, slope * steps, ":", color="gray", label=r"slope $4\eta/(N-1)$")
    axes[1].set_title("inverse loss (linear: O(1/t))")
    for key, color, label in (
        ("cos_W", "C1", r"cos(W, W*)"),
        ("cos_W_centred", "C2", r"cos(W, W*$_c$)"),
        ("cos_V", "C3", "cos(V, V*)"),
    ):
        _median_band(axes[2], steps, runs[key], color, label)
    axes[2].set_ylim(0, 1.02)
    axes[2].set_title("direction cosines")
    for ax in axes:
        ax.legend(fontsize=9)
    axes[-1].set_xlabel("step")
    fig.suptitle(
        f"STS: d={task.d}, T={task.T}, q={task.q}, stochastic dictionary one-hot PE N={task.m_E}", fontsize=10
    )
    return save_figure(
        fig,
        out_dir,
        "sparse_token_selection_fig1",
        data={
            "steps": steps,
            "loss": runs["loss"],
            "cos_W": runs["cos_W"],
            "cos_W_centred": runs["cos_W_centred"],
            "cos_V": runs["cos_V"],
            "reduced_loss": red.values["loss"],
            "finite": runs["finite"],
        },
        config={"online": sim.describe(), "seeds": s["seeds"], "full": full},
    )


@caption(
    r"Fig. 2: the validation loss $/L_0$ at each $T_{\text{test}}$ against the step, stochastic PE "
    r"(solid) against fixed PE (dashed), GD from zero init. Look for the stochastic curves falling "
    r"together while the fixed ones level off, higher for longer $T_{\text{test}}$ (the JSON holds "
    r"the fixed-PE floors of the formula).",
    checks=(
        "fig2_stochastic_beats_fixed",
        "fig2_stochastic_follows_theorem3",
        "fig2_stochastic_converges",
        "fig2_fixed_follows_closed_form",
        "fig2_fixed_stays_above_constant",
        "fixed_pe_floor_T250",
        "fixed_pe_floor_T300",
        "fixed_pe_floor_T350",
        "fixed_pe_floor_T400",
    ),
)
def fig2(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 2: OOD validation loss at each T_test vs step, stochastic (solid) vs fixed (dashed) PE, GD.

    **Returns:** the PNG, PDF and JSON paths.
    """
    runs = _length_runs(full, "gd")
    sim = runs["sim"]
    L0 = sim.task.trivial_loss
    fig, ax = plt.subplots(figsize=(6.4, 4.5), layout="constrained")
    _length_panel(ax, runs, "T", sim.T_tests, L0, f"length generalisation (trained at T={sim.task.T}), GD")
    floors = {t: F.fixed_pe_floor(sim.task.d, sim.task.T, sim.task.q, t) / L0 for t in sim.T_tests}
    return save_figure(
        fig,
        out_dir,
        "sparse_token_selection_fig2",
        data=_length_data(runs, L0) | {"fixed_floor_theory": floors},
        config=runs["config"],
    )


def _fig45(out_dir: Path, full: bool, optimizer: str, name: str) -> list[Path]:
    runs = _length_runs(full, optimizer)
    sim = runs["sim"]
    L0 = sim.task.trivial_loss
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 8.5), layout="constrained")
    _length_panel(axes[0], runs, "T", sim.T_tests, L0, f"T_test (trained at T={sim.task.T}), {optimizer}")
    _length_panel(
        axes[1], runs, "q", sim.q_tests, L0, f"q_test at T={sim.task.T} (trained at q={sim.task.q})"
    )
    inset = axes[1].inset_axes([0.55, 0.55, 0.4, 0.4])
    tail = runs["stochastic"]["steps"] >= runs["stochastic"]["steps"][-1] * 0.8
    for i, c in enumerate(plt.cm.viridis(np.linspace(0.0, 0.85, len(sim.q_tests)))):
        for kind, style in (("stochastic", "-"), ("fixed", "--")):
            inset.plot(
                runs[kind]["steps"][tail], np.median(runs[kind]["loss_q"][:, tail, i], 0) / L0, style, color=c
            )
    inset.set_title("zoom: last 20%", fontsize=9)
    inset.tick_params(labelsize=9)
    inset.locator_params(nbins=3)
    return save_figure(fig, out_dir, name, data=_length_data(runs, L0), config=runs["config"])


@caption(
    r"Fig. 4: top, as Fig. 2; bottom, the validation loss at unseen $q_{\text{test}} = q+1, q+2, q+3$ "
    r"at the training length, with a zoom on the last 20% of training; GD. Look for both PE types "
    r"reaching low loss on $q_{\text{test}}$, each higher for larger $q_{\text{test}}$, and fixed PE "
    r'below stochastic PE, which learns more slowly at the training length (see "Unseen $q$ and the '
    r'speed of the two PE types").',
    checks=("fig4_unseen_q_follows_speed",),
)
def fig4(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 4: top, validation loss at T_test; bottom, at unseen q_test (with a zoom), GD.

    **Returns:** the PNG, PDF and JSON paths.
    """
    return _fig45(out_dir, full, "gd", "sparse_token_selection_fig4")


@caption(
    "Fig. 5: as Fig. 4, trained with Adam (lr 1e-2, random init). Look for the same "
    "length-generalisation gap."
)
def fig5(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 5: as Fig. 4, trained with Adam (lr 1e-2, random init σ_0 = 0.01).

    **Returns:** the PNG, PDF and JSON paths.
    """
    return _fig45(out_dir, full, "adam", "sparse_token_selection_fig5")


@caption(
    r"Fig. 3: heat maps of $W$ and $V$ at random init ($\sigma_0 = 0.01$) and after Adam (lr 1e-2, "
    r"batch 128, 2000 / 6000 steps) at $d = 8$, $T = 16$, $q = 3$, $N = 32$. Look for the PE-PE block "
    r"of $W$ becoming a (centred) identity pattern and the token block of $V$ the identity, every "
    r"other entry near 0; the title gives the cosines and $L/L_0$."
)
def fig3(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 3: heat maps of W and V of the practical model (random init σ_0 = 0.01, stochastic
    dictionary one-hot PE, Adam lr 1e-2) at init and after training; d = 8, T = 16, N = 32.

    **Returns:** the PNG, PDF and JSON paths.
    """
    task = sts.STSConfig(d=8, T=16, q=3, pe_dim=32)
    steps = 6000 if full else 2000
    key = jax.random.PRNGKey(0)
    model0 = sts.random_init(task, key, dtype=jnp.float32)
    run = dynamics.train(
        sts.loss,
        model0,
        dynamics.adam(1e-2),
        num_steps=steps,
        key=jax.random.PRNGKey(1),
        sample=lambda k: sts.sample(task, k, 128, dtype=jnp.float32),
        save=dynamics.Save(
            every=steps,
            fn=lambda step, m, args: sts.mc_loss(m, task, jax.random.PRNGKey(2), 1024, dtype=jnp.float32)[0],
        ),
    )
    final = run.final
    cos = {k: float(v) for k, v in sts.direction_cosines(final, task).items()}
    fig, axes = plt.subplots(
        2, 2, figsize=(6.4, 5.6), gridspec_kw={"height_ratios": [4, 1.3]}, layout="constrained"
    )
    for col, (m, title) in enumerate(((model0, "init"), (final, "trained"))):
        for row, (M, name) in enumerate(((np.asarray(m.W), "W"), (np.asarray(m.V), "V"))):
            lim = np.abs(M).max()
            im = axes[row, col].imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim)
            axes[row, col].axvline(task.d - 0.5, color="k", lw=0.6)
            if name == "W":
                axes[row, col].axhline(task.d - 0.5, color="k", lw=0.6)
            axes[row, col].set_title(f"{name} ({title})")
            fig.colorbar(im, ax=axes[row, col], fraction=0.046)
    fig.suptitle(
        f"cos(W,W*)={cos['cos_W']:.3f} (centred W*: {cos['cos_W_centred']:.3f}), "
        f"cos(V,V*)={cos['cos_V']:.3f}; loss/(d/2q): "
        f"{float(run.values[0]) / task.trivial_loss:.3f} -> {float(run.values[-1]) / task.trivial_loss:.2g}",
        fontsize=10,
    )
    return save_figure(
        fig,
        out_dir,
        "sparse_token_selection_fig3",
        data={
            "W_init": model0.W,
            "V_init": model0.V,
            "W_final": final.W,
            "V_final": final.V,
            "cosines": cos,
            "loss_over_L0": np.asarray(run.values) / task.trivial_loss,
        },
        config={
            "task": task.__dict__,
            "optimizer": "adam",
            "lr": 1e-2,
            "batch": 128,
            "steps": steps,
            "dtype": "float32",
            "full": full,
        },
    )


@caption(
    r"Not a paper figure: top, $1/L$ against $t$ for the reduced flow ($d = 10$, $T = 200$, $q = 3$, "
    r"one-hot PE) with the prediction $4t/(T-1)$; bottom, full-matrix GD on the exact loss against the "
    r"reduced recursion ($d = 3$, $T = 8$, $q = 2$, $\eta = 0.5$). Look for the flow joining the line "
    r"after the plateau and the two GD curves coinciding.",
    checks=("theorem1_inverse_loss_slope", "lemma1_reduced_equals_full_gd"),
)
def thm1_rate(out_dir: Path, full: bool) -> list[Path]:
    """Verification figure: 1/L vs t for the reduced gradient flow (T = 200, q = 3, d = 10, one-hot PE)
    with the predicted slope 4/(T − 1), and full-matrix GD vs the reduced recursion on a small instance.

    **Returns:** the PNG, PDF and JSON paths.
    """
    task = sts.STSConfig(d=10, T=200, q=3, pe_sampler="onehot")
    ts = np.logspace(0, 7, 141)
    flow = sts.reduced_flow(task, 1e7, ts)
    L = np.asarray(flow.values["loss"])
    small = sts.STSConfig(d=3, T=8, q=2, pe_sampler="onehot")
    E, subsets = sts.onehot_pe(small.T), sts.all_subsets(small.T, small.q)
    num = 2000 if full else 400
    full_run = dynamics.train(
        lambda m: sts.exact_population_loss(m, E, subsets),
        sts.zero_init(small),
        dynamics.gd(0.5),
        num_steps=num,
        save=dynamics.Save(every=10, fn=lambda step, m, args: sts.exact_population_loss(m, E, subsets)),
    )
    red = sts.reduced_gd(small, 0.5, num, every=10)
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 6.4), layout="constrained")
    axes[0].loglog(ts, 1.0 / L, label="reduced gradient flow")
    axes[0].loglog(ts, 4 * ts / (task.T - 1), "k:", label=r"$4t/(T-1)$ (P2)")
    axes[0].set_xlabel("t = eta k")
    axes[0].set_ylabel("1 / L (inverse population loss)")
    axes[0].set_title(f"Theorem 1 rate: d={task.d}, T={task.T}, q={task.q}")
    axes[0].legend()
    steps = np.asarray(full_run.ts)
    axes[1].semilogy(steps, np.asarray(full_run.values), label="full-matrix GD (exact loss)")
    axes[1].semilogy(steps, np.asarray(red.values["loss"]), "--", label="reduced (g, a) recursion")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("population loss L")
    axes[1].set_title(f"d={small.d}, T={small.T}, q={small.q}, eta=0.5")
    axes[1].legend()
    return save_figure(
        fig,
        out_dir,
        "sparse_token_selection_thm1_rate",
        data={
            "t": ts,
            "loss": L,
            "gamma": flow.values["gamma"],
            "a": flow.values["a"],
            "L_times_t_over_prediction": L * ts / F.rate_constant(task.T - 1),
            "small_steps": steps,
            "small_full_loss": full_run.values,
            "small_reduced_loss": red.values["loss"],
            "max_abs_diff_full_vs_reduced": np.abs(
                np.asarray(full_run.values) - np.asarray(red.values["loss"])
            ).max(),
        },
        config={
            "task": task.__dict__,
            "small": small.__dict__,
            "solver": "Kvaerno5 rtol=1e-10",
            "dtype": "float64",
            "full": full,
        },
    )


@caption(
    "Not a paper figure: top, Proposition C's bound against the first-layer width $m$ with the "
    "exact risks of token-sum (attaining), random Gaussian and coordinate first layers ($d = 3$, $T "
    "= 12$, $q = 3$); bottom, trained ReLU MLPs ($d = 4$, $T = 8$, $q = 2$) at $m = Td/8 .. 2Td$ "
    "against the bound. Look for no point below the bound.",
    checks=("fcn_bound_attained", "fcn_bound_random_layers", "fcn_trained_widths"),
)
def fcn_bound(out_dir: Path, full: bool) -> list[Path]:
    """Verification figure (not in the paper): Proposition C's bound vs first-layer width m, the
    exact risks of token-sum, random and coordinate first layers (d = 3, T = 12, q = 3), and trained
    ReLU MLPs (d = 4, T = 8, q = 2) against their bound.

    **Returns:** the PNG, PDF and JSON paths.
    """
    d, T, q = 3, 12, 3
    ms = np.arange(0, T * d + 1)
    rng = np.random.default_rng(0)
    top = [sts.linear_readout_risk(sts.top_eigenspace_layer(d, T, m), d, T, q) for m in ms]
    rand = [sts.linear_readout_risk(rng.standard_normal((m, T * d)), d, T, q) for m in ms]
    coord = [sts.linear_readout_risk(sts.coordinate_layer(d, T, m), d, T, q) for m in ms]
    bound = [F.fcn_lower_bound(d, T, q, m) for m in ms]
    task = sts.STSConfig(d=4, T=8, q=2, pe_sampler="onehot")
    Td = task.T * task.d
    widths = (Td // 8, Td // 4, Td // 2, Td, 2 * Td)
    seeds, steps = (3, 4000) if full else (2, 1500)
    trained = {
        m: sts.trained_fcn_losses(task, m, seeds, num_steps=steps, lr=3e-3, num_eval=4096)[0] for m in widths
    }
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 6.4), layout="constrained")
    L0 = d / (2 * q)
    axes[0].plot(ms, np.asarray(bound) / L0, "k-", lw=2, label="Proposition C bound")
    axes[0].plot(ms, np.asarray(top) / L0, "C0--", label="token-sum + random layer (attains)")
    axes[0].plot(ms, np.asarray(rand) / L0, "C1.", label="random Gaussian layer")
    axes[0].plot(ms, np.asarray(coord) / L0, "C2-", label="coordinate layer")
    axes[0].set_xlabel("first-layer width m")
    axes[0].set_ylabel("loss / (d/2q)")
    axes[0].set_title(f"exact linear-readout risk, d={d}, T={T}, q={q}")
    axes[0].legend(fontsize=9)
    L0b = task.trivial_loss
    wm = np.arange(0, 2 * Td + 1)
    axes[1].plot(
        wm, [F.fcn_lower_bound(task.d, task.T, task.q, m) / L0b for m in wm], "k-", lw=2, label="bound"
    )
    for m, losses in trained.items():
        axes[1].plot([m] * len(losses), losses / L0b, "C3o", ms=4)
    axes[1].plot([], [], "C3o", label="trained ReLU MLP (Adam)")
    axes[1].set_xlabel("first-layer width m")
    axes[1].set_title(f"trained FCNs, d={task.d}, T={task.T}, q={task.q}")
    axes[1].legend(fontsize=9)
    return save_figure(
        fig,
        out_dir,
        "sparse_token_selection_fcn_bound",
        data={
            "m": ms,
            "bound": bound,
            "token_sum_layer": top,
            "random_layer": rand,
            "coordinate_layer": coord,
            "trained_widths": list(widths),
            "trained_losses": [trained[m] for m in widths],
            "trained_bounds": [F.fcn_lower_bound(task.d, task.T, task.q, m) for m in widths],
        },
        config={
            "exact": {"d": d, "T": T, "q": q},
            "trained_task": task.__dict__,
            "seeds": seeds,
            "steps": steps,
            "optimizer": "adam lr 3e-3 batch 256",
            "dtype": "float32 (trained), float64 (exact)",
            "full": full,
        },
    )


SPHERE_ROWS = ((200, 3), (400, 3), (200, 5))
SPHERE_DIMS = (16, 32, 64, 128, 256, 512, 1024)
SPHERE_REFERENCE_TABLE = {
    (200, 3): (0.661, 0.404, 0.244, 0.137, 0.075, 0.041, 0.022),
    (400, 3): (0.739, 0.470, 0.293, 0.165, 0.093, 0.050, 0.026),
    (200, 5): (0.787, 0.587, 0.408, 0.259, 0.159, 0.090, 0.053),
}
"""The floor table of our derivation (3000 PE draws, ρ = 1; derived), also printed on the
sparse_token_selection page of the documentation; drawn for reference only."""


@caption(
    "Not a paper figure: top, the `iid_sphere` floor $L/L_0$ against $m_E = 16..1024$ for $(T, q) = "
    "(200, 3), (400, 3), (200, 5)$: the bank formula, the full transformer's Monte-Carlo loss (2 "
    "standard errors) and the table above (crosses); bottom, `sphere_flow` from zero init for $m_E = "
    "32, 64, 128$ settling on its floor (dotted). Look for the three agreeing and the floor halving "
    "with each doubling of $m_E$.",
    checks=("theorem2_sphere_floor_mc",),
)
def sphere_floor(out_dir: Path, full: bool) -> list[Path]:
    """Verification figure (derived, not in the paper): the smallest loss / (d/2q) reachable with
    `iid_sphere` PE on the invariant set, min_a (1 − q B(a)²/A(a)) on a bank of PE draws, against
    the full transformer's Monte-Carlo loss at (γ*, W_EE = a* I) with fresh draws, for
    (T, q) ∈ {(200, 3), (400, 3), (200, 5)} and m_E = 16..1024 (ρ = 1, d = 10); bottom: the reduced
    2-D gradient flow from zero init (bank vector field) settling at the floor (T = 200, q = 3).

    **Returns:** the PNG, PDF and JSON paths.
    """
    size, pairs, flow_bank = (3000, 2048, 1000) if full else (500, 256, 100)
    d = 10
    rows = {}
    for T, q in SPHERE_ROWS:
        task = sts.STSConfig(d=d, T=T, q=q, pe_sampler="iid_sphere", pe_dim=SPHERE_DIMS[0])
        cells = []
        for i, m in enumerate(SPHERE_DIMS):
            cfg = task.replace(pe_dim=m)
            scores = sts.sphere_scores(cfg, jax.random.PRNGKey(i), size, chunk=100)
            floor = sts.sphere_floor(scores, q)
            model = sts.from_scalars(cfg, floor["gamma"], floor["alpha"])
            mean, se = sts.mc_loss(model, cfg, jax.random.PRNGKey(1000 + i), pairs, chunk=128)
            per = np.asarray(sts.sphere_example_losses(floor["gamma"], floor["alpha"], scores, d, q))
            L0 = cfg.trivial_loss
            cells.append(
                floor
                | {
                    "bank_se": float(per.std(ddof=1) / np.sqrt(size)) / L0,
                    "mc": float(mean) / L0,
                    "mc_se": float(se) / L0,
                    "z": abs(float(mean) / L0 - floor["ratio"])
                    / float(np.hypot(float(se) / L0, per.std(ddof=1) / np.sqrt(size) / L0)),
                }
            )
        rows[f"T={T},q={q}"] = cells
    flow_dims = (32, 64, 128)
    ts = np.logspace(0, np.log10(3e4), 81)
    flows = {}
    for m in flow_dims:
        cfg = sts.STSConfig(d=d, T=200, q=3, pe_sampler="iid_sphere", pe_dim=m)
        scores = sts.sphere_scores(cfg, jax.random.PRNGKey(50 + m), flow_bank, chunk=100)
        run = sts.sphere_flow(cfg, scores, ts[-1], ts)
        flows[m] = {
            "loss_over_L0": np.asarray(run.values["loss"]) / cfg.trivial_loss,
            "gamma": run.values["gamma"],
            "a": run.values["a"],
            "floor": sts.sphere_floor(scores, 3),
        }
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 6.8), layout="constrained")
    for (T, q), color in zip(SPHERE_ROWS, ("C0", "C1", "C2")):
        cells = rows[f"T={T},q={q}"]
        axes[0].plot(
            SPHERE_DIMS, [c["ratio"] for c in cells], "-", color=color, label=f"T={T}, q={q}: formula"
        )
        axes[0].errorbar(
            SPHERE_DIMS,
            [c["mc"] for c in cells],
            yerr=[2 * c["mc_se"] for c in cells],
            fmt="o",
            color=color,
            ms=4,
            capsize=2,
            label="full model MC (2 SE)",
        )
        axes[0].plot(
            SPHERE_DIMS, SPHERE_REFERENCE_TABLE[(T, q)], "x", color=color, ms=7, label="reference table"
        )
    axes[0].set_xscale("log", base=2)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("PE dimension m_E")
    axes[0].set_ylabel("floor: min loss / (d/2q)")
    axes[0].set_title(f"iid_sphere floor (bank {size} draws, MC {pairs} pairs)")
    axes[0].legend(fontsize=9, loc="center left", bbox_to_anchor=(1.0, 0.5))
    for m, color in zip(flow_dims, ("C3", "C4", "C5")):
        axes[1].semilogx(ts, flows[m]["loss_over_L0"], color=color, label=f"m_E={m}: reduced flow")
        axes[1].axhline(flows[m]["floor"]["ratio"], color=color, ls=":", lw=1)
    axes[1].set_xlabel("t = eta k")
    axes[1].set_ylabel("loss / (d/2q)")
    axes[1].set_title("T=200, q=3: flow from zero init -> floor (dotted)")
    axes[1].legend(fontsize=9)
    return save_figure(
        fig,
        out_dir,
        "sparse_token_selection_sphere_floor",
        data={
            "m_E": list(SPHERE_DIMS),
            "rows": rows,
            "reference_table": {f"T={T},q={q}": list(v) for (T, q), v in SPHERE_REFERENCE_TABLE.items()},
            "flow_t": ts,
            "flows": {str(m): v for m, v in flows.items()},
        },
        config={
            "d": d,
            "rho": 1.0,
            "pe_sampler": "iid_sphere",
            "bank_draws": size,
            "mc_pairs": pairs,
            "flow_bank_draws": flow_bank,
            "flow": "Tsit5 rtol=1e-8, zero init, rates (1/d, 1/m_E)",
            "floor_scan": "grid a in [0, 20] (201 points) + bounded Brent",
            "dtype": "float64",
            "full": full,
        },
    )


FIGURES = named_figures(__name__, [fig1, fig2, fig3, fig4, fig5, thm1_rate, fcn_bound, sphere_floor])
