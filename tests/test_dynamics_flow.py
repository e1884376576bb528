"""Gradient flow and general ODE flows against closed forms."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics

A = jnp.array([1.0, 0.5, 2.0])


def quadratic(params):
    """L = ½ Σ a_i x_i² + ½ b y²: the flow with rates (r_x, r_y) is x_i(t) = x_i(0) e^{−r_x a_i t}."""
    return 0.5 * jnp.sum(A * params["x"] ** 2) + 0.5 * 3.0 * params["y"] ** 2


def test_gradient_flow_matches_closed_form_with_group_rates():
    params = {"x": jnp.array([1.0, -2.0, 0.5]), "y": jnp.array(1.5)}
    rates = {"x": 0.7, "y": 0.2}
    ts = jnp.linspace(0.0, 3.0, 7)
    tight = diffrax.PIDController(rtol=1e-11, atol=1e-12)
    run = dynamics.gradient_flow(
        quadratic, params, rates=rates, t1=3.0, save=dynamics.Save(ts=ts), stepsize_controller=tight
    )
    expected_x = params["x"] * jnp.exp(-0.7 * A * ts[:, None])
    expected_y = params["y"] * jnp.exp(-0.2 * 3.0 * ts)
    np.testing.assert_allclose(run.values["x"], expected_x, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(run.values["y"], expected_y, rtol=1e-8, atol=1e-12)
    assert run.stop == dynamics.StopReason.completed
    assert float(run.t_stop) == 3.0


def test_saved_function_of_state_and_monotone_loss():
    params = {"x": jnp.array([1.0, -2.0, 0.5]), "y": jnp.array(1.5)}
    ts = jnp.linspace(0.0, 5.0, 50)
    save = dynamics.Save(ts=ts, fn=lambda t, y, args: quadratic(y))
    run = dynamics.gradient_flow(quadratic, params, t1=5.0, save=save)
    assert run.values.shape == (50,)
    assert np.all(np.diff(np.asarray(run.values)) <= 0.0)
    np.testing.assert_allclose(run.values[0], quadratic(params))


def test_the_save_function_sees_the_time_and_the_args():
    ts = jnp.linspace(0.0, 2.0, 5)
    save = dynamics.Save(ts=ts, fn=lambda t, y, args: {"t": t, "y": y, "scaled": args * y})
    run = dynamics.ode_flow(lambda t, y, args: -y, jnp.array(1.0), t1=2.0, args=3.0, save=save)
    np.testing.assert_allclose(run.values["t"], ts)
    np.testing.assert_allclose(run.values["y"], jnp.exp(-ts), rtol=1e-7)
    np.testing.assert_allclose(run.values["scaled"], 3.0 * jnp.exp(-ts), rtol=1e-7)


def test_loss_event_stops_the_run_and_is_reported():
    params = {"x": jnp.array([1.0, -2.0, 0.5]), "y": jnp.array(1.5)}
    run = dynamics.gradient_flow(
        quadratic,
        params,
        t1=100.0,
        events={"never": lambda p: jnp.array(False), "loss_below": dynamics.loss_below(quadratic, 1e-3)},
    )
    assert dynamics.stop_reason(run.stop, run.event, ("never", "loss_below")) == "event:loss_below"
    assert float(quadratic(run.final)) < 1e-3
    # Stopped early, at the first accepted step below the threshold, not at t1.
    assert 1.0 < float(run.t_stop) < 20.0


def test_nonfinite_state_stops_the_run():
    def blow_up(t, y, args):
        return y**2  # y(t) = 1 / (1 - t): infinite at t = 1

    run = dynamics.ode_flow(blow_up, jnp.array(1.0), t1=2.0, max_steps=10_000)
    reason = dynamics.StopReason(int(run.stop))
    assert reason in (dynamics.StopReason.nonfinite, dynamics.StopReason.max_steps)
    assert float(run.t_stop) <= 1.0 + 1e-6


def test_ode_flow_other_solver_and_args():
    run = dynamics.ode_flow(
        lambda t, y, k: -k * y,
        jnp.array(2.0),
        t1=1.0,
        args=jnp.array(3.0),
        solver=diffrax.Dopri8(),
        stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-14),
    )
    np.testing.assert_allclose(run.final, 2.0 * np.exp(-3.0), rtol=1e-10)


def test_ode_flow_with_constant_steps_is_explicit_euler():
    run = dynamics.ode_flow(
        lambda t, y, args: -y,
        jnp.array(1.0),
        t1=1.0,
        solver=diffrax.Euler(),
        stepsize_controller=diffrax.ConstantStepSize(),
        dt0=0.1,
    )
    assert int(run.num_steps) == 10
    np.testing.assert_allclose(run.final, 0.9**10, rtol=1e-12)


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_loss_below_is_a_plain_predicate(bad):
    assert bool(dynamics.loss_below(lambda p: p, 0.5)(jnp.array(bad)))


def test_a_crossing_is_located_exactly_and_a_predicate_at_the_end_of_a_step():
    decay = lambda t, y, args: -y  # noqa: E731 - y(t) = e^{-t} crosses 1/2 at t = ln 2
    exact = dynamics.ode_flow(
        decay, jnp.array(1.0), t1=5.0, events={"half": dynamics.Crossing(lambda y: y - 0.5)}
    )
    assert dynamics.stop_reason(exact.stop, exact.event, exact.event_names) == "event:half"
    assert abs(float(exact.t_stop) - np.log(2.0)) < 1e-8  # the root of the solution (rtol 1e-8)
    assert abs(float(exact.final) - 0.5) < 1e-12  # the state at the root found
    stepped = dynamics.ode_flow(decay, jnp.array(1.0), t1=5.0, events={"half": lambda y: y < 0.5})
    assert float(stepped.t_stop) > np.log(2.0) + 1e-3  # the end of the step where it first holds


def test_runs_keep_their_event_names_through_vmap():
    def one(y0):
        events = {"never": lambda y: y > 10.0, "small": dynamics.Crossing(lambda y: y - 0.1)}
        return dynamics.ode_flow(lambda t, y, args: -y, y0, t1=1.0, events=events)

    runs = jax.vmap(one)(jnp.array([1.0, 0.2]))
    assert runs.event_names == ("never", "small")
    reasons = [dynamics.stop_reason(s, e, runs.event_names) for s, e in zip(runs.stop, runs.event)]
    assert reasons == ["completed", "event:small"]


def test_is_successful_is_completed_or_a_user_event():
    def one(y0):
        return dynamics.ode_flow(lambda t, y, args: y * y, y0, t1=1.0, events={"big": lambda y: y > 5.0})

    runs = jax.vmap(one)(jnp.array([0.1, 0.9, 2.0]))  # y' = y² blows up at t = 1/y0
    names = [dynamics.StopReason(int(s)).name for s in runs.stop]
    assert names == ["completed", "event", "event"]
    assert list(runs.is_successful()) == [True, True, True]
    diverged = dynamics.ode_flow(lambda t, y, args: y * y, jnp.array(2.0), t1=1.0)
    assert dynamics.StopReason(int(diverged.stop)) in (
        dynamics.StopReason.nonfinite,
        dynamics.StopReason.max_steps,
    )
    assert not bool(diverged.is_successful())
