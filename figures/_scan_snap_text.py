"""Figs. 7 and 10 of Scan and Snap: the paper's transformer trained on real text (Sec. 6.6).

- Fig. 7: the first layer's attention map on one validation sequence at four iterations, for a
  1-layer (top) and a 3-layer (bottom) model, SGD at lr = 5.
- Fig. 10: the average attention entropy over the validation set after training, against the
  learning rate η ∈ {1, ..., 5}, mean ± std over seeds.

The corpus is the WikiText directory chosen for the paper (`attnflow figures --data DIR`,
`attnflow reproduce --data DIR`, or `$ATTNFLOW_TEXT_DATA` where the user sets it), else the bundled
quick corpus (the `text` extra). Quick sizes train on the first 2,000 lines of each split (Fig. 10:
500) for a few hundred steps; `full` trains the paper's sizes on the whole corpus (Fig. 10: 5
epochs, 5 seeds; Fig. 7: 1,500 steps).
"""

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import dynamics
from tasks.scan_snap import (
    FIG10_LRS,
    FIG10_PROBE,
    FIG10_QUICK_LINES,
    FIG10_QUICK_SEEDS,
    PAPER,
    QUICK_LINES,
    Corpus,
    TextSGD,
    attention_change_rate,
    detect_wikitext_variant,
    fig10_quick,
)

from ._save import caption, save_figure

FIG10_EPOCHS = 5
"""Fig. 10 trains 5 epochs at full size (the paper's config)."""

FIG7_LR = 5.0
"""The learning rate of Fig. 7."""

FIG7_LAYERS = (1, 3)
"""The rows of Fig. 7: models with 1 and 3 encoder layers."""


def text_corpus() -> str:
    """The corpus of Figs. 7 and 10: the WikiText directory chosen for Scan and Snap
    (`attnflow ... --data DIR`, or `$ATTNFLOW_TEXT_DATA`; see `tasks.DataOption.directory`), else
    `"quick"`."""
    return PAPER.data.directory() or "quick"


def _base(full: bool, quick_lines: int = QUICK_LINES) -> TextSGD:
    corpus = text_corpus()
    variant = "tokens" if corpus == "quick" else detect_wikitext_variant(corpus)
    return TextSGD(
        task=Corpus(source=corpus, wikitext_variant=variant, max_lines=None if full else quick_lines)
    )


def fig10_simulation(full: bool) -> tuple[TextSGD, int]:
    """Fig. 10's simulation (its `lr` swept) and number of seeds: 5 epochs and 5 seeds when
    `full`, else `tasks.scan_snap.fig10_quick` on the first 500 lines of each split."""
    base = _base(full, FIG10_QUICK_LINES)
    if not full:
        return fig10_quick(base.task), FIG10_QUICK_SEEDS
    steps = FIG10_EPOCHS * base.steps_per_epoch()
    return dataclasses.replace(base, num_steps=steps, every=steps, probe_window=FIG10_PROBE), 5


def fig7_simulation(full: bool, num_layers: int) -> TextSGD:
    """Fig. 7's simulation for one row: lr = 5, saves every 500 of 1,500 steps when `full`,
    every 100 of 300 on the quick sizes."""
    steps = 1500 if full else 300
    return dataclasses.replace(
        _base(full), lr=FIG7_LR, num_layers=num_layers, num_steps=steps, every=steps // 3
    )


