"""Phase diagrams that refine themselves: a sweep over one or two grid axes that adds points
where a per-run outcome changes between neighbours, until the boundary is as narrow as the budget
allows (over two axes, `_refine_plane`)."""

import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ._fingerprint import json_digest
from ._grid import POINT_DIM
from ._refine_plane import PlaneAxis, majority, refine_plane
from ._run import StopReason
from ._simulation import AbstractSimulation
from ._store import SAVE_DIM, SEED_DIM
from ._sweep import sweep

REFINE_SCALES = ("log", "linear")
"""How a new point splits an interval: at its geometric mean (`"log"`, for positive values spanning
decades, such as a step size) or its midpoint (`"linear"`)."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A yes-or-no outcome of every run of a sweep, whose change between neighbouring grid points
    [`refine_sweep`][dynamics.landscape.refine_sweep] locates.

    **Fields:**

    - `name`: how it reads (`"diverged"`, `"loss>1"`).
    - `of_runs`: `sweep dataset -> bool array` of its runs (dims: the grid axes, seed).

    Make one with [`Outcome.parse`][] (`"diverged"`, `"NAME>VALUE"`, `"NAME<VALUE"`) or directly.

    **Example:**

        >>> import dynamics
        >>> dynamics.landscape.Outcome.parse("loss>1.5").name
        'loss>1.5'
    """

    name: str
    of_runs: Callable[[xr.Dataset], xr.DataArray]

    @classmethod
    def parse(cls, text: str) -> "Outcome":
        """The outcome `text` names: `diverged` (the run stopped on a non-finite value, or ended
        with one in its final state or its last save), or
        `NAME>VALUE` / `NAME<VALUE`, a scalar of the run's final state (`final.NAME`, or `final`)
        or a saved series `NAME` at the run's last save (for a run an event stopped, its last
        finite one), against a number. A run that diverged, or whose value is not finite, counts
        as +∞ there: above any value, below none.

        **Raises:** `ValueError` saying what an outcome may be."""
        text = text.strip()
        if text == "diverged":
            return cls("diverged", _diverged)
        for sign in (">", "<"):
            name, found, value = text.partition(sign)
            if found and name.strip() and _number(value) is not None:
                name, threshold = name.strip(), _number(value)
                compare = np.greater if sign == ">" else np.less
                return cls(
                    f"{name}{sign}{value.strip()}", lambda ds: compare(_scalar_of_runs(ds, name), threshold)
                )
        raise ValueError(
            f"an outcome is 'diverged', or NAME>VALUE or NAME<VALUE for a scalar of the final state or "
            f"a saved series' last value (e.g. loss>1), got {text!r}"
        )


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _diverged(ds: xr.Dataset) -> xr.DataArray:
    """Per run: stopped on a non-finite value, or a non-finite value in its final state or at its
    last save (a run an event stopped saves `inf` after it, which does not count)."""
    runs = ds["stop"].dims
    out = ds["stop"].values == int(StopReason.nonfinite)
    evented = ds["stop"].values == int(StopReason.event)
    for name, var in ds.data_vars.items():
        if var.dims[: len(runs)] != runs or not np.issubdtype(var.dtype, np.inexact) or name == "time":
            continue
        values = var.isel({SAVE_DIM: -1}) if SAVE_DIM in var.dims else var
        bad = ~np.isfinite(values.values).reshape(*out.shape, -1).all(axis=-1)
        out |= bad & (~evented if SAVE_DIM in var.dims else True)
    return ds["stop"].copy(data=out)


def _scalar_of_runs(ds: xr.Dataset, name: str) -> xr.DataArray:
    """`final.NAME` (or `final` for `NAME` = `final`), else series `NAME` at the run's last save
    (its last finite one for a run an event stopped, whose later saves are `inf`); +∞ where the run
    diverged or the value is not finite."""
    stop = ds["stop"].values
    blown = stop == int(StopReason.nonfinite)
    for candidate in (name, f"final.{name}"):
        if candidate in ds and ds[candidate].dims == ds["stop"].dims:
            values = ds[candidate].values.astype(float)
            return ds["stop"].copy(data=np.where(blown | ~np.isfinite(values), np.inf, values))
    if name in ds and ds[name].dims == (*ds["stop"].dims, SAVE_DIM):
        values = ds[name].values.astype(float)
        finite = np.isfinite(values)
        last_finite = values.shape[-1] - 1 - np.argmax(finite[..., ::-1], axis=-1)
        last = np.where(stop == int(StopReason.event), last_finite, values.shape[-1] - 1)
        picked = np.take_along_axis(values, last[..., None], axis=-1)[..., 0]
        return ds["stop"].copy(data=np.where(blown | ~np.isfinite(picked), np.inf, picked))
    scalars = [
        n for n, v in ds.data_vars.items() if v.dims in (ds["stop"].dims, (*ds["stop"].dims, SAVE_DIM))
    ]
    raise ValueError(f"the outcome's {name!r} is no scalar of the runs (they have: {', '.join(scalars)})")


