"""The standard plots of a sweep: each saved scalar against time (a flow's time, or a discrete
run's steps) with seed bands per grid point and the runs' stop times marked, the final value
against one grid axis (a line), two (a heat map) or three (heat maps side by side), each scalar
of the state a run ends in the same way, and, when runs stop early, the stop time `t_stop`
itself; with the phases of the runs, their plateaus on the loss and their count; with the
landscape at the runs' final states, the index of the critical point near each and the sharpness;
with the saddles under the plateaus, their indices.
Each plot is written as PNG and as PDF beside it (for a paper), its axes labelled in words: a saved
value by the simulation's `labels`, the clock by its unit."""

import textwrap
import warnings
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

import dynamics  # noqa: E402
from dynamics.store import SAVE_DIM, SEED_DIM  # noqa: E402

ENGINE_LABELS = {
    "sharpness": "top Hessian eigenvalue λ_max",
    "sharpness_ratio": "λ_max·η/2 (≥ 1: past the edge of stability)",
    "flow_distance": "distance to the gradient flow alongside",
}
"""The axis labels of the values the engine saves alongside a level's own (the sharpness, the flow
alongside); a level's `labels` name its own."""

CLOCKS = {
    "step": "optimiser step",
    "time": "flow time t (gradient descent at rate η: t/η steps)",
}
"""The time axis's label, for discrete training (`"step"`) and for a flow (`"time"`)."""

_MAX_LINES = 12
_MAX_PANELS = 8
MAX_SAVES_DRAWN = 2000
"""The saves a plot against time draws at most: more are thinned to evenly spaced ones (the first
and the last kept), which a plot a few hundred pixels wide shows alike, and which keeps the
plotting of a run of 10⁸ saves to seconds and its memory to a few variables of 2,000 saves."""


def scalar_metrics(ds: xr.Dataset, axes: list[str]) -> list[str]:
    """The saved values with one number per save (dimensions: the grid axes, seed, save)."""
    wanted = (*axes, SEED_DIM, SAVE_DIM)
    return [name for name, var in ds.data_vars.items() if name != "time" and var.dims == wanted]


def final_scalars(ds: xr.Dataset, axes: list[str]) -> list[str]:
    """The scalars of the state each run ended in (`final`, or `final.<name>` for a PyTree; dimensions:
    the grid axes, seed)."""
    wanted = (*axes, SEED_DIM)
    return [name for name, var in ds.data_vars.items() if _of_the_state(name) and var.dims == wanted]


def _of_the_state(name: str) -> bool:
    return name == "final" or name.startswith("final.")


def plot_sweep(
    ds: xr.Dataset, axes: list[str], out_dir: Path, labels: Mapping[str, str] | None = None
) -> list[Path]:
    """Draw the standard plots of `ds` into `out_dir`, each as PNG with a PDF beside it.

    **Arguments:**

    - `ds`: a sweep from `dynamics.sweep`.
    - `axes`: its grid axes, in order.
    - `out_dir`: the folder (created).
    - `labels`: what each saved value is, in words (the simulation's `labels`); a value not named
      there is labelled by its name.

    **Returns:** the PNG files written (each with its `.pdf`): `<metric>_time.png` for every scalar
    metric, and with one to three grid axes `<metric>_final.png`, and `final.png` or
    `final.<name>.png` for every scalar of the final state; where some run stopped before its end
    (an event, a divergence, the step budget), `t_stop_final.png` too.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    dynamics.store.remove_stale_temporaries(out_dir)  # of a plot a killed process was writing
    paths = []
    drawn, thinned = _thinned(ds)
    time, lines, clock = _time_axis(drawn, axes)
    stopped = _stopped_early(ds)
    stops = (stopped, _early_reasons(ds) if stopped is not None else "")
    for name in scalar_metrics(ds, axes):
        label = label_of(name, labels)
        values = drawn[name].where(np.isfinite(drawn[name]))
        paths.append(_against_time(values, time, lines, name, label, clock, stops, thinned, out_dir))
        if axes:  # a run's last finite save: every save read, where a plot needs it
            last = _last_finite(ds[name])
            paths += _finals(last, axes, name, f"{name} at each run's last save", out_dir, label)
    for name in final_scalars(ds, axes):
        what = name.removeprefix("final.") if name != "final" else "the state"
        paths += _finals(ds[name], axes, name, f"{what} where each run ended", out_dir)
    if stopped is not None:
        paths += _finals(stopped, axes, "t_stop", f"the {clock} of each run that stopped early", out_dir)
    return paths


_LABEL_WIDTH = 42
"""The characters of an axis label's line: a longer label wraps, so that it fits beside the axes."""


