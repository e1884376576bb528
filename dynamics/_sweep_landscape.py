"""The landscape along every run of a sweep: each final state polished to the critical point near
it ([`sweep_critical_points`][dynamics.landscape.sweep_critical_points]) and the sharpness there
([`sweep_sharpness`][dynamics.landscape.sweep_sharpness]), and the state saved on each plateau polished to
its saddle ([`sweep_saddles`][dynamics.landscape.sweep_saddles]), from the loss its simulation declares
([`AbstractSimulation.landscape`][]), as datasets labelled like the sweep."""

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import xarray as xr
from jaxtyping import PyTree

from ._batch import run_many
from ._fingerprint import code_record
from ._hessian import hessian_max_eigenvalue
from ._kept_runs import keep_run, kept_runs
from ._landscape import critical_point, require_float64
from ._landscape_result import CriticalPointStatus
from ._params import with_settings
from ._phases import _polish_plateau
from ._progress import progress_over
from ._simulation import (
    AbstractSimulation,
    draws,
    given_draw,
    has_landscape,
    landscape_shows,
    run_shape,
    seed_key,
    static_part,
    traced_arrays,
    with_values,
)
from ._store import SAVE_DIM, SEED_DIM, named_leaves, refuse_unwritten
from ._sweep_phases import PHASE_DIM

CRITICAL_POINT_STATUSES = tuple(status.name for status in CriticalPointStatus)
"""The names of the [`CriticalPointStatus`][dynamics.landscape.CriticalPointStatus]es, indexed by
`critical_point.status` (stored with the variable as its attribute `statuses`)."""
_RUNS_PER_CALL = 64
"""The most runs analysed in one compiled call (the dense Hessian of a run takes n² numbers)."""


def require_landscape(sim: AbstractSimulation, analysis: str, *, saved: bool = False) -> None:
    """Refuse, before any work, an analysis of final states for a simulation that declares no
    [`Landscape`][]; with `saved`, an analysis of saved states
    ([`sweep_saddles`][dynamics.landscape.sweep_saddles]) for one whose landscape does not say where its
    runs save their parameters (`Landscape.saved`).

    **Raises:** `ValueError` naming the simulation and the analysis.

    **Example:**

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Still(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         return dynamics.train(lambda w: w**2, jnp.asarray(1.0), dynamics.gd(0.1), num_steps=1)
        >>> dynamics.landscape.require_landscape(Still(), "critical_point")
        Traceback (most recent call last):
        ...
        ValueError: critical_point analyses the loss at each run's final state, and Still declares no ...
    """
    if not has_landscape(sim):
        raise ValueError(
            f"{analysis} analyses the loss at each run's final state, and {type(sim).__name__} declares no "
            "landscape (AbstractSimulation.landscape: the loss of a run as a function of its final state)"
        )
    if saved and not landscape_shows(sim, lambda landscape: landscape.saved is not None):
        raise ValueError(
            f"{analysis} polishes the parameters each run saved on its plateaus, and {type(sim).__name__}'s "
            "landscape does not say where they are in its saves (Landscape.saved)"
        )


