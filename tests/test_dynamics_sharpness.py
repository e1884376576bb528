"""Sharpness and the gap between gradient descent and gradient flow, against quadratics solved in
closed form (float64)."""

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import dynamics

from .helpers import tree_allclose

CURVATURES = np.array([0.5, 1.0, 2.0])
"""The eigenvalues of the Hessian H of the quadratic; its sharpness is 2 everywhere."""
ROTATION = np.linalg.qr(np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0], [0.7, -1.2, 1.0]]))[0]
"""The eigenvectors of H, as columns."""
HESSIAN = ROTATION @ np.diag(CURVATURES) @ ROTATION.T
START = {"a": jnp.array([1.0, -0.5]), "b": jnp.array(0.8)}
"""A starting point split over two leaves: distances are Euclidean over all of them."""
TIGHT = diffrax.PIDController(rtol=1e-12, atol=1e-14)
"""Flow tolerances far below the 1e-9 to which gaps are compared."""


def _flat(params):
    return jnp.concatenate([params["a"], params["b"][None]])


def _quadratic(params):
    """½ θᵀHθ on the parameters {"a": θ₁₋₂, "b": θ₃}."""
    theta = _flat(params)
    return 0.5 * theta @ jnp.asarray(HESSIAN) @ theta


def _closed_form_gap(theta0, step_size, steps):
    """Per step k: ‖θ_GD(k) − θ_flow(kη)‖ and both losses, from θ_k = (I − ηH)^k θ₀ and
    θ(t) = exp(−tH) θ₀ in H's eigenbasis."""
    coordinates = ROTATION.T @ np.asarray(theta0)
    gd = (1 - step_size * CURVATURES) ** steps[:, None] * coordinates
    flow = np.exp(-step_size * steps[:, None] * CURVATURES) * coordinates
    losses = [0.5 * np.sum(CURVATURES * z**2, axis=1) for z in (gd, flow)]
    return np.linalg.norm(gd - flow, axis=1), *losses


@functools.partial(jax.jit, static_argnames=("num_steps", "every"))
def _gap(start, step_size, num_steps, every):
    return dynamics.landscape.gd_flow_gap(
        _quadratic, start, step_size, num_steps=num_steps, every=every, stepsize_controller=TIGHT
    )


def test_sharpness_of_a_quadratic_is_its_top_curvature_everywhere(getkey):
    points = jax.random.normal(getkey(), (4, 3))
    found = jax.vmap(
        lambda theta: dynamics.landscape.sharpness(lambda t: 0.5 * t @ jnp.asarray(HESSIAN) @ t, theta)
    )(points)
    np.testing.assert_allclose(found, [CURVATURES.max()] * 4, rtol=1e-12)


def test_edge_of_stability_save_records_loss_sharpness_and_ratio_along_gd():
    step_size = 0.7  # λ_max η / 2 = 0.7: below the edge 2/η
    save = dynamics.landscape.edge_of_stability_save(_quadratic, step_size, every=3)
    run = dynamics.train(_quadratic, START, dynamics.gd(step_size), num_steps=12, save=save)
    _, gd_loss, _ = _closed_form_gap(_flat(START), step_size, np.arange(0, 13, 3))
    np.testing.assert_allclose(run.values["loss"], gd_loss, rtol=1e-12)
    np.testing.assert_allclose(run.values["sharpness"], [2.0] * 5, rtol=1e-12)
    np.testing.assert_allclose(run.values["sharpness_ratio"], [2.0 * step_size / 2] * 5, rtol=1e-12)