def label_of(name: str, labels: Mapping[str, str] | None) -> str:
    """The axis label of saved value `name`: `name: ` and its words in `labels` or
    [`ENGINE_LABELS`][], wrapped to lines of [`_LABEL_WIDTH`][] characters; the name alone where
    neither has it."""
    words = (labels or {}).get(name) or ENGINE_LABELS.get(name)
    return textwrap.fill(f"{name}: {words}", _LABEL_WIDTH) if words else name


def _early_reasons(ds: xr.Dataset) -> str:
    """How the runs that stopped early stopped, with how many of each (`"event:escape × 3,
    nonfinite × 1"`)."""
    reasons = dynamics.stop_reasons(ds).values.ravel()
    early = [r for r in reasons if r not in ("completed", "not written")]
    names, counts = np.unique(np.asarray(early, dtype=str), return_counts=True)
    return ", ".join(f"{name} × {count}" for name, count in zip(names, counts))


def plot_phases(
    ds: xr.Dataset,
    found: xr.Dataset,
    axes: list[str],
    loss: str,
    out_dir: Path,
    labels: Mapping[str, str] | None = None,
) -> list[Path]:
    """Draw the phases of a sweep's runs into `out_dir`: `phases_time.png`, the loss against time
    (median over seeds, per grid point) with every run's plateaus as bars at their loss, and with
    one or two grid axes `phases.count_final.png`, the number of plateaus per run.

    **Arguments:** `ds`: the sweep; `found`: its phases (`dynamics.landscape.sweep_phases`); `axes`: its
    grid axes; `loss`: the saved loss the phases were found on; `out_dir`: the folder (created);
    `labels`: the simulation's `labels` (see [`plot_sweep`][]).

    **Returns:** the files written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn, thinned = _thinned(ds)
    time, lines, clock = _time_axis(drawn, axes)
    values = drawn[loss].where(np.isfinite(drawn[loss]))
    fig, ax = plt.subplots(figsize=(6.4, 4.5))
    for colour, select, text in lines:
        with warnings.catch_warnings():  # saves after every seed stopped are all NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            ax.plot(
                time.sel(select).values, values.sel(select).median(SEED_DIM).values, color=colour, label=text
            )
        plateaus = found.sel(select)
        starts, ends = (
            plateaus["phases.start_time"].values.ravel(),
            plateaus["phases.end_time"].values.ravel(),
        )
        levels = plateaus["phases.loss"].values.ravel()
        kept = np.isfinite(starts) & np.isfinite(levels)
        ax.hlines(levels[kept], starts[kept], ends[kept], colors=colour, linewidth=5, alpha=0.25)
    _scale(ax, "x", time.values)
    _scale(ax, "y", values.values)
    ax.set_xlabel(CLOCKS[clock])
    ax.set_ylabel(label_of(loss, labels))
    ax.set_title(
        f"{loss}: median over seeds{thinned}; bars: each run's plateaus, at the loss of its slowest save",
        fontsize=9,
        wrap=True,
    )
    ax.legend(fontsize=9)
    paths = [_save(fig, out_dir / "phases_time.png")]
    count = found["phases.count"].astype(float)
    return paths + _finals(count, axes, "phases.count", "plateaus per run", out_dir)


def plot_critical_points(found: xr.Dataset, axes: list[str], out_dir: Path) -> list[Path]:
    """Draw the critical points of a sweep's runs into `out_dir`: `critical_point.index_histogram.png`,
    how many runs ended near a critical point of each index (and how many near none), and with one
    to three grid axes `critical_point.index_final.png`, the index against them (converged runs).

    **Arguments:** `found`: from `dynamics.landscape.sweep_critical_points`; `axes`: the sweep's grid axes;
    `out_dir`: the folder (created).

    **Returns:** the files written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    status = found["critical_point.status"]
    converged = status == int(dynamics.landscape.CriticalPointStatus.converged)
    index = found["critical_point.index"].where(converged)
    values = index.values[np.isfinite(index.values)].astype(int)
    labels = [str(v) for v in range(values.max() + 1)] if values.size else []
    counts = [int(np.sum(values == v)) for v in range(len(labels))]
    colours = ["C0"] * len(labels)
    names = dynamics.landscape.CRITICAL_POINT_STATUSES
    for code in np.unique(status.values[~converged.values]):
        labels.append(names[code] if 0 <= code < len(names) else "not run")
        counts.append(int(np.sum(status.values == code)))
        colours.append("C7")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar(range(len(labels)), counts, color=colours)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("index (negative Hessian eigenvalues), or why no critical point was found")
    ax.set_ylabel("runs")
    ax.set_title("the critical point near each run's final state", fontsize=9)
    paths = [_save(fig, out_dir / "critical_point.index_histogram.png")]
    what = "index of the critical point (converged runs)"
    return paths + _finals(index.astype(float), axes, "critical_point.index", what, out_dir)


