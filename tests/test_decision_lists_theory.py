"""Decision-list checks: their order, the exact `iid` population as multisets, τ located by
enumeration (against the μ event where both apply, and where μ does not decide), and the joint
trainer of the `section7_joint_*` checks against a hand-written GD loop."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.decision_lists as dl
from theory import decision_lists as theory
from theory.decision_lists import _runs

ORDER = [
    "result1_time_within_bound",
    "result1_perfect_reached",
    "result1_loss_monotone",
    "result1_gd_limit",
    "result1_list_length_scaling",
    "result1_c_monotone",
    "result1_time_within_bound_iid",
    "result1_perfect_reached_iid",
    "result2_perfect_within_window",
    "result2_V_stays_near_cP",
    "result2_step_below_curvature",
    "result2_within_hypotheses",
    "section7_kappa",
    "section7_rho",
    "section7_joint_kappa",
    "section7_joint_rho",
    "hessian_lanczos_vs_dense",
]


def test_checks_in_paper_order():
    assert [fn.__name__ for fn in theory.CHECKS] == ORDER and len(theory.CHECKS) == 17
    for name in ("result1_time_within_bound_iid", "result1_perfect_reached_iid", "section7_joint_kappa"):
        assert list(inspect.signature(getattr(theory, name)).parameters) == ["full"]
        assert name in theory.__all__


@pytest.mark.slow
def test_iid_population_is_the_enumerated_support(getkey):
    """The multisets with multinomial weights give the loss, its gradient, δ, γ and the smallest
    margin of all L^n sequences."""
    task = _runs.task(5, 3, 2, 0, distribution="iid")
    multisets, sequences = _runs.iid_population(task), dl.exact_population(task)
    assert multisets.tokens.shape == (35, 3) and sequences.tokens.shape == (125, 3)
    assert float(jnp.sum(multisets.weights)) == pytest.approx(1.0, rel=1e-14)
    model = dl.DecisionListModel(jax.random.normal(getkey(), (5, 5)), jax.random.normal(getkey(), (5, 5)))

    @jax.jit
    def summary(population):
        loss, grad = jax.value_and_grad(dl.population_loss)(model, population)
        return loss, grad.W, grad.V, jnp.min(dl.margins(model, population))

    for a, b in zip(summary(multisets), summary(sequences)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    exact = theory.constants(task, sequences)
    assert theory.constants(task, multisets).gamma == pytest.approx(exact.gamma, rel=1e-12)
    assert _runs.population(task) is _runs.population(task)  # cached, and the multisets under iid
    assert _runs.population(task).tokens.shape == (35, 3)


def test_enumerated_time_agrees_with_mu_on_distinct():
    """Under `distinct` (n ≥ 3, L − M ≥ n) perfect classification at V = cP ⟺ μ(W) > 0: the
    enumeration predicate agrees with the sign of μ at every save, and μ changes sign across the
    last bracket, so the enumerated τ is the root of μ (the time of the μ event) to within the
    bracket, a millionth of τ."""
    task = _runs.task(8, 3, 2, 0)
    k = _runs.task_constants(task)
    c, bound = float(theory.result1_c(3, 8, k.delta)), float(theory.result1_time_bound(2, 8, k.gamma))
    located = _runs.enumerated_time(task, c, bound)
    np.testing.assert_array_equal(located.margin > dl.TAU_TIE, located.mu > 0)
    assert 0 < located.tau < bound and located.width < 1e-6 * located.tau
    assert located.mu_before <= 0 < located.mu_at_tau and located.failures_after() == 0


@pytest.mark.slow
def test_mu_does_not_decide_under_iid():
    """Under `iid` μ(W) turns positive long before the flow classifies perfectly (a wrong token
    present twice needs a score gap above log 2): the saves with μ > 0 before τ are not perfect."""
    run = _runs.result1_enumerated(_runs.task(8, 3, 2, 0, distribution="iid"))
    time = run.time
    assert 0 < time.tau < run.bound and time.failures_after() == 0
    early = (time.mu > 0) & (time.ts < time.tau)
    assert np.sum(early) > 10 and np.all(time.margin[early] <= dl.TAU_TIE)
    assert time.mu_at_tau == pytest.approx(np.log(2.0), abs=1e-3)


def test_joint_gd_is_a_hand_written_gd_loop():
    """The run of the `section7_joint_*` checks: its start and 5 steps of full-batch GD on
    (W, V), with κ, ρ, μ and the loss at every step, against a plain loop."""
    task = _runs.task(6, 3, 2, 0)
    population = _runs.population(task)
    steps, values = _runs.joint_attention((6, 3, 2), num_steps=5, step=0.7, every=1)
    key_W, key_V = jax.random.split(jax.random.PRNGKey(0))
    W, V = 0.01 * jax.random.normal(key_W, (6, 6)), 0.01 * jax.random.normal(key_V, (6, 6))
    P = task.permutation_matrix()

    @jax.jit
    def step(W, V):
        """The saved metrics at (W, V), and one GD step."""
        loss, (gW, gV) = jax.value_and_grad(
            lambda W, V: dl.population_loss(dl.DecisionListModel(W, V), population), argnums=(0, 1)
        )(W, V)
        arrays = task.arrays()
        kappa = jnp.mean((jnp.argmax(V, axis=0).astype(jnp.int32) == arrays.perm).astype(V.dtype))
        metrics = {"loss": loss, "kappa": kappa, "rho": dl.centred_cosine(V, P), "mu": dl.mu(W, arrays)}
        return metrics, W - 0.7 * gW, V - 0.7 * gV

    expected = {"loss": [], "kappa": [], "rho": [], "mu": []}
    for _ in range(6):
        metrics, W, V = step(W, V)
        for name, value in metrics.items():
            expected[name].append(float(value))
    assert steps.tolist() == [0, 1, 2, 3, 4, 5]
    for name, reference in expected.items():
        np.testing.assert_allclose(values[name], reference, rtol=1e-12, atol=1e-15, err_msg=name)
    assert expected["loss"][-1] < expected["loss"][0]