def sweep_critical_points(
    ds: xr.Dataset,
    sim: AbstractSimulation,
    *,
    max_steps: int = 100,
    gtol: float = 1e-12,
    eig_tol: float = 1e-8,
    max_distance: float = float("inf"),
    keep: str | os.PathLike | None = None,
) -> xr.Dataset:
    """Polish the final state of every run of a sweep to the critical point near it
    ([`critical_point`][dynamics.landscape.critical_point]: Newton's method on the gradient of the run's
    loss, in float64), and describe it by its Hessian spectrum.

    The loss of each run is its simulation's [`Landscape`][] at the run's grid point and key (its
    data may depend on both); the final state is read from the sweep (`final.*`). The runs of one
    compiled program (the grid points that share a static part) share one compiled polish, called
    for one run after the other, with progress over the runs: a batch of dense Hessians gains
    nothing on a CPU, and jaxlib's batched LAPACK kernels can deadlock there (two of them, LU and
    eigh of a batch of 2312-parameter Hessians, each waited on the other's thread for ever). Data
    in `float32` (the simulation's `dtype`) enter the float64 loss as they are.

    **Arguments:**

    - `ds`: a finished sweep of `sim` (from [`sweep`][] or [`load_sweep`][]).
    - `sim`: the simulation that made it (its grid values are read from `ds`).
    - `max_steps`, `gtol`, `eig_tol`, `max_distance`: as for
      [`critical_point`][dynamics.landscape.critical_point].
    - `keep`: a folder where each run's result is kept as it is found (made when it is not there).
      A call stopped half-way and made again with the same folder finds them there and polishes
      only the runs left; results kept for another sweep, other settings or other code are
      computed again, with a warning. Default: none kept.

    **Returns:** a dataset with the sweep's grid axes and `seed`:

    - `critical_point.status`: a [`CriticalPointStatus`][dynamics.landscape.CriticalPointStatus] per run
      (`0`, converged: a critical point was found; otherwise there is none near, e.g. where the loss's
      infimum is at infinity); the names are the variable's attribute `statuses`;
    - `critical_point.loss`, `critical_point.grad_norm`: L and ‖∇L‖ at the point found;
    - `critical_point.index`: the number of negative Hessian eigenvalues there (0 at a minimum);
    - `critical_point.zero_count`: the number of Hessian eigenvalues within `eig_tol`·max|λ| of 0
      there (flat directions: a degenerate point, a valley of critical points);
    - `critical_point.min_eigenvalue`, `critical_point.max_eigenvalue`: the extreme eigenvalues;
    - `critical_point.distance`: how far the point is from the final state;
    - `critical_point.num_steps`: the Newton steps taken.

    Its attributes are the sweep's and the analysis's settings (`analysis`, JSON).

    **Raises:** `ValueError` when `sim` declares no landscape, or float64 is not enabled.

    **Example:** gradient descent on L(x, y) = ½(x² − y²)·r (a saddle at 0) from a random x and
    y = 0 stays on the x axis and ends near the saddle: index 1, eigenvalues −r and r:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> def saddle(rate):
        ...     return lambda w: 0.5 * rate * (w[0] ** 2 - w[1] ** 2)
        >>> class Saddle(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         save = dynamics.Save(fn=lambda step, w, args: {"loss": saddle(self.rate)(w)})
        ...         start = jnp.stack([1.0 + jax.random.uniform(key, (), self.float_dtype), 0.0])
        ...         return dynamics.train(saddle(self.rate), start, dynamics.gd(0.1), num_steps=10, save=save)
        ...
        ...     def landscape(self, key):
        ...         return dynamics.Landscape(saddle(self.rate))
        >>> ds = dynamics.sweep(Saddle(), {"rate": [1.0, 2.0]}, num_seeds=2)
        >>> found = dynamics.landscape.sweep_critical_points(ds, Saddle())
        >>> found["critical_point.status"].values.tolist(), found["critical_point.index"].values.tolist()
        ([[0, 0], [0, 0]], [[1, 1], [1, 1]])
        >>> found["critical_point.min_eigenvalue"].values.tolist()
        [[-1.0, -1.0], [-2.0, -2.0]]
        >>> found["critical_point.max_eigenvalue"].values.tolist()
        [[1.0, 1.0], [2.0, 2.0]]
    """
    require_landscape(sim, "critical_point")
    require_float64("critical_point")
    settings = dict(max_steps=max_steps, gtol=gtol, eig_tol=eig_tol, max_distance=max_distance)

    def analyse(landscape, final):
        found = critical_point(landscape.loss, landscape.params(final), **settings)
        sizes = jnp.abs(found.eigenvalues)
        return {
            "status": found.status,
            "loss": found.loss,
            "grad_norm": found.grad_norm,
            "index": found.index,
            "zero_count": jnp.sum(sizes <= eig_tol * jnp.max(sizes)),
            "min_eigenvalue": found.eigenvalues[0],
            "max_eigenvalue": found.eigenvalues[-1],
            "distance": found.distance,
            "num_steps": found.num_steps,
        }

    about = {"identity": ds.attrs.get("identity"), "settings": settings}
    kept = None if keep is None else (Path(keep), about)
    out = _per_run(ds, sim, analyse, "critical_point", one_at_a_time=True, keep=kept)
    out["critical_point.status"].attrs["statuses"] = list(CRITICAL_POINT_STATUSES)
    out.attrs = dict(ds.attrs) | {"analysis": json.dumps({"critical_point": settings})}
    return out


