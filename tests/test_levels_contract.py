"""What every level of every paper promises, tested on each as the registry finds them at its
declared `small` settings (a new paper's levels are tested with no change here)."""

import dataclasses
import functools
import io
import warnings

import diffrax
import jax
import jax.extend
import jax.flatten_util
import matplotlib.pyplot as plt
import numpy as np
import pytest

import dynamics
from attnflow._sweep_plots import label_of
from attnflow.papers import load_simulation, papers
from dynamics._simulation import (
    batched_run,
    draw_shapes,
    draws,
    replayed_run,
    run_shape,
    static_part,
    traced_arrays,
)
from dynamics._store import named_leaves

LEVELS = [(name, level) for name, paper in papers().items() for level in paper.simulations]

RUNS = [
    pytest.param(name, level, marks=() if level == paper.default_level else pytest.mark.slow)
    for name, paper in papers().items()
    for level in paper.simulations
]
"""Every level; the runs of all but each paper's default level only under `-m slow`."""


def _engine_program(sim: dynamics.AbstractSimulation):
    """The jaxpr of one run of `sim` as the engine traces it (its draw passed in as an argument)."""
    static = static_part(sim)
    values = {name: value[0] for name, value in traced_arrays(static, [sim]).items()}
    return jax.make_jaxpr(batched_run(static))(values, np.int64(0), draw_shapes(sim)).jaxpr


def _primitives(program) -> set[str]:
    """The names of the primitives of a jaxpr, those of the jaxprs inside its operations too."""
    names = set()
    for equation in program.eqns:
        names.add(equation.primitive.name)
        for inner in jax.extend.core.jaxprs_in_params(equation.params):
            names |= _primitives(inner)
    return names


@pytest.mark.parametrize(("paper", "level"), LEVELS)
def test_a_level_s_program_calls_no_host_and_a_flow_passes_its_step_budget(paper, level, monkeypatch):
    """A level's program, as the engine traces it, holds no host callback: JAX keeps no such program
    in its persistent cache (a level draws its data before its program, `AbstractSimulation.draw`;
    Equinox's runtime checks end a run with NaN where the command line and these tests run,
    `EQX_ON_ERROR=nan`, not from a callback). A level whose run integrates a flow has a `max_steps`
    field, and its run gives the solver that budget (traced, not run)."""
    budgets = []
    solve = diffrax.diffeqsolve

    def spy(*args, **kwargs):
        budgets.append(kwargs.get("max_steps"))
        return solve(*args, **kwargs)

    monkeypatch.setattr(diffrax, "diffeqsolve", spy)
    sim = _small(paper, level)
    cls = type(sim)
    assert not [name for name in _primitives(_engine_program(sim)) if "callback" in name]
    if not budgets:
        return  # no flow in this level
    assert "max_steps" in {info.name for info in cls.params()}, f"{cls.__name__} integrates a flow"
    budgets.clear()
    jax.eval_shape(cls(max_steps=7).run, dynamics.seed_key(0))
    assert budgets and set(budgets) == {7}


def _small(paper: str, level: str) -> dynamics.AbstractSimulation:
    cls = papers()[paper].simulation(level)
    assert cls.small, f"{cls.__name__} declares no small settings"
    unknown = set(cls.small) - {info.name for info in dynamics.settings(cls)}
    assert not unknown, f"{cls.__name__}.small names no setting {sorted(unknown)}"
    return dynamics.from_setting_values(cls, cls.small)


@pytest.mark.parametrize(("paper", "level"), LEVELS)
def test_a_level_is_found_by_its_path_and_rebuilt_from_its_described_settings(paper, level):
    """`describe()` holds every field, and the command line's text of each rebuilds the same
    simulation; `module:Class` loads the class back."""
    sim = _small(paper, level)
    cls = type(sim)
    described = sim.describe()
    assert described["simulation"] == cls.path() and load_simulation(cls.path()) is cls
    assert set(described) >= {info.name for info in cls.params()}
    assert cls.from_settings({info.name: str(described[info.name]) for info in cls.params()}) == sim


