"""The simulation interface on a toy simulation with a closed form: declared fields, many seeds,
sweeps (traced and static axes), the labelled dataset and its store."""

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from dynamics import Interval, OneOf, Require, param

from .helpers import assert_sweep_round_trip


class Decay(dynamics.AbstractSimulation):
    """dy/dt = −rate · y from y0 ~ N(0, 1) · scale: y(t) = y0 e^{−rate t}; stops once |y| < floor."""

    rate: float = param(1.0, Interval.positive(), doc="decay rate", traced=True)
    scale: float = param(1.0, Interval.positive(), doc="initial spread")
    num_saves: int = param(5, Interval(2), doc="saves on [0, 1]")
    floor: float = param(0.0, Interval(0), doc="stop once |y| is below it (0: never)")
    mode: str = param("flow", OneOf("flow", "euler"), doc="flow or 100 explicit Euler steps")
    dtype: str = param("float64", OneOf("float32", "float64"), doc="precision")
    event_names = ("small",)
    requires = (Require(("num_saves", "mode"), lambda n, m: m == "flow" or 100 % (n - 1) == 0, "saves"),)

    def run(self, key):
        y0 = self.scale * jax.random.normal(key, (), self.dtype)
        events = {"small": lambda y: jnp.abs(y) < self.floor}
        if self.mode == "euler":
            return dynamics.train(
                lambda y: 0.5 * self.rate * y**2, y0, dynamics.gd(0.01), num_steps=100,
                save=dynamics.Save(every=100 // (self.num_saves - 1)), events=events,
            )  # fmt: skip
        save_ts = jnp.linspace(0.0, 1.0, self.num_saves, dtype=self.dtype)
        save = dynamics.Save(ts=save_ts)
        return dynamics.ode_flow(lambda t, y, a: -self.rate * y, y0, t1=1.0, save=save, events=events)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"rate": float("nan")}, r"Decay\.rate must be a finite number > 0, got nan"),
        ({"rate": math.inf}, r"Decay\.rate must be a finite number > 0, got inf"),
        ({"rate": 0.0}, r"Decay\.rate must be a finite number > 0"),
        ({"rate": "1"}, r"Decay\.rate must be a finite number > 0, got '1'"),
        ({"num_saves": 2.5}, r"Decay\.num_saves must be an integer >= 2, got 2.5"),
        ({"num_saves": True}, r"Decay\.num_saves must be an integer >= 2, got True"),
        ({"mode": "rk4"}, r"Decay\.mode must be one of 'flow', 'euler', got 'rk4'"),
        ({"dtype": "float16"}, r"Decay\.dtype must be one of"),
        ({"mode": "euler", "num_saves": 4}, r"Decay: saves, got num_saves=4, mode='euler'"),
    ],
)
def test_bad_values_are_refused_on_construction(bad, message):
    with pytest.raises(ValueError, match=message):
        Decay(**bad)


def test_integers_are_accepted_for_float_fields():
    assert Decay(rate=2).rate == 2


@dataclasses.dataclass(frozen=True)
class Sizes:
    """A plain dataclass validated like a simulation, with a required field."""

    width: int = param(allowed=Interval(1), doc="required: no default")
    height: int = param(3, Interval(1), doc="has a default")
    requires = (Require(("width", "height"), lambda w, h: w <= h, "width must be <= height"),)

    def __post_init__(self):
        dynamics.check_params(self)


def test_a_field_without_default_is_required_and_checked():
    assert Sizes(2) == Sizes(width=2, height=3)
    with pytest.raises(TypeError, match="width"):
        Sizes()
    with pytest.raises(ValueError, match=r"Sizes\.width must be an integer >= 1, got nan"):
        Sizes(math.nan)
    with pytest.raises(ValueError, match=r"Sizes: width must be <= height, got width=4, height=3"):
        Sizes(4)
    infos = dynamics.params(Sizes)
    assert [(i.name, i.default) for i in infos] == [("width", dataclasses.MISSING), ("height", 3)]


def test_simulate_matches_the_closed_form_and_single_runs():
    runs = dynamics.simulate(Decay(rate=2.0), num_seeds=4, seed=3)
    y0 = np.array([jax.random.normal(dynamics.seed_key(3 + i), (), jnp.float64) for i in range(4)])
    t = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(runs["value"].values, y0[:, None] * np.exp(-2.0 * t), rtol=1e-6)
    config = Decay(rate=2.0).describe() | {"grid": {}, "num_seeds": 4, "seed": 3}
    assert json.loads(runs.attrs["config"]) == config
    assert dynamics.stop_reasons(runs).values.tolist() == ["completed"] * 4


