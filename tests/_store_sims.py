"""A small simulation for the sweep-store tests, importable by the subprocesses they start."""

import functools
import os
import time

import jax
import jax.numpy as jnp

import dynamics
from dynamics import Interval, param


def _pause(seconds):
    time.sleep(float(seconds))


def _hold(path):
    deadline = time.monotonic() + 300
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


def _log(path, rate, scale, seed):
    with open(path, "a") as f:
        f.write(f"{float(rate)} {float(scale)} {int(seed)}\n")


class SlowDecay(dynamics.AbstractSimulation):
    """y(t) = y0 e^{−rate t} from y0 ~ N(0, scale²), saved at 4 times, after a host-side pause of
    `pause` seconds per run (so a test can stop a sweep between two of its blocks); with `hold`,
    each run waits while that file exists (so a test can keep a writer busy for as long as it
    needs); with `log`, each run appends its rate, scale and seed to that file (so a test can
    count the runs)."""

    rate: float = param(1.0, Interval.positive(), doc="decay rate", traced=True)
    scale: float = param(1.0, Interval.positive(), doc="initial spread (one program per value)")
    pause: float = param(0.0, Interval(0), doc="seconds of pause per run")
    hold: str = param("", doc="a file each run waits on while it exists")
    log: str = param("", doc="a file each run appends its rate, scale and seed to")
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        jax.debug.callback(_pause, self.pause)
        if self.hold:
            jax.debug.callback(functools.partial(_hold, self.hold))
        if self.log:
            jax.debug.callback(
                functools.partial(_log, self.log), self.rate, self.scale, dynamics._simulation.key_seed(key)
            )
        y0 = self.scale * jax.random.normal(key, (2,), self.dtype)
        save = dynamics.Save(ts=jnp.linspace(0.0, 1.0, 4, dtype=self.dtype))
        return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=1.0, save=save)


class Logistic(dynamics.AbstractSimulation):
    """The logistic flow dy/dt = rate y (1 − y) from y(0) = 0.001 (1 + u), u uniform in [0, 1),
    with loss 1 − y: a plateau near 1, a drop at t = log(1/y(0) − 1) / rate, a plateau at 0.
    Saves `loss` and `y` at 101 log-spaced times on [0.01, 1000]."""

    rate: float = param(1.0, Interval.positive(), doc="growth rate", traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        y0 = 1e-3 * (1.0 + jax.random.uniform(key, (), self.dtype))
        ts = jnp.logspace(-2.0, 3.0, 101, dtype=self.dtype)
        save = dynamics.Save(ts, lambda t, y, args: {"loss": 1.0 - y, "y": y})
        return dynamics.ode_flow(lambda t, y, args: self.rate * y * (1.0 - y), y0, t1=1e3, save=save)


def _quadratic(rate):
    """L(w) = ½(rate·w₀² + w₁² − w₂²): a saddle at 0, Hessian diag(rate, 1, −1)."""
    return lambda w: 0.5 * (rate * w[0] ** 2 + w[1] ** 2 - w[2] ** 2)


class Quadratic(dynamics.AbstractSimulation):
    """Gradient descent with step `step` on L(w) = ½(rate·w₀² + w₁² − w₂²) from w₀, w₁ uniform in
    [1, 2) and w₂ = 0, which it keeps: the runs end near the saddle at 0, whose Hessian is
    diag(rate, 1, −1). Saves the loss every 5 of 20 steps."""

    rate: float = param(1.0, Interval.positive(), doc="curvature along w₀", traced=True)
    step: float = param(0.1, Interval.positive(), doc="GD step size", traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        start = jnp.concatenate([1.0 + jax.random.uniform(key, (2,), self.float_dtype), jnp.zeros(1)])
        loss = _quadratic(self.rate)
        save = dynamics.Save(every=5, fn=lambda step, w, args: {"loss": loss(w)})
        return dynamics.train(loss, start, dynamics.gd(self.step), num_steps=20, save=save)

    def landscape(self, key):
        return dynamics.Landscape(_quadratic(self.rate), step_size=lambda final: self.step)


class Wide(dynamics.AbstractSimulation):
    """`width` decaying coordinates y(t) = y0 e^{−t}, y0 standard normal, saved at `num_saves`
    times with their mean square as `loss`: a run of many bytes and little work, for measuring
    what a sweep holds in memory (a block of 64 runs of the defaults is 8 MiB)."""

    width: int = param(1024, Interval(1), doc="coordinates per run")
    num_saves: int = param(16, Interval(2), doc="saves per run")
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        y0 = jax.random.normal(key, (self.width,), self.dtype)
        ts = jnp.linspace(0.0, 1.0, self.num_saves, dtype=self.dtype)
        save = dynamics.Save(ts, lambda t, y, args: {"y": y, "loss": jnp.mean(y**2)})
        return dynamics.ode_flow(lambda t, y, args: -y, y0, t1=1.0, save=save)
