"""Variables added to a finished sweep's store (the analyses of its runs), with their checksums, so
that the store keeps one record of its runs and of what was found in them."""

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from ._files import atomic_write
from ._integrity import (
    ADDED,
    ADDED_PROBLEM,
    CREATED,
    METADATA,
    added_variables,
    check_store,
    file_digest,
    read_json,
)
from ._store import store_alone


def add_to_store(path: str | os.PathLike, found: xr.Dataset) -> Path:
    """Add the variables of `found` (an analysis of the sweep's runs, labelled like them) to the
    finished store of that sweep at `path`, with the checksum of each of their files: then
    [`load_sweep`][] returns them with the runs, and [`check_store`][dynamics.store.check_store] names any
    damage to them. Variables added earlier under the same names are replaced; the sweep's own are never
    touched.

    While they are written the store is marked (`pending`), so that a writing stopped half-way is
    named, not read; the runs stay readable by a rerun of the sweep, and adding the variables again
    completes the store.

    **Arguments:**

    - `path`: a complete store of a sweep (from [`sweep`][] with a `store`, or
      [`save_sweep`][dynamics.store.save_sweep]).
    - `found`: a dataset whose `identity` attribute is the store's (an analysis of these very runs,
      e.g. from [`sweep_phases`][dynamics.landscape.sweep_phases]); its dimensions are the store's (the grid
      axes, `seed`) and new ones with coordinates of their own. Its `analysis` attribute is kept with every
      variable.

    **Returns:** the path.

    **Raises:** `ValueError` when the store is not complete, is being written, or when `found`
    analyses another sweep, names one of the sweep's own variables, or labels a dimension of the
    store with other values.

    **Example:** the phases of a sweep, added to its store and checked with it:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):  # loss e^{-rate t} from a random start
        ...         y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
        ...         save = dynamics.Save(jnp.logspace(-2.0, 2.0, 41), lambda t, y, args: {"loss": y})
        ...         return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=100.0, save=save)
        >>> store = pathlib.Path(tempfile.mkdtemp()) / "decay.zarr"
        >>> ds = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2, store=store)
        >>> found = dynamics.landscape.sweep_phases(dynamics.load_sweep(store))
        >>> _ = dynamics.store.add_to_store(store, found)
        >>> loaded = dynamics.load_sweep(store)
        >>> loaded["phases.count"].dims, dynamics.store.check_store(store).state
        (('rate', 'seed'), 'complete')
        >>> (store / "phases.count" / "0.0").unlink()
        >>> print(dynamics.store.check_store(store).problems[0])
        added variables: phases.count/0.0 is missing (add them again: rerun the analysis that wrote them)
    """
    path = Path(path)
    with store_alone(path) as lock:
        if lock is None:
            raise ValueError(f"{path} is being written by another process: add the variables once it is done")
        _check_addable(path, found)
        created = read_json(path / CREATED)
        earlier = added_variables(path)
        own = set(xr.open_zarr(str(path), zarr_format=2, consolidated=True).variables) - set(earlier)
        new = [name for name in found.variables if name not in own]  # its coordinates of new dimensions too
        names = sorted(set(earlier) | set(new))
        with atomic_write(path / ADDED) as f:
            json.dump({"pending": True, "identity": created["identity"], "variables": names}, f)
        group = zarr.open_group(str(path), mode="r+", zarr_format=2)
        analysis = found.attrs.get("analysis")
        with zarr.config.set({"array.write_empty_chunks": True}):
            for name in new:
                if name in group:
                    shutil.rmtree(path / name)
                variable = found[name]
                values = np.asarray(variable.values)
                attrs = {"_ARRAY_DIMENSIONS": list(variable.dims), **variable.attrs}
                if analysis is not None and name in found.data_vars:
                    attrs["analysis"] = analysis
                array = group.create_array(
                    name,
                    shape=values.shape,
                    chunks=values.shape or None,
                    dtype=values.dtype,
                    fill_value=np.nan if values.dtype.kind == "f" else -1,
                    attributes=attrs,
                )
                array[...] = values
        with warnings.catch_warnings():  # attnflow's markers beside the arrays are not zarr's
            warnings.filterwarnings("ignore", "Object at .attnflow_", UserWarning)
            zarr.consolidate_metadata(str(path), zarr_format=2)
        files = {
            str(full.relative_to(path)): file_digest(full)
            for name in names
            for full in sorted((path / name).rglob("*"))
            if full.is_file()
        }
        record = {
            "identity": created["identity"],
            "variables": names,
            "files": files,
            "metadata": file_digest(path / METADATA),
        }
        with atomic_write(path / ADDED) as f:
            json.dump(record, f)
    return path