def plot_refined(ds: xr.Dataset, out_dir: Path) -> list[Path]:
    """Draw a refined sweep ([`dynamics.landscape.refine_sweep`][]) into `out_dir`: `refine.png` (and PDF).
    Along one axis, the fraction of each point's seeds with the outcome against the axis, each
    point in the colour of the round that added it, and the intervals where the majority changes
    shaded, their ends given. Over two axes, the plane: each point coloured by that fraction, and
    the cells where the majority changes drawn as rectangles (the boundary and how well it is
    located).

    **Returns:** the files written.
    """
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    about = json.loads(ds.attrs["refine"])
    if len(about["axes"]) == 2:
        return [_save(_refined_plane(ds, about), out_dir / "refine.png")]
    (axis,) = about["axes"]
    x, fraction, rounds = ds[axis].values, ds["refine.fraction"].values, ds["refine.round"].values
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(x, fraction, color="grey", linewidth=1, zorder=1)
    for k in np.unique(rounds):
        picked = rounds == k
        label = "start" if k == 0 else f"round {k}"
        ax.scatter(x[picked], fraction[picked], color=f"C{k % 10}", s=18, zorder=2, label=label)
    for low, high in about["boundaries"]:
        ax.axvspan(low, high, color="C3", alpha=0.25, linewidth=0)
        for end in (low, high):
            ax.axvline(end, color="C3", linestyle=":", linewidth=1)
    if about["scale"] == "log":
        ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(axis)
    ax.set_ylabel(f"fraction of seeds with {about['outcome']}")
    ends = "; ".join(f"[{low:.4g}, {high:.4g}]" for low, high in about["boundaries"]) or "none"
    ax.set_title(f"where {about['outcome']} changes (shaded): {ends}; {len(x)} points", fontsize=9, wrap=True)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4)
    return [_save(fig, out_dir / "refine.png")]


def _refined_plane(ds: xr.Dataset, about: dict):
    """The figure of a sweep refined over two axes: its points coloured by the fraction of seeds
    with the outcome, the cells where the majority changes outlined."""
    from matplotlib.patches import Rectangle

    x_name, y_name = about["axes"]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for x0, x1, y0, y1 in about["boundaries"]:
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor="none", edgecolor="k", lw=0.4, zorder=3))
    dots = ax.scatter(
        ds[x_name].values,
        ds[y_name].values,
        c=ds["refine.fraction"].values,
        cmap="coolwarm",
        vmin=0.0,
        vmax=1.0,
        s=2,
        zorder=2,
    )
    fig.colorbar(dots, ax=ax, label=f"fraction of seeds with {about['outcome']}")
    if about["scale"] == "log":
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain = FuncFormatter(lambda value, _: f"{value:g}")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(plain)
    ax.set_xlabel(x_name)
    ax.set_ylabel(y_name)
    ax.set_title(
        f"where {about['outcome']} changes: {len(about['boundaries'])} cells (outlined), "
        f"{ds.sizes[dynamics.store.POINT_DIM]} points in {len(about['rounds'])} rounds",
        fontsize=9,
        wrap=True,
    )
    return fig


