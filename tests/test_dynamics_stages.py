"""Multi-stage schedules (dynamics._stages)."""

import equinox as eqx
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
        dynamics.Stage(
            _loss,
            dynamics.gd(jnp.asarray(0.1)),
            {"x": False, "y": True},
            num_steps=3,
            save=dynamics.Save(every=3),
        ),
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


def _triple_x(p):
    return {**p, "x": 3.0 * p["x"]}


def test_prepare_maps_the_full_parameters_as_its_stage_begins():
    p0 = {"x": jnp.zeros(3), "y": jnp.zeros(3)}
    opt = dynamics.gd(jnp.asarray(0.1))
    y_only = {"x": False, "y": True}
    stages = [
        dynamics.Stage(_loss, opt, {"x": True, "y": False}, num_steps=4),
        dynamics.Stage(_loss, opt, y_only, num_steps=3, prepare=_triple_x),
    ]
    first, second = dynamics.train_stages(p0, stages)
    assert 0.5 < float(first.final["x"][0]) < 1.0  # the previous stage keeps its own end
    prepared = _triple_x(first.final)
    np.testing.assert_array_equal(second.values["x"][0], prepared["x"])
    np.testing.assert_array_equal(second.final["x"], prepared["x"])
    # reference: train by hand on y from the prepared parameters
    part, frozen = eqx.partition(prepared, y_only)
    run = dynamics.train(lambda q: _loss(eqx.combine(q, frozen)), part, opt, num_steps=3)
    np.testing.assert_array_equal(second.final["y"], run.final["y"])
    np.testing.assert_array_equal(second.values["y"][0], p0["y"])


def _batch_loss(p, batch):
    return _loss(p) + jnp.sum(batch * p["x"]) - jnp.sum(batch**2 * p["y"])


def _draw(k):
    return jax.random.normal(k, (3,))


def _train_block(p, trainable, optimizer, num_steps, key):
    """`dynamics.train` by hand on the trained block of `p`, the rest frozen."""
    part, frozen = eqx.partition(p, trainable)
    return dynamics.train(
        lambda q, batch: _batch_loss(eqx.combine(q, frozen), batch),
        part,
        optimizer,
        num_steps=num_steps,
        key=key,
        sample=_draw,
    )


def test_minibatch_stages_are_train_on_the_block_with_their_keys():
    p0 = {"x": jnp.zeros(3), "y": jnp.ones(3)}
    key, own = jax.random.key(3), jax.random.key(7)
    opt = dynamics.gd(jnp.asarray(0.05))
    x_only, y_only = {"x": True, "y": False}, {"x": False, "y": True}
    stages = [
        dynamics.Stage(_batch_loss, opt, x_only, num_steps=5, sample=_draw),
        dynamics.Stage(_loss, opt, y_only, num_steps=2),
        dynamics.Stage(_batch_loss, opt, y_only, num_steps=4, sample=_draw),
        dynamics.Stage(_batch_loss, opt, x_only, num_steps=3, sample=_draw, key=own),
    ]
    first, second, third, fourth = dynamics.train_stages(p0, stages, key=key)
    run = _train_block(p0, x_only, opt, 5, jax.random.fold_in(key, 0))
    np.testing.assert_array_equal(first.final["x"], run.final["x"])
    np.testing.assert_array_equal(first.values["x"], run.values["x"])
    (full_batch,) = dynamics.train_stages(first.final, stages[1:2])
    np.testing.assert_array_equal(second.final["y"], full_batch.final["y"])
    run = _train_block(second.final, y_only, opt, 4, jax.random.fold_in(key, 2))
    np.testing.assert_array_equal(third.final["y"], run.final["y"])
    run = _train_block(third.final, x_only, opt, 3, own)
    np.testing.assert_array_equal(fourth.final["x"], run.final["x"])
    np.testing.assert_array_equal(fourth.final["y"], third.final["y"])


def test_minibatch_stage_without_key_is_refused():
    opt = dynamics.gd(jnp.asarray(0.1))
    stage = dynamics.Stage(_batch_loss, opt, {"x": True, "y": False}, num_steps=2, sample=_draw)
    with pytest.raises(ValueError, match="stage 0 samples mini-batches"):
        dynamics.train_stages({"x": jnp.zeros(3), "y": jnp.zeros(3)}, [stage])
