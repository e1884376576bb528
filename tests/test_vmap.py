"""Many runs at once: vmap over seeds equals a loop, chunks and shards change nothing."""

import os
import subprocess
import sys
import textwrap
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics

from .helpers import tree_allclose


class Decay(dynamics.AbstractSimulation):
    """dy/dt = -rate y from a random start; counts its traces."""

    rate: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="r")
    dtype: str = dynamics.dtype_param("float32")
    traces: ClassVar[int] = 0

    def run(self, key):
        type(self).traces += 1
        y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
        return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=1.0)


def noisy_regression_run(key, rate):
    """SGD with momentum on a noisy 2-D least-squares problem: one seed, one learning rate."""
    target = jnp.array([1.0, -2.0])

    def sample(k):
        x = jax.random.normal(k, (16, 2))
        return x, x @ target + 0.1 * jax.random.normal(jax.random.fold_in(k, 1), (16,))

    def loss(w, batch):
        x, y = batch
        return 0.5 * jnp.mean((x @ w - y) ** 2)

    return dynamics.train(
        loss,
        jnp.zeros(2),
        dynamics.heavy_ball(rate, momentum=0.5),
        num_steps=30,
        key=key,
        sample=sample,
        save=dynamics.Save(every=10, fn=lambda step, w, args: jnp.sum((w - target) ** 2)),
    )


def test_vmap_over_seeds_equals_a_loop():
    keys = dynamics.seed_keys(0, 5)
    rates = jnp.full(5, 0.1)
    batched = jax.vmap(noisy_regression_run)(keys, rates)
    for i in range(5):
        single = noisy_regression_run(keys[i], rates[i])
        assert tree_allclose(jax.tree.map(lambda x: x[i], batched), single, rtol=1e-12)


def test_run_many_over_a_grid_chunked_equals_vmap():
    g = dynamics.grid(seed=range(3), rate=[0.05, 0.1, 0.2])
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(g["seed"]))
    rates = jnp.asarray(g["rate"])
    whole, finite = dynamics.run_many(noisy_regression_run, keys, rates)
    chunked, _ = dynamics.run_many(noisy_regression_run, keys, rates, chunk_size=4)
    assert tree_allclose(whole, chunked, rtol=1e-12)
    assert tree_allclose(whole, jax.vmap(noisy_regression_run)(keys, rates), rtol=1e-12)
    assert finite.shape == (9,) and finite.all()
    assert whole.values.shape == (9, 4)


def test_grid_is_c_ordered_product():
    g = dynamics.grid(a=[1, 2], b=[10, 20, 30])
    np.testing.assert_array_equal(g["a"], [1, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(g["b"], [10, 20, 30, 10, 20, 30])


def test_a_diverging_run_is_flagged_and_does_not_spoil_the_others():
    def run(rate):
        return dynamics.train(lambda w: 0.5 * w**2, jnp.array(1.0), dynamics.gd(rate), num_steps=2000)

    rates = jnp.array([0.5, 50.0, 1.0])  # the middle run oscillates with growing amplitude
    out, finite = dynamics.run_many(run, rates)
    np.testing.assert_array_equal(finite, [True, False, True])
    np.testing.assert_allclose(out.final[[0, 2]], [0.5**2000, 0.0], atol=1e-300)
    single = run(jnp.array(0.5))
    np.testing.assert_allclose(out.final[0], single.final)


@pytest.mark.slow
def test_sharded_run_equals_unsharded_on_four_cpu_devices():
    script = textwrap.dedent(
        """
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        import dynamics
        assert jax.local_device_count() == 4, jax.local_devices()

        def run(key, rate):
            return dynamics.train(
                lambda w, b: 0.5 * jnp.mean((w - b) ** 2), jnp.zeros(3), dynamics.gd(rate),
                num_steps=20, key=key, sample=lambda k: jax.random.normal(k, (8, 3)),
            )

        keys, rates = dynamics.seed_keys(1, 10), jnp.linspace(0.1, 0.5, 10)
        sharded, _ = dynamics.run_many(run, keys, rates, chunk_size=6)
        single, _ = dynamics.run_many(run, keys, rates, devices=jax.local_devices()[:1])
        np.testing.assert_allclose(sharded.final, single.final, rtol=1e-13)
        np.testing.assert_allclose(sharded.values, single.values, rtol=1e-13)
        print("sharded ok", sharded.final.shape)
        """
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sharded ok (10, 3)" in result.stdout


_TRACES = []


def scaled_sum(scale, data, x):
    _TRACES.append(None)  # runs once per trace
    return scale * jnp.sum(x + data["shift"])


def test_a_pytree_callable_over_new_arrays_reuses_the_compilation_and_sees_the_new_arrays():
    traces = _TRACES
    traces.clear()

    def one_call(data, scale):
        return dynamics.run_many(eqx.Partial(scaled_sum, scale, data), jnp.ones((3, 2)))[0]

    first = one_call({"shift": jnp.array([0.0, 1.0])}, 2.0)
    second = one_call({"shift": jnp.array([5.0, 5.0])}, 2.0)
    assert len(traces) == 1
    np.testing.assert_allclose(first, 2.0 * 3.0)
    np.testing.assert_allclose(second, 2.0 * 12.0)
    one_call({"shift": jnp.array([0.0, 1.0])}, 3.0)  # a new static value compiles anew
    assert len(traces) == 2


def test_a_simulations_run_is_compiled_once_for_every_seed_batch_of_the_same_size():
    sim = Decay(rate=2.0)
    dynamics.run_many(sim.run, dynamics.seed_keys(0, 3))
    traces = Decay.traces
    dynamics.run_many(Decay(rate=2.0).run, dynamics.seed_keys(5, 3))
    assert Decay.traces == traces
    dynamics.run_many(Decay(rate=3.0).run, dynamics.seed_keys(5, 3))
    assert Decay.traces == traces + 1


def test_a_plain_function_sees_the_arrays_it_captures():
    def one_call(shift):
        return dynamics.run_many(lambda x: jnp.sum(x + shift), jnp.ones((3, 2)))[0]

    np.testing.assert_allclose(one_call(jnp.array([0.0, 1.0])), 3.0)
    np.testing.assert_allclose(one_call(jnp.array([5.0, 5.0])), 12.0)


def test_a_function_reading_its_captured_arrays_with_numpy_still_runs():
    def one_call(table):
        return dynamics.run_many(lambda x: x * int(np.asarray(table).sum()), jnp.arange(3.0))[0]

    np.testing.assert_array_equal(one_call(jnp.array([1, 2])), [0.0, 3.0, 6.0])
    np.testing.assert_array_equal(one_call(jnp.array([2, 2])), [0.0, 4.0, 8.0])