def plot_saddles(found: xr.Dataset, out_dir: Path) -> list[Path]:
    """Draw the saddles under the plateaus of a sweep's runs into `out_dir`:
    `saddles.index_histogram.png`, how many plateaus (the n-th of each run in its colour) polished
    to a critical point of each index, and how many to none.

    **Arguments:** `found`: from `dynamics.landscape.sweep_saddles`; `out_dir`: the folder (created).

    **Returns:** the files written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    status = found["saddles.status"]
    converged = (status == int(dynamics.landscape.CriticalPointStatus.converged)).values
    index = found["saddles.index"].values
    phase_axis = found["saddles.index"].get_axis_num("phase")
    order = np.broadcast_to(
        np.arange(index.shape[phase_axis]).reshape([-1 if a == phase_axis else 1 for a in range(index.ndim)]),
        index.shape,
    )
    highest = int(index[converged].max()) if converged.any() else 0
    failed = status.values > 0  # polished to no critical point (−1: past a run's plateaus)
    columns = [str(v) for v in range(highest + 1)] + (["none"] if failed.any() else [])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bottom = np.zeros(len(columns))
    for n in np.unique(order[converged | failed]):
        counts = [np.sum(converged & (order == n) & (index == v)) for v in range(highest + 1)]
        counts += [np.sum(failed & (order == n))] if failed.any() else []
        ax.bar(range(len(columns)), counts, bottom=bottom, color=f"C{n % 10}", label=f"plateau {n + 1}")
        bottom += counts
    ax.set_xticks(range(len(columns)), columns)
    ax.set_xlabel("index of the critical point under the plateau (none: the polish found none)")
    ax.set_ylabel("plateaus")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(
        "the saddle under each plateau of each run, by the plateau's order in its run", fontsize=9, wrap=True
    )
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4)
    return [_save(fig, out_dir / "saddles.index_histogram.png")]


def plot_sharpness(found: xr.Dataset, axes: list[str], out_dir: Path) -> list[Path]:
    """Draw the sharpness of a sweep's runs into `out_dir`: with one to three grid axes
    `sharpness.max_eigenvalue_final.png`, the top Hessian eigenvalue at the final state against them
    (with one axis and a step size, the edge of stability 2/η dashed beside it), and
    `sharpness.ratio_final.png`, λ_max·η/2, where the level has a step size.

    **Arguments:** `found`: from `dynamics.landscape.sweep_sharpness`; `axes`: the sweep's grid axes;
    `out_dir`: the folder (created).

    **Returns:** the files written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    top = found["sharpness.max_eigenvalue"]
    what = "top Hessian eigenvalue at the final state"
    if len(axes) == 1 and "sharpness.edge_of_stability" in found:
        edge = found["sharpness.edge_of_stability"].mean(SEED_DIM).values
        reference = (edge, "2/η, the edge of stability")
        paths = [_final_line(top, axes[0], "sharpness.max_eigenvalue", what, out_dir, reference)]
    else:
        paths = _finals(top, axes, "sharpness.max_eigenvalue", what, out_dir)
    if "sharpness.ratio" in found:
        ratio = "λ_max·η/2 (≥ 1: past the edge of stability)"
        paths += _finals(found["sharpness.ratio"], axes, "sharpness.ratio", ratio, out_dir)
    return paths


def _stopped_early(ds: xr.Dataset) -> xr.DataArray | None:
    """`t_stop` where some run stopped before its end (NaN for the runs that completed), or None."""
    if "stop" not in ds or "t_stop" not in ds:
        return None
    early = ds["stop"] > int(dynamics.StopReason.completed)  # −1: a block not written
    if not bool(early.any()):
        return None
    return ds["t_stop"].astype(float).where(early)