def sweep_sharpness(ds: xr.Dataset, sim: AbstractSimulation, *, num_iters: int = 100) -> xr.Dataset:
    """The sharpness λ_max (the largest Hessian eigenvalue of the run's loss) at the final state of
    every run of a sweep, in float64, beside the edge of stability 2/η of a level with a step size.

    λ_max comes from [`hessian_max_eigenvalue`][dynamics.landscape.hessian_max_eigenvalue] (Lanczos,
    `num_iters` steps: exact once they reach the number of parameters); the loss and the final state are
    read as by [`sweep_critical_points`][dynamics.landscape.sweep_critical_points].

    **Arguments:** `ds`, `sim`: as for [`sweep_critical_points`][dynamics.landscape.sweep_critical_points];
    `num_iters`: the Lanczos steps.

    **Returns:** a dataset with the sweep's grid axes and `seed`: `sharpness.max_eigenvalue`, and,
    where the simulation's [`Landscape`][] has a `step_size` η, `sharpness.edge_of_stability` (2/η:
    gradient descent is stable on a quadratic only below it) and `sharpness.ratio` (λ_max·η/2, ≥ 1
    past the edge). Its attributes are the sweep's and the analysis's settings (`analysis`, JSON).

    **Raises:** `ValueError` when `sim` declares no landscape.

    **Example:** on L(w) = ½ r ‖w‖² with step 0.5 the sharpness is r and the edge 4:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Bowl(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         loss = lambda w: 0.5 * self.rate * jnp.sum(w**2)
        ...         return dynamics.train(loss, jnp.ones(3), dynamics.gd(0.5), num_steps=4)
        ...
        ...     def landscape(self, key):
        ...         loss = lambda w: 0.5 * self.rate * jnp.sum(w**2)
        ...         return dynamics.Landscape(loss, step_size=lambda final: 0.5)
        >>> ds = dynamics.sweep(Bowl(), {"rate": [1.0, 3.0]}, num_seeds=1)
        >>> found = dynamics.landscape.sweep_sharpness(ds, Bowl())
        >>> found["sharpness.max_eigenvalue"].round(8).values.tolist()
        [[1.0], [3.0]]
        >>> found["sharpness.ratio"].round(8).values.tolist()
        [[0.25], [0.75]]
        >>> found["sharpness.edge_of_stability"].values.tolist()
        [[4.0], [4.0]]
    """
    require_landscape(sim, "sharpness")

    def analyse(landscape, final):
        params = jax.tree.map(lambda leaf: jnp.asarray(leaf, jnp.float64), landscape.params(final))
        top = hessian_max_eigenvalue(landscape.loss, params, num_iters=num_iters)
        if landscape.step_size is None:
            return {"max_eigenvalue": top}
        step = jnp.asarray(landscape.step_size(final), top.dtype)
        return {"max_eigenvalue": top, "edge_of_stability": 2 / step, "ratio": top * step / 2}

    out = _per_run(ds, sim, analyse, "sharpness")
    out.attrs = dict(ds.attrs) | {"analysis": json.dumps({"sharpness": {"num_iters": num_iters}})}
    return out


