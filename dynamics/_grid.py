"""A sweep's grid: its axes checked, its points, and how its axes become the dataset's dimensions.

An axis is one setting and its values (the grid is the product of its axes), or a **paired
axis**: a tuple of settings and a list of value tuples, one point each, for points that lie on no
product grid (a refined phase diagram's). A paired axis is the dimension `point`, each of its
settings a coordinate along it.
"""

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from ._params import settings, with_settings
from ._simulation import AbstractSimulation, static_part

POINT_DIM = "point"
"""The dimension of a grid's paired axis (its settings are coordinates along it)."""

Axes = dict[str | tuple[str, ...], list]
"""A checked grid: setting name (or a paired axis's tuple of names) → its values."""


def _plain(value):
    """A numpy scalar as the Python value it holds (so that the config is JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def check_grid(sim: AbstractSimulation, grid: Mapping) -> Axes:
    """The grid's axes as lists of plain values, each refused before any run when it is not a
    setting of `sim`, not a non-empty sequence (a string, a scalar, a generator), or repeats a
    value; a paired axis (a tuple of names) also when its points do not give one value to each
    name, or names a setting twice. At most one paired axis.

    **Returns:** axis (name or tuple of names) → its values (tuples for a paired axis).
    """
    if not isinstance(grid, Mapping):
        raise ValueError(f"grid must be a mapping of setting name -> values, got {type(grid).__name__}")
    known = {info.name for info in settings(type(sim))}
    axes: Axes = {}
    named: list[str] = []
    for key, values in grid.items():
        names = key if isinstance(key, tuple) else (key,)
        if isinstance(key, tuple) and len(key) < 2:
            raise ValueError(f"a paired grid axis names at least 2 settings, got {key!r}")
        paired = [k for k in axes if isinstance(k, tuple)]
        if isinstance(key, tuple) and paired:
            raise ValueError(f"a grid has at most one paired axis, got {paired[0]!r} and {key!r}")
        for name in names:
            if name not in known:
                raise ValueError(
                    f"{type(sim).__name__} has no setting {name!r}; known: {', '.join(sorted(known))}"
                )
            if name in named:
                raise ValueError(f"grid names the setting {name!r} twice")
            named.append(name)
        axes[key] = _checked_values(key, values)
    if POINT_DIM in axes and any(isinstance(k, tuple) for k in axes):
        raise ValueError(
            f"a grid with a paired axis (dimension {POINT_DIM!r}) cannot sweep a setting of that name"
        )
    return axes


def _checked_values(key: str | tuple[str, ...], values) -> list:
    is_array = isinstance(values, np.ndarray)
    if isinstance(values, str | bytes) or not (isinstance(values, Sequence) or is_array):
        raise ValueError(
            f"grid axis {key!r} must be a list or tuple of values, got {type(values).__name__} {values!r}"
        )
    if is_array and values.ndim != (2 if isinstance(key, tuple) else 1):
        shape = "two-dimensional (a point per row)" if isinstance(key, tuple) else "one-dimensional"
        raise ValueError(f"grid axis {key!r} must be {shape}, got an array of shape {values.shape}")
    if isinstance(key, tuple):
        bad = [p for p in values if isinstance(p, str | bytes) or np.ndim(p) != 1 or len(p) != len(key)]
        if bad:
            raise ValueError(
                f"each point of the paired grid axis {key!r} gives one value to each of its "
                f"{len(key)} settings, got {bad[0]!r}"
            )
        values = [tuple(_plain(v) for v in point) for point in values]
    else:
        values = [_plain(v) for v in values]
    if not values:
        raise ValueError(f"grid axis {key!r} must have at least one value")
    repeated = [v for i, v in enumerate(values) if v in values[:i]]
    if repeated:
        raise ValueError(
            f"grid axis {key!r} repeats {', '.join(map(repr, repeated))}: each value once, or the sweep "
            "would compute the same runs twice"
        )
    return values


def grid_points(sim: AbstractSimulation, axes: Axes) -> tuple[list, list]:
    """The simulation at each point of the checked grid `axes` (in C order: the last axis varies
    fastest), and its static part (points with equal static parts share one program)."""
    sims = []
    for point in itertools.product(*axes.values()):
        values: dict = {}
        for key, value in zip(axes, point):
            values.update(zip(key, value) if isinstance(key, tuple) else [(key, value)])
        sims.append(with_settings(sim, values))
    return sims, [static_part(s) for s in sims]


def grid_dims(axes: Axes) -> tuple[str, ...]:
    """The dataset's dimension of each axis: its name, or
    [`POINT_DIM`][dynamics.store.POINT_DIM] for a paired axis."""
    return tuple(POINT_DIM if isinstance(key, tuple) else key for key in axes)


def grid_coords(axes: Axes) -> dict:
    """The dataset's coordinates of the axes: each axis's values along its dimension; a paired
    axis's point numbers along `point` and each of its settings as a coordinate along `point`."""
    coords: dict = {}
    for key, values in axes.items():
        if isinstance(key, tuple):
            coords[POINT_DIM] = np.arange(len(values))
            coords |= {name: (POINT_DIM, np.asarray([p[i] for p in values])) for i, name in enumerate(key)}
        else:
            coords[key] = np.asarray(values)
    return coords


def grid_record(axes: Axes) -> dict:
    """The grid as JSON holds it: a paired axis under its names joined by commas, its points as
    lists ([`grid_from_record`][dynamics.store.grid_from_record] reads it back)."""
    return {
        (",".join(key) if isinstance(key, tuple) else key): [
            list(v) if isinstance(key, tuple) else v for v in values
        ]
        for key, values in axes.items()
    }


def grid_from_record(record: Mapping) -> Axes:
    """The grid a store's `config` attribute records (a paired axis under its names joined by
    commas, its points as lists; setting names hold no comma), as [`sweep`][] takes it.

    **Example:**

        >>> import dynamics
        >>> dynamics.store.grid_from_record({"seed_scale": [1, 2], "eta,lam": [[0.1, 2.0], [0.2, 4.0]]})
        {'seed_scale': [1, 2], ('eta', 'lam'): [(0.1, 2.0), (0.2, 4.0)]}
    """
    return {
        (tuple(key.split(",")) if "," in key else key): [tuple(v) if "," in key else v for v in values]
        for key, values in record.items()
    }
