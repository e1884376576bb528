"""The sparse contextual bigram ways of training as simulations: validation, one run against the
function it wraps, many seeds and sweeps."""

import doctest
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
import tasks.contextual_bigram as cb

from .helpers import tree_allclose

INSTANCE = {"task.T": 8}
SMALL = {level: cls.small for level, cls in cb.SIMULATIONS.items()}


def _small(level: str, **settings) -> dynamics.AbstractSimulation:
    """The level's small settings with `settings` replaced (a task's by dotted names)."""
    cls = cb.SIMULATIONS[level]
    return dynamics.with_settings(cls(), SMALL[level] | settings)


def _assert_trees_equal(x, y):
    """Same structure and equal leaves (NaN equals NaN: the centred cosines at the uniform Q₀)."""
    assert jax.tree.structure(x) == jax.tree.structure(y)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=0), x, y)


def test_levels_are_the_three_simulations():
    assert list(cb.SIMULATIONS) == ["algorithm1", "sgd", "population_ode"]
    for cls in cb.SIMULATIONS.values():
        assert issubclass(cls, dynamics.AbstractSimulation)
        assert cls.path() == f"tasks.contextual_bigram:{cls.__name__}"


@pytest.mark.parametrize(
    "level, bad",
    [
        ("algorithm1", {"eta1": 0.0}),
        ("algorithm1", {"lam": -1e-3}),
        ("algorithm1", {"switch": "sometimes"}),
        ("algorithm1", {"stage3": "exact"}),
        ("algorithm1", {"batch": 2.5}),
        ("algorithm1", {"every": 300}),
        ("algorithm1", {"round_after_stage1": 1}),
        ("sgd", {"kind": "adam"}),
        ("sgd", {"eta": float("nan")}),
        ("sgd", {"task.N": 1}),
        ("sgd", {"task.Q": 9}),
        ("population_ode", {"t1": float("inf")}),
        ("population_ode", {"num_saves": 1}),
        ("population_ode", {"dtype": "float16"}),
    ],
)
def test_bad_values_are_refused_naming_the_field(level, bad):
    cls = cb.SIMULATIONS[level]
    name = next(iter(bad)).split(".")[-1]
    owner = rf"{cls.__name__}(\.task: SCBConfig)?"  # a task setting's error names the task's class too
    with pytest.raises(ValueError, match=rf"{owner}(\.{name}|: .*{name})"):
        dynamics.with_settings(cls(), {**INSTANCE, **bad})


def test_the_instance_is_the_declared_random_instance():
    sim = cb.Algorithm1()
    assert tree_allclose(sim.instance(), cb.default_instance())
    sgd = cb.SGD(task=cb.SCBConfig(instance_seed=3, T=8))
    assert tree_allclose(sgd.instance(), cb.random_instance(3, 3, 2, 8))
    assert sgd.instance() is sgd.task.instance()  # built once per setting
    assert cb.SGD(dtype="float32").instance().P.dtype == jnp.float32


@pytest.mark.parametrize("module", ["_config", "_data"])
def test_the_task_config_and_data_model_examples_run(module):
    """The examples of `SCBConfig` (the task every level holds) and of the data model."""
    result = doctest.testmod(importlib.import_module(f"tasks.contextual_bigram.{module}"))
    assert result.attempted > 0 and result.failed == 0


def test_algorithm1_is_run_algorithm():
    sim = _small("algorithm1", switch="fixed", tau1=5)
    key = dynamics.seed_key(4)
    run = sim.run(key)
    direct = cb.run_algorithm(cb.random_instance(0, 3, 2, 8), key, sim)
    _assert_trees_equal(run.values, direct["curves"])
    _assert_trees_equal(run.final["metrics"], direct["final_metrics"])
    _assert_trees_equal(run.final["stage2_model"], direct["stage2_model"])
    np.testing.assert_array_equal(run.ts, 5 + np.arange(0, 21, 10))
    assert int(run.final["tau1"]) == 5 and int(run.t_stop) == 25


def test_sgd_is_run_sgd():
    sim = _small("sgd", kind="projected", eta=0.1)
    key = dynamics.seed_key(2)
    run = sim.run(key)
    direct = cb.run_sgd(cb.random_instance(0, 3, 2, 8), key, sim)
    _assert_trees_equal(run.values, direct["curves"])
    _assert_trees_equal(run.final["model"], direct["final_model"])
    np.testing.assert_array_equal(run.ts, direct["steps"])