def test_with_sharpness_adds_to_what_a_save_records_and_keeps_its_period():
    """Beside the save's own record: the sharpness of the loss at each saved state, the ratio to
    2/η given η, the parameters read from the state by `params`; without a step size no ratio."""
    step_size = 0.7
    distance = dynamics.Save(every=3, fn=lambda step, theta, args: {"norm": _flat(theta) @ _flat(theta)})
    save = dynamics.landscape.with_sharpness(distance, _quadratic, step_size)
    run = dynamics.train(_quadratic, START, dynamics.gd(step_size), num_steps=12, save=save)
    alone = dynamics.train(_quadratic, START, dynamics.gd(step_size), num_steps=12, save=distance)
    assert save.every == 3 and run.ts.tolist() == alone.ts.tolist() == [0, 3, 6, 9, 12]
    np.testing.assert_array_equal(run.values["norm"], alone.values["norm"])
    np.testing.assert_allclose(run.values["sharpness"], [2.0] * 5, rtol=1e-12)
    np.testing.assert_allclose(run.values["sharpness_ratio"], [step_size] * 5, rtol=1e-12)
    wrapped = dynamics.Save(every=6, fn=lambda step, state, args: {"half": state["theta"]["a"] / 2})
    only = dynamics.landscape.with_sharpness(wrapped, _quadratic, params=lambda state: state["theta"])
    run = dynamics.train(
        lambda state: _quadratic(state["theta"]), {"theta": START}, dynamics.gd(0.1), num_steps=12, save=only
    )
    assert sorted(run.values) == ["half", "sharpness"]
    np.testing.assert_allclose(run.values["sharpness"], [2.0] * 3, rtol=1e-12)


def test_with_sharpness_equals_the_edge_of_stability_save_and_refuses_a_non_dict_record():
    eos = dynamics.landscape.edge_of_stability_save(_quadratic, 0.3, every=2)
    losses = dynamics.Save(every=2, fn=lambda step, theta, args: {"loss": _quadratic(theta)})
    mine = dynamics.landscape.with_sharpness(losses, _quadratic, 0.3)
    runs = [dynamics.train(_quadratic, START, dynamics.gd(0.3), num_steps=6, save=s) for s in (eos, mine)]
    assert tree_allclose(runs[0].values, runs[1].values)
    bare = dynamics.landscape.with_sharpness(
        dynamics.Save(every=2, fn=lambda step, theta, args: _flat(theta)), _quadratic
    )
    with pytest.raises(TypeError, match="adds to the dict a save function returns, got"):
        dynamics.train(_quadratic, START, dynamics.gd(0.3), num_steps=2, save=bare)


def test_sharpness_follows_the_run_when_the_hessian_changes():
    """¼ Σ θᵢ⁴ has Hessian diag(3θᵢ²): the saved sharpness is 3 max θᵢ² at each saved θ."""

    def quartic(theta):
        return 0.25 * jnp.sum(theta**4)

    save = dynamics.Save(every=4, fn=lambda step, theta, args: {"theta": theta})
    run = dynamics.train(
        quartic,
        jnp.array([1.5, -0.4, 1.0]),
        dynamics.gd(0.1),
        num_steps=20,
        save=dynamics.landscape.with_sharpness(save, quartic, 0.1),
    )
    top = 3 * jnp.max(run.values["theta"] ** 2, axis=1)
    np.testing.assert_allclose(run.values["sharpness"], top, rtol=1e-12)
    np.testing.assert_allclose(run.values["sharpness_ratio"], top * 0.1 / 2, rtol=1e-12)
    assert float(run.values["sharpness_ratio"][0]) == pytest.approx(0.3375)


def test_gap_matches_the_closed_form_at_every_save():
    gap = _gap(START, 0.01, num_steps=200, every=50)
    distance, gd_loss, flow_loss = _closed_form_gap(_flat(START), 0.01, np.arange(0, 201, 50))
    assert gap.steps.tolist() == [0, 50, 100, 150, 200]
    np.testing.assert_allclose(gap.times, [0.0, 0.5, 1.0, 1.5, 2.0], rtol=1e-15)
    np.testing.assert_allclose(gap.distance, distance, rtol=0, atol=1e-9)
    np.testing.assert_allclose(gap.gd_loss, gd_loss, rtol=0, atol=1e-12)
    np.testing.assert_allclose(gap.flow_loss, flow_loss, rtol=0, atol=1e-9)
    assert int(gap.gd_stop) == int(gap.flow_stop) == dynamics.StopReason.completed
    assert 1e-3 < float(gap.distance[-1]) < 1e-2


