"""Algorithm 1 on random datasets as a simulation: validation, one run against `algorithm1` called
directly, many seeds (one dataset seed per run) and a sweep over a traced step size."""

import json

import numpy as np
import pytest

import dynamics
import tasks.ntp_partial_order as ntp

from .helpers import tree_allclose

SMALL = ntp.Algorithm1.small


def test_the_level_is_algorithm1():
    assert ntp.SIMULATIONS == {"algorithm1": ntp.Algorithm1}
    assert ntp.Algorithm1.path() == "tasks.ntp_partial_order:Algorithm1"


@pytest.mark.parametrize(
    "bad",
    [
        {"recipe": "C"},
        {"vocab_size": 2},
        {"vocab_size": 6.5},
        {"max_length": 1},
        {"eta": -0.1},
        {"eta0": float("nan")},
        {"num_steps2": 0},
        {"every": 7},
        {"vocab_size": 6},
        {"recipe": "A", "complete": True},
        {"max_sentences": 0},
        {"complete": 1},
        {"dtype": "float16"},
        {"num_steps1": 1000, "save_stage1": True},
    ],
)
def test_bad_values_are_refused_naming_the_field(bad):
    name = list(bad)[-1]
    with pytest.raises(ValueError, match=rf"Algorithm1(\.{name}|: .*{name})"):
        ntp.Algorithm1(**bad)


@pytest.mark.slow
def test_one_run_is_algorithm1_on_the_seed_dataset():
    sim = ntp.Algorithm1(**SMALL)
    run = sim.run(dynamics.seed_key(2))
    data = ntp.RecipeA(6).build(2)
    assert sim.dataset(2) == data
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
    sim = ntp.Algorithm1(**SMALL, save_stage1=True)
    run = sim.run(dynamics.seed_key(2))
    data = sim.dataset(2)
    eta0, eta = ntp.paper_step_sizes(6)
    batch, colloc = ntp.make_batch(data), ntp.make_batch(data, collocation=True)
    first, _ = ntp.algorithm1(batch, colloc, eta0=eta0, eta=eta, num_steps1=20, num_steps2=20, every=10)
    np.testing.assert_allclose(run.values["W_ov"], first.values.W_ov, rtol=1e-10, atol=1e-13)
    losses = [ntp.loss(ntp.NTPModel(W, first.values.W_kq[0]), colloc) for W in first.values.W_ov]
    np.testing.assert_allclose(run.values["loss0"], losses, rtol=1e-12)
    unsaved = ntp.Algorithm1(**SMALL).run(dynamics.seed_key(2))
    assert tree_allclose(unsaved.values, {name: run.values[name] for name in ("W_kq", "loss")})


def test_batches_are_padded_to_one_shape():
    sim = ntp.Algorithm1(**SMALL)
    batch, colloc = sim.batches(1)
    assert batch.tokens.shape == (sim.num_rows, 6) and sim.num_rows == 6 * 6
    np.testing.assert_allclose(batch.weights.sum(), 1.0, rtol=1e-15)
    assert np.count_nonzero(batch.weights) == sim.dataset(1).num_sentences
    assert colloc.tokens.shape == (6, 1)


def test_simulate_runs_each_dataset_seed_as_alone():
    sim = ntp.Algorithm1(**SMALL)
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
    sim = ntp.Algorithm1(**SMALL, max_sentences=5)
    with pytest.raises(ValueError, match=r"seed 0 has \d+ samples, more than max_sentences=5"):
        sim.batches(0)
    with pytest.raises(Exception, match="max_sentences=5"):
        dynamics.simulate(sim, num_seeds=1)


def test_from_settings_and_describe():
    sim = ntp.Algorithm1.from_settings(
        {"recipe": "A", "vocab_size": "6", "eta": "0.1", "max_sentences": "none"}
    )
    assert (sim.recipe, sim.vocab_size, sim.eta, sim.max_sentences) == ("A", 6, 0.1, None)
    with pytest.raises(ValueError, match="no setting 'seed'"):
        ntp.Algorithm1.from_settings({"seed": "1"})
    with pytest.raises(ValueError, match=r"Algorithm1\.every must be an integer >= 1, got 'x'"):
        ntp.Algorithm1.from_settings({"every": "x"})
    described = sim.describe()
    assert set(described) >= {p.name for p in ntp.Algorithm1.params()}
    assert described["eta_used"] == 0.1 and described["eta0_used"] == ntp.paper_step_sizes(6)[0]
