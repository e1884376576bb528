"""Runs made once for a whole job: the store of a sweep that several of its pieces make alike (a
figure and the check that tests the same runs), named by the sweep's settings in a folder the job
names."""

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ._fingerprint import json_digest
from ._grid import check_grid, grid_record
from ._simulation import AbstractSimulation

_FOLDER: contextvars.ContextVar[Path | None] = contextvars.ContextVar("shared runs", default=None)
"""The folder of [`shared_store`][dynamics.store.shared_store] in this context ([`sharing_runs`][])."""


@contextlib.contextmanager
def sharing_runs(folder: str | os.PathLike | None) -> Iterator[None]:
    """Within the block, [`shared_store`][dynamics.store.shared_store] names stores in `folder`
    (`None`: none, the sweeps run in memory): what a job gives each of its pieces, e.g. `attnflow
    reproduce` a folder of its own whose stores only the same command made again by the same code
    resumes.

    **Example:**

        >>> import dynamics
        >>> class Still(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         raise NotImplementedError("not run here")
        >>> with dynamics.store.sharing_runs("/tmp/job"):
        ...     inside = dynamics.store.shared_store(Still(), {}, num_seeds=2)
        >>> inside.parent.as_posix(), dynamics.store.shared_store(Still(), {}, num_seeds=2)
        ('/tmp/job', None)
    """
    token = _FOLDER.set(None if folder is None else Path(folder))
    try:
        yield
    finally:
        _FOLDER.reset(token)


def shared_store(
    sim: AbstractSimulation,
    grid: Mapping[str | tuple[str, ...], Sequence],
    *,
    num_seeds: int,
    seed: int = 0,
    chunk_size: int | None = None,
) -> Path | None:
    """Where to keep a sweep that other pieces of the same job make too, so that its runs are made
    once: pass it as [`sweep`][]'s `store`. The first piece to get there runs the blocks, a piece
    arriving meanwhile takes the blocks not yet claimed and waits for the others, and a later one
    reads them (see [`sweep`][]); the numbers are those of the sweep in memory.

    **Arguments:** `sim`, `grid`, `num_seeds`, `seed`, `chunk_size`: the sweep's, as given to
    [`sweep`][].

    **Raises:** `ValueError` for a grid [`sweep`][] refuses.

    **Returns:** `<folder>/<class>_<digest of the settings>.zarr` in the folder of
    [`sharing_runs`][dynamics.store.sharing_runs], or `None` (the sweep runs in memory) outside it.

    **Example:**

        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         raise NotImplementedError("not run here")
        >>> dynamics.store.shared_store(Decay(), {"rate": [1.0, 2.0]}, num_seeds=4) is None
        True
        >>> with dynamics.store.sharing_runs("/tmp/job"):
        ...     a = dynamics.store.shared_store(Decay(), {"rate": [1.0, 2.0]}, num_seeds=4)
        ...     b = dynamics.store.shared_store(Decay(), {"rate": [1.0, 3.0]}, num_seeds=4)
        >>> a.parent.as_posix(), a == b
        ('/tmp/job', False)
    """
    folder = _FOLDER.get()
    if folder is None:
        return None
    settings = {
        "simulation": sim.describe(),
        "grid": grid_record(check_grid(sim, grid)),
        "num_seeds": num_seeds,
        "seed": seed,
        "chunk_size": chunk_size,
    }
    return folder / f"{type(sim).__name__}_{json_digest(settings)[:16]}.zarr"