@pytest.mark.slow
def test_gap_is_first_order_in_the_step_size():
    """At fixed times t = 0.5 … 2, halving η halves the gap, up to O(ηλ²t) ≤ 0.08 here."""
    coarse = _gap(START, 0.01, num_steps=200, every=50)
    fine = _gap(START, 0.005, num_steps=400, every=100)
    np.testing.assert_allclose(fine.times, coarse.times, rtol=1e-15)
    distance, _, _ = _closed_form_gap(_flat(START), 0.005, np.arange(0, 401, 100))
    np.testing.assert_allclose(fine.distance, distance, rtol=0, atol=1e-9)
    np.testing.assert_allclose(coarse.distance[1:] / fine.distance[1:], 2.0, rtol=0.1)


@pytest.mark.slow
def test_vmap_over_starting_points_equals_a_loop(getkey):
    starts = {"a": jax.random.normal(getkey(), (3, 2)), "b": jax.random.normal(getkey(), (3,))}
    batched = jax.jit(jax.vmap(lambda start: _gap(start, 0.01, num_steps=200, every=50)))(starts)
    singles = [
        _gap(jax.tree.map(lambda leaf: leaf[i], starts), 0.01, num_steps=200, every=50) for i in range(3)
    ]
    looped = jax.tree.map(lambda *leaves: jnp.stack(leaves), *singles)
    assert tree_allclose(batched, looped, rtol=1e-10, atol=1e-12)
    for i, single in enumerate(singles):
        theta0 = _flat(jax.tree.map(lambda leaf: leaf[i], starts))
        np.testing.assert_allclose(
            single.distance, _closed_form_gap(theta0, 0.01, np.arange(0, 201, 50))[0], atol=1e-9
        )


def test_flow_arguments_the_gap_sets_itself_are_refused():
    with pytest.raises(ValueError, match=r"\['rates', 't1'\]"):
        dynamics.landscape.gd_flow_gap(_quadratic, START, 0.1, num_steps=2, every=1, t1=1.0, rates=2.0)


GROUP_RATES = {"a": 0.3, "b": 0.05}
"""Step sizes per leaf of START: R = diag(0.3, 0.3, 0.05) in the flat coordinates."""


def _rate_matrix() -> np.ndarray:
    return np.diag([GROUP_RATES["a"]] * 2 + [GROUP_RATES["b"]])


@pytest.mark.slow
def test_the_sharpness_ratio_with_a_step_size_per_group_is_that_of_the_rescaled_hessian():
    """With step sizes R per group the ratio is λ_max(R^½ H R^½)/2, here on a loss that is not
    quadratic, against the dense Hessian at the same point."""

    def loss(params):
        theta = _flat(params)
        return _quadratic(params) + 0.1 * jnp.sum(jnp.cos(theta) * theta**3)

    save = dynamics.landscape.with_sharpness(dynamics.Save(fn=lambda step, p, args: {}), loss, GROUP_RATES)
    record = save.fn(0, START, None)
    root = np.sqrt(_rate_matrix())
    hessian = np.asarray(jax.hessian(lambda theta: loss({"a": theta[:2], "b": theta[2]}))(_flat(START)))
    np.testing.assert_allclose(record["sharpness"], np.linalg.eigvalsh(hessian)[-1], rtol=1e-12)
    scaled = np.linalg.eigvalsh(root @ hessian @ root)[-1]
    np.testing.assert_allclose(record["sharpness_ratio"], scaled / 2, rtol=1e-12)


