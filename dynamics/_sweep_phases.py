"""The phases of every run of a sweep: [`phases`][dynamics.landscape.phases] on each run's saved loss, as a
dataset labelled like the sweep."""

import functools
import json

import jax
import numpy as np
import xarray as xr

from ._phases import phases
from ._simulation import AbstractSimulation, run_shape
from ._store import SAVE_DIM, SEED_DIM, refuse_unwritten, variables

PHASE_DIM = "phase"
"""The dimension of a sweep's phases over the plateaus of a run, in time order."""


def sweep_phases(
    ds: xr.Dataset,
    loss: str = "loss",
    grad_norm: str | None = None,
    *,
    max_phases: int = 8,
    min_depth: float = 3.0,
    leave: float = 0.2,
    window: float = 0.05,
    floor: float = 1e-3,
) -> xr.Dataset:
    """Split every run of a sweep into plateaus and transitions ([`phases`][dynamics.landscape.phases] on
    each run's saved loss against its save times), computed at once for every grid point and seed.

    **Arguments:**

    - `ds`: a sweep, from [`sweep`][], [`simulate`][]'s store or [`load_sweep`][].
    - `loss`: the saved value that is the run's loss, one number per save.
    - `grad_norm`: a saved gradient norm, one number per save, for [`phases`][dynamics.landscape.phases]'
      gradient test; default: none.
    - `max_phases`, `min_depth`, `leave`, `window`, `floor`: as for [`phases`][dynamics.landscape.phases].

    **Returns:** a dataset with the sweep's grid axes and `seed`, and `phase` (the plateaus of a
    run in time order, padded with NaN past each run's count):

    - `phases.count`: the number of plateaus of each run;
    - `phases.start_time`, `phases.end_time`: each plateau's first and last save times;
    - `phases.loss`: the loss at the save nearest the plateau's critical point;
    - `phases.depth`, `phases.flatness`: how sure each plateau is, as for
      [`Plateaus`][dynamics.landscape.Plateaus];
    - `phases.save_index`, `phases.after_index`: the save nearest the plateau's critical point and
      the first save after the plateau (−1 past each run's count, and where no save follows), as for
      [`Plateaus`][dynamics.landscape.Plateaus]: where [`sweep_saddles`][dynamics.landscape.sweep_saddles]
      polishes and measures the escape.

    Its attributes are the sweep's (its `config`, its `identity`, ...) and the analysis's settings
    (`analysis`, JSON); [`save_sweep`][dynamics.store.save_sweep] writes it as a store of its own.

    **Raises:** `ValueError` naming the saved values when `loss` or `grad_norm` is not one number
    per save, or saying how many runs are not written yet (a store's blocks of other shards).

    **Example:** the logistic flow dy/dt = r y (1 − y) from a small random y(0), with loss 1 − y,
    stalls near 1, drops around t = 7/r and settles at 0: two plateaus per run, the first lasting
    ten times longer at a ten times smaller rate:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Logistic(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         y0 = 1e-3 * (1.0 + jax.random.uniform(key, (), self.dtype))
        ...         save = dynamics.Save(jnp.logspace(-2.0, 3.0, 101), lambda t, y, args: {"loss": 1.0 - y})
        ...         field = lambda t, y, args: self.rate * y * (1.0 - y)
        ...         return dynamics.ode_flow(field, y0, t1=1e3, save=save)
        >>> ds = dynamics.sweep(Logistic(), {"rate": [1.0, 10.0]}, num_seeds=2)
        >>> found = dynamics.landscape.sweep_phases(ds)
        >>> found["phases.count"].values.tolist()
        [[2, 2], [2, 2]]
        >>> levels = abs(found["phases.loss"].isel(seed=0, phase=[0, 1]))
        >>> levels.round(2).values.tolist()
        [[1.0, 0.0], [1.0, 0.0]]
        >>> end = found["phases.end_time"].sel(phase=0)
        >>> (end.sel(rate=1.0) / end.sel(rate=10.0)).round(6).values.tolist()
        [10.0, 10.0]
    """
    refuse_unwritten(ds, "splitting its runs into phases")
    series = {"loss": loss} | ({"grad_norm": grad_norm} if grad_norm is not None else {})
    for what, name in series.items():
        _check_series(ds, name, what)
    lead = ds[loss].dims[:-1]
    shape = ds[loss].shape
    flat = {
        what: ds[name].transpose(*ds[loss].dims).values.reshape(-1, shape[-1])
        for what, name in series.items()
    }
    times = ds["time"].broadcast_like(ds[loss]).transpose(*ds[loss].dims).values.reshape(-1, shape[-1])
    settings = dict(max_phases=max_phases, min_depth=min_depth, leave=leave, window=window, floor=floor)
    split = functools.partial(phases, **settings)
    found = jax.jit(jax.vmap(lambda t, values: split(t, values["loss"], values.get("grad_norm"))))(
        times, flat
    )

    def labelled(field, per_phase: bool):
        values = np.asarray(getattr(found, field))
        dims = (*lead, PHASE_DIM) if per_phase else lead
        return dims, values.reshape(*shape[:-1], *values.shape[1:])

    out = xr.Dataset(
        {
            "phases.count": labelled("count", False),
            "phases.start_time": labelled("start_time", True),
            "phases.end_time": labelled("end_time", True),
            "phases.loss": labelled("loss", True),
            "phases.depth": labelled("depth", True),
            "phases.flatness": labelled("flatness", True),
            "phases.save_index": labelled("save_index", True),
            "phases.after_index": labelled("after_index", True),
        },
        coords={name: ds.coords[name] for name in lead if name in ds.coords}
        | {PHASE_DIM: np.arange(np.shape(found.start_time)[-1])},  # fewer than max_phases for few saves
    )
    out.attrs = dict(ds.attrs) | {
        "analysis": json.dumps({"phases": {"loss": loss, "grad_norm": grad_norm, **settings}})
    }
    return out


def saved_series(sim: AbstractSimulation) -> list[str]:
    """The values `sim` saves with one number per save, named as a sweep's store names them
    (traced, not run): what [`sweep_phases`][dynamics.landscape.sweep_phases] can split.

    **Example:** a flow that saves its loss, its state and a vector; the vector is not a series:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         saved = lambda t, y, args: {"loss": y**2 / 2, "y": y, "pair": jnp.stack([y, -y])}
        ...         save = dynamics.Save(jnp.linspace(0.0, 1.0, 5), saved)
        ...         return dynamics.ode_flow(lambda t, y, args: -y, jnp.asarray(1.0), t1=1.0, save=save)
        >>> dynamics.landscape.saved_series(Decay())
        ['loss', 'y']
    """
    run = run_shape(sim)
    return [name for name, (dims, _) in variables(run).items() if name != "time" and dims == (SAVE_DIM,)]


def _check_series(ds: xr.Dataset, name: str, what: str) -> None:
    """Refuse `name` unless it is saved with one number per save of every run."""
    series = [n for n, v in ds.data_vars.items() if n != "time" and v.dims[-2:] == (SEED_DIM, SAVE_DIM)]
    if name not in ds or ds[name].dims[-2:] != (SEED_DIM, SAVE_DIM):
        raise ValueError(
            f"the phases need the {what} as a saved value with one number per save; the sweep saves "
            f"no {name!r} of that shape (its saved series: {', '.join(series) or 'none'})"
        )
