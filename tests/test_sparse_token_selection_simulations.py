"""The sparse-token-selection ways of training as simulations: validation, one run against the
function it wraps, many seeds, a sweep over a traced field, settings from text."""

import dataclasses

import diffrax
import jax
import numpy as np
import pytest

import dynamics
import tasks.sparse_token_selection as sts
from attnflow import cli

from .helpers import REPOSITORY, assert_sweep_round_trip, tree_allclose

SMALL = {level: cls.small for level, cls in sts.SIMULATIONS.items()}


def small(level: str, **changes) -> dynamics.AbstractSimulation:
    return dynamics.from_setting_values(sts.SIMULATIONS[level], SMALL[level] | changes)


def test_levels_are_the_three_simulations():
    assert list(sts.SIMULATIONS) == ["reduced_flow", "online", "fcn"]
    for cls in sts.SIMULATIONS.values():
        assert issubclass(cls, dynamics.AbstractSimulation)
        assert cls.path() == f"tasks.sparse_token_selection:{cls.__name__}"
    assert sts.ReducedFlow.event_names == ("loss_below",)


@pytest.mark.parametrize(
    "level, bad",
    [
        ("reduced_flow", {"task.q": 200}),
        ("reduced_flow", {"task.pe_sampler": "iid_sphere"}),
        ("reduced_flow", {"task.pe_sampler": "dictionary_onehot", "task.pe_dim": 100}),
        ("reduced_flow", {"task.keys": "tokens_and_query"}),
        ("reduced_flow", {"task.x_query_mode": "gaussian"}),
        ("reduced_flow", {"t1": 1.0}),
        ("reduced_flow", {"eps": -1e-3}),
        ("reduced_flow", {"solver": "euler"}),
        ("online", {"lr": float("nan")}),
        ("online", {"optimizer": "sgd"}),
        ("online", {"init": "ones"}),
        ("online", {"every": 300}),
        ("online", {"log_saves": 0}),
        ("fcn", {"log_saves": 2.5}),
        ("online", {"num_T_tests": 21}),
        ("online", {"num_q_tests": 17}),
        ("online", {"task.fixed_pe": 1}),
        ("online", {"task.max_length": 10}),
        ("fcn", {"width": 0}),
        ("fcn", {"lr": 0.0}),
        ("fcn", {"task.T": 2.5}),
        ("fcn", {"task.pe_dim": 8, "task.pe_sampler": "dictionary_onehot"}),
    ],
)
def test_bad_values_are_refused_naming_the_field(level, bad):
    cls = sts.SIMULATIONS[level]
    name = list(bad)[-1].split(".")[-1]
    with pytest.raises(ValueError, match=rf"{cls.__name__}(\.{name}|: .*{name}|\.task: .*{name})"):
        dynamics.from_setting_values(cls, bad)


@pytest.mark.slow
def test_reduced_flow_is_the_wrapped_function():
    sim = small("reduced_flow", eps=1e-3)
    run = sim.run(dynamics.seed_key(0))
    direct = sts.reduced_flow(
        sts.STSConfig(d=2, T=10, q=2, pe_sampler="onehot"),
        1e4,
        np.logspace(0, 4, 9),
        eps=1e-3,
        solver=diffrax.Tsit5(),
    )
    np.testing.assert_allclose(run.ts, direct.ts, rtol=1e-12)
    assert tree_allclose(run.values, direct.values)
    assert int(run.stop) == int(direct.stop) and float(run.t_stop) == pytest.approx(float(direct.t_stop))
    assert dynamics.stop_reason(int(run.stop), int(run.event), sim.event_names) == "event:loss_below"


def _same_program(run, direct, key) -> bool:
    """Both trace to the same jaxpr: the same computation, without compiling either."""
    return str(jax.make_jaxpr(run)(key)) == str(jax.make_jaxpr(direct)(key))


def test_online_is_the_wrapped_function():
    sim = small("online", optimizer="adam", lr=1e-2, init="random")
    task = sts.STSConfig(d=2, T=6, q=2, pe_dim=8)
    options = {"batch_size": 8, "num_steps": 4, "every": 2, "num_eval": 8, "init": "random"}

    def direct(key):
        return sts.online_run(task, key, optimizer="adam", lr=1e-2, T_tests=(8,), q_tests=(3,), **options)

    assert _same_program(sim.run, direct, dynamics.seed_key(3))
    assert not _same_program(sim.run, lambda k: direct(jax.random.fold_in(k, 1)), dynamics.seed_key(3))