def test_the_flow_distance_of_gd_with_a_step_size_per_group_is_its_closed_form():
    """GD with rates R is θ_k = (I − RH)^k θ₀ and its flow θ(t) = exp(−RHt) θ₀; with S = R^½HR^½ =
    QΛQᵀ both are R^½ Q f(Λ) Qᵀ R^{−½} θ₀."""
    every, num_steps = 4, 20
    save = dynamics.landscape.with_flow_distance(
        dynamics.Save(every=every, fn=lambda step, p, args: {}),
        _quadratic,
        START,
        GROUP_RATES,
        num_steps=num_steps,
        stepsize_controller=TIGHT,
    )
    run = dynamics.train(_quadratic, START, dynamics.gd(GROUP_RATES), num_steps=num_steps, save=save)
    root = np.sqrt(_rate_matrix())
    curvatures, basis = np.linalg.eigh(root @ HESSIAN @ root)
    start = basis.T @ np.linalg.solve(root, np.asarray(_flat(START)))
    steps = np.arange(0, num_steps + 1, every)[:, None]
    gd = (root @ basis @ ((1 - curvatures) ** steps * start).T).T
    flow = (root @ basis @ (np.exp(-curvatures * steps) * start).T).T
    np.testing.assert_allclose(run.values["flow_distance"], np.linalg.norm(gd - flow, axis=1), atol=1e-9)
    losses = 0.5 * np.einsum("ki,ij,kj->k", flow, HESSIAN, flow)
    np.testing.assert_allclose(run.values["flow_loss"], losses, rtol=1e-9)


def test_the_sharpness_ratio_of_normalized_gd_takes_the_step_of_each_block():
    """A normalized step moves block b by η_b along its gradient: GD with rates η_b/‖∇_b L‖, whose
    ratio is λ_max(R^½ H R^½)/2 with those rates, against the dense Hessian (one η: λ_max·η/(2‖∇L‖))."""
    save = dynamics.Save(fn=lambda step, p, args: {})
    hessian = np.asarray(HESSIAN)
    gradient = hessian @ np.asarray(_flat(START))
    per_block = dynamics.landscape.with_sharpness(save, _quadratic, dynamics.NormalizedSteps(GROUP_RATES)).fn(
        0, START, None
    )
    rates = np.diag(
        [GROUP_RATES["a"] / np.linalg.norm(gradient[:2])] * 2 + [GROUP_RATES["b"] / abs(gradient[2])]
    )
    root = np.sqrt(rates)
    np.testing.assert_allclose(
        per_block["sharpness_ratio"], np.linalg.eigvalsh(root @ hessian @ root)[-1] / 2, rtol=1e-12
    )
    one = dynamics.landscape.with_sharpness(save, _quadratic, dynamics.NormalizedSteps(0.3)).fn(
        0, START, None
    )
    np.testing.assert_allclose(one["sharpness_ratio"], 2.0 * 0.3 / (2 * np.linalg.norm(gradient)), rtol=1e-12)


@pytest.mark.parametrize("max_norm", [0.1, 100.0])
def test_the_sharpness_ratio_of_clipped_gd_takes_its_rates_times_the_clipping_factor(max_norm):
    """A step clipped to global norm c is GD's with rates R·min(1, c/(‖∇L‖ + ε)): the ratio is
    λ_max(R^½ H R^½)/2 with those rates, against the dense Hessian, clipped (c = 0.1) or not
    (c = 100). The step optax's clipping (ε = 0) then GD takes is GD's with those rates."""
    save = dynamics.Save(fn=lambda step, p, args: {})
    eps = 1e-6
    gradient = np.asarray(HESSIAN) @ np.asarray(_flat(START))
    factor = min(1.0, max_norm / (np.linalg.norm(gradient) + eps))
    assert (factor < 1.0) == (max_norm < 1.0)
    steps = dynamics.ClippedSteps(GROUP_RATES, max_norm, eps)
    record = dynamics.landscape.with_sharpness(save, _quadratic, steps).fn(0, START, None)
    root = np.sqrt(_rate_matrix() * factor)
    np.testing.assert_allclose(
        record["sharpness_ratio"], np.linalg.eigvalsh(root @ HESSIAN @ root)[-1] / 2, rtol=1e-12
    )
    clipped = optax.chain(optax.clip_by_global_norm(max_norm), dynamics.gd(GROUP_RATES))
    grads = jax.grad(_quadratic)(START)
    moved, _ = clipped.update(grads, clipped.init(START), START)
    rates = dynamics.ClippedSteps(GROUP_RATES, max_norm).edge_rates(_quadratic, START, None)  # optax: ε = 0
    assert tree_allclose(moved, jax.tree.map(lambda rate, g: -rate * g, rates, grads), rtol=1e-12)


