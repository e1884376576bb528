"""Independent pieces of `verify`, `figures` and `reproduce` (one paper's checks, one paper's
figures, `attnflow._pieces`) put in order by their declared costs and run side by side in worker
processes.

Much of a check's or a figure's time goes to compiling and to small array operations, each on
one core, so pieces side by side keep every core busy (`attnflow reproduce` on 2 cores: 344 s
instead of 476 s). Every piece is deterministic on its own: where it runs changes no number.
"""

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import dynamics

from ._runtime import default_jobs, set_up_worker
from .papers import loaded

Piece = tuple[Callable[..., Any], tuple]
"""A function (importable at module level) and its arguments."""


def declared_costs(pieces: list[tuple[str, str]], full: bool = False) -> list[float | None]:
    """What each `(paper, part)` piece declares it costs (`tasks.PaperInfo.cost`, seconds on two
    cores; `None` where undeclared): at the papers' sizes (`"full checks"`) when `full` and every
    piece declares those, else at the quick sizes (one scale for all, so that they compare)."""
    declared = {name: loaded(name).info.cost for name, _ in pieces}
    key = "full {}" if full and all(f"full {part}" in declared[name] for name, part in pieces) else "{}"
    return [declared[name].get(key.format(part)) for name, part in pieces]


def schedule(names: list[str], parts: tuple[str, ...], full: bool = False) -> list[tuple[str, str]]:
    """The `(paper, part)` pieces of `names` × `parts`, the longest first, as each paper declares
    its cost at the sizes run ([`declared_costs`][]); a piece of unknown cost comes last. Workers
    take the pieces in this order, so that the longest do not start last."""
    pieces = [(name, part) for name in names for part in parts]
    cost = dict(zip(pieces, declared_costs(pieces, full)))
    return sorted(pieces, key=lambda piece: 1.0 if cost[piece] is None else -cost[piece])


def costs(pieces: list[tuple[str, str]], full: bool = False) -> list[float]:
    """The declared cost of each `(paper, part)` piece at the sizes run ([`declared_costs`][]); a
    piece of unknown cost counts as the mean of the others (1 when none is known)."""
    declared = declared_costs(pieces, full)
    known = [cost for cost in declared if cost is not None]
    mean = sum(known) / len(known) if known else 1.0
    return [mean if cost is None else float(cost) for cost in declared]


def run_pieces(
    pieces: Sequence[Piece],
    jobs: int,
    compile_cache_dir: str | None,
    shared_runs: Path | None = None,
    costs: Sequence[float] | None = None,
) -> tuple[list, dynamics.CompileStats]:
    """Call every piece, in `jobs` worker processes, and return the results in the order given,
    with what compiling cost in all of them together.

    Workers take the pieces in the order given, so put the longest first. With `jobs == 1`, or
    a single piece, everything runs here, one piece after the other. Where there are several
    pieces, a line on stderr as each ends says how many are done and about how long the rest
    will take (the work left, by `costs`, at the pace of the work done).

    **Arguments:**

    - `pieces`: `(function, args)` pairs; the functions and results must be picklable.
    - `jobs`: the number of worker processes, >= 1.
    - `compile_cache_dir`: the persistent compilation cache the workers use, or `None` for none.
    - `shared_runs`: the folder where pieces make the sweeps they share once
      (`dynamics.store.sharing_runs`), or `None` for none.
    - `costs`: each piece's expected cost (any unit; default: alike), for the time left.

    **Returns:** `([function(*args) for function, args in pieces], stats)`, `stats` the
    `dynamics.CompileStats` of every piece added up.

    **Raises:** `ValueError` when `jobs < 1`; whatever a piece raises.
    """
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    weights = [1.0] * len(pieces) if costs is None else [float(cost) for cost in costs]
    if len(weights) != len(pieces):
        raise ValueError(f"one cost per piece: {len(weights)} costs for {len(pieces)} pieces")
    if len(pieces) <= 1:
        return _gathered([_recorded(function, args, shared_runs) for function, args in pieces])
    workers = min(jobs, len(pieces))
    with dynamics.progress_over(len(pieces), "pieces", "piece", True, weights, workers) as bar:
        if workers == 1:
            recorded = []
            for index, (function, args) in enumerate(pieces):
                recorded.append(_recorded(function, args, shared_runs))
                bar.update(piece=index)
            return _gathered(recorded)
        return _gathered(_in_workers(pieces, workers, compile_cache_dir, shared_runs, bar))


def _in_workers(pieces, workers, compile_cache_dir, shared_runs, bar) -> list:
    """The recorded results of `pieces` run in `workers` worker processes, in the order given,
    each counted on `bar` as it ends."""
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),  # JAX's threads do not survive a fork
        initializer=set_up_worker,
        initargs=(compile_cache_dir, workers >= default_jobs()),
    )
    try:
        futures = [pool.submit(_recorded, function, args, shared_runs) for function, args in pieces]
        index_of = {future: index for index, future in enumerate(futures)}
        for future in as_completed(futures):
            future.result()
            bar.update(piece=index_of[future])
        results = [future.result() for future in futures]
    except BaseException:
        # a failed piece, Ctrl-C or SIGTERM: the pieces not started are dropped and this process
        # goes on unwinding without waiting for the running ones (their workers end with it)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


def _recorded(
    function: Callable[..., Any], args: tuple, shared_runs: Path | None = None
) -> tuple[Any, dynamics.CompileStats]:
    """`function(*args)`, sharing runs in `shared_runs`, and what compiling cost in it (in the
    process that calls it)."""
    with dynamics.recording_compiles() as record, dynamics.store.sharing_runs(shared_runs):
        result = function(*args)
    return result, record.stats


def _gathered(recorded: list[tuple[Any, dynamics.CompileStats]]) -> tuple[list, dynamics.CompileStats]:
    """The results of [`_recorded`][] pieces, and their stats added up."""
    return [result for result, _ in recorded], sum((stats for _, stats in recorded), dynamics.CompileStats())
