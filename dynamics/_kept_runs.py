"""The results of an analysis run after run, kept in a folder as each run ends: an analysis stopped
half-way (killed, interrupted, out of time) and made again computes only the runs left, and never
takes results computed for other runs, settings or code."""

import json
import shutil
import warnings
import zipfile
from pathlib import Path

import numpy as np

from ._files import atomic_write

_KEY = "key.json"
"""The file of a folder of kept runs that says what they are results of."""


def kept_runs(folder: Path, key: dict) -> dict[str, dict[str, np.ndarray]]:
    """The results kept in `folder` by [`keep_run`][] for `key` (what is analysed, how, and by which
    code), by run name. Results kept for another key are removed with a warning that says so, and
    the folder is made ready for `key` (made, when it is not there); a file that cannot be read is
    removed (its run is analysed again).

    **Raises:** `ValueError` when `folder` is a file, or a folder with files that are not kept runs
    (nothing of it is removed).

    **Example:** results kept under one key are found under it, and dropped under another:

        >>> import pathlib
        >>> import tempfile
        >>> import warnings
        >>> import numpy as np
        >>> from dynamics._kept_runs import keep_run, kept_runs
        >>> folder = pathlib.Path(tempfile.mkdtemp()) / "kept"
        >>> kept_runs(folder, {"settings": 1})
        {}
        >>> keep_run(folder, "0", {"loss": np.float64(0.5)})
        >>> kept_runs(folder, {"settings": 1})
        {'0': {'loss': array(0.5)}}
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     kept_runs(folder, {"settings": 2})
        {}
        >>> print(caught[0].message)
        the results kept in .../kept (1 run) come from other runs, settings or code: they are computed again
    """
    text = json.dumps(key, sort_keys=True)
    stored = folder / _KEY
    if stored.is_file() and stored.read_text() == text:
        found = {}
        for file in folder.glob("*.npz"):
            try:
                with np.load(file) as data:
                    found[file.stem] = {name: data[name] for name in data.files}
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                file.unlink(missing_ok=True)
        return found
    if stored.is_file():
        stale = len(list(folder.glob("*.npz")))
        if stale:
            warnings.warn(
                f"the results kept in {folder} ({stale} run{'s' * (stale > 1)}) come from other runs, "
                "settings or code: they are computed again",
                stacklevel=2,
            )
        shutil.rmtree(folder)
    elif folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder} exists and holds no kept runs: choose another folder to keep them in")
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(stored) as f:
        f.write(text)
    return {}


def keep_run(folder: Path, name: str, outputs: dict[str, np.ndarray]) -> None:
    """Keep the `outputs` of the run `name` in `folder` (made ready by [`kept_runs`][]), written
    whole or not at all."""
    with atomic_write(folder / f"{name}.npz", "wb") as f:
        np.savez(f, **outputs)