@pytest.mark.slow
@pytest.mark.parametrize("level", ["online", "fcn"])
def test_log_spaced_saves_record_what_saving_every_step_records_there(level):
    """With `log_saves`, a level saves at `dynamics.log_spaced_steps(num_steps, log_saves)` what it
    saves there when saving every step; `every` need not divide `num_steps` then."""
    key = dynamics.seed_key(2)
    every = jax.jit(small(level, num_steps=8, every=1).run)(key)
    logged = jax.jit(small(level, num_steps=8, every=3, log_saves=3).run)(key)
    steps = dynamics.log_spaced_steps(8, 3)
    np.testing.assert_array_equal(logged.ts, steps)
    assert tree_allclose(logged.values, jax.tree.map(lambda v: v[steps], every.values), rtol=1e-6, atol=1e-7)
    assert tree_allclose(logged.final, every.final, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match=r"every must divide num_steps \(or set log_saves\)"):
        small(level, num_steps=8, every=3)


def test_fcn_is_the_wrapped_function():
    sim = small("fcn")
    task = sts.STSConfig(d=2, T=4, q=2, pe_sampler="onehot")
    options = {"num_steps": 4, "every": 2, "batch_size": 8, "lr": 3e-3, "num_eval": 8}
    assert _same_program(sim.run, lambda key: sts.fcn_run(task, 4, key, **options), dynamics.seed_key(1))


@pytest.fixture(scope="module")
def online():
    """The small online simulation and its single run, compiled once."""
    sim = small("online")
    return sim, jax.jit(sim.run)


@pytest.mark.slow
def test_run_many_over_split_keys_equals_single_runs(online):
    sim, run = online
    out, finite = dynamics.run_many(sim.run, dynamics.seed_keys(4, 2))
    one = run(dynamics.seed_keys(4, 2)[1])
    np.testing.assert_allclose(out.values["loss"][1], one.values["loss"], rtol=1e-5)
    np.testing.assert_array_equal(out.ts[0], [0, 2, 4])
    assert out.values["loss_T"].shape == out.values["loss_q"].shape == (2, 3, 1) and finite.all()


@pytest.mark.slow
def test_reduced_flow_event_time_and_deterministic_seeds(tmp_path):
    sim = small("reduced_flow")
    ds = dynamics.sweep(sim, {"eps": [0.0, 1e-3]}, num_seeds=2)
    t_stop = ds["t_stop"].values
    assert np.all(t_stop[:, 0] == t_stop[:, 1])  # every seed the same run
    assert t_stop[0, 0] == pytest.approx(1e4) and ds.attrs["event_names"] == ["loss_below"]
    assert t_stop[1, 0] == pytest.approx((sim.task.T - 1) / (4 * 1e-3), rel=0.2)  # Theorem 1's t_eps
    assert_sweep_round_trip(ds, tmp_path)  # with an event that fired
    alone = dynamics.simulate(dataclasses.replace(sim, eps=1e-3), num_seeds=1)
    assert dynamics.stop_reasons(alone).values.tolist() == ["event:loss_below"]
    # A sweep of one point; the event's root is found by the implicit solver batched with the other
    # runs of its call, so the stop time agrees to rounding, not bit for bit.
    np.testing.assert_allclose(alone["t_stop"].values, t_stop[1, :1], rtol=1e-13)


def test_from_settings_converts_and_checks():
    sim = sts.Online.from_settings(
        {
            "optimizer": "adam",
            "lr": "1e-2",
            "task.max_length": "none",
            "task.fixed_pe": "true",
            "task.T": "25",
        }
    )
    assert (sim.optimizer, sim.lr, sim.task.max_length, sim.task.fixed_pe) == ("adam", 1e-2, None, True)
    assert sim.task == sts.Online().task.replace(fixed_pe=True, T=25)  # the other task settings kept
    with pytest.raises(ValueError, match="no setting 'T_tests'"):
        sts.Online.from_settings({"T_tests": "25,30"})
    with pytest.raises(ValueError, match="no setting 'T'; known: task.d, task.T"):
        sts.Online.from_settings({"T": "25"})
    with pytest.raises(ValueError, match=r"STSConfig\.pe_sampler must be one of"):
        sts.ReducedFlow.from_settings({"task.pe_sampler": "nope"})
    with pytest.raises(ValueError, match=r"ReducedFlow: the reduced loss needs an exactly orthonormal PE"):
        sts.ReducedFlow.from_settings({"task.pe_sampler": "iid_sphere"})


