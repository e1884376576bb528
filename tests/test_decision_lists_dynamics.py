"""Decision lists: the paper's constants, Result 1's flow, Result 2's GD and Section 7 on tiny tasks."""

import math

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.decision_lists as dl
from theory import decision_lists as theory


@pytest.fixture(scope="module")
def small():
    task = dl.DecisionLists.random(0, L=8, n=3, M=2)
    return task, dl.exact_population(task)


def test_constants_and_bounds(small):
    task, population = small
    k = theory.constants(task, population)
    # the smallest p_{a,k} under distinct, L=8, n=3: C(L-2, 1)/C(8, 3) for k = 1 < m_a = 2
    assert any(len(e) == 2 for e in task.lists)
    assert k.gamma == pytest.approx(6 / 56, rel=1e-12) and k.delta == k.gamma
    presence = theory.constants(task, population, delta_definition="presence")
    assert presence.delta == pytest.approx(3 / 8, rel=1e-12)
    assert theory.result1_c(3, 8, k.delta) == pytest.approx(4 * 3 * math.log(8) / k.delta)
    assert theory.result1_time_bound(2, 8, k.gamma) == pytest.approx(8 / (math.log(8) * k.gamma))
    with pytest.raises(ValueError, match="gamma_definition"):
        theory.constants(task, population, gamma_definition="max")


def test_result2_fixed_point_c(small):
    task, population = small
    P = task.permutation_matrix()
    U = dl.perturbation(jax.random.PRNGKey(0), task.L, 1.0)

    def loss0(c):
        return dl.population_loss(dl.DecisionListModel(jnp.zeros((8, 8)), c * P + U), population)

    c, _, converged = jax.jit(lambda: dl.fixed_point_c(loss0, n=3, delta=jnp.asarray(0.1), eps=1.0))()
    assert bool(converged)
    assert float(c) == pytest.approx(10 * 9 * float(loss0(c)) / 0.1 + 12.0, rel=1e-9)
    # U = 0: the closed form
    assert loss0(0.0) != theory.zero_attention_loss(8, 3, 0.0)  # U matters
    exact = float(dl.population_loss(dl.DecisionListModel(jnp.zeros((8, 8)), 5.0 * P), population))
    assert exact == pytest.approx(theory.zero_attention_loss(8, 3, 5.0), rel=1e-13)


def test_result2_no_finite_c_under_iid():
    """With repeated tokens the loss at uniform attention grows linearly in c."""
    task = dl.DecisionLists.random(0, L=5, n=3, M=2, distribution="iid")
    population = dl.exact_population(task)
    P = task.permutation_matrix()

    def loss0(c):
        return dl.population_loss(dl.DecisionListModel(jnp.zeros((5, 5)), c * P), population)

    c, iterations, converged = jax.jit(
        lambda: dl.fixed_point_c(loss0, n=3, delta=jnp.asarray(0.1), eps=1.0)
    )()
    assert not bool(converged)
    assert float(c) > 1e12 and int(iterations) < 200  # stopped for growing without bound


def test_result2_setting_feasibility():
    """With 𝓛_0 = log n, n = 50, M = 2 the hypotheses hold for ε = 10 and fail for ε = 1."""
    assert theory.result2_setting(math.log(50), 1.0, n=50, eps=10.0, m=2, delta=1.0, eta=1.0).feasible
    assert not theory.result2_setting(math.log(50), 1.0, n=50, eps=1.0, m=2, delta=1.0, eta=1.0).feasible
    assert not theory.result2_setting(math.log(20), 1.0, n=20, eps=5.0, m=2, delta=1.0, eta=1.0).feasible


def test_distinct_constants_match_enumeration(small):
    task, population = small
    closed = theory.distinct_constants(task)
    enumerated = theory.constants(task, population)
    assert closed.gamma == pytest.approx(enumerated.gamma, rel=1e-12) and closed.delta == closed.gamma
    assert (closed.delta_definition, closed.gamma_definition) == ("gamma", "joint")
    with pytest.raises(ValueError, match="distribution"):
        theory.distinct_constants(dl.DecisionLists.random(0, L=5, n=3, M=2, distribution="iid"))


def _time(arrays, population, c, t1):
    return dl.result1_time(arrays, population, c, t1=t1)


def _result1_setting(task, population):
    k = theory.constants(task, population)
    return theory.result1_c(task.n, task.L, k.delta), theory.result1_time_bound(task.M, task.L, k.gamma)


@pytest.mark.slow
def test_result1_flow_reaches_perfect_within_bound(small):
    task, population = small
    c, bound = _result1_setting(task, population)
    tau, run = jax.jit(_time)(task.arrays(), population, jnp.asarray(c), jnp.asarray(bound))
    assert int(run.event) == 0 and 0 < float(tau) == float(run.t_stop) <= bound
    final = dl.DecisionListModel(run.final, c * task.permutation_matrix())
    # the stop is where μ crosses 0: a score ties there, and every margin is about 0 or more
    assert abs(float(dl.mu(run.final, task.arrays()))) < 1e-12
    assert abs(float(jnp.min(dl.margins(final, population)))) < dl.TAU_TIE
    assert float(dl.population_loss(final, population)) < math.log(task.n)


