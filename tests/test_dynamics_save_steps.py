"""Training saved at chosen steps (`Save(steps=...)`, e.g. `log_spaced_steps`): the same run as one
saved at every step, read at those steps, whatever records it (a carry, the sharpness, the flow
alongside, stages); bad steps refused before any work."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dynamics

A = jnp.array([1.0, 0.5, 2.0])
P0 = jnp.array([1.0, -2.0, 0.5])
STEPS = (0, 1, 2, 5, 11, 23)
"""Save steps with gaps of 1 to 12, the last before the run's end."""


def quadratic(p):
    return 0.5 * jnp.sum(A * p**2)


def batch_loss(p, batch):
    return 0.5 * jnp.sum(A * (p - batch) ** 2)


def sample(key):
    return 0.1 * jax.random.normal(key, (3,))


def record(step, p, opt_state):
    return {"p": p, "loss": quadratic(p), "step": step}


@pytest.mark.parametrize("optimizer", [dynamics.gd(0.3), dynamics.adam(0.05)], ids=["gd", "adam"])
def test_saves_at_steps_are_the_every_step_run_read_at_those_steps(optimizer):
    """On fresh mini-batches (one key per step) and with an optimiser that keeps a state: the
    records at `steps` are those of the run saved at every step, and the run goes on to its end."""
    kwargs = dict(num_steps=30, key=jax.random.PRNGKey(3), sample=sample)
    every = dynamics.train(batch_loss, P0, optimizer, save=dynamics.Save(every=1, fn=record), **kwargs)
    at = dynamics.train(batch_loss, P0, optimizer, save=dynamics.Save(steps=STEPS, fn=record), **kwargs)
    np.testing.assert_array_equal(at.ts, STEPS)
    for name in ("p", "loss", "step"):
        np.testing.assert_array_equal(at.values[name], every.values[name][np.asarray(STEPS)], err_msg=name)
    np.testing.assert_array_equal(at.final, every.final)
    assert int(at.t_stop) == int(every.t_stop) == 30


def test_a_carry_passes_between_the_saves_at_steps():
    """The carry goes from each save to the next, as with `every`: here the largest |p| seen at
    the saves so far."""

    def largest(step, p, args, seen):
        seen = jnp.maximum(seen, jnp.max(jnp.abs(p)))
        return {"seen": seen}, seen

    save = dynamics.Save(steps=(0, 1, 3), fn=largest, carry=lambda p: jnp.max(jnp.abs(p)))
    run = dynamics.train(lambda p: -0.5 * jnp.sum(p**2), P0, dynamics.gd(0.5), num_steps=3, save=save)
    # p grows by 1.5 each step from max |p| = 2: 2, 3, then 6.75 at step 3
    np.testing.assert_allclose(run.values["seen"], [2.0, 3.0, 6.75])


def test_the_outputs_of_each_step_are_kept_in_step_order():
    def halve(carry, step):
        y, count = carry
        return (y / 2, count + 1), (step, y)

    init = (jnp.array(1.0), jnp.array(0))
    every = dynamics.scan_with_saves(halve, init, dynamics.Save(every=1), num_steps=6)
    at = dynamics.scan_with_saves(halve, init, dynamics.Save(steps=(1, 4)), num_steps=6)
    np.testing.assert_array_equal(at[1], [1, 4])
    np.testing.assert_array_equal(at[2], every[2][np.array([1, 4])])
    for kept, each in zip(at[3], every[3]):  # the step numbers and the y each step started from
        np.testing.assert_array_equal(kept, np.ravel(each))
    assert int(at[0][1]) == 6


def test_the_flow_alongside_at_steps_is_that_of_every_step():
    """`with_flow_distance` compares each save with the flow at the same step, whichever steps
    save; `with_sharpness` keeps the steps (its Lanczos start passes on by the save's carry)."""
    steps = (0, 2, 7, 20)
    plain = dynamics.Save(fn=lambda step, p, args: {"loss": quadratic(p)})

    def run(base):
        save = dynamics.landscape.with_flow_distance(base, quadratic, P0, 0.3, num_steps=20)
        return dynamics.train(quadratic, P0, dynamics.gd(0.3), num_steps=20, save=save)

    every = run(dynamics.Save(every=1, fn=plain.fn))
    at = run(dynamics.Save(steps=steps, fn=plain.fn))
    for name in ("loss", "flow_distance", "flow_loss"):
        expected = every.values[name][np.asarray(steps)]
        np.testing.assert_allclose(at.values[name], expected, rtol=1e-12, atol=1e-15, err_msg=name)
    assert float(at.values["flow_distance"][-1]) > 0
    sharp = dynamics.landscape.with_sharpness(dynamics.Save(steps=steps, fn=plain.fn), quadratic, 0.3)
    assert sharp.steps == steps and sharp.every is None and sharp.carry is not None


