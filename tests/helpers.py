"""Helpers shared by the tests."""

import importlib.util
from pathlib import Path

import equinox as eqx
import numpy as np

REPOSITORY = Path(__file__).parents[1]
"""The repository's root."""


def load_file(relative: str):
    """The module in the repository's file `relative` (e.g. `"docs/hooks/papers.py"`), loaded anew:
    the docs' hooks and the benchmarks are scripts, not packages."""
    path = REPOSITORY / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree_allclose(x, y, *, rtol=1e-10, atol=1e-12) -> bool:
    """True when two PyTrees have the same structure and each pair of leaves the same shape, the
    same dtype and close values (`equinox.tree_equal`)."""
    return bool(eqx.tree_equal(x, y, rtol=rtol, atol=atol))


def assert_trajectory_round_trip(trajectory, tmp_path) -> None:
    """Saving then loading `trajectory` gives back every array bit for bit with its dtype, the stop
    reasons (events included) and the config, whose `dtype` is the one the floats were made in."""
    from dynamics import Trajectory

    loaded = Trajectory.load(trajectory.save(tmp_path / "trajectory.npz"))
    assert loaded.config == trajectory.config
    assert trajectory.config["dtype"] in ("float32", "float64")
    assert loaded.values.keys() == trajectory.values.keys()
    for name, value in trajectory.values.items():
        assert loaded.values[name].dtype == value.dtype, name
        np.testing.assert_array_equal(loaded.values[name], value, err_msg=name)
        if np.issubdtype(value.dtype, np.floating):
            assert value.dtype == np.dtype(trajectory.config["dtype"]), name
    for field in ("times", "stop_reasons", "t_stop", "num_steps"):
        np.testing.assert_array_equal(getattr(loaded, field), getattr(trajectory, field), err_msg=field)


def assert_sweep_round_trip(dataset, tmp_path) -> None:
    """Saving then loading a sweep's dataset (zarr) gives back every variable, coordinate and
    attribute unchanged."""
    import xarray as xr

    from dynamics import load_sweep, save_sweep

    loaded = load_sweep(save_sweep(dataset, tmp_path / "sweep.zarr"))
    xr.testing.assert_identical(loaded.load(), dataset)