def test_describe_records_every_field():
    described = sts.FCNTraining(width=8).describe()
    assert described["simulation"] == "tasks.sparse_token_selection:FCNTraining"
    assert described["width"] == 8 and described["dtype"] == "float32"
    assert set(described) >= {p.name for p in sts.FCNTraining.params()}
    assert sts.ReducedFlow().task == sts.STSConfig(pe_sampler="onehot")


@pytest.mark.slow  # the analyses from the command line: tests/test_cli_edges.py, test_sweep_landscape.py
def test_the_command_line_analyses_a_default_level(tmp_path, monkeypatch, capsys):
    """`--analyse phases,critical_point,sharpness` on the two-scalar flow of sparse token selection:
    the stored numbers are the engine's on the stored sweep, and the sharpness that of the dense
    Hessian of the level's loss at each final state."""
    monkeypatch.chdir(REPOSITORY)
    ReducedFlow = sts.ReducedFlow
    fixed = {key: value for key, value in ReducedFlow.small.items() if key != "t1"}  # t1 is the grid's
    sets = [text for key, value in fixed.items() for text in ("--set", f"{key}={value}")]
    argv = ["sweep", "sparse_token_selection", *sets, "--grid", "t1=1000.0,10000.0", "--seeds", "1"]
    argv += ["--out", str(tmp_path), "--analyse", "phases,critical_point,sharpness"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "top Hessian eigenvalue" in printed and "critical_point" in printed
    ds = dynamics.load_sweep(tmp_path / "sweep.zarr")
    sim = dynamics.from_setting_values(ReducedFlow, ReducedFlow.small)
    assert {"phases.count", "critical_point.index", "sharpness.max_eigenvalue"} <= set(ds.data_vars)
    expected = dynamics.landscape.sweep_critical_points(ds, sim)
    for name in expected.data_vars:
        np.testing.assert_array_equal(ds[name], expected[name], err_msg=name)
    land = sim.landscape(dynamics.seed_key(0))
    for t1 in (1000.0, 10000.0):
        final = {name: ds[f"final.{name}"].sel(t1=t1, seed=0).values for name in ("gamma", "a")}
        eigenvalues, _ = dynamics.landscape.hessian_spectrum(land.loss, final)
        top = ds["sharpness.max_eigenvalue"].sel(t1=t1, seed=0)
        np.testing.assert_allclose(top, eigenvalues[-1], rtol=1e-10)
    for plot in (
        "critical_point.index_histogram.png",
        "sharpness.max_eigenvalue_final.png",
        "phases_time.png",
    ):
        assert (tmp_path / "plots" / plot).is_file()
    kept = sorted(path.name for path in (tmp_path / "critical_point.kept").iterdir())
    assert kept == ["0-0.npz", "0-1.npz", "key.json"]  # for a rerun, which reads them


@pytest.mark.slow
def test_the_plateau_before_the_drop_ends_where_the_loss_leaves_it():
    """Online GD (the figures' size, 2000 steps at lr 1 and 2, 4 seeds each), saved at 150
    log-spaced steps, phases on their defaults: the plateau before the largest drop (to the next
    plateau, or to the run's last loss) ends while the loss has moved at most a quarter of the way
    down, and by 1.5 times its end time the loss has moved at least a quarter: the end is where the
    loss leaves the plateau, not long before."""
    ds = dynamics.sweep(sts.Online(num_steps=2000, log_saves=150), {"lr": [1.0, 2.0]}, num_seeds=4)
    found = dynamics.landscape.sweep_phases(ds)
    for lr in (1.0, 2.0):
        for seed in range(4):
            run, loss = found.sel(lr=lr, seed=seed), ds["loss"].sel(lr=lr, seed=seed).values
            times = ds["time"].sel(lr=lr, seed=seed).values
            levels = run["phases.loss"].values[: int(run["phases.count"])]
            below = np.append(levels[1:], loss[-1])
            p = int(np.argmax(levels - below))
            end = float(run["phases.end_time"][p])

            def moved(t, p=p, times=times, loss=loss):
                return (levels[p] - loss[np.searchsorted(times, t)]) / (levels[p] - below[p])

            assert moved(end) <= 0.25 <= moved(1.5 * end), (lr, seed, end, moved(end), moved(1.5 * end))