def test_stages_save_at_steps():
    def stage(save):
        return dynamics.Stage(quadratic, dynamics.gd(0.3), True, num_steps=12, save=save)

    (at,) = dynamics.train_stages(P0, [stage(dynamics.Save(steps=(0, 3, 12)))])
    (all_steps,) = dynamics.train_stages(P0, [stage(dynamics.Save(every=1))])
    np.testing.assert_array_equal(at.ts, [0, 3, 12])
    np.testing.assert_array_equal(at.values, all_steps.values[np.array([0, 3, 12])])


def test_saves_at_steps_vmap_over_seeds_as_a_loop_of_runs():
    save = dynamics.Save(steps=dynamics.log_spaced_steps(40, 6), fn=record)

    def one(key):
        return dynamics.train(
            batch_loss, P0, dynamics.gd(0.3), num_steps=40, key=key, sample=sample, save=save
        )

    keys = dynamics.seed_keys(0, 3)
    batched = jax.vmap(one)(keys)
    for i, key in enumerate(keys):
        alone = one(key)
        np.testing.assert_array_equal(batched.values["loss"][i], alone.values["loss"])


@pytest.mark.unchecked_types
@pytest.mark.parametrize(
    "steps",
    [(), (1, 1), (3, 2), (-1, 4), (0, 1.5), (True, 2), 5, "0123", np.array([[0, 1]]), (0, None)],
)
def test_save_steps_that_are_not_increasing_whole_numbers_are_refused(steps):
    with pytest.raises(ValueError, match="steps must be strictly increasing integers >= 0"):
        dynamics.Save(steps=steps)


def test_save_steps_come_alone_and_within_the_run():
    with pytest.raises(ValueError, match="every and steps"):
        dynamics.Save(every=2, steps=(0, 2))
    with pytest.raises(ValueError, match="ts and steps"):
        dynamics.Save(ts=jnp.array([0.0, 1.0]), steps=(0, 2))
    with pytest.raises(ValueError, match="reach the last save step, got num_steps=4, last save step 5"):
        dynamics.train(quadratic, P0, dynamics.gd(0.1), num_steps=4, save=dynamics.Save(steps=(0, 5)))
    with pytest.raises(ValueError, match="not every few steps or at steps"):
        dynamics.gradient_flow(quadratic, P0, t1=1.0, save=dynamics.Save(steps=(0, 1)))
    np.testing.assert_array_equal(dynamics.Save(steps=np.array([0, 4, 9])).steps, (0, 4, 9))


@given(num_steps=st.integers(1, 10**7), num_saves=st.integers(1, 300))
def test_log_spaced_steps_run_from_zero_to_the_end_evenly_in_log_time(num_steps, num_saves):
    steps = dynamics.log_spaced_steps(num_steps, num_saves)
    assert steps[0] == 0 and steps[-1] == num_steps and np.all(np.diff(steps) > 0)
    assert len(steps) <= num_saves + 1 + (num_saves == 1)
    gaps = np.diff(np.log(steps[1:]))  # after step 1: no wider in log-time than the spacing allows
    if num_saves > 1 and gaps.size:
        spacing = np.log(num_steps) / (num_saves - 1)
        assert np.all(gaps <= spacing + np.log1p(1.0 / steps[1:-1]) + 1e-9)


@pytest.mark.unchecked_types
@pytest.mark.parametrize(("num_steps", "num_saves"), [(0, 5), (10, 0), (2.5, 3), (10, True), ("10", 3)])
def test_log_spaced_steps_refuse_what_is_not_a_count(num_steps, num_saves):
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        dynamics.log_spaced_steps(num_steps, num_saves)
