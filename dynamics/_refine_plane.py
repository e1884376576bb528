"""A phase diagram over two grid axes that refines itself: the cells of the start's product grid
whose corners' outcomes differ are split in four, round after round (a quadtree that follows the
boundary), each round's new points swept as one paired axis."""

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

import numpy as np
import xarray as xr

from ._grid import POINT_DIM
from ._store import SEED_DIM

Position = tuple[Fraction, Fraction]
"""Where a point lies, along each axis, in units of the start's intervals: 1.5 is the middle of
the second interval (its geometric mean on a log scale)."""
Cell = tuple[Fraction, Fraction, Fraction, Fraction]
"""A rectangle of positions: (x low, x high, y low, y high)."""


class PlaneAxis:
    """One axis of the plane: its start values and how a position maps to a value."""

    def __init__(self, values: list[float], scale: str):
        self.values, self.log = sorted(values), scale == "log"
        self.scaled = [math.log(v) if self.log else v for v in self.values]

    def value(self, position: Fraction) -> float:
        """The value at `position`: the start value there, or the point that far along its
        interval in scaled units (geometric on a log scale)."""
        i = min(math.floor(position), len(self.values) - 2)
        fraction = position - i
        if fraction == 0:
            return self.values[i]
        if fraction == 1:
            return self.values[i + 1]
        u = (1 - float(fraction)) * self.scaled[i] + float(fraction) * self.scaled[i + 1]
        return math.exp(u) if self.log else u

    def width(self, low: Fraction, high: Fraction) -> float:
        """The width of `[low, high]` in scaled units, as a part of the axis's whole span."""
        return (self._scaled(high) - self._scaled(low)) / (self.scaled[-1] - self.scaled[0])

    def _scaled(self, position: Fraction) -> float:
        value = self.value(position)
        return math.log(value) if self.log else value


def refine_plane(
    run_round: Callable[[int, dict], xr.Dataset],
    names: tuple[str, str],
    axes: tuple[PlaneAxis, PlaneAxis],
    majority_of: Callable[[xr.Dataset], np.ndarray],
    budget: int,
) -> tuple[xr.Dataset, list[list[tuple[float, float]]], list[list[float]]]:
    """Refine the plane of `axes` until no cell's corners differ or the budget is spent.

    **Arguments:**

    - `run_round`: `(round number, paired grid) -> its sweep`.
    - `names`: the two settings; `axes`: their [`PlaneAxis`][].
    - `majority_of`: `sweep -> the majority outcome of each of its points`.
    - `budget`: the most points in all.

    **Returns:** every point's runs along `point`, round after round ([`joined_points`][]), each
    round's points (values), and the cells where the outcome changes, each
    `[x low, x high, y low, y high]` in values.
    """
    xs = [Fraction(i) for i in range(len(axes[0].values))]
    ys = [Fraction(j) for j in range(len(axes[1].values))]
    cells: list[Cell] = [(x0, x1, y0, y1) for x0, x1 in zip(xs, xs[1:]) for y0, y1 in zip(ys, ys[1:])]
    new: list[Position] = [(x, y) for x in xs for y in ys]
    outcomes: dict[Position, bool] = {}
    rounds, sweeps = [], []
    while True:
        points = [(axes[0].value(x), axes[1].value(y)) for x, y in new]
        sweeps.append(run_round(len(rounds), {names: points}))
        rounds.append(points)
        outcomes |= dict(zip(new, majority_of(sweeps[-1]).tolist()))
        mixed = sorted((c for c in cells if _mixed(c, outcomes)), key=lambda c: -_area(c, axes))
        new, split = _next_points(mixed, outcomes, budget - len(outcomes))
        if not split:
            break
        cells = [c for c in cells if c not in split] + [child for c in split for child in _children(c)]
    boundary = [
        [axes[0].value(c[0]), axes[0].value(c[1]), axes[1].value(c[2]), axes[1].value(c[3])]
        for c in sorted(c for c in cells if _mixed(c, outcomes))
    ]
    return joined_points(sweeps), rounds, boundary


def _area(cell: Cell, axes: tuple[PlaneAxis, PlaneAxis]) -> float:
    return axes[0].width(cell[0], cell[1]) * axes[1].width(cell[2], cell[3])


def _middle(low: Fraction, high: Fraction) -> Fraction:
    return (low + high) / 2


def _mixed(cell: Cell, outcomes: Mapping[Position, bool]) -> bool:
    """Whether the outcomes known on the cell's border (its corners and the middles of its sides,
    where a split neighbour put points) are not all the same."""
    x0, x1, y0, y1 = cell
    xm, ym = _middle(x0, x1), _middle(y0, y1)
    border = [(x0, y0), (x0, y1), (x1, y0), (x1, y1), (xm, y0), (xm, y1), (x0, ym), (x1, ym)]
    seen = {outcomes[p] for p in border if p in outcomes}
    return len(seen) > 1


def _children(cell: Cell) -> list[Cell]:
    x0, x1, y0, y1 = cell
    xm, ym = _middle(x0, x1), _middle(y0, y1)
    return [(a, b, c, d) for a, b in ((x0, xm), (xm, x1)) for c, d in ((y0, ym), (ym, y1))]


def _next_points(
    mixed: list[Cell], outcomes: Mapping[Position, bool], left: int
) -> tuple[list[Position], list[Cell]]:
    """The new points of the mixed cells split this round (the widest first, whole cells only,
    within `left` points), and those cells."""
    new: list[Position] = []
    split: list[Cell] = []
    for cell in mixed:
        x0, x1, y0, y1 = cell
        xm, ym = _middle(x0, x1), _middle(y0, y1)
        grid = [(x, y) for x in (x0, xm, x1) for y in (y0, ym, y1)]
        added = [p for p in grid if p not in outcomes and p not in new]
        if len(new) + len(added) > left:
            break
        new += added
        split.append(cell)
    return new, split


def joined_points(sweeps: list[xr.Dataset]) -> xr.Dataset:
    """The rounds' sweeps (each along `point`) as one, its points numbered anew in round order,
    with the first round's attributes."""
    joined = xr.concat(sweeps, dim=POINT_DIM, data_vars="all", coords="minimal", compat="override")
    joined = joined.assign_coords({POINT_DIM: np.arange(joined.sizes[POINT_DIM])})
    joined.attrs = dict(sweeps[0].attrs)
    return joined


def majority(of_runs: xr.DataArray) -> np.ndarray:
    """Per point, whether most of its seeds have the outcome."""
    return of_runs.mean(SEED_DIM).values > 0.5
