"""A small simulation for the sweep-store tests, importable by the subprocesses they start."""

import time

import jax
import jax.numpy as jnp

import dynamics
from dynamics import Interval, param


def _pause(seconds):
    time.sleep(float(seconds))


class SlowDecay(dynamics.AbstractSimulation):
    """y(t) = y0 e^{−rate t} from y0 ~ N(0, scale²), saved at 4 times, after a host-side pause of
    `pause` seconds per compiled call (so a test can stop a sweep between two of its blocks)."""

    rate: float = param(1.0, Interval(0, low_open=True), doc="decay rate", traced=True)
    scale: float = param(1.0, Interval(0, low_open=True), doc="initial spread (one program per value)")
    pause: float = param(0.0, Interval(0), doc="seconds of pause per compiled call")
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        jax.debug.callback(_pause, self.pause)
        y0 = self.scale * jax.random.normal(key, (2,), self.dtype)
        save = dynamics.Save(ts=jnp.linspace(0.0, 1.0, 4, dtype=self.dtype))
        return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=1.0, save=save)