def sweep_saddles(
    ds: xr.Dataset,
    sim: AbstractSimulation,
    found: xr.Dataset,
    *,
    max_steps: int = 100,
    gtol: float = 1e-12,
    eig_tol: float = 1e-8,
    max_distance: float = float("inf"),
    keep: str | os.PathLike | None = None,
) -> xr.Dataset:
    """Polish the state each run of a sweep saved on each of its plateaus to the critical point
    near it, and measure how the run escaped it: [`plateau_saddles`][dynamics.landscape.plateau_saddles] on
    every run, in float64.

    The plateaus are those of [`sweep_phases`][dynamics.landscape.sweep_phases] (`found`): on each, the save
    of lowest gradient norm (`phases.save_index`) is polished, and the run's escape is the displacement to
    the first save after the plateau (`phases.after_index`). The parameters at a save are read from what the
    run saved there by its landscape's `saved` ([`Landscape`][]): the run must save them. The runs are
    polished one after the other, one compiled program for the runs of each, as in
    [`sweep_critical_points`][dynamics.landscape.sweep_critical_points], and `keep` keeps each run's result
    likewise.

    **Arguments:**

    - `ds`: a finished sweep of `sim`, whose runs save their parameters.
    - `sim`: the simulation that made it.
    - `found`: its phases, from [`sweep_phases`][dynamics.landscape.sweep_phases].
    - `max_steps`, `gtol`, `eig_tol`, `max_distance`: as for
      [`critical_point`][dynamics.landscape.critical_point].
    - `keep`: as for [`sweep_critical_points`][dynamics.landscape.sweep_critical_points].

    **Returns:** a dataset with the sweep's grid axes, `seed` and `phase` (NaN, or −1 for the
    integers, past each run's plateaus):

    - `saddles.status`: a [`CriticalPointStatus`][dynamics.landscape.CriticalPointStatus] per plateau (0,
      converged: the polish found a critical point);
    - `saddles.loss`, `saddles.grad_norm`: L and ‖∇L‖ at the point found;
    - `saddles.index`: the number of negative Hessian eigenvalues there (0 at a minimum);
    - `saddles.zero_count`: the number within `eig_tol`·max|λ| of 0 (flat directions);
    - `saddles.distance`: how far the polish moved from the plateau's save;
    - `saddles.escape_overlap`: how much of the run's escape lies in the eigenspace of the most
      negative eigenvalue, in [0, 1] (NaN at a minimum, and where no save follows the plateau);
    - `saddles.escape_direction`: that eigenvalue's unit eigenvector (dims `phase`, `parameter`:
      the parameters flattened as `jax.flatten_util.ravel_pytree` orders them).

    **Raises:** `ValueError` when `sim` declares no landscape, or one without `saved`, when float64
    is not enabled, or when `found` has no plateau indices (phases of an older version).

    **Example:** the flow on L(x, y) = ½x² − ½y² + y⁴/4 from (1, 10⁻⁶·u) has three plateaus: its
    start, which polishes to the saddle at the origin 0.9 away (the run leaves it along x, not along
    the saddle's escape y), its rest at that saddle, which it leaves along y, and the minimum at
    (0, 1):

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> def loss(theta):
        ...     return 0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2 + 0.25 * theta[1] ** 4
        >>> class Saddle(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         start = jnp.array([1.0, 1e-6 * (1.0 + jax.random.uniform(key))])
        ...         saved = lambda t, theta, args: {"loss": loss(theta), "theta": theta}
        ...         save = dynamics.Save(ts=jnp.logspace(-1.0, 2.0, 61), fn=saved)
        ...         return dynamics.gradient_flow(loss, start, t1=100.0, save=save)
        ...
        ...     def landscape(self, key):
        ...         return dynamics.Landscape(loss, saved=lambda values: values["theta"])
        >>> ds = dynamics.sweep(Saddle(), {}, num_seeds=1)
        >>> plateaus = dynamics.landscape.sweep_phases(ds)
        >>> found = dynamics.landscape.sweep_saddles(ds, Saddle(), plateaus).isel(seed=0)
        >>> found["saddles.index"].sel(phase=[0, 1, 2]).values.tolist()
        [1, 1, 0]
        >>> round(float(found["saddles.distance"].sel(phase=0)), 4)
        0.9048
        >>> found["saddles.escape_overlap"].sel(phase=[0, 1]).round(4).values.tolist()
        [0.0, 1.0]
    """
    require_landscape(sim, "saddles", saved=True)
    require_float64("saddles")
    if "phases.save_index" not in found:
        raise ValueError(
            "the phases hold no plateau indices (phases.save_index): find them again (sweep_phases)"
        )
    settings = dict(max_steps=max_steps, gtol=gtol, max_distance=max_distance)
    states = _plateau_saves(ds, sim, found)
    num_phases = found.sizes[PHASE_DIM]

    def analyse(landscape, state):
        def one(p):
            at = landscape.saved(jax.tree.map(lambda v: v[p], state["plateau"]))
            escaped = landscape.saved(jax.tree.map(lambda v: v[p], state["after"]))
            saddle = _polish_plateau(landscape.loss, at, escaped, state["has_escape"][p], eig_tol, settings)
            direction = jax.flatten_util.ravel_pytree(saddle["escape_direction"])[0]
            fields = ("status", "loss", "grad_norm", "index", "zero_count", "distance", "escape_overlap")
            return {name: saddle[name] for name in fields} | {"escape_direction": direction}

        out = jax.lax.map(one, jnp.arange(num_phases))
        real = state["has_plateau"]
        return {
            name: jnp.where(real.reshape(-1, *[1] * (v.ndim - 1)), v, jnp.nan if v.dtype.kind == "f" else -1)
            for name, v in out.items()
        }

    about = {"identity": ds.attrs.get("identity"), "settings": settings | {"eig_tol": eig_tol}}
    kept = None if keep is None else (Path(keep), about)
    trailing = {name: (PHASE_DIM,) for name in ("status", "loss", "grad_norm", "index", "zero_count")}
    trailing |= {
        "distance": (PHASE_DIM,),
        "escape_overlap": (PHASE_DIM,),
        "escape_direction": (PHASE_DIM, "parameter"),
    }
    out = _per_run(
        ds, sim, analyse, "saddles", one_at_a_time=True, keep=kept, states=states, trailing=trailing
    )
    parameters = np.arange(out.sizes["parameter"])
    out = out.assign_coords({PHASE_DIM: found[PHASE_DIM].values, "parameter": parameters})
    out["saddles.status"].attrs["statuses"] = list(CRITICAL_POINT_STATUSES)
    out.attrs = dict(ds.attrs) | {"analysis": json.dumps({"saddles": settings | {"eig_tol": eig_tol}})}
    return out