@pytest.mark.parametrize(("paper", "level"), RUNS)
def test_a_level_labels_every_value_it_saves(paper, level):
    """Each value a level saves at its `small` settings has the axis label of its plots
    (`labels`: words, not its name again), and each label names a value the level can save."""
    sim = _small(paper, level)
    labels = type(sim).labels
    missing = set(dynamics.landscape.saved_series(sim)) - set(labels)
    assert not missing, f"{type(sim).__name__}.labels lacks {sorted(missing)}"
    for name, label in labels.items():
        assert label.strip() and label != name, f"{type(sim).__name__}.labels[{name!r}] = {label!r}"


def test_every_level_s_labels_draw_in_the_plots_font():
    """A glyph the plots' font lacks warns, and draws as a box."""
    labels = [
        label_of(name, papers()[p].simulation(lv).labels)
        for p, lv in LEVELS
        for name in papers()[p].simulation(lv).labels
    ]
    fig, ax = plt.subplots()
    ax.set_ylabel("\n".join(labels))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)


@pytest.mark.parametrize(("paper", "level"), LEVELS)
def test_a_level_holding_a_task_config_copies_none_of_its_settings(paper, level):
    """A task's settings are one field holding its config: no other setting of the level repeats
    one of the task's by name, and `--set task.<name>=...` reaches the config."""
    cls = papers()[paper].simulation(level)
    held = [info for info in dynamics.params(cls) if dynamics._params.is_config(info.type)]
    own = {info.name for info in dynamics.params(cls)}
    for info in held:
        inner = {setting.name.split(".")[0] for setting in dynamics.settings(info.type)}
        assert not own & inner, f"{cls.__name__} copies {sorted(own & inner)} of its {info.name}"
        first = dynamics.settings(info.type)[0]
        text = {
            f"{info.name}.{first.name}": str(
                dynamics._params.setting_values(cls())[f"{info.name}.{first.name}"]
            )
        }
        assert cls.from_settings(text) == cls()


def _traced_axis(sim: dynamics.AbstractSimulation) -> tuple[str, list[float]]:
    """A traced float field of `sim` and two valid values of it: its own and half (or double; or
    0.1 or 1 where it is 0)."""
    for info in type(sim).params():
        if not (info.traced and info.type is float):
            continue
        value = getattr(sim, info.name)  # a traced setting is a field of the simulation itself
        for other in (value / 2, value * 2) if value else (0.1, 1.0):
            try:
                dataclasses.replace(sim, **{info.name: other})
            except ValueError:
                continue
            return info.name, [value, other]
    raise AssertionError(f"{type(sim).__name__} has no traced float field to sweep")


