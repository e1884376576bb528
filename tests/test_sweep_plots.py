"""The standard plots of a sweep: the time axis says time or step, early stops are marked on it,
and the stop time gets its own plot when runs stop early."""

import jax
import jax.numpy as jnp
import pytest

import dynamics
from attnflow import _sweep_plots


class _Fall(dynamics.AbstractSimulation):
    """y' = −rate y from y0 ~ N(1, 0.1²), stopped once y < 0.5 (by t = 1 only when rate > ln 2)."""

    rate: float = dynamics.param(1.0, dynamics.Interval(0, low_open=True), doc="rate", traced=True)
    dtype: str = dynamics.dtype_param("float64")
    event_names = ("half",)

    def run(self, key):
        y0 = 1.0 + 0.1 * jax.random.normal(key, (), self.dtype)
        save = dynamics.Save(ts=jnp.linspace(0.0, 1.0, 5, dtype=self.dtype))
        return dynamics.ode_flow(
            lambda t, y, args: -self.rate * y,
            y0,
            t1=1.0,
            save=save,
            events={"half": lambda y: y < 0.5},
        )


class _Steps(dynamics.AbstractSimulation):
    """Gradient descent on w²/2 from w0 ~ N(1, 0.1²), 20 steps saved every 5."""

    eta: float = dynamics.param(0.1, dynamics.Interval(0, low_open=True), doc="step size", traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        w0 = 1.0 + 0.1 * jax.random.normal(key, (), self.dtype)
        return dynamics.train(lambda w: 0.5 * w**2, w0, dynamics.gd(self.eta), num_steps=20, every=5)


@pytest.fixture
def drawn(monkeypatch):
    """The x-label and title of every plot drawn, by file name."""
    seen, save = {}, _sweep_plots._save

    def record(fig, path):
        seen[path.name] = (fig.axes[0].get_xlabel(), fig.axes[0].get_title())
        return save(fig, path)

    monkeypatch.setattr(_sweep_plots, "_save", record)
    return seen


def test_a_flow_with_early_stops_is_drawn_against_time_with_its_stop_times(tmp_path, drawn):
    ds = dynamics.sweep(_Fall(), {"rate": [0.5, 2.0]}, num_seeds=3)
    paths = _sweep_plots.plot_sweep(ds, ["rate"], tmp_path)
    assert {p.name for p in paths} >= {"t_stop_final.png"} and all(p.stat().st_size for p in paths)
    time_plots = [name for name in drawn if name.endswith("_time.png")]
    assert time_plots and all(drawn[name][0] == "time" for name in time_plots)
    assert all("stopped early" in drawn[name][1] for name in time_plots)
    assert drawn["t_stop_final.png"][1].startswith("the time of each run that stopped early")


def test_discrete_training_is_drawn_against_steps_and_has_no_stop_plot(tmp_path, drawn):
    ds = dynamics.sweep(_Steps(), {"eta": [0.1, 0.5]}, num_seeds=2)
    paths = _sweep_plots.plot_sweep(ds, ["eta"], tmp_path)
    assert "t_stop_final.png" not in {p.name for p in paths}
    time_plots = [name for name in drawn if name.endswith("_time.png")]
    assert time_plots and all(drawn[name][0] == "step" for name in time_plots)
    assert not any("stopped early" in drawn[name][1] for name in time_plots)
