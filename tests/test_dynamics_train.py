"""Discrete training: optax steps under lax.scan against hand-written recursions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics

A = jnp.array([1.0, 0.5, 2.0])


def quadratic(p):
    return 0.5 * jnp.sum(A * p["x"] ** 2) + 0.5 * p["y"] ** 2


def grad_by_hand(p):
    return {"x": A * p["x"], "y": p["y"]}


P0 = {"x": jnp.array([1.0, -2.0, 0.5]), "y": jnp.array(1.5)}
RATES = {"x": 0.3, "y": 0.05}


def test_full_batch_gd_equals_euler_recursion_with_group_rates():
    run = dynamics.train(quadratic, P0, dynamics.gd(RATES), num_steps=20, save=dynamics.Save(every=5))
    x, y = np.asarray(P0["x"]), float(P0["y"])
    saved = [x]
    for k in range(1, 21):
        x, y = x - 0.3 * np.asarray(A) * x, y - 0.05 * y
        if k % 5 == 0:
            saved.append(x)
    np.testing.assert_allclose(run.values["x"], np.stack(saved), rtol=1e-13)
    np.testing.assert_allclose(run.final["y"], y, rtol=1e-13)
    np.testing.assert_array_equal(run.ts, [0, 5, 10, 15, 20])


def test_heavy_ball_is_the_pytorch_form():
    mu = 0.9
    run = dynamics.train(quadratic, P0, dynamics.heavy_ball(RATES, momentum=mu), num_steps=15)
    p = {k: np.asarray(v) for k, v in P0.items()}
    v = {k: np.zeros_like(a) for k, a in p.items()}
    for _ in range(15):
        g = {k: np.asarray(a) for k, a in grad_by_hand(p).items()}
        v = {k: mu * v[k] + g[k] for k in p}  # v <- mu v + g
        p = {k: p[k] - RATES[k] * v[k] for k in p}  # p <- p - eta v
    np.testing.assert_allclose(run.final["x"], p["x"], rtol=1e-12)
    np.testing.assert_allclose(run.final["y"], p["y"], rtol=1e-12)


def test_adam_matches_pytorch_update():
    b1, b2, eps = 0.9, 0.999, 1e-8
    run = dynamics.train(quadratic, P0, dynamics.adam(RATES), num_steps=10)
    p = {k: np.asarray(v) for k, v in P0.items()}
    m = {k: np.zeros_like(a) for k, a in p.items()}
    s = {k: np.zeros_like(a) for k, a in p.items()}
    for step in range(1, 11):
        g = {k: np.asarray(a) for k, a in grad_by_hand(p).items()}
        for k in p:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            s[k] = b2 * s[k] + (1 - b2) * g[k] ** 2
            m_hat, s_hat = m[k] / (1 - b1**step), s[k] / (1 - b2**step)
            p[k] = p[k] - RATES[k] * m_hat / (np.sqrt(s_hat) + eps)
    np.testing.assert_allclose(run.final["x"], p["x"], rtol=1e-10)


def test_sgd_on_fresh_minibatches_uses_one_key_per_step():
    """Loss (p - batch)²/2 on batches drawn from N(0, 1): p_k+1 = p_k - eta (p_k - mean(batch_k))."""

    def sample(key):
        return jax.random.normal(key, (8,))

    def loss(p, batch):
        return 0.5 * jnp.mean((p - batch) ** 2)

    key = jax.random.PRNGKey(3)
    run = dynamics.train(loss, jnp.array(2.0), dynamics.gd(0.5), num_steps=6, key=key, sample=sample)
    p = 2.0
    for step in range(6):
        batch = np.asarray(sample(jax.random.fold_in(key, step)))
        p = p - 0.5 * (p - batch.mean())
    np.testing.assert_allclose(run.final, p, rtol=1e-13)


def test_event_freezes_the_run():
    run = dynamics.train(
        quadratic,
        P0,
        dynamics.gd(0.1),
        num_steps=400,
        save=dynamics.Save(every=10),
        events={"loss_below": dynamics.loss_below(quadratic, 1e-2)},
    )
    assert dynamics.stop_reason(run.stop, run.event, ("loss_below",)) == "event:loss_below"
    assert float(quadratic(run.final)) < 1e-2
    # The last saves repeat the frozen state.
    np.testing.assert_array_equal(run.values["x"][-1], run.values["x"][-2])
    assert 0 < int(run.t_stop) < 400
    assert int(run.num_steps) == int(run.t_stop)


def test_divergence_is_flagged_and_keeps_last_finite_state():
    run = dynamics.train(lambda p: jnp.exp(p**2), jnp.array(2.0), dynamics.gd(1.0), num_steps=10)
    assert run.stop == dynamics.StopReason.nonfinite
    assert np.isfinite(float(run.final))


@pytest.mark.unchecked_types
@pytest.mark.parametrize("every", [0, -2, 1.5, True, "2"])
def test_a_save_period_that_is_not_a_positive_integer_is_refused(every):
    with pytest.raises(ValueError, match="every must be an integer >= 1"):
        dynamics.Save(every=every)


def test_a_save_is_for_times_of_a_flow_or_steps_of_training_not_both():
    with pytest.raises(ValueError, match="ts and every"):
        dynamics.Save(ts=jnp.linspace(0.0, 1.0, 3), every=2)
    with pytest.raises(ValueError, match="not at times ts"):
        dynamics.train(quadratic, P0, dynamics.gd(0.1), num_steps=4, save=dynamics.Save(ts=jnp.zeros(2)))
    with pytest.raises(ValueError, match="a flow saves at times"):
        dynamics.ode_flow(lambda t, y, args: -y, jnp.array(1.0), t1=1.0, save=dynamics.Save(every=2))


def test_a_training_save_sees_the_step_number():
    run = dynamics.train(
        quadratic, P0, dynamics.gd(RATES), num_steps=6, save=dynamics.Save(every=3, fn=lambda t, p, args: t)
    )
    assert run.values.tolist() == run.ts.tolist() == [0, 3, 6]


def _count_saves(step, theta, args, count):
    return {"count": count, "theta": theta}, count + 1


def test_a_save_s_carry_passes_from_each_save_to_the_next():
    """A carry started from the initial state at save 0 reaches save k as start + k, in training
    and through each stage of `train_stages` (a stage starts its carry anew)."""
    start = jnp.array(1.0)
    save = dynamics.Save(every=2, fn=_count_saves, carry=lambda theta: 10 * theta)
    run = dynamics.train(lambda theta: 0.5 * theta**2, start, dynamics.gd(0.5), num_steps=6, save=save)
    assert run.values["count"].tolist() == [10.0, 11.0, 12.0, 13.0]
    assert run.values["theta"].tolist() == [1.0, 0.25, 0.0625, 0.015625]
    stage = dynamics.Stage(lambda theta: 0.5 * theta**2, dynamics.gd(0.5), True, num_steps=4, save=save)
    first, second = dynamics.train_stages(start, [stage, stage])
    assert first.values["count"].tolist() == [10.0, 11.0, 12.0]
    assert second.values["count"].tolist() == [0.625, 1.625, 2.625]  # 10 θ, θ = 2⁻⁴ after 4 steps


def test_a_carry_is_for_training_only():
    with pytest.raises(ValueError, match="not at a flow's ts"):
        dynamics.Save(ts=jnp.linspace(0.0, 1.0, 3), fn=_count_saves, carry=jnp.abs)
    with pytest.raises(ValueError, match="keep no carry"):
        dynamics.ode_flow(
            lambda t, y, args: -y, jnp.array(1.0), t1=1.0, save=dynamics.Save(fn=_count_saves, carry=jnp.abs)
        )
    with pytest.raises(ValueError, match="not at times ts"):
        stage = dynamics.Stage(
            quadratic, dynamics.gd(0.1), True, num_steps=2, save=dynamics.Save(ts=jnp.zeros(2))
        )
        dynamics.train_stages(P0, [stage])


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="multiple of every"):
        dynamics.train(quadratic, P0, dynamics.gd(0.1), num_steps=10, save=dynamics.Save(every=3))
    with pytest.raises(ValueError, match="key"):
        dynamics.train(lambda p, b: p, P0, dynamics.gd(0.1), num_steps=1, sample=lambda k: k)
    with pytest.raises(ValueError, match="momentum"):
        dynamics.heavy_ball(0.1, momentum=1.0)