def _plateau_saves(ds: xr.Dataset, sim: AbstractSimulation, found: xr.Dataset) -> tuple[dict, list[str]]:
    """What each run saved at each plateau's save and at the first save after it (where there is
    none, the plateau's own), as the PyTree of `Run.values` with leading axes (grid axes, seed,
    phase), and whether each plateau is one and has a save after it; and the grid axes."""
    refuse_unwritten(ds, "polishing its plateaus")
    axes = list(grid_axes(ds)) or list(found["phases.count"].dims[:-1])
    order = (*axes, SEED_DIM, PHASE_DIM)
    plateau = found["phases.save_index"].transpose(*order).values
    after = found["phases.after_index"].transpose(*order).values
    has_escape = after >= 0
    after = np.where(has_escape, after, plateau)
    shape = run_shape(sim).values
    names = [name or "value" for name in named_leaves(shape, "")]  # as the store names them
    saved = [ds[name].transpose(*axes, SEED_DIM, SAVE_DIM, ...).values for name in names]  # read once

    def at(index):
        picked = []
        for values in saved:
            where = np.maximum(index, 0).reshape(*index.shape, *[1] * (values.ndim - len(axes) - 2))
            picked.append(np.take_along_axis(values, where, axis=len(axes) + 1))
        return jax.tree.unflatten(jax.tree.structure(shape), picked)

    state = {
        "plateau": at(plateau),
        "after": at(after),
        "has_plateau": plateau >= 0,
        "has_escape": has_escape,
    }
    return state, axes


def grid_axes(ds: xr.Dataset) -> dict[str, list]:
    """The grid axes of a sweep and their values, from its recorded config (none for
    [`simulate`][]'s store)."""
    return json.loads(ds.attrs["config"]).get("grid", {}) if "config" in ds.attrs else {}