@pytest.mark.slow
def test_population_ode_is_the_line_ode():
    sim = _small("population_ode", alpha0=0.1, beta0=-0.2)
    run = sim.run(dynamics.seed_key(0))
    inst = cb.random_instance(0, 3, 2, 8)
    direct = cb.solve_line_ode([0.1, -0.2], cb.k_p(inst), cb.k_q(inst), 8, [0.0, 2.5, 5.0])
    np.testing.assert_allclose(run.values["alpha"], direct[:, 0], rtol=1e-12)
    np.testing.assert_allclose(run.values["beta"], direct[:, 1], rtol=1e-12)
    on = cb.on_line(direct[-1, 0], direct[-1, 1], inst)
    np.testing.assert_allclose(run.values["loss"][-1], cb.population_loss(on, inst), rtol=1e-12)


def test_from_settings_converts_and_checks():
    sim = cb.Algorithm1.from_settings(
        {"switch": "fixed", "tau1": "30", "eta2": "0.1", "round_after_stage1": "false"}
    )
    assert (sim.switch, sim.tau1, sim.eta2, sim.round_after_stage1) == ("fixed", 30, 0.1, False)
    with pytest.raises(ValueError, match="no setting 'eta'"):
        cb.Algorithm1.from_settings({"eta": "1"})
    with pytest.raises(ValueError, match=r"SGD\.batch must be an integer >= 1, got 'x'"):
        cb.SGD.from_settings({"batch": "x"})
    sgd = cb.SGD.from_settings({"task.T": "8", "task.instance_seed": "3"})
    assert sgd.task == cb.SCBConfig(instance_seed=3, T=8)
    with pytest.raises(ValueError, match=r"SGD\.task: SCBConfig\.T must be an integer >= 1, got 0"):
        cb.SGD.from_settings({"task.T": "0"})


def test_describe_records_every_field():
    described = cb.PopulationODE(alpha0=0.3).describe()
    assert described["simulation"] == "tasks.contextual_bigram:PopulationODE"
    assert described["alpha0"] == 0.3 and described["task.T"] == 50 and described["dtype"] == "float64"
    assert set(described) >= {p.name for p in cb.PopulationODE.params()}
    assert dynamics.from_setting_values(cb.PopulationODE, described) == cb.PopulationODE(alpha0=0.3)
    traced = {p.name for p in cb.Algorithm1.params() if p.traced}
    assert traced == {"eta1", "eta2", "lam", "delta1", "theta1_fraction", "c_f", "eta3"}


@pytest.mark.slow
def test_algorithm1_s_sharpness_ratio_is_stage2_s_preconditioned_projected_edge():
    """With `along.sharpness` (and no Stage 3, so the final model is Stage 2's last), the last save
    holds the dense top eigenvalue of the population loss's Hessian and, as the ratio, half the top
    eigenvalue of Π R^½ H R^½ Π: R = η₂/μ per column and Π the centring of every column, built as
    matrices (that it changes no other value is the levels' contract)."""
    sim = _small("algorithm1", switch="fixed", tau1=5, stage3="none", eta2=0.3)
    ds = dynamics.simulate(dynamics.with_settings(sim, {"along.sharpness": True}), num_seeds=1, seed=3)
    inst = sim.instance()
    model = cb.LinearSCB(
        V=jnp.asarray(ds["final.model.V"].values[0]), Q=jnp.asarray(ds["final.model.Q"].values[0])
    )
    flat, unflatten = jax.flatten_util.ravel_pytree(model)
    hessian = jax.hessian(lambda x: cb.population_loss(unflatten(x), inst))(flat)
    columns = jax.flatten_util.ravel_pytree(
        jax.tree.map(lambda leaf: jnp.broadcast_to(inst.mu, leaf.shape), model)
    )[0]
    root = jnp.diag(jnp.sqrt(0.3 / columns))
    centre = [
        jnp.kron(jnp.eye(rows) - jnp.ones((rows, rows)) / rows, jnp.eye(inst.N)) for rows in (inst.N, inst.T)
    ]
    project = jax.scipy.linalg.block_diag(*centre)  # row-major vec: entry (i, j) at i·N + j
    edge = project @ root @ hessian @ root @ project
    np.testing.assert_allclose(ds["sharpness"].values[0, -1], jnp.linalg.eigvalsh(hessian)[-1], rtol=1e-10)
    np.testing.assert_allclose(
        ds["sharpness_ratio"].values[0, -1], jnp.linalg.eigvalsh(edge)[-1] / 2, rtol=1e-10
    )
