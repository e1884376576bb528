"""Writing a figure: PNG and PDF, plus a JSON file with the numbers plotted and the config."""

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


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
    """Write `name.png`, `name.pdf` and `name.json` into `out_dir` and close the figure.

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
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf", out_dir / f"{name}.json"]
    fig.savefig(paths[0], dpi=130, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    paths[2].write_text(json.dumps({"figure": name, "config": _jsonable(config), "data": _jsonable(data)}))
    return paths
