"""Algorithm 1 on random datasets as a simulation: validation, one run against `algorithm1` called
directly, many seeds (one dataset seed per run) and a sweep over a traced step size."""

import json

import numpy as np
import pytest

import dynamics
import tasks.ntp_partial_order as ntp

from .helpers import tree_allclose

SMALL = ntp.Algorithm1.small


def small(**changes) -> ntp.Algorithm1:
    return dynamics.from_setting_values(ntp.Algorithm1, SMALL | changes)


def test_the_level_is_algorithm1():
    assert ntp.SIMULATIONS == {"algorithm1": ntp.Algorithm1}
    assert ntp.Algorithm1.path() == "tasks.ntp_partial_order:Algorithm1"


@pytest.mark.parametrize(
    "bad",
    [
        {"task.recipe": "C"},
        {"task.vocab_size": 2},
        {"task.vocab_size": 6.5},
        {"task.max_length": 1},
        {"eta": -0.1},
        {"eta0": float("nan")},
        {"num_steps2": 0},
        {"every": 7},
        {"task.vocab_size": 6},
        {"task.recipe": "A", "task.complete": True},
        {"task.max_sentences": 0},
        {"task.complete": 1},
        {"dtype": "float16"},
        {"num_steps1": 1000, "save_stage1": True},
    ],
)
def test_bad_values_are_refused_naming_the_field(bad):
    name = list(bad)[-1].split(".")[-1]
    named = rf"(\.{name}|: .*{name})"
    with pytest.raises(ValueError, match=rf"Algorithm1({named}|\.task: NTPConfig{named})"):
        dynamics.from_setting_values(ntp.Algorithm1, bad)


@pytest.mark.slow
def test_one_run_is_algorithm1_on_the_seed_dataset():
    sim = small()
    run = sim.run(dynamics.seed_key(2))
    data = ntp.RecipeA(6).build(2)
    assert sim.task.dataset(2) == data
    eta0, eta = ntp.paper_step_sizes(6)
    batch, colloc = ntp.make_batch(data), ntp.make_batch(data, collocation=True)
    _, alone = ntp.algorithm1(batch, colloc, eta0=eta0, eta=eta, num_steps1=20, num_steps2=20, every=10)
    assert tree_allclose(run.final, alone.final)
    np.testing.assert_array_equal(run.ts, [0, 10, 20])
    np.testing.assert_allclose(run.values["W_kq"], alone.values.W_kq, rtol=1e-10, atol=1e-13)
    losses = [ntp.loss(ntp.NTPModel(alone.final.W_ov, W), batch) for W in alone.values.W_kq]
    np.testing.assert_allclose(run.values["loss"], losses, rtol=1e-12)


@pytest.mark.slow
def test_save_stage1_adds_the_first_stage_at_its_own_steps():
    sim = small(save_stage1=True)
    run = sim.run(dynamics.seed_key(2))
    data = sim.task.dataset(2)
    eta0, eta = ntp.paper_step_sizes(6)
    batch, colloc = ntp.make_batch(data), ntp.make_batch(data, collocation=True)
    first, _ = ntp.algorithm1(batch, colloc, eta0=eta0, eta=eta, num_steps1=20, num_steps2=20, every=10)
    np.testing.assert_allclose(run.values["W_ov"], first.values.W_ov, rtol=1e-10, atol=1e-13)
    losses = [ntp.loss(ntp.NTPModel(W, first.values.W_kq[0]), colloc) for W in first.values.W_ov]
    np.testing.assert_allclose(run.values["loss0"], losses, rtol=1e-12)
    unsaved = small().run(dynamics.seed_key(2))
    assert tree_allclose(unsaved.values, {name: run.values[name] for name in ("W_kq", "loss")})


def test_batches_are_padded_to_one_shape():
    sim = small()
    batch, colloc = sim.batches(1)
    assert batch.tokens.shape == (sim.task.num_rows, 6) and sim.task.num_rows == 6 * 6
    np.testing.assert_allclose(batch.weights.sum(), 1.0, rtol=1e-15)
    assert np.count_nonzero(batch.weights) == sim.task.dataset(1).num_sentences
    assert colloc.tokens.shape == (6, 1)


@pytest.mark.slow
def test_simulate_runs_each_dataset_seed_as_alone():
    sim = small()
    runs = dynamics.simulate(sim, num_seeds=3, seed=5)
    assert runs["W_kq"].shape == (3, 3, 6, 6)
    one = sim.run(dynamics.seed_key(6))
    names = ["W_kq", "loss", "final.W_kq", "final.W_ov"]
    assert sorted(names) == sorted(
        n for n in runs.data_vars if n not in ("time", "stop", "event", "t_stop", "num_steps")
    )
    assert tree_allclose(
        {name: runs[name].values[1] for name in names},
        {"W_kq": one.values["W_kq"], "loss": one.values["loss"]}
        | {f"final.{k}": getattr(one.final, k) for k in ("W_kq", "W_ov")},
    )
    config = json.loads(runs.attrs["config"])
    assert config["simulation"] == "tasks.ntp_partial_order:Algorithm1" and config["seed"] == 5
    assert config["eta_used"] == ntp.paper_step_sizes(6)[1]


def test_a_dataset_beyond_max_sentences_is_refused():
    sim = small(**{"task.max_sentences": 5})
    refused = r"seed 0 has \d+ samples, more than task.max_sentences=5; set it to at least \d+"
    with pytest.raises(ValueError, match=refused):
        sim.batches(0)
    with pytest.raises(Exception, match="task.max_sentences=5"):
        dynamics.simulate(sim, num_seeds=1)


def test_from_settings_and_describe():
    sim = ntp.Algorithm1.from_settings(
        {"task.recipe": "A", "task.vocab_size": "6", "eta": "0.1", "task.max_sentences": "none"}
    )
    assert (sim.task.recipe, sim.task.vocab_size, sim.eta, sim.task.max_sentences) == ("A", 6, 0.1, None)
    assert sim.task == ntp.NTPConfig(recipe="A", vocab_size=6)  # the other dataset settings kept
    with pytest.raises(ValueError, match="no setting 'seed'"):
        ntp.Algorithm1.from_settings({"seed": "1"})
    with pytest.raises(ValueError, match="no setting 'vocab_size'; known: task.recipe, task.vocab_size"):
        ntp.Algorithm1.from_settings({"vocab_size": "6"})
    with pytest.raises(ValueError, match=r"Algorithm1\.every must be an integer >= 1, got 'x'"):
        ntp.Algorithm1.from_settings({"every": "x"})
    described = sim.describe()
    assert set(described) >= {p.name for p in dynamics.settings(ntp.Algorithm1)}
    assert described["task.recipe"] == "A" and dynamics.from_setting_values(ntp.Algorithm1, described) == sim
    assert described["eta_used"] == 0.1 and described["eta0_used"] == ntp.paper_step_sizes(6)[0]