def _finals(
    final, axes: list[str], name: str, what: str, out_dir: Path, label: str | None = None
) -> list[Path]:
    """`final` against one grid axis (a line, its y axis labelled `label`, else `name`), two (a
    heat map) or three (a heat map over the last two per value of the first, up to `_MAX_PANELS` of
    them); nothing for other grids. The file is `<name>_final.png`, or `<name>.png` for the final
    state's `final` or `final.<name>`."""
    if len(axes) == 1:
        return [_final_line(final, axes[0], name, what, out_dir, label=label)]
    if len(axes) == 2:
        return [_final_heatmap(final, axes, name, what, out_dir)]
    if len(axes) == 3 and final.sizes[axes[0]] <= _MAX_PANELS:
        return [_final_heatmaps(final, axes, name, what, out_dir)]
    return []


def _last_finite(values: xr.DataArray) -> xr.DataArray:
    """Each run's value at its last finite save (a run stopped by an event saves `inf` after it)."""
    finite = np.isfinite(values.values)
    save_axis = values.get_axis_num(SAVE_DIM)
    last = finite.shape[save_axis] - 1 - np.argmax(np.flip(finite, save_axis), axis=save_axis)
    picked = np.take_along_axis(values.values, np.expand_dims(last, save_axis), save_axis)
    picked = np.where(np.any(finite, axis=save_axis, keepdims=True), picked, np.nan)
    return values.isel({SAVE_DIM: -1}).copy(data=np.squeeze(picked, save_axis))


def _thinned(ds: xr.Dataset) -> tuple[xr.Dataset, str]:
    """`ds` at most [`MAX_SAVES_DRAWN`][] saves (evenly spaced indices, the first and the last
    kept), read from the store only there; and the words for a plot's title where it was thinned
    (`""` where not)."""
    saves = ds.sizes[SAVE_DIM]
    if saves <= MAX_SAVES_DRAWN:
        return ds, ""
    picked = np.unique(np.linspace(0, saves - 1, MAX_SAVES_DRAWN).round().astype(int))
    return ds.isel({SAVE_DIM: picked}), f" ({len(picked):,} of its {saves:,} saves, evenly spaced)"


def _time_axis(ds: xr.Dataset, axes: list[str]) -> tuple[xr.DataArray, list[tuple[str, dict, str]], str]:
    """What a plot against time needs: the median save times over seeds, one line per grid point
    (the first `_MAX_LINES`; one line for a sweep without axes) as `(colour, selection, label)`,
    and the clock's name: `"step"` for discrete training, `"time"` for a flow."""
    time = ds["time"].where(np.isfinite(ds["time"])).median(SEED_DIM)
    if axes:
        points = ds["time"].isel({SEED_DIM: 0, SAVE_DIM: 0}).stack(lines=axes)["lines"]
        names = points.to_index().names
        selections = [dict(zip(names, label)) for label in list(points.values)[:_MAX_LINES]]
    else:
        selections = [{}]
    lines = [
        (f"C{i % 10}", select, ", ".join(f"{k}={x}" for k, x in select.items()) or "median")
        for i, select in enumerate(selections)
    ]
    clock = "step" if np.issubdtype(ds["time"].dtype, np.integer) else "time"
    return time, lines, clock


