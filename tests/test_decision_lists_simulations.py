"""The decision-list trainings as simulations: validation, one run against the functions it wraps,
the task drawn from each run's seed, many seeds and a sweep.

Every batched call runs two runs of a level's `SMALL` simulation (two seeds, or two grid points of
one seed), so the tests of one level share one compiled program."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
import tasks.decision_lists as dl
from theory.decision_lists import closed_forms

from .helpers import tree_allclose

TINY = {"L": 6, "n": 3, "M": 2}
SMALL = {level: cls.small for level, cls in dl.SIMULATIONS.items()}


def small(level: str, **changes) -> dynamics.AbstractSimulation:
    """`SMALL[level]` changed by `changes` (settings by name, the task's as `task.L`)."""
    return dynamics.from_setting_values(dl.SIMULATIONS[level], SMALL[level] | changes)


def _first_of_two(level: str, seed: int, **changes) -> dict[str, np.ndarray]:
    """The values and final state of the run with integer seed `seed` of `SMALL[level]` (changed by
    `changes`), from a batch of two seeds."""
    sim = small(level, **changes)
    ds = dynamics.simulate(sim, num_seeds=2, seed=seed)
    return {name: ds[name].values[0] for name in ds.data_vars}


def test_levels_are_the_four_trainings():
    assert list(dl.SIMULATIONS) == ["result1_flow", "result2_gd", "section7_gd", "joint_gd"]
    for cls in dl.SIMULATIONS.values():
        assert issubclass(cls, dynamics.AbstractSimulation)
        assert cls.path() == f"tasks.decision_lists:{cls.__name__}"


@pytest.mark.unchecked_types
@pytest.mark.parametrize(
    "level, bad",
    [
        ("result1_flow", {"task.L": 1}),
        ("result1_flow", {"task.n": 20}),
        ("result1_flow", {"task.M": 2.5}),
        ("result1_flow", {"task.fixed_m": 4}),
        ("result1_flow", {"task.seed": -1}),
        ("result1_flow", {"c_scale": 0.0}),
        ("result1_flow", {"horizon": float("inf")}),
        ("result1_flow", {"first_save": 1.0}),
        ("result1_flow", {"gamma_definition": "max"}),
        ("result1_flow", {"task.distribution": "uniform"}),
        ("result1_flow", {"save_W": 1}),
        ("result1_flow", {"task.L": 400}),
        ("result2_gd", {"task.distribution": "iid"}),
        ("result2_gd", {"task.L": 40, "task.n": 30}),
        ("result2_gd", {"eps": float("nan")}),
        ("result2_gd", {"population_size": 0}),
        ("result2_gd", {"every": 3}),
        ("result2_gd", {"stop_at_perfect": 1}),
        ("result2_gd", {"stop_at_perfect": True, "along.flow": True}),
        ("section7_gd", {"along.sharpness": "yes"}),
        ("section7_gd", {"init_std": -0.1}),
        ("joint_gd", {"dtype": "float16"}),
    ],
)
def test_bad_values_are_refused_naming_the_field(level, bad):
    cls = dl.SIMULATIONS[level]
    name = list(bad)[-1].split(".")[-1]
    with pytest.raises(ValueError, match=rf"{cls.__name__}(\.{name}|: .*{name}|\.\w+: .*{name})"):
        dynamics.from_setting_values(cls, bad)


@pytest.mark.slow
def test_result1_flow_is_the_flow_of_result1():
    run = _first_of_two("result1_flow", 3, c_scale=2.0)
    task = dl.DecisionLists.random(3, L=8, n=3, M=2)
    population = dl.exact_population(task)
    k = closed_forms.constants(task, population)
    c = 2.0 * closed_forms.result1_c(task.n, task.L, k.delta)
    bound = closed_forms.result1_time_bound(task.M, task.L, k.gamma)
    save_ts = bound * np.concatenate([[0.0], np.geomspace(1e-7, 1.0, 4)])

    @jax.jit
    def direct(c, t1, save_ts):
        return dl.result1_time(task.arrays(), population, c, t1=t1, save_ts=save_ts)

    tau, flow = direct(jnp.asarray(c), jnp.asarray(bound), jnp.asarray(save_ts))
    assert tree_allclose(
        (run["loss"], run["mu"], run["final.W"]), (flow.values["loss"], flow.values["mu"], flow.final)
    )
    assert run["final.tau"] == pytest.approx(float(tau), rel=1e-10) and 0 < run["final.tau"] <= bound
    assert run["final.c"] == pytest.approx(c, rel=1e-12)
    assert run["final.bound"] == pytest.approx(bound, rel=1e-12)
    # the stop is the crossing of μ: W there is on the boundary of perfect classification
    assert abs(run["final.margin"]) < dl.TAU_TIE


@pytest.mark.slow
def test_result1_flow_past_tau_saves_W_along_the_flow():
    """Not stopped at perfect classification, the flow runs on to t1 with τ = inf, and the saved W
    gives the saved loss and μ; μ is positive from τ on (the stopped run's τ)."""
    stopped = _first_of_two("result1_flow", 3)
    sim = small("result1_flow", horizon=0.5, stop_at_perfect=False, save_W=True)
    runs = dynamics.simulate(sim, num_seeds=2, seed=3)
    run = {name: runs[name].values[0] for name in runs.data_vars}
    times = run["time"]
    task = dl.DecisionLists.random(3, L=8, n=3, M=2)
    population = dl.exact_population(task)
    V = float(run["final.c"]) * task.permutation_matrix()
    losses = [
        float(dl.population_loss(dl.DecisionListModel(jnp.asarray(W), V), population)) for W in run["W"]
    ]
    np.testing.assert_allclose(run["loss"], losses, rtol=1e-12)
    np.testing.assert_allclose(run["mu"], [float(dl.mu(jnp.asarray(W), task.arrays())) for W in run["W"]])
    np.testing.assert_allclose(run["W"][-1], run["final.W"], rtol=1e-12)  # the save at t1 is interpolated
    assert run["final.tau"] == np.inf and np.all(np.isfinite(run["loss"]))
    assert np.all(run["mu"][times > stopped["final.tau"]] > 0)


@pytest.mark.slow
def test_result1_flow_without_the_mu_criterion_enumerates():
    """Under iid μ does not decide perfect classification: τ is the time of the enumerated event."""
    run = _first_of_two("result1_flow", 0, **{"task.distribution": "iid", "task.L": 5})
    task = dl.DecisionLists.random(0, L=5, n=3, M=2, distribution="iid")
    population = dl.exact_population(task)
    c = float(run["final.c"])
    assert run["final.c"] == pytest.approx(
        closed_forms.result1_c(3, 5, closed_forms.constants(task, population).delta), rel=1e-12
    )
    model = dl.DecisionListModel(jnp.asarray(run["final.W"]), c * task.permutation_matrix())
    assert 0 < run["final.tau"] < run["final.bound"] and bool(dl.perfect(model, population))
    assert run["final.margin"] == pytest.approx(float(jnp.min(dl.margins(model, population))), rel=1e-12)
    assert run["final.margin"] > dl.TAU_TIE


@pytest.mark.slow
@pytest.mark.parametrize("population_size", [None, 64])
def test_result2_gd_starts_at_the_fixed_point_of_result2(population_size):
    """The traced `c` is the fixed point of `c = 10 n² 𝓛_0(c)/δ + 4εn`; the step and window are
    those of the checks' setting; on a sample, the certified GD against the function it wraps."""
    run = _first_of_two("result2_gd", 1, population_size=population_size)
    key, task = dynamics.seed_key(1), dl.DecisionLists.random(1, **TINY)
    if population_size is None:
        population, key_U = dl.exact_population(task), key
        delta = closed_forms.constants(task, population).delta
    else:
        key_population, key_U = jax.random.split(key)
        population = dl.sampled_population(task, key_population, population_size)
        delta = closed_forms.distinct_constants(task).delta
    P = task.permutation_matrix()
    U = dl.perturbation(key_U, task.L, 1.0)

    def loss0(c):
        return float(dl.population_loss(dl.DecisionListModel(jnp.zeros_like(U), c * P + U), population))

    c = float(run["final.c"])
    assert bool(run["final.c_converged"])
    assert c == pytest.approx(10 * task.n**2 * loss0(c) / delta + 4.0 * task.n, rel=1e-9)
    eta = float(run["final.eta"])
    assert eta == pytest.approx(1.0 / run["final.lambda_max"], rel=1e-12)
    setting = closed_forms.result2_setting(loss0(c), c, n=task.n, eps=1.0, m=task.M, delta=delta, eta=eta)
    assert int(run["final.T"]) == setting.T_max

    if population_size is None:  # enumerated: the last save is the final model, classified exactly
        final = dl.DecisionListModel(jnp.asarray(run["final.model.W"]), jnp.asarray(run["final.model.V"]))
        assert bool(run["perfect"][-1]) == bool(dl.perfect(final, population))
        return

    @jax.jit
    def direct(V0, c, eta):
        return dl.result2_gd(
            task.arrays(), population, V0, c, task.n, eta=eta, num_steps=20, every=5, exact=False
        )

    gd = direct(c * P + U, jnp.asarray(c), jnp.asarray(eta))
    for name in ("loss", "mu", "dist_cP", "grad_V_max"):
        np.testing.assert_allclose(run[name], gd.values[name], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(run["perfect"], gd.values["perfect"])


@pytest.mark.slow
def test_uniform_attention_and_joint_gd_are_the_gd_functions():
    key, task = dynamics.seed_key(2), dl.DecisionLists.random(2, **TINY)
    population = dl.exact_population(task)
    V0 = 0.1 * jax.random.normal(key, (6, 6), jnp.float64)
    direct = jax.jit(
        lambda V0: dl.uniform_attention_gd(task.arrays(), population, V0, step=1.0, num_steps=40, every=10)
    )(V0)
    run = _first_of_two("section7_gd", 2, init_std=0.1)
    assert tree_allclose({k: run[k] for k in direct.values}, direct.values)
    key_W, key_V = jax.random.split(key)
    model0 = dl.DecisionListModel(
        0.01 * jax.random.normal(key_W, (6, 6), jnp.float64),
        0.01 * jax.random.normal(key_V, (6, 6), jnp.float64),
    )
    direct = jax.jit(lambda m: dl.joint_gd(task.arrays(), population, m, step=1.0, num_steps=40, every=10))(
        model0
    )
    run = _first_of_two("joint_gd", 2)
    assert tree_allclose({k: run[k] for k in direct.values}, direct.values)


def test_each_run_draws_the_task_of_its_own_seed_unless_task_seed_fixes_one():
    sim = small("section7_gd")
    task = sim.task
    for seed in (4, 5, 6):
        expected = dl.DecisionLists.random(seed, L=task.L, n=task.n, M=task.M).arrays()
        assert tree_allclose(sim.draw(seed), expected)
    fixed = dynamics.with_settings(sim, {"task.seed": 7})
    assert tree_allclose(fixed.draw(4), fixed.draw(5))
    assert tree_allclose(fixed.draw(4), dl.DecisionLists.random(7, L=task.L, n=task.n, M=task.M).arrays())


def test_simulate_runs_each_seed_as_alone_on_its_own_task():
    sim = small("section7_gd")
    runs = dynamics.simulate(sim, num_seeds=2, seed=5)
    one = jax.jit(sim.run)(dynamics.seed_key(6))
    np.testing.assert_allclose(runs["loss"].values[1], one.values["loss"], rtol=1e-10)
    finals = runs["final.V"].values
    assert not np.allclose(finals[0], finals[1])  # V_0 = 0: only the task differs
    config = json.loads(runs.attrs["config"])
    assert config["simulation"] == "tasks.decision_lists:UniformAttentionGD"
    assert config["seed"] == 5 and config["dtype"] == "float64"
    with pytest.warns(UserWarning, match="task.seed fixes one task for every seed"):
        fixed = dynamics.simulate(dynamics.with_settings(sim, {"task.seed": 7}), num_seeds=2)
    fixed = fixed["final.V"].values
    assert np.array_equal(fixed[0], fixed[1])


def test_float32_runs():
    run = jax.jit(small("section7_gd", dtype="float32").run)(dynamics.seed_key(0))
    losses = run.values["loss"]
    assert losses.dtype == jnp.float32 and float(losses[-1]) < float(losses[0])


def test_from_settings_converts_and_checks():
    sim = dl.Result2GD.from_settings(
        {"task.L": "40", "task.n": "30", "task.M": "2", "eps": "4.1", "population_size": "1024"}
    )
    assert (sim.task.L, sim.task.n, sim.task.M, sim.eps, sim.population_size) == (40, 30, 2, 4.1, 1024)
    assert dl.Result2GD.from_settings({"population_size": "none"}).population_size is None
    with pytest.raises(ValueError, match="no setting 'foo'"):
        dl.Result1Flow.from_settings({"foo": "1"})
    with pytest.raises(ValueError, match=r"Result1Flow\.task\.M must be an integer >= 1, got 'x'"):
        dl.Result1Flow.from_settings({"task.M": "x"})
    with pytest.raises(ValueError, match=r"Result1Flow\.task: DecisionListsConfig: n must be at most L"):
        dl.Result1Flow.from_settings({"task.L": "8", "task.n": "9"})


def test_describe_records_every_field():
    described = dynamics.with_settings(dl.Result1Flow(), {"task.fixed_m": 2}).describe()
    assert described["simulation"] == "tasks.decision_lists:Result1Flow"
    assert described["task.fixed_m"] == 2 and described["task.seed"] is None
    assert described["event_names"] == ["perfect"]
    assert set(described) >= {p.name for p in dl.Result1Flow.params()}


@pytest.mark.slow
def test_result1_flow_s_landscape_at_its_end_is_its_last_saved_loss():
    """Run to its last save (`stop_at_perfect` off), the flow ends where its landscape's loss is the
    last saved loss (the other levels are checked alike in `test_landscape_hook`)."""
    sim = small("result1_flow", stop_at_perfect=False)
    key = dynamics.seed_key(3)
    run = jax.jit(sim.run)(key)
    assert float(run.t_stop) == float(run.ts[-1])
    land = sim.landscape(key)
    loss = jax.jit(lambda final: land.loss(land.params(final)))(run.final)
    np.testing.assert_allclose(loss, run.values["loss"][-1], rtol=1e-12)
