"""One package per paper, `tasks.<paper>`: its data model, Equinox models, losses, metrics, and its
simulations (final classes of `dynamics.AbstractSimulation`).

Each package declares its paper once, as `PAPER`, a [`PaperInfo`][]: its name, title, levels,
data option and cost. The command line, the report and the documentation find the papers by
scanning this package for those declarations; a new paper is a new package here (with its
checks in `theory.<paper>` and its figures in `figures.<paper>`), and nothing else lists it.
"""

from ._paper import DataOption, PaperInfo

__all__ = ["DataOption", "PaperInfo"]
