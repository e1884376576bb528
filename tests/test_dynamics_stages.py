"""Multi-stage schedules (dynamics._stages)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics


def _loss(p):
    return jnp.sum((p["x"] - 1.0) ** 2) + jnp.sum((p["y"] + 2.0) ** 2) + jnp.sum(p["x"] * p["y"])


def test_frozen_block_does_not_move_and_stages_chain():
    p0 = {"x": jnp.zeros(3), "y": jnp.zeros(3)}
    stages = [
        dynamics.Stage(_loss, dynamics.gd(jnp.asarray(0.1)), {"x": True, "y": False}, num_steps=4),
        dynamics.Stage(_loss, dynamics.gd(jnp.asarray(0.1)), {"x": False, "y": True}, num_steps=3, every=3),
    ]
    first, second = dynamics.train_stages(p0, stages)
    assert np.all(np.asarray(first.values["y"]) == 0)
    np.testing.assert_array_equal(np.asarray(second.values["x"]), np.broadcast_to(first.final["x"], (2, 3)))
    # reference: the same steps by hand
    x, y = p0["x"], p0["y"]
    for _ in range(4):
        x = x - 0.1 * jax.grad(_loss)({"x": x, "y": y})["x"]
    for _ in range(3):
        y = y - 0.1 * jax.grad(_loss)({"x": x, "y": y})["y"]
    np.testing.assert_allclose(second.final["x"], x, rtol=1e-14)
    np.testing.assert_allclose(second.final["y"], y, rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(second.ts), [0, 3])


def test_normalisation_sees_only_the_trained_block():
    p0 = {"x": jnp.zeros(2), "y": jnp.ones(2)}
    stage = dynamics.Stage(
        _loss, dynamics.normalized_gd(jnp.asarray(0.25)), {"x": True, "y": False}, num_steps=2
    )
    (run,) = dynamics.train_stages(p0, [stage])
    assert float(jnp.linalg.norm(run.final["x"])) == pytest.approx(0.5, rel=1e-14)


def test_jit_vmap_and_empty():
    def one(scale):
        stage = dynamics.Stage(
            lambda p: jnp.sum((p["x"] - scale) ** 2), dynamics.gd(jnp.asarray(0.5)), {"x": True}, num_steps=1
        )
        return dynamics.train_stages({"x": jnp.zeros(2)}, [stage])[0].final["x"]

    out = jax.jit(jax.vmap(one))(jnp.asarray([1.0, 2.0]))
    np.testing.assert_allclose(out, [[1.0, 1.0], [2.0, 2.0]])
    with pytest.raises(ValueError, match="stages"):
        dynamics.train_stages({"x": jnp.zeros(1)}, [])


def test_events_see_the_full_parameters():
    p0 = {"x": jnp.zeros(1), "y": jnp.full(1, 5.0)}
    stage = dynamics.Stage(
        lambda p: jnp.sum((p["x"] - 1.0) ** 2),
        dynamics.gd(jnp.asarray(0.1)),
        {"x": True, "y": False},
        num_steps=50,
        events={"x_passes_y_over_20": lambda p: p["x"][0] > p["y"][0] / 20},
    )
    (run,) = dynamics.train_stages(p0, [stage])
    assert dynamics.stop_reason(run.stop, run.event, ("x_passes_y_over_20",)) == "event:x_passes_y_over_20"
    assert 0.25 < float(run.final["x"][0]) < 0.5 and float(run.final["y"][0]) == 5.0
