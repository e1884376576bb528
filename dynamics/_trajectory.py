"""Trajectories on disk: saved values with a leading seed axis and the config that made them."""

import dataclasses
import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ._files import atomic_write
from ._run import Run, stop_reason

_META_KEY = "__meta__"


def save_npz_atomic(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> Path:
    """Write `arrays` to one `.npz` file atomically (see [`atomic_write`][]): a crash never leaves
    a half-written file (and never a stray temporary one). The file's mode follows the umask.

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
    with atomic_write(path, "wb") as f:
        np.savez(f, **arrays)
    return path


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


def _checksum(arrays: dict[str, np.ndarray], config) -> str:
    """A digest of named arrays (name, dtype, shape and bytes) and a JSON config."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


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
        """Write one `.npz` file atomically (see [`save_npz_atomic`][]), with a checksum over
        its arrays and its config that [`Trajectory.load`][] checks.

        **Returns:** the path written.
        """
        arrays = {f"values/{k}": v for k, v in self.values.items()}
        arrays |= {k: getattr(self, k) for k in ("times", "stop_reasons", "t_stop", "num_steps")}
        meta = {"config": self.config, "checksum": _checksum(arrays, self.config)}
        arrays[_META_KEY] = np.asarray(json.dumps(meta))
        return save_npz_atomic(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Trajectory":
        """Read a file written by [`Trajectory.save`][], checking it against its checksum.

        **Raises:** `ValueError` naming the file when it is not such a file (truncated, or
        written by something else), or when an array or the config differs from the checksum.
        """
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data[_META_KEY]))
                arrays = {k: data[k] for k in data.files if k != _META_KEY}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise ValueError(
                f"{path} is not a trajectory written by attnflow (expected an .npz file with times, "
                f"values/..., stop_reasons, t_stop, num_steps and its config; {type(err).__name__}: {err})"
            ) from None
        if meta.get("checksum") != _checksum(arrays, meta.get("config")):
            raise ValueError(
                f"{path} is damaged: its arrays or its config differ from the checksum written with them "
                "(changed, truncated, or written before checksums); make it again"
            )
        try:
            return cls(
                times=arrays["times"],
                values={k.removeprefix("values/"): v for k, v in arrays.items() if k.startswith("values/")},
                stop_reasons=arrays["stop_reasons"],
                t_stop=arrays["t_stop"],
                num_steps=arrays["num_steps"],
                config=meta["config"],
            )
        except KeyError as err:
            raise ValueError(f"{path} is not a trajectory written by attnflow (no {err})") from None