@pytest.mark.slow
def test_result1_time_is_the_crossing_of_mu(small):
    """τ located by the event against a reference flow at much tighter tolerances: μ < 0 on a grid up
    to just before τ and μ > 0 (perfect, enumerated) just after."""
    task, population = small
    arrays = task.arrays()
    c, bound = _result1_setting(task, population)
    tight = diffrax.PIDController(rtol=1e-10, atol=1e-13)
    tau, _ = jax.jit(lambda c, t1: dl.result1_time(arrays, population, c, t1=t1, stepsize_controller=tight))(
        jnp.asarray(c), jnp.asarray(bound)
    )
    tau = float(tau)
    default, _ = jax.jit(_time)(arrays, population, jnp.asarray(c), jnp.asarray(bound))
    assert float(default) == pytest.approx(tau, rel=1e-5)  # the default rtol 1e-6 flow
    ts = jnp.concatenate([jnp.linspace(tau / 64, tau * (1 - 1e-6), 64), jnp.asarray([tau * (1 + 1e-6)])])
    reference = jax.jit(
        lambda ts: dl.result1_flow(
            arrays,
            population,
            jnp.asarray(c),
            t1=ts[-1],
            save_ts=ts,
            stop_at_perfect=False,
            save=lambda W: {"W": W},
            stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-15),
            max_steps=1_000_000,
        )
    )(ts)
    values = np.asarray(reference.values["mu"])
    assert np.all(values[:-1] < 0) and values[-1] > 0
    after = dl.DecisionListModel(reference.values["W"][-1], c * task.permutation_matrix())
    assert bool(dl.perfect(after, population))


@pytest.mark.slow
def test_result1_time_is_zero_when_the_start_ranks_every_list():
    """One list entry per token: `−∇_W 𝓛(0, cP)` already ranks every list, so `μ(W(t)) > 0` for
    every small `t > 0`: `τ = 0` and there is no crossing to stop at."""
    task = dl.DecisionLists.random(0, L=8, n=3, M=2, fixed_m=1)
    population = dl.exact_population(task)
    c, bound = _result1_setting(task, population)
    tau, run = jax.jit(_time)(task.arrays(), population, jnp.asarray(c), jnp.asarray(bound))
    assert float(tau) == 0.0 and int(run.event) == -1 and float(run.t_stop) == pytest.approx(bound)
    early = dl.result1_flow(
        task.arrays(),
        population,
        c,
        t1=bound,
        save_ts=bound * jnp.geomspace(1e-9, 1.0, 10),
        stop_at_perfect=False,
    )
    assert np.all(np.asarray(early.values["mu"]) > 0)


@pytest.mark.slow
def test_result1_vmaps_over_tasks(small):
    tasks = [dl.DecisionLists.random(s, L=8, n=3, M=2) for s in (0, 3, 4)]
    population = small[1]
    pops = [dl.make_population(t.arrays(), population.tokens, population.weights) for t in tasks]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *pops)
    c, t1 = jnp.asarray([100.0, 200.0, 300.0]), jnp.full(3, 30.0)
    batched = jax.jit(jax.vmap(lambda *args: _time(*args)[0]))(dl.stack_arrays(tasks), stacked, c, t1)
    single = [float(jax.jit(_time)(t.arrays(), p, ci, ti)[0]) for t, p, ci, ti in zip(tasks, pops, c, t1)]
    np.testing.assert_allclose(np.asarray(batched), single, rtol=1e-6)
    assert len(set(np.round(single, 12))) > 1


def test_padded_lists_change_nothing(small):
    """Lists padded past M (to stack tasks with different M) give the same labels, μ and p_{a,k}."""
    task, population = small
    W = jax.random.normal(jax.random.PRNGKey(3), (8, 8), jnp.float64)
    narrow, wide = task.arrays(), task.arrays(4)
    assert float(dl.mu(W, narrow)) == float(dl.mu(W, wide))
    np.testing.assert_array_equal(
        dl.make_population(wide, population.tokens, population.weights).labels, population.labels
    )
    np.testing.assert_allclose(
        np.asarray(dl.event_probabilities(wide, population))[:, :2],
        dl.event_probabilities(narrow, population),
    )


@pytest.mark.slow
def test_result2_gd_keeps_V_near_cP(small):
    task, population = small
    eps, c = 1.0, 60.0
    V0 = c * task.permutation_matrix() + dl.perturbation(jax.random.PRNGKey(1), task.L, eps)
    run = dl.result2_gd(
        task.arrays(), population, V0, jnp.asarray(c), task.n, eta=jnp.asarray(0.01), num_steps=50
    )
    assert float(jnp.max(run.values["grad_V_max"])) <= 1.0
    assert float(jnp.max(run.values["dist_cP"])) <= eps / 2 + 50 * 0.01 + 1e-12
    assert float(run.values["loss"][-1]) < float(run.values["loss"][0])


def test_section7_uniform_attention_aligns_V():
    task = dl.DecisionLists.random(0, L=6, n=3, M=2)
    population = dl.exact_population(task)
    run = dl.uniform_attention_gd(
        task.arrays(), population, jnp.zeros((6, 6)), step=jnp.asarray(1.0), num_steps=300, every=50
    )
    assert float(run.values["rho"][0]) == 0.0  # V = 0
    assert float(run.values["kappa"][-1]) == 1.0 and float(run.values["rho"][-1]) > 0.5


def test_kappa_and_rho_at_P():
    task = dl.DecisionLists.random(0, L=7, n=3, M=2)
    P = task.permutation_matrix()
    assert float(dl.column_argmax_agreement(3.0 * P + 1.0, task.arrays())) == 1.0
    assert float(dl.centred_cosine(3.0 * P + 1.0, P)) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.slow
def test_result2_within_hypotheses_check():
    """Steps 3-4 of the Result 2 argument at L = 40, n = 30, M = 2, ε = 4.1, on a frozen population
    of 2^14 sequences."""
    check = theory.result2_within_hypotheses(full=True)
    assert check.verdict != "fail", check.note
    assert check.simulated <= check.predicted
