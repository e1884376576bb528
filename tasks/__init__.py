"""One module per paper: data model, Equinox model, loss, metrics.

`SIMULATORS` maps a task name to its batched simulation (used by `attnflow simulate`).
"""

from collections.abc import Callable

import dynamics

from . import ntp_partial_order, scan_snap

SIMULATORS: dict[str, tuple[type, Callable[..., dynamics.Trajectory]]] = {
    "scan_snap": (scan_snap.Simulation, scan_snap.simulate),
    "ntp_partial_order": (ntp_partial_order.Simulation, ntp_partial_order.simulate),
}


def simulate(
    task: str, *, level: str | None, num_seeds: int, settings: dict[str, str], progress: bool = False
) -> dynamics.Trajectory:
    """Run `num_seeds` seeds of `task` at `level` with `settings` overriding its config defaults.

    **Arguments:**

    - `task`: a key of `SIMULATORS`.
    - `level`: the simulation level (task-specific), or `None` for the task's default.
    - `num_seeds`: number of runs.
    - `settings`: field name -> value as text (the CLI's `--set key=value`).
    - `progress`: show a progress bar.

    **Returns:** the `dynamics.Trajectory` of all runs.
    """
    if task not in SIMULATORS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(SIMULATORS)}")
    config_class, run = SIMULATORS[task]
    if level is not None:
        settings = settings | {"level": level}
    return run(config_class.from_settings(settings), num_seeds, progress=progress)