def test_the_normalized_flow_is_the_gradient_flow_s_path_at_normalized_gd_s_speed():
    """On ½(x² + 4y²) from (1, 1) the gradient flow is (e^{−t}, e^{−4t}); the normalized flow
    alongside normalized GD with step η is at step k where the gradient flow's path has length ηk,
    so its loss is the gradient flow's at the t where ∫₀ᵗ ‖∇L‖ = ηk (quadrature and root finding)."""
    import scipy.integrate
    import scipy.optimize

    def loss(theta):
        return 0.5 * (theta[0] ** 2 + 4 * theta[1] ** 2)

    def speed(t):
        return np.hypot(np.exp(-t), 4 * np.exp(-4 * t))

    eta, every, num_steps = 0.05, 5, 20
    save = dynamics.landscape.with_flow_distance(
        dynamics.Save(every=every, fn=lambda step, p, args: {}),
        loss,
        jnp.ones(2),
        dynamics.NormalizedSteps(eta),
        num_steps=num_steps,
        stepsize_controller=TIGHT,
    )
    run = dynamics.train(loss, jnp.ones(2), dynamics.normalized_gd(eta), num_steps=num_steps, save=save)
    expected = []
    for k in range(0, num_steps + 1, every):
        t = scipy.optimize.brentq(
            lambda t: scipy.integrate.quad(speed, 0, t, epsabs=1e-14)[0] - eta * k, 0, 5
        )
        expected.append(0.5 * (np.exp(-2 * t) + 4 * np.exp(-8 * t)))
    np.testing.assert_allclose(run.values["flow_loss"], expected, rtol=1e-9)
    assert run.values["flow_distance"][0] == 0 and 0 < run.values["flow_distance"][-1] < eta


@pytest.mark.slow
def test_the_flow_distance_saved_along_gd_is_the_gap_of_gd_flow_gap():
    save = dynamics.landscape.with_flow_distance(
        dynamics.Save(every=5, fn=lambda step, p, args: {"loss": _quadratic(p)}),
        _quadratic,
        START,
        0.4,
        num_steps=20,
        stepsize_controller=TIGHT,
    )
    run = dynamics.train(_quadratic, START, dynamics.gd(0.4), num_steps=20, save=save)
    gap = _gap(START, 0.4, 20, 5)
    np.testing.assert_allclose(run.values["flow_distance"], gap.distance, atol=1e-10)
    np.testing.assert_allclose(run.values["flow_loss"], gap.flow_loss, rtol=1e-10)
    np.testing.assert_allclose(run.values["loss"], gap.gd_loss, rtol=1e-14)


@pytest.mark.unchecked_types
def test_along_adds_what_it_is_asked_for_and_refuses_what_it_cannot_do():
    save = dynamics.Save(every=2, fn=lambda step, p, args: {"loss": _quadratic(p)})
    assert dynamics.Along().save(save, _quadratic, START, 0.1, num_steps=4) is save
    both = dynamics.Along(sharpness=True, flow=True).save(save, _quadratic, START, 0.1, num_steps=4)
    run = dynamics.train(_quadratic, START, dynamics.gd(0.1), num_steps=4, save=both)
    assert sorted(run.values) == ["flow_distance", "flow_loss", "loss", "sharpness", "sharpness_ratio"]
    sharp = dynamics.Along(sharpness=True).save(save, _quadratic, START, num_steps=4)
    assert (
        "sharpness_ratio"
        not in dynamics.train(_quadratic, START, dynamics.gd(0.1), num_steps=4, save=sharp).values
    )
    with pytest.raises(ValueError, match="step sizes"):
        dynamics.Along(flow=True).save(save, _quadratic, START, num_steps=4)
    with pytest.raises(ValueError, match="every"):
        dynamics.landscape.with_flow_distance(
            dynamics.Save(ts=jnp.array([0.0])), _quadratic, START, 0.1, num_steps=4
        )
    with pytest.raises(ValueError, match="Along.flow"):
        dynamics.Along(flow="yes")


