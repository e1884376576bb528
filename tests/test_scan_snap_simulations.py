"""The Scan and Snap levels as simulations: validation, one run against the level function it
wraps, many seeds and a sweep."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from tasks import scan_snap

from .helpers import tree_allclose

SMALL = {level: cls.small for level, cls in scan_snap.SIMULATIONS.items()}


def test_levels_are_the_four_simulations_and_the_real_text_one():
    assert list(scan_snap.SIMULATIONS) == ["L0", "L0_outcome", "L1", "L2", "L3", "text"]
    for cls in scan_snap.SIMULATIONS.values():
        assert issubclass(cls, dynamics.AbstractSimulation)
        assert cls.path() == f"tasks.scan_snap:{cls.__name__}"


@pytest.mark.parametrize(
    "level, bad",
    [
        ("L0", {"eta_y": float("nan")}),
        ("L0", {"T": 1}),
        ("L0", {"T": 2.5}),
        ("L0", {"every": 3}),
        ("L0", {"optimizer": "lbfgs"}),
        ("L0", {"momentum": 1.0}),
        ("L1", {"t1": float("inf")}),
        ("L1", {"task.dataset": "wikitext"}),
        ("L1", {"task.num_last": 0}),
        ("L0_outcome", {"task.dataset": "syn_small"}),
        ("L2", {"class_weighted": 1}),
        ("L3", {"C0": 0.0}),
        ("L3", {"M": 1}),
        ("L3", {"rtol": 0.0}),
    ],
)
def test_bad_values_are_refused_naming_the_field(level, bad):
    cls = scan_snap.SIMULATIONS[level]
    (name,) = bad
    head, _, field = name.rpartition(".")
    nested = rf"\.{head}: \w+\.{field}"  # a setting of the task: "PopulationFlow.task: Synthetic.dataset"
    with pytest.raises(ValueError, match=rf"{cls.__name__}(\.{name}|: .*{name}|{nested})"):
        dynamics.with_settings(cls(), bad)


@pytest.mark.slow
def test_population_flow_is_the_level_function():
    sim = scan_snap.PopulationFlow(
        task=scan_snap.Synthetic(dataset="syn_medium", num_last=3), eta_z=2.0, t1=20.0, num_saves=4
    )
    run = sim.run(dynamics.seed_key(0))
    classes = scan_snap.Dataset2.syn_medium(3).build().arrays(jnp.float64)
    direct = scan_snap.population_flow(
        scan_snap.YZModel.zeros(classes.probs.shape[1], dtype=jnp.float64),
        classes,
        eta_y=1.0,
        eta_z=2.0,
        t1=20.0,
        save_ts=jnp.linspace(0.0, 20.0, 4),
    )
    assert tree_allclose(run.values, direct.values)


@pytest.mark.slow
def test_the_outcome_level_ends_where_L0_ends_from_the_same_key():
    """SGDOutcome is L0 on Syn-Medium from the random init with η_Y = η_Z · ratio: from the same
    key both train the same model, and its outcome is measured on L0's final model."""
    task = scan_snap.Synthetic(dataset="syn_medium", num_last=3)
    outcome = scan_snap.SGDOutcome(
        task=task, eta_z=2.0, ratio=5.0, num_steps=6, T=16, batch_size=8, num_taus=7
    )
    level = scan_snap.SGD(
        task=task,
        init="uniform",
        eta_y=10.0,
        eta_z=2.0,
        num_steps=6,
        every=6,
        T=16,
        batch_size=8,
    )
    key = dynamics.seed_key(4)
    ended, trained = outcome.run(key), level.run(key).final
    classes = scan_snap.Dataset2.syn_medium(3).build()
    assert jnp.dtype(ended.final["entropy"].dtype) == jnp.float32 and ended.final["recall"].shape == (7,)
    np.testing.assert_allclose(
        ended.final["entropy"], scan_snap.distinct_token_entropy(trained, classes), rtol=1e-6
    )
    taus = outcome.taus()
    assert taus[0] == scan_snap.RECALL_TAU_RANGES[3][0] and taus[-1] == scan_snap.RECALL_TAU_RANGES[3][1]
    np.testing.assert_allclose(
        ended.final["recall"], scan_snap.recall_at_threshold(trained, classes, taus), rtol=0, atol=1e-6
    )
    assert float(ended.final["entropy"]) < float(
        scan_snap.distinct_token_entropy(scan_snap.YZModel.zeros(79), classes)
    )


@pytest.mark.slow
def test_sweep_over_a_static_field_compiles_per_value():
    sim = scan_snap.PopulationFlow(**SMALL["L1"])
    ds = dynamics.sweep(sim, {"init": ["zeros", "uniform"]}, num_seeds=2)
    final = ds["population_loss"].isel(save=-1).values
    assert np.all(final[0] == final[0, 0])  # zeros: every seed the same
    assert final[1, 0] != final[1, 1]  # uniform: seeds differ


def test_from_settings_converts_and_checks():
    sim = scan_snap.SGD.from_settings({"task.dataset": "syn_medium", "task.num_last": "3", "eta_z": "2"})
    assert (sim.task.dataset, sim.task.num_last, sim.eta_z) == ("syn_medium", 3, 2.0)
    with pytest.raises(ValueError, match="no setting 'foo'"):
        scan_snap.SGD.from_settings({"foo": "1"})
    with pytest.raises(ValueError, match=r"SGD\.T must be an integer >= 2, got 'x'"):
        scan_snap.SGD.from_settings({"T": "x"})


def test_describe_records_every_field():
    described = scan_snap.TheoryFlow(class_weighted=True).describe()
    assert described["simulation"] == "tasks.scan_snap:TheoryFlow"
    assert described["class_weighted"] is True and described["dtype"] == "float64"
    assert described["task.dataset"] == "syn_small" and described["task.num_last"] == 1
    assert set(described) >= {p.name for p in scan_snap.TheoryFlow.params()}


def test_key_seed_inverts_seed_key():
    seeds = jnp.arange(4) + 7
    assert np.array_equal(
        jax.vmap(lambda s: dynamics._simulation.key_seed(dynamics.seed_key(s)))(seeds), seeds
    )


@pytest.mark.slow
def test_identical_seeds_are_said_aloud():
    with pytest.warns(UserWarning, match="every seed gave the same run.*set init=uniform"):
        dynamics.simulate(scan_snap.PopulationFlow(**SMALL["L1"]), num_seeds=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dynamics.simulate(scan_snap.PopulationFlow(init="uniform", **SMALL["L1"]), num_seeds=2)
        dynamics.simulate(scan_snap.PopulationFlow(**SMALL["L1"]), num_seeds=1)