@caption(
    r"Fig. 10: the average attention entropy over the validation set after training against the "
    r"learning rate $\eta \in \{1, \dots, 5\}$ (a single rate), 1-layer `text` model, mean $\pm$ std "
    r"over seeds, every $(\eta, \text{seed})$ in one sweep. Look for the entropy falling as $\eta$ "
    r"grows. Quick: the first 500 lines of each split of the quick corpus, 150 steps, 3 seeds "
    r"(about a minute on two cores); `--full`: 5 epochs of the whole corpus and 5 seeds, the paper's "
    r"(WikiText-2 with `--data`: about 15,000 steps per run, hours per run on a CPU).",
    checks=("fig10_entropy_falls_with_lr",),
)
def fig10(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 10: average attention entropy on the validation set after training against the
    learning rate (mean ± std over seeds); every (lr, seed) trains in one batched call.

    **Returns:** the PNG, PDF and JSON paths.
    """
    sim, num_seeds = fig10_simulation(full)
    grid, chunk = {"lr": list(FIG10_LRS)}, len(FIG10_LRS)
    store = dynamics.store.shared_store(
        sim, grid, num_seeds=num_seeds, chunk_size=chunk
    )  # the check's runs too
    ds = dynamics.sweep(sim, grid, num_seeds=num_seeds, chunk_size=chunk, store=store)
    entropy = ds["final.val_entropy"].values[..., 0]  # (lr, seed): the first (only) layer
    loss = ds["final.val_loss"].values
    mean, std = entropy.mean(axis=1), entropy.std(axis=1, ddof=1)
    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    ax.errorbar(FIG10_LRS, mean, yerr=std, marker="o", capsize=3)
    ax.set_xlabel(r"learning rate $\eta$")
    ax.set_ylabel("attention entropy (validation)")
    ax.set_ylim(0, max(2.0, float(np.max(mean + std)) * 1.05))
    ax.set_xticks(FIG10_LRS)
    ax.set_title(f"{_corpus_label(sim)}, 1 layer, {num_seeds} seeds", fontsize=9)
    fig.tight_layout()
    return save_figure(
        fig,
        out_dir,
        "scan_snap_fig10",
        data={
            "lr": FIG10_LRS,
            "entropy": entropy,
            "entropy_mean": mean,
            "entropy_std": std,
            "val_loss": loss,
            "stop": ds["stop"].values,
        },
        config={
            "simulation": sim.describe(),
            "num_seeds": num_seeds,
            "full": full,
            "std": "over seeds, ddof=1",
        },
    )


@caption(
    r"Fig. 7: the first layer's attention map (35 $\times$ 35, head-averaged) on validation window "
    r"100, column 0, at four iterations, top a 1-layer and bottom a 3-layer `text` model, SGD at lr "
    r"5; each title gives the map's mean row entropy $H$, and the JSON the change rate between the "
    r"panels. Look for the causal, nearly uniform map at iteration 0 turning into a few bright "
    r"entries per row: sparse. Quick: the first 2,000 lines of each split of the quick corpus, "
    r"iterations 0, 100, 200, 300; `--full`: the whole corpus (the `--data` directory, or the quick "
    r"corpus), iterations 0, 500, 1000, 1500, the paper's. On the quick corpus the bright entries "
    r"move between panels (see `fig7_attention_freezes`).",
    checks=("fig7_attention_freezes",),
)
def fig7(out_dir: Path, full: bool) -> list[Path]:
    """Fig. 7: the first layer's attention map (35 × 35) on validation window 100, column 0, at
    four iterations, for a 1-layer and a 3-layer model at lr = 5. Each panel's title gives the
    map's mean row entropy; the JSON also holds the change rate between panels
    ([`attention_change_rate`][tasks.scan_snap.attention_change_rate]).

    **Returns:** the PNG, PDF and JSON paths.
    """
    sims = {layers: fig7_simulation(full, layers) for layers in FIG7_LAYERS}
    rows = {layers: dynamics.sweep(sim, {}, num_seeds=1) for layers, sim in sims.items()}
    steps = rows[FIG7_LAYERS[0]]["time"].values[0].astype(int)
    fig, axes = plt.subplots(
        len(rows), len(steps), figsize=(6.4, 0.5 + 1.7 * len(rows)), squeeze=False, layout="constrained"
    )
    maps, entropies, rates = {}, {}, {}
    for r, (layers, ds) in enumerate(rows.items()):
        attention = ds["attention"].values[0, :, 0]  # (saves, T, T): the one head
        maps[layers] = attention
        entropies[layers] = ds["probe_entropy"].values[0]
        rates[layers] = np.asarray(attention_change_rate(jnp.asarray(attention), jnp.asarray(steps)))
        for c, step in enumerate(steps):
            ax = axes[r, c]
            ax.imshow(attention[c], cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"iter {step}, H = {entropies[layers][c]:.2f}", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r, 0].set_ylabel(f"{layers} layer{'s' if layers > 1 else ''}")
    fig.suptitle(
        f"first-layer attention, {_corpus_label(sims[FIG7_LAYERS[0]])}, lr = {FIG7_LR:g}", fontsize=10
    )
    return save_figure(
        fig,
        out_dir,
        "scan_snap_fig7",
        data={
            "steps": steps,
            "attention": {layers: maps[layers] for layers in rows},
            "probe_entropy": {layers: entropies[layers] for layers in rows},
            "change_rate": {layers: rates[layers] for layers in rows},
        },
        config={"simulations": {layers: sim.describe() for layers, sim in sims.items()}, "full": full},
    )


def _corpus_label(sim: TextSGD) -> str:
    corpus = sim.task
    if corpus.source == "quick":
        lines = "" if corpus.max_lines is None else f", first {corpus.max_lines} lines"
        return f"quick corpus (KJV{lines})"
    return Path(corpus.source).expanduser().name