def _final_states(ds: xr.Dataset, sim: AbstractSimulation) -> tuple[PyTree, list[str]]:
    """The final states of every run of the sweep, as the PyTree a run ends in with leading axes
    (grid axes, seed), and the grid axes."""
    refuse_unwritten(ds, "analysing the landscape at its runs' ends")
    final = run_shape(sim).final
    names = list(named_leaves(final, "final.")) if jax.tree.leaves(final) else []
    missing = [name for name in names if name not in ds]
    if missing or not names:
        raise ValueError(
            f"the sweep holds no final state of {type(sim).__name__} "
            f"(missing: {', '.join(missing) or 'final'})"
        )
    axes = list(grid_axes(ds)) or list(ds[names[0]].dims[: ds[names[0]].dims.index(SEED_DIM)])
    leaves = [ds[name].transpose(*axes, SEED_DIM, ...).values for name in names]
    return jax.tree.unflatten(jax.tree.structure(final), leaves), axes


def _per_run(
    ds: xr.Dataset,
    sim: AbstractSimulation,
    analyse: Callable,
    prefix: str,
    *,
    one_at_a_time: bool = False,
    keep: tuple[Path, dict] | None = None,
    states: tuple[PyTree, list[str]] | None = None,
    trailing: dict[str, tuple[str, ...]] | None = None,
) -> xr.Dataset:
    """`analyse(landscape, final) -> {name: scalar}` on every run of the sweep, grouped by compiled
    program and `vmap`ped over runs, as a dataset `prefix.name` with dims (grid axes, seed).

    With `one_at_a_time`, each run is analysed by its own call of one compiled program instead:
    for dense linear algebra, where a batch gains nothing, and where jaxlib's batched LAPACK
    kernels (LU and eigendecomposition of a batch of large matrices, run side by side as the two
    branches of a `vmap`ped `cond`) can wait on each other for ever in a small CPU thread pool.
    Then `keep`, `(folder, key)`, keeps each run's result in `folder`, under `key` (what is analysed
    and how) and the fingerprint of the programs. `states`: what `analyse` takes for each run in
    place of its final state, `(PyTree with leading axes (grid axes, seed), grid axes)`; `trailing`:
    the dims of an output's axes beyond the run's (`{name: dims}`; default: a scalar per run)."""
    finals, axes = _final_states(ds, sim) if states is None else states
    shape = tuple(ds.sizes[a] for a in axes)
    seeds = np.asarray(ds[SEED_DIM].values)
    points = [
        with_settings(sim, {axis: ds[axis].values[i].item() for axis, i in zip(axes, index)})
        for index in np.ndindex(*shape)
    ] or [sim]
    groups: dict[AbstractSimulation, list[int]] = {}
    for p, point in enumerate(points):
        groups.setdefault(static_part(point), []).append(p)
    flat_finals = jax.tree.map(
        lambda x: x.reshape(len(points), len(seeds), *x.shape[len(axes) + 1 :]), finals
    )
    calls = []  # per compiled program: its grid points, and its function and arguments over runs
    for static, members in groups.items():

        def one(traced, seed, drawn, final, static=static):
            point = with_values(static, traced)
            # the run's data in its dtype, the analysis in float64
            with jax.numpy_dtype_promotion("standard"), given_draw(drawn):
                return analyse(point.landscape(seed_key(seed)), final)

        traced = {
            k: np.repeat(v, len(seeds))
            for k, v in traced_arrays(static, [points[p] for p in members]).items()
        }
        run_seeds = np.tile(seeds, len(members))
        drawn = draws([points[p] for p in members for _ in seeds], run_seeds)
        run_finals = jax.tree.map(lambda x: x[members].reshape(-1, *x.shape[2:]), flat_finals)
        calls.append((members, one, (traced, run_seeds, drawn, run_finals)))
    if one_at_a_time:
        kept = None if keep is None else (keep[0], keep[1] | {"analysis": prefix})
        outs = _each_run([call[1:] for call in calls], description=prefix, keep=kept, cls=type(sim))
    else:
        outs = [run_many(one, *args, chunk_size=_RUNS_PER_CALL)[0] for _, one, args in calls]
    results: dict[str, np.ndarray] = {}
    for (members, _, _), out in zip(calls, outs):
        for name, values in out.items():
            if name not in results:
                results[name] = np.full(
                    (len(points), len(seeds), *values.shape[1:]),
                    np.nan if values.dtype.kind == "f" else -1,
                    values.dtype,
                )
            results[name][members] = values.reshape(len(members), len(seeds), *values.shape[1:])
    dims = (*axes, SEED_DIM)
    coords = {name: ds.coords[name] for name in dims if name in ds.coords}
    extra = trailing or {}
    return xr.Dataset(
        {
            f"{prefix}.{name}": (
                (*dims, *extra.get(name, ())),
                values.reshape(*shape, len(seeds), *values.shape[2:]),
            )
            for name, values in results.items()
        },
        coords=coords,
    )


