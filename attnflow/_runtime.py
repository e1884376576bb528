"""The runtime the command line sets up before a command runs, and the worker processes it starts
before a piece runs: float64 available, XLA's backend optimisation level, JAX's persistent
compilation cache, Eigen's threads off in the workers where workers fill the cores."""

import os
import threading
import time
from pathlib import Path

BACKEND_OPTIMIZATION = "--xla_backend_optimization_level=2"
"""The XLA backend optimisation level of the command line's programs (XLA's default is 3). On a
2-core CPU, `attnflow --no-compile-cache reproduce` takes 297 s instead of 344 s, `attnflow verify
--jobs 1` (the quick sizes) on one core 211 s instead of 242 s, and the full Fig. 6 sweep 46 s
instead of 50 s: compiling is faster and the programs run as fast. The numbers agree with level 3
to rounding. A level given in `XLA_FLAGS` is kept."""

ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"
"""The XLA flag that turns off Eigen's threads: for worker processes as many as the cores
(`attnflow reproduce` on 2 cores: 344 s instead of 363 s with XLA's default threads). XLA's CPU
runtime still runs parts of a program on its own pool of as many threads as the process may use
cores, and some float32 sums depend on that count (the FAQ's "Are the results reproducible?").
Every word of `XLA_FLAGS` must be a flag: XLA leaves whatever follows a word without `--` unread."""


def default_jobs() -> int:
    """The number of worker processes when none is asked for: the CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


EQUINOX_ERRORS = "nan"
"""How Equinox's runtime checks end a failing run in the command line's processes (Equinox's
`EQX_ON_ERROR`, unless it is set): with NaN, which the run's stop flags, instead of raising from a
host callback. A program with a host callback is never kept in JAX's persistent cache, and Diffrax
checks traced save times so (a flow saving at times that depend on a traced end time, such as a
sweep's): those programs would compile again in every process. A run that passes the checks
computes the same numbers either way."""


def set_up(compile_cache: bool) -> None:
    """The command line's runtime, before any paper (or Equinox) is imported: float64, Equinox's
    runtime errors as NaN ([`EQUINOX_ERRORS`][]), XLA's backend optimisation level
    ([`use_backend_optimization`][]) and, with `compile_cache`, JAX's persistent compilation cache
    in [`compile_cache_dir`][]. Worker processes inherit the environment it sets."""
    os.environ.setdefault("EQX_ON_ERROR", EQUINOX_ERRORS)
    enable_float64()
    use_backend_optimization()
    if compile_cache:
        use_compile_cache(compile_cache_dir())


def enable_float64() -> None:
    """Turn on JAX's x64 mode: the checks compare with closed forms in float64, and every
    simulation picks its own dtype (its `dtype` field)."""
    import jax

    jax.config.update("jax_enable_x64", True)


def compile_cache_dir() -> Path:
    """Where the command line keeps compiled programs between runs: `$ATTNFLOW_CACHE_DIR`, else
    `$XDG_CACHE_HOME/attnflow/jax`, else `~/.cache/attnflow/jax`."""
    if "ATTNFLOW_CACHE_DIR" in os.environ:
        return Path(os.environ["ATTNFLOW_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnflow" / "jax"


def use_compile_cache(directory: str | os.PathLike) -> None:
    """JAX's persistent compilation cache in `directory` (the command line's is
    [`compile_cache_dir`][]), for every program, however fast it compiled: a second run of a
    command loads its programs instead of compiling them (`attnflow reproduce` makes about 1 900,
    and loads every one of them the second time). JAX keeps no program with a host callback (a
    progress bar inside a run, on a terminal): those compile again every time. Where JAX computes
    only on the CPU ([`only_a_cpu`][]), the cache may be copied or moved to another folder."""
    import jax

    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    xla_caches = "jax_persistent_cache_enable_xla_caches"  # an option of newer JAX: where missing, left alone
    if only_a_cpu() and hasattr(jax.config, xla_caches):  # keys free of the cache's folder: it may move
        jax.config.update(xla_caches, "none")


def only_a_cpu() -> bool:
    """Whether JAX computes on nothing but the CPU here (`JAX_PLATFORMS=cpu`, or no accelerator
    plugin installed: none under JAX's namespace `jax_plugins` or its entry points, no `libtpu`),
    found without starting JAX's backend, which on a GPU would take the device's memory.

    On a CPU, [`use_compile_cache`][] turns off XLA's GPU autotuning cache, which JAX otherwise
    turns on with the persistent cache and whose folder, inside the cache's own, it adds to the key
    of every program (on a CPU too): a cache copied to another folder would find none of its
    programs."""
    import importlib.metadata
    import importlib.util

    if os.environ.get("JAX_PLATFORMS", "").strip().lower() == "cpu":
        return True
    if importlib.util.find_spec("jax_plugins") is not None or importlib.util.find_spec("libtpu") is not None:
        return False
    return not importlib.metadata.entry_points(group="jax_plugins")


def use_backend_optimization() -> None:
    """Add [`BACKEND_OPTIMIZATION`][] to `XLA_FLAGS` unless it names a level; read when JAX first
    computes, so it acts in a fresh process (the console script, the workers it spawns)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {BACKEND_OPTIMIZATION}".strip()


def set_up_worker(compile_cache: str | None, one_thread: bool) -> None:
    """The command line's runtime in a fresh worker process: float64, the compilation cache
    `compile_cache` (`None`: none) and, with `one_thread`, Eigen's threads off ([`ONE_THREAD`][]).
    The worker ends when the process that started it does, however that ends (even killed, when
    nothing can tell the worker): it does not compute on for nobody."""
    threading.Thread(target=_exit_with, args=(os.getppid(),), daemon=True).start()
    if one_thread:  # read when JAX first computes, which no worker has done yet
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {ONE_THREAD}".strip()
    enable_float64()
    if compile_cache is not None:
        use_compile_cache(compile_cache)


def _exit_with(parent: int) -> None:
    """End this process once `parent` is no longer its parent (it ended; checked every second)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
