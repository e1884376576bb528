"""`attnflow check STORE [--repair]`: the state of a store, and its missing or damaged blocks run
again by the sweep that made it."""

import json
from pathlib import Path

import dynamics

from .papers import load_simulation

_NEXT_STEP = {
    "complete": "",
    "incomplete": "rerun the command that made it, or `attnflow check {path} --repair`, to finish it",
    "damaged": "`attnflow check {path} --repair` runs the damaged blocks again",
    "foreign": "",
}

_REMAKE = "its own files are damaged, which no rerun of its blocks repairs: make it again with --overwrite"


def check(path: Path, *, repair: bool) -> int:
    """Print the state of the store at `path` with one line per problem; with `repair`, run its
    missing and damaged blocks again (the settings and the code must be those that made it).

    **Returns:** the exit status: 0 when the store is complete (after the repair), else 1.

    **Raises:** `ValueError` when nothing is at `path` (a mistyped path is not a foreign store).
    """
    if not path.exists() and not path.is_symlink():
        raise ValueError(
            f"{path} does not exist: give the folder of a store that `sweep` or `simulate` wrote"
        )
    report = dynamics.store.check_store(path)
    _print(report, hint=not repair)
    if repair and report.state in ("incomplete", "damaged"):
        if report.only_added_damaged:
            dropped = dynamics.store.drop_added(path)
            print(
                f"removed the damaged analyses {', '.join(dropped)}: `attnflow sweep ... --analyse` adds "
                "them again"
            )
        elif not report.repairable:
            print(_REMAKE)
            return 1
        else:
            sim, grid, options = rebuilt_sweep(path)
            dynamics.sweep(sim, grid, store=path, progress=True, max_bytes=None, **options)
        report = dynamics.store.check_store(path)
        print("after the repair:")
        _print(report)
    return 0 if report.state == "complete" else 1


def _print(report: dynamics.store.StoreReport, hint: bool = True) -> None:
    print(report.headline())
    for problem in report.problems:
        print(f"  {problem}")
    step = _NEXT_STEP[report.state].format(path=report.path)
    if report.only_added_damaged:
        step = f"`attnflow check {report.path} --repair` removes the damaged analyses "
        step += "(--analyse adds them again)"
    elif report.state == "damaged" and not report.repairable:
        step = _REMAKE
    if hint and step:
        print(step)


def rebuilt_sweep(path: Path) -> tuple[dynamics.AbstractSimulation, dict, dict]:
    """The simulation, grid and options of the sweep that made the store at `path`, from its
    recorded config.

    **Raises:** `ValueError` when the simulation cannot be loaded or built again.
    """
    import zarr

    attrs = zarr.open_group(str(path), mode="r", zarr_format=2, use_consolidated=True).attrs
    config = json.loads(attrs["config"])
    cls = load_simulation(config["simulation"])
    options = {"num_seeds": config["num_seeds"], "seed": config["seed"], "chunk_size": attrs["chunk_size"]}
    return dynamics.from_setting_values(cls, config), dynamics.store.grid_from_record(config["grid"]), options
