"""Trajectories on disk: saved values with a leading seed axis and the config that made them."""

import dataclasses
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ._run import Run, stop_reason

_META_KEY = "__meta__"


def save_npz_atomic(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> Path:
    """Write `arrays` to one `.npz` file atomically: to a temporary file in the same folder,
    flushed to disk, then renamed over `path`, so a crash never leaves a half-written file
    (and never a stray temporary one). The file's mode follows the umask, like any new file.

    **Arguments:**

    - `path`: the file to write (its folder is created).
    - `arrays`: name -> array.

    **Returns:** the path written.

    **Example:**

        >>> import pathlib
        >>> import tempfile
        >>> import numpy as np
        >>> import dynamics
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = dynamics.save_npz_atomic(pathlib.Path(folder) / "out" / "a.npz", {"x": np.arange(3)})
        ...     with np.load(path) as data:
        ...         print(data["x"].tolist(), [p.name for p in path.parent.iterdir()])
        [0, 1, 2] ['a.npz']
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~umask())  # mkstemp makes 0600; a result is as readable as any file
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def umask() -> int:
    """The process's file-creation mask."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def named_leaves(tree: Any, prefix: str, separator: str = "/") -> dict[str, Any]:
    """The leaves of `tree` as they are, by name: `prefix` + the PyTree path joined by `separator`
    (e.g. `"final/Z"`, or `"loss"` for a dict entry)."""
    return {
        (prefix + jax.tree_util.keystr(path, simple=True, separator=separator)).rstrip(separator): leaf
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
    }


def flatten_tree(tree: Any, prefix: str, separator: str = "/") -> dict[str, np.ndarray]:
    """[`named_leaves`][] as numpy arrays."""
    return {name: np.asarray(leaf) for name, leaf in named_leaves(tree, prefix, separator).items()}


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """Host-side record of many runs of one configuration, ready for disk.

    **Fields:**

    - `times`: `(S, T)` save times (or steps) of each of S runs.
    - `values`: name -> array with leading axes `(S, T, ...)`; names are PyTree paths such as
      `"loss"` or `"Z"` (saved values) and `"final/Z"` (the state when each run stopped).
    - `stop_reasons`: `(S,)` strings, e.g. `"completed"`, `"event:loss_below"`, `"nonfinite"`.
    - `t_stop`: `(S,)` the time each run stopped.
    - `num_steps`: `(S,)` the solver or optimizer steps each run took.
    - `config`: a JSON-serialisable dict: everything needed to make the runs again.

    **Example:** 3 seeds of GD from random starts, written to disk and read back:

        >>> import pathlib
        >>> import tempfile
        >>> import jax
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import dynamics
        >>> loss = lambda theta: 0.5 * jnp.sum(theta**2)
        >>> def one_run(key):
        ...     theta0 = jax.random.normal(key, (2,))
        ...     save = lambda theta: {"loss": loss(theta), "theta": theta}
        ...     return dynamics.train(loss, theta0, dynamics.gd(0.1), num_steps=4, every=2, save=save)
        >>> runs, _ = dynamics.run_many(one_run, dynamics.seed_keys(0, 3))
        >>> trajectory = dynamics.Trajectory.from_runs(runs, {"eta": 0.1, "num_seeds": 3})
        >>> trajectory.num_runs, trajectory.times.shape, sorted(trajectory.values)
        (3, (3, 3), ['final', 'loss', 'theta'])
        >>> trajectory.values["theta"].shape, trajectory.stop_reasons.tolist()
        ((3, 3, 2), ['completed', 'completed', 'completed'])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = trajectory.save(pathlib.Path(folder) / "gd.npz")
        ...     loaded = dynamics.Trajectory.load(path)
        >>> loaded.config, bool(np.array_equal(loaded.values["loss"], trajectory.values["loss"]))
        ({'eta': 0.1, 'num_seeds': 3}, True)
    """

    times: np.ndarray
    values: dict[str, np.ndarray]
    stop_reasons: np.ndarray
    t_stop: np.ndarray
    num_steps: np.ndarray
    config: dict

    @classmethod
    def from_runs(cls, runs: Run, config: dict, event_names: tuple[str, ...] = ()) -> "Trajectory":
        """Build from a [`Run`][] whose fields carry a leading seed axis (from `vmap` or
        [`run_many`][]). `event_names` name the events in the order given; default the names
        the runs carry (`Run.event_names`)."""
        event_names = tuple(event_names) or runs.event_names
        values = flatten_tree(runs.values, "") | flatten_tree(runs.final, "final/")
        stops = np.atleast_1d(np.asarray(runs.stop))
        events = np.atleast_1d(np.asarray(runs.event))
        reasons = np.asarray([stop_reason(s, e, event_names) for s, e in zip(stops, events)])
        json.dumps(config)  # fail here, not at save time, on a config that JSON cannot hold
        return cls(
            times=np.asarray(runs.ts),
            values=values,
            stop_reasons=reasons,
            t_stop=np.asarray(runs.t_stop),
            num_steps=np.asarray(runs.num_steps),
            config=config,
        )

    @property
    def num_runs(self) -> int:
        """S, the number of runs."""
        return len(self.stop_reasons)

    def save(self, path: str | os.PathLike) -> Path:
        """Write one `.npz` file atomically (see [`save_npz_atomic`][]).

        **Returns:** the path written.
        """
        arrays = {f"values/{k}": v for k, v in self.values.items()}
        arrays |= {k: getattr(self, k) for k in ("times", "stop_reasons", "t_stop", "num_steps")}
        arrays[_META_KEY] = np.asarray(json.dumps({"config": self.config}))
        return save_npz_atomic(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Trajectory":
        """Read a file written by [`Trajectory.save`][].

        **Raises:** `ValueError` naming the file when it is not such a file (damaged, truncated,
        or written by something else).
        """
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data[_META_KEY]))
                values = {k.removeprefix("values/"): data[k] for k in data.files if k.startswith("values/")}
                return cls(
                    times=data["times"],
                    values=values,
                    stop_reasons=data["stop_reasons"],
                    t_stop=data["t_stop"],
                    num_steps=data["num_steps"],
                    config=meta["config"],
                )
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise ValueError(
                f"{path} is not a trajectory written by attnflow (expected an .npz file with times, "
                f"values/..., stop_reasons, t_stop, num_steps and its config; {type(err).__name__}: {err})"
            ) from None