def test_the_sharpness_ratio_of_adam_is_that_of_its_preconditioned_hessian_against_38_over_eta():
    """Adam's ratio at each save is λ_max(P⁻¹H)·η(1 − β₁)/(2 + 2β₁), with P = (1 − β₁ᵗ)(√v̂ + ε) the
    preconditioner of the next step, rebuilt here from the saved optimiser state and the dense
    Hessian of a loss that is not quadratic."""

    def loss(params):
        theta = _flat(params)
        return _quadratic(params) + 0.1 * jnp.sum(jnp.cos(theta) * theta**3)

    b1, b2, eps = 0.9, 0.99, 1e-8
    steps = dynamics.AdamSteps(GROUP_RATES, b1=b1, b2=b2, eps=eps)
    keep = dynamics.Save(
        every=3, fn=lambda step, p, state: {"p": p, "nu": state[0].nu, "count": state[0].count}
    )
    save = dynamics.landscape.with_sharpness(keep, loss, steps)
    run = dynamics.train(
        loss, START, dynamics.adam(GROUP_RATES, b1=b1, b2=b2, eps=eps), num_steps=9, save=save
    )
    rates = np.diag(_rate_matrix())
    for k in range(len(run.ts)):
        p = jax.tree.map(lambda leaf: leaf[k], run.values["p"])
        theta, g = np.asarray(_flat(p)), np.asarray(_flat(jax.grad(loss)(p)))
        nu = np.asarray(_flat(jax.tree.map(lambda leaf: leaf[k], run.values["nu"])))
        t = int(run.values["count"][k]) + 1
        v = (b2 * nu + (1 - b2) * g**2) / (1 - b2**t)
        P = (1 - b1**t) * (np.sqrt(v) + eps) / rates  # per coordinate, the learning rate inside
        hessian = np.asarray(jax.hessian(lambda x: loss({"a": x[:2], "b": x[2]}))(theta))
        top = np.linalg.eigvals(np.linalg.solve(np.diag(P), hessian)).real.max()
        np.testing.assert_allclose(
            run.values["sharpness_ratio"][k], top * (1 - b1) / (2 + 2 * b1), rtol=1e-10
        )


def test_adam_becomes_unstable_where_its_ratio_crosses_1_and_then_hovers_at_its_edge():
    """Adam at η = 0.01 on ½θᵀdiag(1, 10, 100)θ: as the loss falls its second moment decays and
    the preconditioned sharpness grows. The loss falls (by a factor of 10 at most once between
    saves) until the first save where the ratio reaches 1; it jumps there or at the next save;
    from then on the ratio stays near 1 (the adaptive edge of stability)."""
    hessian = jnp.diag(jnp.array([1.0, 10.0, 100.0]))

    def loss(theta):
        return 0.5 * theta @ hessian @ theta

    steps = dynamics.AdamSteps(0.01, b2=0.99)
    save = dynamics.landscape.with_sharpness(
        dynamics.Save(every=50, fn=lambda s, p, state: {"loss": loss(p)}), loss, steps
    )
    run = dynamics.train(loss, jnp.ones(3), dynamics.adam(0.01, b2=0.99), num_steps=4000, save=save)
    losses, ratios = np.asarray(run.values["loss"]), np.asarray(run.values["sharpness_ratio"])
    edge = int(np.argmax(ratios >= 1))
    jump = int(np.argmax(losses[1:] > 10 * losses[:-1])) + 1
    assert 0 < edge <= jump <= edge + 1, (edge, jump, ratios[: edge + 2])
    assert 0.8 < np.median(ratios[jump:]) < 1.2