def drop_added(path: str | os.PathLike) -> list[str]:
    """Remove every variable added to the finished store at `path`
    ([`add_to_store`][dynamics.store.add_to_store]: an analysis's), leaving the sweep's own runs as they
    were written: a store whose only damage is to added variables is whole again, and the analyses that made
    them can add them anew.

    **Returns:** the names removed.

    **Raises:** `ValueError` when another process writes the store.

    **Example:** a lost chunk of an analysis, dropped and added again:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
        ...         save = dynamics.Save(jnp.logspace(-2.0, 2.0, 41), lambda t, y, args: {"loss": y})
        ...         return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=100.0, save=save)
        >>> store = pathlib.Path(tempfile.mkdtemp()) / "decay.zarr"
        >>> _ = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2, store=store)
        >>> found = dynamics.landscape.sweep_phases(dynamics.load_sweep(store))
        >>> _ = dynamics.store.add_to_store(store, found)
        >>> (store / "phases.count" / "0.0").unlink()
        >>> dynamics.store.check_store(store).only_added_damaged
        True
        >>> "phases.count" in dynamics.store.drop_added(store), dynamics.store.check_store(store).state
        (True, 'complete')
    """
    path = Path(path)
    with store_alone(path) as lock:
        if lock is None:
            raise ValueError(f"{path} is being written by another process: drop its analyses once it is done")
        created, names = read_json(path / CREATED), added_variables(path)
        with atomic_write(path / ADDED) as f:  # a kill from here on is named by check_store
            json.dump({"pending": True, "identity": created["identity"], "variables": names}, f)
        for name in names:
            shutil.rmtree(path / name, ignore_errors=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Object at .attnflow_", UserWarning)
            zarr.consolidate_metadata(str(path), zarr_format=2)
        record = {"identity": created["identity"], "variables": [], "files": {}}
        with atomic_write(path / ADDED) as f:
            json.dump(record | {"metadata": file_digest(path / METADATA)}, f)
    return names


def _check_addable(path: Path, found: xr.Dataset) -> None:
    """Refuse to add `found` to the store at `path` unless the store is complete (but for damage to
    variables added before) and `found` analyses its runs, labelled as they are."""
    report = check_store(path)
    own = [p for p in report.problems if not p.startswith(ADDED_PROBLEM)]
    if report.state in ("foreign", "incomplete") or own:
        more = f": {'; '.join(own[:3])}" if own else ""
        raise ValueError(
            f"{path} is {report.state}{more}; variables are added only to a finished, intact sweep"
        )
    created = read_json(path / CREATED)
    if found.attrs.get("identity") != created["identity"]:
        raise ValueError(
            f"the variables to add to {path} analyse another sweep (their identity is not the store's)"
        )
    ds = xr.open_zarr(str(path), zarr_format=2, consolidated=True, mask_and_scale=False)
    earlier = set(added_variables(path))
    clashes = [
        name
        for name in found.variables
        if name in ds.variables and name not in earlier and name not in ds.dims
    ]
    if clashes:
        raise ValueError(f"{', '.join(clashes)}: the sweep's own variables in {path}, which are not replaced")
    for dim in found.dims:
        if dim in ds.dims and dim not in earlier:
            if dim not in found.coords or not np.array_equal(found[dim].values, ds[dim].values):
                raise ValueError(f"the variables to add label {dim!r} otherwise than {path} does")
