"""Property-based tests of every registered simulation and public config: each declared field refuses
bad values (NaN, infinities, non-integers, wrong types, out-of-range values and choices) with one
error naming the class and the field (a task config's setting by its dotted name, `task.d`), and
accepts every allowed value, whose `describe()` rebuilds the same config."""

import functools
import importlib
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dynamics
from attnflow.papers import papers
from examples.custom_model import Retrieval

NEEDS_ARGUMENTS = {
    "DecisionLists": lambda cls: cls.random(0, L=8, n=3, M=2),
    "Dataset2": lambda cls: cls.syn_small(),
}
"""Public configs that cannot be built from defaults alone (a drawn task, a dataset's sizes): how to
make one whose fields the tests vary."""


def _public_configs() -> dict:
    """Every public config class of every paper's task package that is not a simulation (those are
    below), found by scanning: name -> a function making one."""
    found = {}
    for name in papers():
        package = importlib.import_module(f"tasks.{name}")
        for attr in package.__all__:
            obj = getattr(package, attr)
            if dynamics._params.is_config(obj) and not issubclass(obj, dynamics.AbstractSimulation):
                found[attr] = (
                    functools.partial(NEEDS_ARGUMENTS[attr], obj) if attr in NEEDS_ARGUMENTS else obj
                )
    return found


CONFIGS = _public_configs()
SIMULATIONS = {cls.path(): cls for p in papers().values() for cls in p.simulations.values()} | {
    "examples.custom_model:Retrieval": Retrieval
}
BASES = {name: make for name, make in CONFIGS.items()} | {path: cls for path, cls in SIMULATIONS.items()}
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fields(name: str) -> list[dynamics._params.ParamInfo]:
    """Every setting, a config held in a field by its fields' dotted names (`task.d`)."""
    return dynamics.settings(type(BASES[name]()))


def _owner(base, name: str) -> str:
    """Who an error about setting `name` of `base` names: `Online.task: STSConfig` for `task.d`."""
    head, dot, _ = name.partition(".")
    return (
        f"{type(base).__name__}.{head}: {type(getattr(base, head)).__name__}" if dot else type(base).__name__
    )


def _bad_values(info: dynamics._params.ParamInfo) -> st.SearchStrategy:
    """Values the field must refuse."""
    wrong_type = ["1", [1], {"a": 1}] + ([] if info.optional else [None])
    allowed = info.allowed
    if info.type is bool:
        return st.sampled_from([1, 0, "true", 1.0, *wrong_type])
    if info.type is str:
        return st.sampled_from([1, True, *wrong_type]) | st.text(max_size=8).filter(
            lambda s: not (isinstance(allowed, dynamics.OneOf) and s in allowed.choices)
        )
    interval = allowed if isinstance(allowed, dynamics.Interval) else dynamics.Interval()
    bad = [math.nan, True, *wrong_type]
    if not interval.infinite:
        bad += [math.inf, -math.inf]
    if info.type is int:
        bad += [1.5, 2.0]
    out_of_range = []
    if interval.low is not None:
        out_of_range.append(
            st.integers(max_value=math.floor(interval.low))
            if info.type is int
            else st.floats(max_value=interval.low, allow_nan=False, allow_infinity=False)
        )
    if interval.high is not None:
        out_of_range.append(
            st.integers(min_value=math.ceil(interval.high))
            if info.type is int
            else st.floats(min_value=interval.high, allow_nan=False, allow_infinity=False)
        )
    strategy = st.sampled_from(bad)
    for extra in out_of_range:
        strategy = strategy | extra.filter(lambda v, i=interval: not i.admits(v))
    return strategy


PATH_FIELDS = {"source": st.just("quick"), "task.source": st.just("quick")}
"""String fields that name a corpus or a directory: any text is not allowed, these values are."""


def _good_values(info: dynamics._params.ParamInfo) -> st.SearchStrategy:
    """Values the field allows (bounded to keep the configs small)."""
    allowed = info.allowed
    if info.name in PATH_FIELDS:
        values = PATH_FIELDS[info.name]
    elif isinstance(allowed, dynamics.OneOf):
        values = st.sampled_from(allowed.choices)
    elif info.type is bool:
        values = st.booleans()
    elif info.type is str:
        values = st.text(min_size=1, max_size=8)
    else:
        interval = allowed or dynamics.Interval()
        low = interval.low if interval.low is not None else -10.0
        high = interval.high if interval.high is not None else low + 10.0
        if info.type is int:
            low_int = math.floor(low) + (1 if interval.low_open and low == math.floor(low) else 0)
            values = st.integers(
                min_value=max(math.ceil(low), low_int), max_value=max(math.ceil(low), math.floor(high))
            )
            values = values.filter(interval.admits)
        else:
            values = st.floats(
                min_value=low, max_value=high, exclude_min=interval.low_open, exclude_max=interval.high_open,
                allow_nan=False, allow_infinity=False,
            )  # fmt: skip
    return values | st.none() if info.optional else values


@pytest.mark.parametrize("name", sorted(BASES))
def test_every_config_builds_with_its_defaults(name):
    config = BASES[name]()
    assert _fields(name), f"{name} declares no fields"
    dynamics.check_params(config)


@pytest.mark.unchecked_types
@pytest.mark.parametrize("name", sorted(BASES))
@PROPERTY
@given(data=st.data())
def test_bad_values_are_refused_naming_the_field(name, data):
    base = BASES[name]()
    info = data.draw(st.sampled_from(_fields(name)), label="field")
    value = data.draw(_bad_values(info), label="value")
    with pytest.raises(ValueError) as error:
        dynamics.with_settings(base, {info.name: value})
    assert f"{_owner(base, info.name)}.{info.name.split('.')[-1]} must be" in str(error.value)


@pytest.mark.parametrize("name", sorted(BASES))
@PROPERTY
@given(data=st.data())
def test_allowed_values_build_and_describe_round_trips(name, data):
    base = BASES[name]()
    info = data.draw(st.sampled_from(_fields(name)), label="field")
    value = data.draw(_good_values(info), label="value")
    try:
        config = dynamics.with_settings(base, {info.name: value})
    except ValueError as error:  # only a condition between fields may refuse an allowed value
        assert str(error).startswith((f"{type(base).__name__}: ", f"{_owner(base, info.name)}: ")), error
        assume(False)
    assert dynamics._params.setting_values(config)[info.name] == value
    if isinstance(config, dynamics.AbstractSimulation):
        described = config.describe()
        rebuilt = dynamics.from_setting_values(
            type(config), {p.name: described[p.name] for p in config.params()}
        )
        assert rebuilt == config
        from_text = type(config).from_settings({p.name: str(described[p.name]) for p in config.params()})
        assert from_text == config