def test_simulate_is_the_sweep_of_one_point_in_memory_and_on_disk(tmp_path):
    """The same dataset as `sweep(sim, {})`, in memory and in a store that a second call resumes
    (serves) instead of running again; a store's unwritten runs read as such."""
    sim = Decay(rate=5.0, floor=0.05)
    runs = dynamics.simulate(sim, num_seeds=3, seed=2, chunk_size=2)
    assert runs.identical(dynamics.sweep(sim, {}, num_seeds=3, seed=2, chunk_size=2))
    assert runs["value"].dims == ("seed", "save") and runs["final"].dims == ("seed",)
    store = tmp_path / "decay.zarr"
    on_disk = dynamics.simulate(sim, num_seeds=3, seed=2, chunk_size=2, store=store)
    assert on_disk.load().drop_attrs().identical(runs.drop_attrs())
    assert dynamics.store.check_store(store).state == "complete"
    partial = dynamics.sweep(
        sim, {}, num_seeds=3, seed=2, chunk_size=2, store=tmp_path / "p.zarr", shard=(1, 2)
    )
    assert dynamics.stop_reasons(partial).values.tolist() == ["not written"] * 2 + ["event:small"]


@pytest.mark.slow
def test_events_keep_their_names_on_disk(tmp_path):
    runs = dynamics.simulate(Decay(rate=5.0, floor=0.05), num_seeds=3)
    assert set(dynamics.stop_reasons(runs).values.tolist()) == {"event:small"}
    assert_sweep_round_trip(runs, tmp_path)
    ds = dynamics.sweep(Decay(rate=5.0, floor=0.05), {"rate": [5.0, 0.1]}, num_seeds=2)
    assert_sweep_round_trip(ds, tmp_path)


@pytest.mark.parametrize("mode", [pytest.param("flow", marks=pytest.mark.slow), "euler"])
def test_sweep_of_a_traced_field_equals_separate_simulations(mode):
    ds = dynamics.sweep(Decay(mode=mode), {"rate": [0.5, 1.0, 3.0]}, num_seeds=3, seed=1)
    assert ds["time"].dims == ("rate", "seed", "save")
    assert list(ds["rate"].values) == [0.5, 1.0, 3.0] and list(ds["seed"].values) == [1, 2, 3]
    for rate in (0.5, 3.0):
        alone = dynamics.simulate(Decay(mode=mode, rate=rate), num_seeds=3, seed=1)
        np.testing.assert_allclose(ds["value"].sel(rate=rate).values, alone["value"].values, rtol=1e-12)


def test_sweep_of_two_axes_with_a_static_one():
    ds = dynamics.sweep(Decay(), {"scale": [1.0, 2.0], "rate": [1.0, 2.0]}, num_seeds=2)
    assert ds["value"].dims == ("scale", "rate", "seed", "save")
    # linear in the start, up to the adaptive steps (the solver's rtol is 1e-8)
    np.testing.assert_allclose(
        ds["value"].sel(scale=2.0).values, 2 * ds["value"].sel(scale=1.0).values, rtol=1e-7
    )
    config = __import__("json").loads(ds.attrs["config"])
    assert config["grid"] == {"scale": [1.0, 2.0], "rate": [1.0, 2.0]} and config["simulation"].endswith(
        ":Decay"
    )


def test_sweep_refuses_bad_grids_before_running():
    with pytest.raises(ValueError, match="no setting 'speed'"):
        dynamics.sweep(Decay(), {"speed": [1.0]}, num_seeds=1)
    with pytest.raises(ValueError, match="at least one value"):
        dynamics.sweep(Decay(), {"rate": []}, num_seeds=1)
    with pytest.raises(ValueError, match=r"Decay\.rate must be a finite number > 0, got -1"):
        dynamics.sweep(Decay(), {"rate": [1.0, -1.0]}, num_seeds=1)
    with pytest.raises(ValueError, match="num_seeds must be an integer >= 1"):
        dynamics.sweep(Decay(), {"rate": [1.0]}, num_seeds=0)