def refine_sweep(
    sim: AbstractSimulation,
    grid: Mapping[str, Sequence[float]],
    outcome: Outcome,
    *,
    num_seeds: int = 3,
    budget: int = 20,
    scale: str = "log",
    seed: int = 0,
    folder: str | os.PathLike | None = None,
    progress: bool = False,
    attrs: Mapping | None = None,
) -> xr.Dataset:
    """Locate where `outcome` changes over one or two grid axes: sweep the grid, then, round
    after round, add points where neighbours' majority outcomes differ, until `budget` points are
    swept or nothing is left to split.

    - **One axis:** one new point inside each interval between neighbours whose majorities
      differ, the widest intervals first.
    - **Two axes:** the product grid of their values, then each cell (a rectangle of neighbouring
      values) whose corners, or the points a split neighbour put on its sides, differ is split
      in four: up to 5 new points (the middles of its sides and its centre), the widest cells
      first, whole cells only. The points follow the boundary, a curve, and lie on no product
      grid: each round is swept as one paired axis, and the dataset runs along `point`, with
      both settings as coordinates.

    Each round is one [`sweep`][] of its new points × `num_seeds` seeds (with the axes traced
    fields, one compiled program for every round of the same size); the same seeds run at every
    point. With a `folder`, round k is kept in `folder/round_k.zarr` as it runs: the same call
    again resumes there (every round's choice follows from the rounds before, so it chooses the
    same points).

    **Arguments:**

    - `sim`: the simulation.
    - `grid`: one or two of its real-valued settings (traced ones compile one program for all
      rounds of the same size) → where to start (at least 2 values each).
    - `outcome`: an [`Outcome`][dynamics.landscape.Outcome] of each run.
    - `num_seeds`: seeds per point, at least 3 (the majority decides a point's outcome).
    - `budget`: the most points swept in all, the start included.
    - `scale`: one of `REFINE_SCALES`, for every axis; `"log"` needs positive values.
    - `seed`, `progress`, `attrs`: as for [`sweep`][]; `folder`: where the rounds are kept
      (default: none).

    **Returns:** every point swept as one sweep dataset (one axis: in order along it; two: along
    `point`, round after round), with `refine.outcome` (the outcome per run, 0 or 1),
    `refine.fraction` (per point, of its seeds) and `refine.round` (per point), and in its
    attributes `refine`: the axes, the outcome, each round's points and the `boundaries`: along
    one axis each `[low, high]`, an interval between neighbours whose majorities differ; over two
    each `[x low, x high, y low, y high]`, a cell whose border's majorities differ.

    **Raises:** `ValueError` for a grid of no or more than two axes, fewer than 2 values on an
    axis or 3 seeds, a budget below the start's points, an unknown scale or non-positive values
    on a log scale.

    **Example:** gradient descent on 2w² (its Hessian λ = 4) grows the loss for a step η above
    2/λ = 0.5 and shrinks it below; from 3 steps, 6 more put 0.5 in an interval 1.7 % wide:

        >>> import json
        >>> import jax
        >>> import dynamics
        >>> class Descent(dynamics.AbstractSimulation):
        ...     eta: float = dynamics.param(0.1, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         loss = lambda w: 2.0 * w**2
        ...         start = 1.0 + jax.random.uniform(key, (), self.float_dtype)
        ...         growth = lambda step, w, args: {"growth": loss(w) / loss(start)}
        ...         save = dynamics.Save(every=100, fn=growth)
        ...         return dynamics.train(loss, start, dynamics.gd(self.eta), num_steps=100, save=save)
        >>> found = dynamics.landscape.refine_sweep(
        ...     Descent(), {"eta": [0.1, 0.3, 0.9]}, dynamics.landscape.Outcome.parse("growth>1"), budget=9
        ... )
        >>> [[round(v, 4) for v in interval] for interval in json.loads(found.attrs["refine"])["boundaries"]]
        [[0.4935, 0.5021]]
        >>> found["refine.fraction"].values.tolist()
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    """
    check_refine_settings(grid, num_seeds, budget, scale)
    axes = {name: sorted({float(v) for v in values}) for name, values in grid.items()}
    folder = None if folder is None else Path(folder)
    identities = []

    def run_round(k: int, round_grid: dict) -> xr.Dataset:
        """Round `k`: one sweep of its points (kept in `folder/round_k.zarr` with a folder)."""
        store = None if folder is None else folder / f"round_{k}.zarr"
        ds = sweep(
            sim, round_grid, num_seeds=num_seeds, seed=seed, store=store, progress=progress, attrs=attrs
        )
        identities.append(ds.attrs.get("identity"))
        return ds

    if len(axes) == 1:
        ds, rounds, boundaries = _refine_line(run_round, *axes.items(), outcome, budget, scale)
        points_dim = next(iter(axes))
    else:
        planes = tuple(PlaneAxis(values, scale) for values in axes.values())
        ds, rounds, boundaries = refine_plane(
            run_round, tuple(axes), planes, lambda d: majority(outcome.of_runs(d)), budget
        )
        points_dim = POINT_DIM
    per_point = np.repeat(np.arange(len(rounds)), [len(r) for r in rounds])
    if len(axes) == 1:  # the points in order along the axis
        per_point = per_point[np.argsort(np.concatenate(rounds))]
    of_runs = outcome.of_runs(ds)
    ds = ds.assign(
        {
            "refine.outcome": of_runs.astype(int),
            "refine.fraction": of_runs.mean(SEED_DIM),
            "refine.round": ((points_dim,), per_point),
        }
    )
    about = {
        "axes": list(axes),
        "outcome": outcome.name,
        "scale": scale,
        "budget": budget,
        "rounds": rounds,
        "boundaries": boundaries,
    }
    ds.attrs = dict(ds.attrs) | {
        "refine": json.dumps(about),
        "identity": json_digest([*identities, about]),
    }
    return ds


