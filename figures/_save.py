"""Writing a figure: PNG and PDF, plus a JSON file with the numbers plotted and the config."""

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import RendererAgg  # noqa: E402

import dynamics  # noqa: E402

PRINT_WIDTH = 6.5
"""Inches: the widest a figure is printed (a paper's text width); a wider figure is scaled down to
it, a narrower one printed at its own size."""

SMALLEST_TEXT = 9.0
"""Points: the smallest text a figure may have once printed at [`PRINT_WIDTH`][figures.PRINT_WIDTH]."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray | np.generic) or hasattr(value, "__array__"):
        array = np.asarray(value)
        return array.tolist() if array.ndim else array.item()
    return value


def printed_size(fig: plt.Figure) -> dict[str, float]:
    """How `fig` prints: its width in inches as saved (the tight box around what it draws) and the
    size in points of its smallest text once a figure wider than
    [`PRINT_WIDTH`][figures.PRINT_WIDTH] is scaled down to it.

    **Returns:** `{"width_in": …, "smallest_text_pt": …}`; the smallest text is `None` for a figure
    with no text. [`save_figure`][figures.save_figure] writes it into the figure's JSON (`"print"`),
    measured while it draws the PNG.

    **Example:** a 13-inch figure with 10-point ticks prints them at about 6 points:

        >>> import matplotlib.pyplot as plt
        >>> from figures import printed_size
        >>> fig, ax = plt.subplots(figsize=(13, 4))
        >>> _ = ax.plot([0, 1], [0, 1])
        >>> ax.tick_params(labelsize=10)
        >>> printed_size(fig)["smallest_text_pt"]
        6.25
        >>> plt.close(fig)
    """
    with _texts_drawn() as sizes:
        fig.canvas.draw()
    return _printed(fig, sizes)


@contextlib.contextmanager
def _texts_drawn() -> Iterator[list[float]]:
    """The sizes in points of the texts that the figures drawn meanwhile draw, and only those (not
    ticks out of view): every text goes through the Agg renderer's `draw_text`, which records it
    here (PNG files and the canvas draw with that renderer)."""
    sizes: list[float] = []
    draw_text = RendererAgg.draw_text

    def recorded(self, gc, x, y, text, prop, *args, **kwargs):
        if text.strip():
            sizes.append(prop.get_size_in_points())
        return draw_text(self, gc, x, y, text, prop, *args, **kwargs)

    RendererAgg.draw_text = recorded
    try:
        yield sizes
    finally:
        RendererAgg.draw_text = draw_text


def _printed(fig: plt.Figure, sizes: list[float]) -> dict[str, float]:
    """[`printed_size`][figures.printed_size] of `fig`, whose drawn texts had `sizes`."""
    width = fig.get_tightbbox(fig.canvas.get_renderer()).width
    scale = min(1.0, PRINT_WIDTH / width)
    smallest = round(float(min(sizes) * scale), 2) if sizes else None
    return {"width_in": round(float(width), 3), "smallest_text_pt": smallest}


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
        with dynamics.store.atomic_write(paths[0], "wb") as f, _texts_drawn() as sizes:
            fig.savefig(f, format="png", dpi=130, bbox_inches="tight")
        printed = _printed(fig, sizes)
        with dynamics.store.atomic_write(paths[1], "wb") as f:
            fig.savefig(f, format="pdf", bbox_inches="tight")
    finally:
        plt.close(fig)
    with dynamics.store.atomic_write(paths[2]) as f:
        json.dump({"figure": name, "config": _jsonable(config), "data": _jsonable(data), "print": printed}, f)
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