def test_sweep_store_round_trip(tmp_path):
    ds = dynamics.sweep(Decay(floor=0.3), {"rate": [1.0, 4.0]}, num_seeds=4)
    loaded = dynamics.load_sweep(dynamics.store.save_sweep(ds, tmp_path / "s.zarr"))
    assert loaded.identical(ds)
    assert loaded.attrs["event_names"] == ["small"]
    with pytest.raises(ValueError, match="not a sweep written by attnflow"):
        dynamics.load_sweep(tmp_path / "missing.zarr")


def test_equal_static_parts_share_one_compiled_function():
    from dynamics._simulation import batched_run, static_part

    a, b = Decay(rate=1.0), Decay(rate=2.0)
    assert eqx.tree_equal(batched_run(static_part(a)), batched_run(static_part(b)))
    other = batched_run(static_part(dataclasses.replace(a, scale=2.0)))
    assert not eqx.tree_equal(batched_run(static_part(a)), other)


def test_a_sweep_again_traces_nothing_unless_jax_s_settings_change(monkeypatch):
    """The checks before a sweep trace one run of each static part once: sweeping it again traces
    nothing, and turning x64 off traces the float32 program anew instead of reusing the one traced
    with x64 on."""
    traces = []
    run = Decay.run
    monkeypatch.setattr(Decay, "run", lambda self, key: traces.append(self.dtype) or run(self, key))
    sim = Decay(rate=1.3, scale=0.7, mode="euler", dtype="float32")
    first = dynamics.sweep(sim, {"rate": [1.3, 0.4]}, num_seeds=2)
    assert traces
    traces.clear()
    assert dynamics.sweep(sim, {"rate": [1.3, 0.4]}, num_seeds=2).identical(first)
    assert traces == []
    with jax.enable_x64(False):
        single = dynamics.sweep(sim, {"rate": [1.3, 0.4]}, num_seeds=2)
    assert traces
    np.testing.assert_array_equal(single["value"].values, first["value"].values)


def test_params_and_settings():
    names = [info.name for info in Decay.params()]
    assert names == ["rate", "scale", "num_saves", "floor", "mode", "dtype"]
    sim = Decay.from_settings({"rate": "2", "num_saves": "3", "mode": "flow"})
    assert (sim.rate, sim.num_saves) == (2.0, 3)
    with pytest.raises(ValueError, match=r"Decay\.num_saves must be an integer >= 2, got '3.5'"):
        Decay.from_settings({"num_saves": "3.5"})


class EndsOnly(dynamics.AbstractSimulation):
    """Two GD steps on ½p² from a start `spread` · N(0, 1), saving nothing: only the end differs
    between seeds."""

    spread: float = param(1.0, Interval(0), doc="the start's scale", traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        start = self.spread * jax.random.normal(key, (), self.float_dtype)
        return dynamics.train(
            lambda p: 0.5 * p**2,
            start,
            dynamics.gd(0.5),
            num_steps=2,
            save=dynamics.Save(every=2, fn=lambda step, p, args: ()),
        )


@pytest.mark.parametrize("make", ["simulate", "sweep"])
def test_seeds_that_end_apart_are_not_called_identical_even_when_nothing_is_saved(make, recwarn):
    def run(sim):
        if make == "simulate":
            return dynamics.simulate(sim, num_seeds=3)
        return dynamics.sweep(sim, {}, num_seeds=3)

    run(EndsOnly())
    assert not [w for w in recwarn if "every seed gave the same run" in str(w.message)]
    with pytest.warns(UserWarning, match="every seed gave the same run") as caught:
        run(EndsOnly(spread=0.0))
    assert len(caught) == 1


def test_the_warning_of_identical_seeds_points_at_the_line_of_the_users_script(tmp_path):
    """In a user's own script (a fresh interpreter, without the test run's type checker, whose
    wrappers would stand between the script and the engine), the warning names the script's line
    that called `simulate` or `sweep`."""
    script = tmp_path / "mine.py"
    script.write_text(
        "import json, warnings\n"
        "import jax\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "import dynamics\n"
        "from tests.test_dynamics_simulation import EndsOnly\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    dynamics.simulate(EndsOnly(spread=0.0), num_seeds=3)\n"
        "    dynamics.sweep(EndsOnly(spread=0.0), {}, num_seeds=3)\n"
        "print(json.dumps([[w.filename, w.lineno] for w in caught if 'same run' in str(w.message)]))\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = os.environ | {"PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(script)], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [[str(script), 8], [str(script), 9]]