def _refine_line(run_round, line, outcome, budget, scale) -> tuple[xr.Dataset, list, list]:
    """One axis, each round swept by `run_round(k, grid)`: every point's runs along it, the rounds'
    points and the intervals where the majority changes."""
    axis, values = line
    rounds: list[list[float]] = [values]
    sweeps = []
    while True:
        sweeps.append(run_round(len(rounds) - 1, {axis: rounds[-1]}))
        ds = _joined(sweeps, axis)
        majority_here = majority(outcome.of_runs(ds))
        points = ds[axis].values
        changes = [i for i in range(len(points) - 1) if majority_here[i] != majority_here[i + 1]]
        left = budget - len(points)
        if not changes or left <= 0:
            break
        widest = sorted(changes, key=lambda i: -_width(points[i], points[i + 1], scale))[:left]
        rounds.append(sorted(_split(points[i], points[i + 1], scale) for i in widest))
    return ds, rounds, [[float(points[i]), float(points[i + 1])] for i in changes]


def check_refine_settings(
    grid: Mapping[str, Sequence[float]], num_seeds: int, budget: int, scale: str
) -> None:
    """Refuse, before any run, what [`refine_sweep`][dynamics.landscape.refine_sweep] cannot start
    from (its arguments of the same names).

    **Raises:** `ValueError` saying what is allowed.

    **Example:**

        >>> import dynamics
        >>> dynamics.landscape.check_refine_settings({"eta": [0.1, 1.0]}, num_seeds=2, budget=10, scale="log")
        Traceback (most recent call last):
        ...
        ValueError: refine_sweep needs at least 3 seeds per point (a majority decides), got 2
    """
    if not isinstance(grid, Mapping) or not 1 <= len(grid) <= 2:
        raise ValueError(f"refine_sweep refines over one or two grid axes, got {len(grid)}: {list(grid)}")
    starts = 1
    for name, values in grid.items():
        values = [float(v) for v in values]
        if len(set(values)) < 2:
            raise ValueError(f"refine_sweep starts from at least 2 distinct values of {name}, got {values}")
        if scale == "log" and min(values) <= 0:
            raise ValueError(
                f"a log scale splits positive values only, got {name} = {min(values)}; use scale='linear'"
            )
        starts *= len(set(values))
    if num_seeds < 3:
        raise ValueError(
            f"refine_sweep needs at least 3 seeds per point (a majority decides), got {num_seeds}"
        )
    if budget < starts:
        raise ValueError(f"the budget ({budget} points) is below the {starts} points to start from")
    if scale not in REFINE_SCALES:
        raise ValueError(f"scale must be one of {REFINE_SCALES}, got {scale!r}")


def _width(low: float, high: float, scale: str) -> float:
    return math.log(high / low) if scale == "log" else high - low


def _split(low: float, high: float, scale: str) -> float:
    return float(math.sqrt(low * high)) if scale == "log" else float((low + high) / 2)


def _joined(sweeps: list[xr.Dataset], axis: str) -> xr.Dataset:
    """The rounds' sweeps as one, sorted along `axis`, with the first round's attributes."""
    joined = xr.concat(sweeps, dim=axis, data_vars="all", coords="minimal", compat="override", join="outer")
    joined = joined.sortby(axis)
    joined.attrs = dict(sweeps[0].attrs)
    return joined
