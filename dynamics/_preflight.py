"""What is checked before a sweep runs: its seeds, its precision, the shapes of its
outputs, and whether its results and one block of runs fit on the disk and in memory."""

import math
import os
import shutil
from pathlib import Path

import jax

from ._params import is_count
from ._run import Run
from ._simulation import AbstractSimulation, trace_one_run

MAX_SEED = 2**31 - 1
"""The largest integer seed: seeds are 32-bit integers, so a run has the same key with and without
JAX's x64 mode."""
DEFAULT_MAX_BYTES = 16 * 2**30
"""The largest result a sweep writes unless told otherwise (`max_bytes`): 16 GiB."""


class ResultsTooLarge(ValueError):
    """Results over the limit a sweep was given (`max_bytes`), refused before any run.

    **Example:**

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Wide(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         return dynamics.ode_flow(lambda t, y, args: -y, jnp.ones(1000), t1=1.0)
        >>> try:
        ...     dynamics.sweep(Wide(), {}, num_seeds=4, max_bytes=1000)
        ... except dynamics.store.ResultsTooLarge as err:
        ...     print("over the limit of 1 kB" in str(err))
        True
    """


def check_seeds(num_seeds, seed) -> None:
    """Refuse seeds that are not integers or reach past [`MAX_SEED`][dynamics.store.MAX_SEED]."""
    for name, value, low in (("num_seeds", num_seeds, 1), ("seed", seed, 0)):
        if not is_count(value, low):
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if seed + num_seeds - 1 > MAX_SEED:
        raise ValueError(
            f"the seeds {seed} to {seed + num_seeds - 1} reach past the largest seed, 2**31 - 1 = {MAX_SEED} "
            "(seeds are 32-bit integers, the same with and without x64)"
        )


def check_precision(sim: AbstractSimulation) -> None:
    """Refuse a float64 simulation while JAX computes in float32 (it would silently run in float32)."""
    if sim.dtype == "float64" and not jax.config.jax_enable_x64:
        raise ValueError(
            f"{type(sim).__name__} runs in float64 (its dtype), but JAX's x64 mode is off, so it would run "
            'in float32: call jax.config.update("jax_enable_x64", True) first, or set dtype="float32"'
        )


def trace_run(static: AbstractSimulation, sim: AbstractSimulation) -> tuple[Run, str]:
    """One run of `sim`, whose static part is `static`, traced and lowered (no computation):
    `(shapes of its Run, program text)`. Refuses a run whose events are not the class's
    `event_names`."""
    traced_run = trace_one_run(static, sim)
    run = traced_run.out_info
    if not isinstance(run, Run):
        raise ValueError(
            f"{type(sim).__name__}.run must return a dynamics.Run (as ode_flow, train and the other "
            f"engines do), got {type(run).__name__}"
        )
    declared = tuple(type(sim).event_names)
    if run.event_names and tuple(run.event_names) != declared:
        raise ValueError(
            f"{type(sim).__name__}.run stops on the events {tuple(run.event_names)!r}, but the class "
            f"declares event_names = {declared!r}: declare event_names = {tuple(run.event_names)!r}, so "
            "that every store names them"
        )
    return run, traced_run.lower().as_text()


def human_bytes(n: float) -> str:
    """`n` bytes in words, e.g. `7.45 GB` (decimal units)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    raise AssertionError


def parse_bytes(text: str) -> int:
    """A size from text: `16G`, `500M`, `1.5T`, `2GiB`, or a number of bytes.

    **Raises:** `ValueError` naming the text when it is not a size.

    **Example:**

        >>> import dynamics
        >>> [dynamics.store.parse_bytes(size) for size in ("16G", "2GiB", "1500")]
        [16000000000, 2147483648, 1500]
        >>> dynamics.store.parse_bytes("lots")
        Traceback (most recent call last):
        ...
        ValueError: a size must be a positive number of bytes such as 16G, 500M or 1.5T, got 'lots'
    """
    units = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
    binary = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}
    clean = text.strip().lower().removesuffix("b")
    number = clean.rstrip("kmgtpi")
    unit = clean[len(number) :]
    factor = binary.get(unit, units.get(unit))
    try:
        value = float(number) * factor
    except (TypeError, ValueError):
        value = math.nan
    if factor is None or not math.isfinite(value) or value <= 0:
        raise ValueError(f"a size must be a positive number of bytes such as 16G, 500M or 1.5T, got {text!r}")
    return int(value)


def available_memory() -> int | None:
    """The memory the system can give without swapping (`MemAvailable`), or `None` if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _free_disk(path: Path) -> int:
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def check_sizes(
    *,
    bytes_per_run: int,
    largest_array: int,
    num_runs: int,
    runs_per_block: int,
    store: Path | None,
    done_fraction: float,
    max_bytes: int | None,
) -> None:
    """Refuse, before any work, a sweep whose results exceed `max_bytes`, the free disk under
    `store` (the part still to write) or, in memory, the available memory; and one whose block of
    runs would not fit in memory (its outputs and, per run, the largest array of its program).

    **Raises:** `ValueError` with the numbers.
    """
    total = bytes_per_run * num_runs
    runs = f"{num_runs:,} runs × {human_bytes(bytes_per_run)}"
    if max_bytes is not None and total > max_bytes:
        raise ResultsTooLarge(
            f"the results would take {human_bytes(total)} ({runs}), over the limit of "
            f"{human_bytes(max_bytes)}: run fewer seeds, grid points or saves, or raise the limit "
            "(max_bytes)"
        )
    if store is not None:
        needed, free = total * (1 - done_fraction), _free_disk(store.parent)
        if needed > free:
            raise ValueError(
                f"the results would take {human_bytes(needed)} more on disk ({runs}), but {store.parent} has "
                f"{human_bytes(free)} free"
            )
    memory = available_memory()
    if memory is None:
        return
    if store is None and total > memory:
        raise ValueError(
            f"the results would take {human_bytes(total)} of memory ({runs}), over the {human_bytes(memory)} "
            "available: give a store to write them to disk block by block"
        )
    block = runs_per_block * (bytes_per_run + largest_array)
    if block > memory:
        raise ValueError(
            f"one block of {runs_per_block} runs would take at least {human_bytes(block)} of memory (its "
            f"largest array {human_bytes(largest_array)} per run), over the {human_bytes(memory)} available: "
            "choose smaller sizes, or fewer runs per block (chunk_size)"
        )