@pytest.mark.parametrize(("paper", "level"), RUNS)
def test_a_sweep_is_each_point_run_alone_in_memory_and_on_disk(paper, level, tmp_path):
    """The one contract of a level: a sweep over a traced field × 2 seeds holds, bit for bit, at
    every point the runs of that point swept alone (the same seeds, the same compiled batch of
    two), and its store holds the numbers of the sweep in memory. (That a batch of runs equals
    the runs one by one is the engine's, tested in `test_vmap`.)"""
    sim = _small(paper, level)
    field, values = _traced_axis(sim)
    sweep = functools.partial(dynamics.sweep, num_seeds=2, seed=3, chunk_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a deterministic level: the seeds agree
        ds = sweep(sim, {field: values})
        sweep(sim, {field: values}, store=tmp_path / "sweep.zarr")
        stored = dynamics.load_sweep(tmp_path / "sweep.zarr")
        alone = {value: sweep(dataclasses.replace(sim, **{field: value}), {}) for value in values}
    assert set(stored.data_vars) == set(ds.data_vars) == set(alone[values[0]].data_vars)
    for name, variable in ds.data_vars.items():
        np.testing.assert_array_equal(stored[name].values, variable.values, err_msg=name)
        for value, run in alone.items():
            np.testing.assert_array_equal(variable.sel({field: value}).values, run[name].values, err_msg=name)
        if np.issubdtype(variable.dtype, np.floating):
            assert variable.dtype == np.dtype(sim.dtype), name


REPLAYS = [pytest.param(*pair, marks=pytest.mark.slow) for pair in LEVELS]
"""Every level, under `-m slow` (each compiles its program twice); by default a sweep's replayed
blocks are compared with the run traced anew in `test_sweep_store`, on a class of its own."""


@pytest.mark.parametrize(("paper", "level"), REPLAYS)
def test_a_block_replays_the_trace_of_a_run_to_the_numbers_of_the_run_traced_anew(paper, level):
    """The blocks of a sweep vmap the program traced before it (`replayed_run`): bit for bit the
    numbers of the run traced anew from Python (`batched_run`), every leaf, at the same width."""
    sim = _small(paper, level)
    static = static_part(sim)
    traced = {name: np.repeat(value, 3) for name, value in traced_arrays(static, [sim]).items()}
    seeds = np.arange(3)
    drawn = draws([sim] * 3, seeds)
    anew, _ = dynamics.run_many(batched_run(static), traced, seeds, drawn)
    replayed, _ = dynamics.run_many(replayed_run(static), traced, seeds, drawn)
    assert jax.tree.structure(replayed) == jax.tree.structure(anew)
    for a, b in zip(jax.tree.leaves(anew), jax.tree.leaves(replayed)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


_ALONG = [
    (name, level)
    for name, paper in papers().items()
    for level, cls in paper.simulations.items()
    if "along" in {info.name for info in dynamics.params(cls)}
]
ALONG = [pytest.param(*pair, marks=pytest.mark.slow) for pair in _ALONG]
"""The discrete levels that record the sharpness and the flow alongside (`dynamics.Along`), under
`-m slow`: `tests/test_dynamics_sharpness.py` tests what `Along` adds on models of its own."""


def _seed_values(sim: dynamics.AbstractSimulation) -> dict[str, np.ndarray]:
    """The saved values and final state of seed 3 of `sim`, as a sweep stores them."""
    ds = dynamics.simulate(sim, num_seeds=1, seed=3)
    return {name: ds[name].values[0] for name in ds.data_vars}


def _final_state(sim: dynamics.AbstractSimulation, values: dict[str, np.ndarray]):
    """The final state of a run, rebuilt from its stored leaves."""
    shape = run_shape(sim).final
    leaves = [jax.numpy.asarray(values[name]) for name in named_leaves(shape, "final.")]
    return jax.tree.unflatten(jax.tree.structure(shape), leaves)


@pytest.mark.parametrize(("paper", "level"), ALONG)
def test_the_sharpness_and_the_flow_alongside_leave_a_run_as_it_is(paper, level):
    """`along.sharpness` and `along.flow` add values and change none. The sharpness at the last save
    is the top eigenvalue of the dense Hessian of the level's landscape at the final state (its
    ratio λ_max·η/2 where the landscape declares the step size η at that state), unless a last
    stage runs after the last save (the level keeps that stage's loss as `final.<loss_name>` or
    `final.metrics.<loss_name>`) or the level keeps no final state to differentiate (it declares
    no landscape); its paper's tests compare those. The flow starts where the run does, at its
    loss. A level whose optimiser has no flow refuses `along.flow`, naming it."""
    sim = _small(paper, level)
    plain = _seed_values(sim)
    try:
        along = dynamics.with_settings(sim, {"along.sharpness": True, "along.flow": True})
    except ValueError as refused:
        assert "along.flow" in str(refused)
        along = dynamics.with_settings(sim, {"along.sharpness": True})
    values = _seed_values(along)
    added = {"sharpness", "sharpness_ratio", "flow_distance", "flow_loss"}
    assert set(plain) < set(values) <= set(plain) | added and "sharpness" in values
    for name, value in plain.items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)

    rounding = np.finfo(values["sharpness"].dtype).eps
    last_stage_kept = {f"final.{along.loss_name}", f"final.metrics.{along.loss_name}"} & set(values)
    if dynamics._simulation.has_landscape(along) and not last_stage_kept:
        _assert_last_sharpness_is_the_landscape_s(along, values, rounding)
    if "flow_distance" in values:
        scale = max(np.linalg.norm(values[name]) for name in named_leaves(run_shape(along).final, "final."))
        assert values["flow_distance"][0] <= 10 * rounding * scale  # the same start, to rounding
        np.testing.assert_allclose(values["flow_loss"][0], values[along.loss_name][0], rtol=10 * rounding)
        assert np.all(np.isfinite(values["flow_distance"])) and values["flow_distance"][-1] > 0


def _assert_last_sharpness_is_the_landscape_s(along, values, rounding: float) -> None:
    land = along.landscape(dynamics.seed_key(3))
    final = _final_state(along, values)
    flat, unflatten = jax.flatten_util.ravel_pytree(land.params(final))
    hessian = np.asarray(jax.hessian(lambda x: land.loss(unflatten(x)))(flat), np.float64)
    dense = np.linalg.eigvalsh((hessian + hessian.T) / 2)
    single = values["sharpness"].dtype == np.float32  # Lanczos and the Hessian in float32
    np.testing.assert_allclose(values["sharpness"][-1], dense[-1], rtol=1e-4 if single else 1e-8)
    if land.step_size is not None:  # the step at the final state: η, or a normalized step's η/‖∇L‖
        eta = land.step_size(final)
        np.testing.assert_allclose(
            values["sharpness_ratio"][-1], values["sharpness"][-1] * eta / 2, rtol=4 * rounding
        )


def _with_adam(sim: dynamics.AbstractSimulation) -> dynamics.AbstractSimulation | None:
    """`sim` trained with Adam, where its `optimizer` setting offers it."""
    try:
        return dynamics.with_settings(sim, {"optimizer": "adam"})
    except ValueError:
        return None


ADAM = [
    pytest.param(*pair, marks=pytest.mark.slow) for pair in _ALONG if _with_adam(_small(*pair)) is not None
]
"""The levels of `ALONG` whose `optimizer` can be Adam (under `-m slow`)."""


@pytest.mark.parametrize(("paper", "level"), ADAM)
def test_adam_s_sharpness_ratio_alongside_leaves_a_run_as_it_is(paper, level):
    """With Adam, `along.sharpness` records the ratio to Adam's preconditioned edge
    (`dynamics.AdamSteps`) at every save, finite and positive, and changes no value of the run."""
    sim = _with_adam(_small(paper, level))
    plain = _seed_values(sim)
    values = _seed_values(dynamics.with_settings(sim, {"along.sharpness": True}))
    assert set(values) - set(plain) == {"sharpness", "sharpness_ratio"}
    for name, value in plain.items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)
    assert np.all(np.isfinite(values["sharpness_ratio"])) and np.all(values["sharpness_ratio"] > 0)