def _each_run(
    calls: list[tuple[Callable, tuple]],
    *,
    description: str,
    keep: tuple[Path, dict] | None,
    cls: type,
) -> list[dict[str, np.ndarray]]:
    """Each `(fn, batched_args)` of `calls` on each of its runs (the leading axis of `batched_args`)
    in turn, one compiled program per `fn` (compiled once a run needs it), with progress over all
    runs; per call, the outputs stacked along the run axis. With `keep`, `(folder, key)`, each run's
    outputs are kept in `folder` as it ends ([`keep_run`][dynamics.store.keep_run]), under `key` and the
    fingerprint of the programs and of the source files of `cls`'s package: the runs kept there before under
    the same are read, not computed."""

    def args_of(batched_args, i):
        return jax.tree.map(lambda x: x[i], batched_args)

    lowered = [eqx.filter_jit(fn).lower(*args_of(args, 0)) for fn, args in calls]
    compiled = {}
    counts = [len(jax.tree.leaves(args)[0]) for _, args in calls]
    found = {}
    if keep is not None:
        folder, key = keep
        code = code_record(cls, [program.as_text() for program in lowered])
        found = kept_runs(folder, key | {"code": code})
    outs = []
    with progress_over(sum(counts), description, "run", sum(counts) > 1) as bar:
        for c, ((_, args), count) in enumerate(zip(calls, counts)):
            pieces = []
            for i in range(count):
                name, run = f"{c}-{i}", args_of(args, i)
                kept = found.get(name)
                if kept is None or str(kept.pop(_OF_RUN, "")) != _run_digest(run):  # not this run's
                    if c not in compiled:
                        compiled[c] = lowered[c].compile()
                    found[name] = jax.device_get(compiled[c](*run))
                    if keep is not None:
                        keep_run(folder, name, found[name] | {_OF_RUN: np.asarray(_run_digest(run))})
                pieces.append(found[name])
                bar.update()
            outs.append(jax.tree.map(lambda *xs: np.stack(xs), *pieces))
    return outs


_OF_RUN = "_of_run"
"""The entry of a kept run's file that ties it to the run it was computed from (its digest)."""


def _run_digest(run) -> str:
    """A digest of a run's arguments (every array's dtype, shape and bytes): a kept result is read
    for the run it was computed from, not for another whose file it was copied over."""
    hashed = hashlib.sha256()
    for leaf in jax.tree.leaves(run):
        array = np.asarray(leaf)
        hashed.update(f"{array.dtype}{array.shape}".encode())
        hashed.update(np.ascontiguousarray(array).tobytes())
    return hashed.hexdigest()[:16]


def num_params(sim: AbstractSimulation) -> int:
    """The number of parameters the [`Landscape`][] of `sim` differentiates (traced, not run): the
    dense Hessian of [`sweep_critical_points`][dynamics.landscape.sweep_critical_points] has its square.

    **Example:** a run that ends in a 3-vector and a step count, whose loss is of the vector:

        >>> import dataclasses
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Bowl(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         run = dynamics.train(lambda w: jnp.sum(w**2), jnp.ones(3), dynamics.gd(0.1), num_steps=2)
        ...         return dataclasses.replace(run, final={"w": run.final, "steps": jnp.asarray(2)})
        ...
        ...     def landscape(self, key):
        ...         return dynamics.Landscape(lambda w: jnp.sum(w**2), params=lambda final: final["w"])
        >>> dynamics.landscape.num_params(Bowl())
        3
    """
    final = run_shape(sim).final
    counted = []

    def count(key):
        params = sim.landscape(key).params(final)
        counted.append(sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(params)))

    jax.eval_shape(count, seed_key(0))
    return counted[0]
