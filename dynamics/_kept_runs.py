"""The results of work done run after run (an analysis of a sweep's runs, a paper's checks), kept
in a folder as each run ends: work stopped half-way (killed, interrupted, out of time) and made
again computes only the runs left, and never takes results computed for other runs, settings or
code."""

import json
import shutil
import warnings
import zipfile
from pathlib import Path

import numpy as np
from jaxtyping import ArrayLike

from ._files import atomic_write

_KEY = "key.json"
"""The file of a folder of kept runs that says what they are results of."""


def kept_runs(folder: Path, key: dict) -> dict[str, dict[str, np.ndarray]]:
    """The results kept in `folder` by [`keep_run`][dynamics.store.keep_run] for `key` (what is analysed,
    how, and by which code), by run name. Results kept for another key are removed with a warning that says
    so, and the folder is made ready for `key` (made, when it is not there); a file that cannot be read is
    removed (its run is analysed again).

    **Arguments:**

    - `folder`: where the runs are kept (made when it is not there).
    - `key`: a JSON value naming what the runs are results of: the runs, the settings, the code.

    **Returns:** run name → its kept arrays by name.

    **Raises:** `ValueError` when `folder` is a file, or a folder with files that are not kept runs
    (nothing of it is removed).

    **Example:** results kept under one key are found under it, and dropped under another:

        >>> import pathlib
        >>> import tempfile
        >>> import warnings
        >>> import numpy as np
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp()) / "kept"
        >>> dynamics.store.kept_runs(folder, {"settings": 1})
        {}
        >>> dynamics.store.keep_run(folder, "0", {"loss": np.float64(0.5)})
        >>> dynamics.store.kept_runs(folder, {"settings": 1})
        {'0': {'loss': array(0.5)}}
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     dynamics.store.kept_runs(folder, {"settings": 2})
        {}
        >>> print(caught[0].message)
        the 1 result kept in .../kept comes from other runs, settings or code: it is computed again
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
                (
                    f"the {stale} results kept in {folder} come from other runs, settings or code: "
                    "they are computed again"
                    if stale > 1
                    else f"the 1 result kept in {folder} comes from other runs, settings or code: "
                    "it is computed again"
                ),
                stacklevel=2,
            )
        shutil.rmtree(folder)
    elif folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder} exists and holds no kept runs: choose another folder to keep them in")
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(stored) as f:
        f.write(text)
    return {}


def keep_run(folder: Path, name: str, outputs: dict[str, ArrayLike]) -> None:
    """Keep the `outputs` of the run `name` in `folder` (made ready by
    [`kept_runs`][dynamics.store.kept_runs]), written whole or not at all.

    **Arguments:**

    - `folder`: the folder of kept runs.
    - `name`: the run's name, unique among the runs of `folder` (the name of its file).
    - `outputs`: its arrays by name (numbers and text; no Python objects).

    **Example:** a run's loss and its ending in words, kept and read back:

        >>> import pathlib
        >>> import tempfile
        >>> import numpy as np
        >>> import dynamics
        >>> folder = pathlib.Path(tempfile.mkdtemp()) / "kept"
        >>> dynamics.store.kept_runs(folder, {"what": "an example"})
        {}
        >>> result = {"loss": np.float64(0.25), "ending": np.asarray("converged")}
        >>> dynamics.store.keep_run(folder, "seed_0", result)
        >>> kept = dynamics.store.kept_runs(folder, {"what": "an example"})["seed_0"]
        >>> float(kept["loss"]), str(kept["ending"])
        (0.25, 'converged')
    """
    with atomic_write(folder / f"{name}.npz", "wb") as f:
        np.savez(f, **outputs)