def _log_saved_steps(cls) -> str | None:
    """The step count that a level's `every` divides unless `log_saves` is set (its
    `dynamics.every_divides` condition), or `None` for a level without `log_saves`."""
    for rule in getattr(cls, "requires", ()):
        if isinstance(rule, dynamics.Require) and rule.fields[::2] == ("every", "log_saves"):
            return rule.fields[1]
    return None


_LOG_SAVES = [
    (name, level)
    for name, paper in papers().items()
    for level, cls in paper.simulations.items()
    if _log_saved_steps(cls) is not None
]
LOG_SAVES = [
    pytest.param(*pair, marks=() if i == 0 else pytest.mark.slow) for i, pair in enumerate(_LOG_SAVES)
]
"""The levels that save every few steps or at log-spaced steps (`dynamics.log_saves_param`); all
but the first under `-m slow`."""


def test_the_levels_with_log_spaced_saves_are_those_that_train_in_steps():
    """Every paper has levels that train in steps and save every few: each takes `log_saves`."""
    assert {paper for paper, _ in _LOG_SAVES} == set(papers())
    assert ("scan_snap", "text") in _LOG_SAVES and ("ntp_partial_order", "algorithm1") in _LOG_SAVES


@pytest.mark.parametrize(("paper", "level"), LOG_SAVES)
def test_log_saves_save_at_the_log_spaced_steps_of_the_level_s_steps(paper, level):
    """With `log_saves`, a level saves at `dynamics.log_spaced_steps(steps, log_saves)` of the step
    count its `every` divides (counted from where those steps start), whatever `every` is."""
    sim = _small(paper, level)
    steps_name = _log_saved_steps(type(sim))
    num_steps = dynamics._params.setting_values(sim)[steps_name]
    logged = dynamics.with_settings(sim, {"log_saves": 3, "every": num_steps + 1})
    ts = np.asarray(jax.jit(logged.run)(dynamics.seed_key(0)).ts)
    expected = dynamics.log_spaced_steps(num_steps, 3)
    np.testing.assert_array_equal(ts - ts[0], expected - expected[0])