def _two_layer_linear(d: int = 6, h: int = 12, n: int = 64):
    """½ mean ‖W₂W₁x − Ax‖² on n Gaussian inputs, A = diag(1..d), and a start of size 10⁻²."""
    target = jnp.diag(jnp.linspace(1.0, float(d), d))
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    inputs = jax.random.normal(k3, (n, d))

    def loss(p):
        return 0.5 * jnp.mean(jnp.sum((inputs @ p["W1"].T @ p["W2"].T - inputs @ target.T) ** 2, axis=-1))

    return loss, {"W1": 1e-2 * jax.random.normal(k1, (h, d)), "W2": 1e-2 * jax.random.normal(k2, (d, h))}


@pytest.mark.slow
def test_in_training_each_lanczos_run_starts_from_the_last_eigenvector():
    """With 6 Lanczos steps in 144 parameters, the sharpness saved every 100 of 1500 steps of GD on a
    two-layer linear network is within 10⁻⁵ of the dense Hessian's top eigenvalue from the fifth
    save on, where 6 steps from the random start at each save miss it by more than 10⁻⁴."""
    loss, start = _two_layer_linear()
    eta = 0.5 / 6
    keep = dynamics.Save(every=100, fn=lambda step, p, args: {"p": p})
    warm = dynamics.train(
        loss,
        start,
        dynamics.gd(eta),
        num_steps=1500,
        save=dynamics.landscape.with_sharpness(keep, loss, eta, num_iters=6),
    )
    cold = dynamics.train(
        loss,
        start,
        dynamics.gd(eta),
        num_steps=1500,
        save=dynamics.Save(
            every=100, fn=lambda step, p, args: dynamics.landscape.sharpness(loss, p, num_iters=6)
        ),
    )
    dense = jax.jit(jax.vmap(lambda p: jnp.max(dynamics.landscape.hessian_spectrum(loss, p)[0])))(
        warm.values["p"]
    )
    assert np.max(np.abs(warm.values["sharpness"] - dense)[5:] / dense[5:]) < 1e-5
    assert np.max(np.abs(cold.values - dense)[5:] / dense[5:]) > 1e-4
    np.testing.assert_allclose(warm.values["sharpness_ratio"], warm.values["sharpness"] * eta / 2, rtol=1e-15)


def test_a_warm_start_on_another_eigenvector_still_finds_the_top():
    """Started exactly on the eigenvector of the smallest eigenvalue (where plain Lanczos would stop
    at once), the warm start's share of the random start still finds λ_max = 5 in 20 steps."""
    H = jnp.diag(jnp.linspace(1.0, 5.0, 50))
    bottom = jnp.zeros(50).at[0].set(1.0)
    top, vector = dynamics.landscape.top_eigenpair(
        lambda t: 0.5 * t @ H @ t, jnp.zeros(50), num_iters=20, start=bottom
    )
    assert abs(float(top) - 5.0) < 1e-5
    assert abs(float(vector[-1])) > 0.99 and float(jnp.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-14)


def _centre_columns(tangent):
    return tangent - jnp.mean(tangent, axis=0, keepdims=True)


def _projected_quadratic():
    """½ vec(W)ᵀ A vec(W) on a 3 × 2 matrix W, A a random symmetric positive definite matrix, with
    a step size per column and the projection that keeps the column sums, as dense matrices."""
    M = jax.random.normal(jax.random.PRNGKey(3), (6, 6))
    A = M @ M.T / 6 + 0.1 * jnp.eye(6)
    column_rates = jnp.array([0.1, 0.3])
    rates = jnp.broadcast_to(column_rates, (3, 2))
    centre = jnp.eye(3) - jnp.ones((3, 3)) / 3
    project = jnp.kron(centre, jnp.eye(2))  # vec is row-major: W[i, j] at 2i + j
    root = jnp.diag(jnp.sqrt(rates.reshape(-1)))
    edge = project @ root @ A @ root @ project
    return (lambda W: 0.5 * W.reshape(-1) @ A @ W.reshape(-1)), rates, float(jnp.linalg.eigvalsh(edge)[-1])