def _against_time(
    values, time, lines, name: str, label: str, clock: str, stops: tuple, thinned: str, out_dir: Path
) -> Path:
    """`values` against `time`: per grid point the median over seeds and the 10-90 % band; `stops`:
    `(t_stop of the runs that stopped early or None, how they stopped in words)`."""
    stopped, reasons = stops
    fig, ax = plt.subplots(figsize=(6, 4))
    for colour, select, text in lines:
        v, t = values.sel(select), time.sel(select)
        with warnings.catch_warnings():  # saves after every seed stopped are all NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            low, mid, high = (v.quantile(q, SEED_DIM).values for q in (0.1, 0.5, 0.9))
        few = np.count_nonzero(np.isfinite(mid)) < 3  # e.g. a run that diverged after its first save
        ax.plot(t.values, mid, color=colour, label=text, marker="o" if few else None, markersize=4)
        ax.fill_between(t.values, low, high, color=colour, alpha=0.2, linewidth=0)
        if stopped is not None:  # each early stop, as a tick on the time axis in the run's colour
            stops = stopped.sel(select).values.ravel()
            stops = stops[np.isfinite(stops)]
            ax.plot(
                stops,
                np.zeros_like(stops),
                "|",
                color=colour,
                markersize=12,
                clip_on=False,
                transform=ax.get_xaxis_transform(),
            )
    if name == "sharpness_ratio":  # dynamics.landscape.with_sharpness's λ_max·η/2: GD is unstable above 1
        ax.axhline(1.0, linestyle="--", color="grey", linewidth=1, label="edge of stability")
    _scale(ax, "x", time.values)
    _scale(ax, "y", values.values)
    ax.set_xlabel(CLOCKS[clock])
    ax.set_ylabel(label)
    title = f"{name}: median over seeds, band 10-90 %{thinned}"
    if stopped is not None:
        title += (
            f"\nticks: the {clock} each run stopped early ({reasons}); past it, median and band are "
            "over the runs still going"
        )
    ax.set_title(title, fontsize=9, wrap=True)
    ax.legend(fontsize=9)
    return _save(fig, out_dir / f"{name}_time.png")


_TOP_DECADE = 100
"""A log axis ends at 10¹⁰⁰: a diverging run's values beyond it (up to 10³⁰⁸) run off the top,
where the axis's margins and ticks would overflow the largest float."""


def _scale(ax, which: str, x: np.ndarray) -> None:
    """A log axis (`which`: "x" or "y") for positive data over more than two decades (symlog when
    it starts at 0), ending at 10^`_TOP_DECADE` where the data go beyond."""
    x = x[np.isfinite(x)]
    positive = x[x > 0]
    if positive.size < 2 or np.log10(positive.max()) - np.log10(positive.min()) <= 2 or np.any(x < 0):
        return
    if np.log10(positive.max()) > _TOP_DECADE:  # fixed before the scale, which autoscales
        getattr(ax, f"set_{which}lim")(0 if np.any(x == 0) else positive.min(), 10.0**_TOP_DECADE)
    set_scale = getattr(ax, f"set_{which}scale")
    if np.any(x == 0):
        set_scale("symlog", linthresh=float(positive.min()))
    else:
        set_scale("log")


def _whole(values: np.ndarray) -> bool:
    """Whether every finite value is a whole number (a count, an index), at least one of them."""
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite)))


def _whole_axis(ax) -> None:
    """Ticks at whole numbers only, without an offset, on a linear y axis of whole-numbered values:
    its limits widened to whole numbers, at least two apart (a count of 2 throughout is drawn
    between 1 and 3, where matplotlib would tick 2 ± 0.04 as offsets)."""
    low, high = np.floor(ax.get_ylim()[0]), np.ceil(ax.get_ylim()[1])
    if high - low < 2:
        low, high = low - 1, high + 1
    ax.set_ylim(low, high)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis="y", useOffset=False)


def _final_line(
    final,
    axis: str,
    name: str,
    what: str,
    out_dir: Path,
    reference: tuple[np.ndarray, str] | None = None,
    label: str | None = None,
) -> Path:
    """`final` against `axis`, mean ± std over seeds, its y axis labelled `label` (else `name`);
    `reference`: `(values along the axis, label)` dashed beside it, on a log scale where the two lie
    decades apart."""
    fig, ax = plt.subplots(figsize=(5, 3.5))
    with warnings.catch_warnings():  # a diverged run's huge last finite value overflows the std: no bar
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, std = final.mean(SEED_DIM), final.std(SEED_DIM)
    x = np.arange(final.sizes[axis])
    ax.errorbar(x, mean.values, yerr=std.values, marker="o", capsize=3)
    if reference is not None:
        values, label = reference
        ax.plot(x, values, "--", color="C3", label=label)
        _scale(ax, "y", np.concatenate([final.values.ravel(), values]))
        ax.legend(fontsize=9)
    ax.set_xticks(x, [str(v) for v in final[axis].values])
    if reference is None and _whole(final.values):
        _whole_axis(ax)
    ax.set_xlabel(axis)
    ax.set_ylabel(label or name)
    ax.set_title(f"{what}: mean ± std over seeds", fontsize=9)
    return _save(fig, out_dir / _final_file(name))


