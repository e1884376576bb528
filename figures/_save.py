"""Writing a figure: PNG and PDF, plus a JSON file with the numbers plotted and the config."""

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import dynamics  # noqa: E402


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray | np.generic) or hasattr(value, "__array__"):
        array = np.asarray(value)
        return array.tolist() if array.ndim else array.item()
    return value


def save_figure(fig: plt.Figure, out_dir: Path, name: str, *, data: dict, config: dict) -> list[Path]:
    """Write `name.png`, `name.pdf` and `name.json` into `out_dir` and close the figure; each file
    is written whole or not at all (`dynamics.store.atomic_write`).

    **Arguments:**

    - `fig`: the matplotlib figure.
    - `out_dir`: the folder (created).
    - `name`: the file stem, e.g. `scan_snap_fig6`.
    - `data`: the numbers plotted (arrays become lists).
    - `config`: the settings that made them (sizes, seeds, rates, dtype, whether `--full`).

    **Returns:** the three paths written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dynamics.store.remove_stale_temporaries(out_dir)  # of a figure a killed process was writing
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf", out_dir / f"{name}.json"]
    try:
        with dynamics.store.atomic_write(paths[0], "wb") as f:
            fig.savefig(f, format="png", dpi=130, bbox_inches="tight")
        with dynamics.store.atomic_write(paths[1], "wb") as f:
            fig.savefig(f, format="pdf", bbox_inches="tight")
    finally:
        plt.close(fig)
    with dynamics.store.atomic_write(paths[2]) as f:
        json.dump({"figure": name, "config": _jsonable(config), "data": _jsonable(data)}, f)
    return paths


def caption(text: str, checks: Iterable[str] = ()) -> Callable[[Callable], Callable]:
    """Declare what a figure shows and what to look for in it: the caption that the report of
    `attnflow reproduce` and the paper's page in the docs show under it.

    **Arguments:**

    - `text`: one line of Markdown, maths in `$…$`; it begins with the paper's figure number
      ("Fig. 3: …") where it reproduces one, and says what to look for ("Look for …").
    - `checks`: the names of the paper's checks whose compared quantity the figure draws: the
      report and the paper's page link each check to the figure and back.

    **Returns:** the decorator; it sets the function's `caption` and `checks` and returns the
    function.
    """
    if isinstance(checks, str) or not all(isinstance(name, str) for name in checks):
        raise TypeError(f"checks is a sequence of check names, got {checks!r}")
    checks = tuple(checks)

    def declare(draw: Callable) -> Callable:
        draw.caption = text
        draw.checks = checks
        return draw

    return declare


def named_figures(module_name: str, functions: Iterable[Callable]) -> dict[str, Callable]:
    """A paper's figures by name, `<paper>_<function name>`, from its module `figures.<paper>`
    (pass `__name__`): the prefix is written nowhere by hand.

    **Raises:** `ValueError` for a function without a [`caption`][].

    **Example:**

        >>> from figures import caption, named_figures
        >>> @caption("The curve $y = x^2$. Look for a parabola.")
        ... def fig1(out_dir, full): ...
        >>> list(named_figures("figures.toy", [fig1]))
        ['toy_fig1']
    """
    paper = module_name.rpartition(".")[2]
    uncaptioned = [function.__name__ for function in functions if not getattr(function, "caption", "")]
    if uncaptioned:
        raise ValueError(f"figures without a caption (figures.caption): {', '.join(uncaptioned)} ({paper})")
    return {f"{paper}_{function.__name__}": function for function in functions}