def test_projected_steps_ratio_is_the_top_eigenvalue_of_the_projected_scaled_hessian():
    loss, rates, top = _projected_quadratic()
    steps = dynamics.ProjectedSteps(rates, _centre_columns)
    save = dynamics.landscape.with_sharpness(dynamics.Save(every=1, fn=lambda step, W, args: {}), loss, steps)
    W0 = jax.random.normal(jax.random.PRNGKey(4), (3, 2))
    run = dynamics.train(loss, W0, dynamics.gd(rates), num_steps=2, save=save)
    np.testing.assert_allclose(run.values["sharpness_ratio"], top / 2, rtol=1e-12)


@pytest.mark.parametrize("ratio", [0.95, 1.05])
def test_projected_steps_are_unstable_exactly_past_a_ratio_of_one(ratio):
    """Projected preconditioned GD, θ ← θ − Π R ∇L, with R scaled so that the ratio is 0.95 or 1.05:
    the first converges on the subspace it keeps to, the second runs away."""
    loss, rates, top = _projected_quadratic()
    rates = rates * (2 * ratio / top)
    optimizer = optax.chain(dynamics.center_columns(), dynamics.gd(rates))  # a rate per column: they commute
    steps = dynamics.ProjectedSteps(rates, _centre_columns)
    save = dynamics.landscape.with_sharpness(
        dynamics.Save(every=200, fn=lambda step, W, args: {"loss": loss(W)}), loss, steps
    )
    W0 = jax.random.normal(jax.random.PRNGKey(4), (3, 2))
    run = dynamics.train(loss, W0, optimizer, num_steps=400, save=save)
    np.testing.assert_allclose(run.values["sharpness_ratio"], ratio, rtol=1e-10)
    size = float(jnp.max(jnp.abs(run.final)))
    np.testing.assert_allclose(run.final.sum(axis=0), W0.sum(axis=0), rtol=0, atol=1e-12 * max(size, 1.0))
    grows = float(run.values["loss"][-1]) > float(run.values["loss"][0])
    assert grows == (ratio > 1)


def test_a_save_whose_hessian_is_not_finite_leaves_the_next_one_a_fresh_start():
    """GD with step 0.5 on ½θ² halves θ; the sharpness is taken of a loss whose Hessian is NaN for
    θ in (0.3, 0.7), i.e. at the save of θ = 0.5 only: that save's sharpness is NaN, and the saves
    after it, started afresh rather than from a NaN vector, find the curvature 1 again."""

    def flawed(theta):
        return 0.5 * theta**2 * jnp.where((theta > 0.3) & (theta < 0.7), jnp.nan, 1.0)

    save = dynamics.landscape.with_sharpness(
        dynamics.Save(every=1, fn=lambda step, theta, args: {}), flawed, num_iters=1
    )
    run = dynamics.train(
        lambda theta: 0.5 * theta**2, jnp.array(1.0), dynamics.gd(0.5), num_steps=4, save=save
    )
    sharpness = np.asarray(run.values["sharpness"])
    assert np.isnan(sharpness[1]) and np.all(sharpness[[0, 2, 3, 4]] == 1.0)


@pytest.mark.slow
def test_a_training_save_without_a_function_records_only_what_is_added():
    """`Save(every=...)` with no `fn` records nothing of its own under `with_sharpness` and
    `with_flow_distance`, alone or one on top of the other (the sharpness's carry passed through)."""
    bare = dynamics.Save(every=2)
    sharp = dynamics.landscape.with_sharpness(bare, _quadratic, 0.3)
    both = dynamics.landscape.with_flow_distance(sharp, _quadratic, START, 0.3, num_steps=4)
    flow = dynamics.landscape.with_flow_distance(bare, _quadratic, START, 0.3, num_steps=4)
    for save, names in [
        (sharp, ["sharpness", "sharpness_ratio"]),
        (flow, ["flow_distance", "flow_loss"]),
        (both, ["flow_distance", "flow_loss", "sharpness", "sharpness_ratio"]),
    ]:
        run = dynamics.train(_quadratic, START, dynamics.gd(0.3), num_steps=4, save=save)
        assert sorted(run.values) == names