def _final_heatmap(final, axes: list[str], name: str, what: str, out_dir: Path) -> Path:
    fig, ax = plt.subplots(figsize=(5, 4))
    mean = final.mean(SEED_DIM).transpose(*axes)
    image = ax.imshow(mean.values, origin="lower", aspect="auto", cmap="viridis")
    ax.set_yticks(range(mean.shape[0]), [str(v) for v in mean[axes[0]].values])
    ax.set_xticks(range(mean.shape[1]), [str(v) for v in mean[axes[1]].values])
    ax.set_ylabel(axes[0])
    ax.set_xlabel(axes[1])
    fig.colorbar(image, ax=ax, label=f"{what} (mean over seeds)", ticks=_colour_ticks(final.values))
    if np.isnan(mean.values).any():
        ax.set_title("blank: no run of that point gave a value", fontsize=9)
    return _save(fig, out_dir / _final_file(name))


def _final_heatmaps(final, axes: list[str], name: str, what: str, out_dir: Path) -> Path:
    """One heat map over `axes[1:]` per value of `axes[0]`, on one colour scale."""
    mean = final.mean(SEED_DIM).transpose(*axes)
    finite = mean.values[np.isfinite(mean.values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    count = mean.sizes[axes[0]]
    fig, panels = plt.subplots(1, count, figsize=(1 + 3.6 * count, 3.6), squeeze=False)
    rows = [str(v) for v in mean[axes[1]].values]
    for i, (ax, value) in enumerate(zip(panels[0], mean[axes[0]].values)):
        panel = mean.sel({axes[0]: value})
        image = ax.imshow(panel.values, origin="lower", aspect="auto", cmap="viridis", vmin=low, vmax=high)
        ax.set_yticks(range(panel.shape[0]), rows if i == 0 else [])  # the rows are the same in every panel
        ax.set_xticks(range(panel.shape[1]), [str(v) for v in panel[axes[2]].values])
        ax.set_xlabel(axes[2])
        ax.set_title(f"{axes[0]} = {value}", fontsize=9)
    panels[0, 0].set_ylabel(axes[1])
    ticks = _colour_ticks(final.values)
    fig.colorbar(image, ax=panels[0].tolist(), label=f"{what} (mean over seeds)", ticks=ticks)
    if np.isnan(mean.values).any():
        fig.suptitle("blank: no run of that point gave a value", fontsize=9)
    return _save(fig, out_dir / _final_file(name))


def _colour_ticks(values: np.ndarray) -> MaxNLocator | None:
    """Whole-number ticks for a colour bar of whole-numbered `values` (`None`: matplotlib's own)."""
    return MaxNLocator(integer=True) if _whole(values) else None


def _final_file(name: str) -> str:
    return f"{name}.png" if _of_the_state(name) else f"{name}_final.png"


def _save(fig, path: Path) -> Path:
    """Write the figure to `path` (PNG) and beside it as PDF, each whole or not at all, cropped to
    what it draws (the tight box, found once for both), and close it; returns `path`."""
    try:
        tight = fig.get_tightbbox(fig.canvas.get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
        with dynamics.store.atomic_write(path, "wb") as f:
            fig.savefig(f, format="png", dpi=160, bbox_inches=tight)
        with dynamics.store.atomic_write(path.with_suffix(".pdf"), "wb") as f:
            fig.savefig(f, format="pdf", bbox_inches=tight)
    finally:
        plt.close(fig)
    return path
