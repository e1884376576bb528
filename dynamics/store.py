"""Where sweeps are kept, and how they are trusted: the store's integrity, its locks and shards,
the checks made before any work, the files written whole or not at all, and the runs and analyses
kept beside it. The engine (`dynamics`) runs and writes a sweep through these; this wing is how a
tool built on it keeps, checks, shares and repairs what it wrote.

- [`check_store`][] ([`StoreReport`][]): every file of a store against its checksum, and the code
  that made it; a store that running blocks again repairs is refused as [`StoreNeedsRuns`][], one
  to make again as [`StoreNeedsRemaking`][]; [`hold_store`][] holds a store from its first byte written to
  its last read; [`remove_store`][] removes one (refused while another process writes it).
- [`save_sweep`][] writes a sweep made in memory to a store, [`open_sweep`][] opens one lazily
  (`dynamics.load_sweep` reads one whole); a sweep's dataset has the dimensions of its grid (a
  paired axis along [`POINT_DIM`][]), then [`SEED_DIM`][] and [`SAVE_DIM`][].
- [`sweep_blocks`][], [`sweep_progress`][]: the blocks a sweep writes (what its shards share out)
  and how many are written.
- [`add_to_store`][] adds an analysis of a sweep's runs to its store, with its checksums
  ([`drop_added`][] removes it); [`shared_store`][] (within [`sharing_runs`][]) lets the pieces of one job
  make a sweep they share once; [`kept_runs`][] and [`keep_run`][] keep the results of work done
  piece after piece as each piece ends, so that work stopped half-way and made again does only the
  pieces left.
- [`atomic_write`][], [`prepare_folder`][], [`prepare_file`][], [`describe_os_error`][],
  [`temporary_path`][], [`remove_stale_temporaries`][]: outputs written whole or not at all, output
  paths tried before any work, a file-system error in words, what killed writers left removed.
- [`parse_bytes`][] reads a size such as `16G` ([`DEFAULT_MAX_BYTES`][], the largest result a
  sweep writes unless told; more is refused as [`ResultsTooLarge`][]); [`MAX_SEED`][], the largest seed;
  [`grid_from_record`][], the grid a store's `config` records, as `dynamics.sweep` takes it.

**Example:** a sweep written to a store, then checked file by file:

    >>> import pathlib
    >>> import tempfile
    >>> import dynamics
    >>> from dynamics import store
    >>> import jax
    >>> jax.config.update("jax_enable_x64", True)
    >>> class Decay(dynamics.AbstractSimulation):
    ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), traced=True)
    ...     dtype: str = dynamics.dtype_param("float64")
    ...
    ...     def run(self, key):  # from a start in [1, 2)
    ...         y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
    ...         return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=1.0)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "decay.zarr"
    >>> _ = dynamics.sweep(Decay(), {"rate": [1.0, 2.0]}, num_seeds=2, store=path)
    >>> report = store.check_store(path)
    >>> report.state, store.sweep_progress(path)
    ('complete', (1, 1))
"""

from ._files import (
    atomic_write,
    describe_os_error,
    prepare_file,
    prepare_folder,
    remove_stale_temporaries,
    temporary_path,
)
from ._grid import POINT_DIM, grid_from_record
from ._integrity import StoreNeedsRemaking, StoreNeedsRuns, StoreReport, check_store
from ._kept_runs import keep_run, kept_runs
from ._preflight import DEFAULT_MAX_BYTES, MAX_SEED, ResultsTooLarge, parse_bytes
from ._shared import shared_store, sharing_runs
from ._store import SAVE_DIM, SEED_DIM, hold_store, remove_store
from ._store_add import add_to_store, drop_added
from ._sweep import open_sweep, save_sweep, sweep_blocks, sweep_progress

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_SEED",
    "POINT_DIM",
    "ResultsTooLarge",
    "SAVE_DIM",
    "SEED_DIM",
    "StoreNeedsRemaking",
    "StoreNeedsRuns",
    "StoreReport",
    "add_to_store",
    "atomic_write",
    "check_store",
    "describe_os_error",
    "drop_added",
    "grid_from_record",
    "hold_store",
    "keep_run",
    "kept_runs",
    "open_sweep",
    "parse_bytes",
    "prepare_file",
    "prepare_folder",
    "remove_stale_temporaries",
    "remove_store",
    "save_sweep",
    "shared_store",
    "sharing_runs",
    "sweep_blocks",
    "sweep_progress",
    "temporary_path",
]
