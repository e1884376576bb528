"""Declared config fields: a type, a default, what is allowed and a line of documentation, checked
in one place when a config is built (from Python or from the command line)."""

import dataclasses
import functools
import math
import numbers
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx

PARAM_META = "attnflow_param"
"""The metadata key of a field declared with [`param`][]."""


@dataclasses.dataclass(frozen=True)
class Interval:
    """Numbers between `low` and `high` (either may be `None`: unbounded), closed at each end
    unless `low_open` / `high_open`. Values must be finite unless `infinite` is set (the field's
    doc then says what infinity means).

    **Example:** a field that allows 0 ≤ x < 1, and the error a value outside gives:

        >>> import dataclasses
        >>> import dynamics
        >>> dynamics.Interval(0, 1, high_open=True).describe()
        'a finite number in [0, 1)'
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     momentum: float = dynamics.param(0.9, dynamics.Interval(0, 1, high_open=True))
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Config(momentum=0.0).momentum
        0.0
        >>> Config(momentum=1.0)
        Traceback (most recent call last):
        ...
        ValueError: Config.momentum must be a finite number in [0, 1), got 1.0
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    infinite: bool = False

    @classmethod
    def positive(cls) -> "Interval":
        """The positive finite numbers, (0, ∞): what a rate, a step or a tolerance must be.

        **Example:**

            >>> import dynamics
            >>> dynamics.Interval.positive().describe()
            'a finite number > 0'
        """
        return cls(0, low_open=True)

    def describe(self) -> str:
        """What is allowed, in words, e.g. `a finite number in [0, 1)`."""
        if self.low is None and self.high is None:
            span = ""
        elif self.high is None:
            span = f" {'>' if self.low_open else '>='} {self.low:g}"
        elif self.low is None:
            span = f" {'<' if self.high_open else '<='} {self.high:g}"
        else:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            span = f" in {left}{self.low:g}, {self.high:g}{right}"
        return ("a number" if self.infinite else "a finite number") + span

    def admits(self, value: float) -> bool:
        """True when `value` lies in the interval (and is finite unless `infinite`)."""
        if math.isnan(value) or (math.isinf(value) and not self.infinite):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None and (value > self.high or (self.high_open and value == self.high)))


@dataclasses.dataclass(frozen=True)
class OneOf:
    """One of a fixed set of choices, e.g. `OneOf("float32", "float64")`.

    **Example:** a field with three choices, and the error another value gives:

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     init: str = dynamics.param("zero", dynamics.OneOf("zero", "uniform", "normal"))
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Config(init="normal").init
        'normal'
        >>> Config(init="ones")
        Traceback (most recent call last):
        ...
        ValueError: Config.init must be one of 'zero', 'uniform', 'normal', got 'ones'
    """

    choices: tuple

    def __init__(self, *choices):
        object.__setattr__(self, "choices", tuple(choices))

    def describe(self) -> str:
        """The choices, in words."""
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def admits(self, value) -> bool:
        """True when `value` is one of the choices."""
        return value in self.choices


Allowed = Interval | OneOf | None


@dataclasses.dataclass(frozen=True)
class Require:
    """A condition between several fields, checked after each field on its own.

    **Arguments:** `fields`: the fields involved (their values appear in the error), a setting of
    a config held in a field by its dotted name (`"task.T"`); `holds`: `(*values) -> bool`;
    `message`: what must hold, in words.

    **Example:** a class attribute `requires` holds the conditions between its fields (for a save
    period and its step count, the engine has one: [`every_divides`][]):

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Attention:
        ...     d_model: int = dynamics.param(200, dynamics.Interval(1))
        ...     num_heads: int = dynamics.param(1, dynamics.Interval(1))
        ...     requires = (
        ...         dynamics.Require(
        ...             ("num_heads", "d_model"), lambda h, d: d % h == 0, "num_heads must divide d_model"
        ...         ),
        ...     )
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Attention(num_heads=4).num_heads
        4
        >>> Attention(num_heads=3)
        Traceback (most recent call last):
        ...
        ValueError: Attention: num_heads must divide d_model, got num_heads=3, d_model=200
    """

    fields: tuple[str, ...]
    holds: Callable[..., bool]
    message: str

    def check(self, config) -> None:
        """Raise `ValueError` naming the class, the message and the fields' values unless it holds."""
        values = [setting_value(config, name) for name in self.fields]
        if not self.holds(*values):
            got = ", ".join(f"{n}={v!r}" for n, v in zip(self.fields, values))
            raise ValueError(f"{type(config).__name__}: {self.message}, got {got}")


@dataclasses.dataclass(frozen=True)
class ParamInfo:
    """What a declared field allows, as read by [`params`][] and `attnflow list`.

    **Fields:** `name`, `type` (`int`, `float`, `bool` or `str`), `optional` (also takes `None`),
    `default` (`dataclasses.MISSING` for a required field), `allowed` ([`Interval`][], [`OneOf`][] or
    `None`), `doc`, and `traced` (the field may vary inside one compiled batch of runs: a sweep over
    it compiles once).

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     seed: int | None = dynamics.param(None, dynamics.Interval(0), doc="first seed")
        >>> (info,) = dynamics.params(Config)
        >>> info.name, info.type, info.optional, info.default, info.doc, info.traced
        ('seed', <class 'int'>, True, None, 'first seed', False)
        >>> info.describe_allowed()
        'an integer >= 0, or none'
    """

    name: str
    type: type
    optional: bool
    default: Any
    allowed: Allowed
    doc: str
    traced: bool

    def describe_allowed(self) -> str:
        """The allowed values in words, e.g. `an integer >= 1`."""
        if isinstance(self.allowed, OneOf):
            text = self.allowed.describe()
        elif self.type is int:
            span = self.allowed.describe().removeprefix("a finite number") if self.allowed else ""
            text = "an integer" + span
        elif self.type is float:
            text = self.allowed.describe() if self.allowed else "a finite number"
        elif self.type is bool:
            text = "true or false"
        elif is_config(self.type):
            text = f"a {self.type.__name__} (set its fields as {self.name}.<field>)"
        else:
            text = "a string"
        return text + (", or none" if self.optional else "")


def param(default=dataclasses.MISSING, allowed: Allowed = None, *, doc: str = "", traced: bool = False):
    """Declare a field of a simulation: its default, what is allowed and what it means.

    **Arguments:**

    - `default`: the default value; leave it out for a required field (one without a default).
    - `allowed`: an [`Interval`][] or a [`OneOf`][]; `None` accepts any value of the field's type.
    - `doc`: one line for `attnflow list` and the docs.
    - `traced`: the value may differ between the runs of one compiled call (a learning rate, an
      end time), so a sweep over it compiles once; leave it off for anything that sets a shape or
      is read by Python control flow.

    **Returns:** a dataclass field carrying the declaration.

    **Example:** a learning rate η > 0, declared once and checked whenever the config is built
    (an [`AbstractSimulation`][] checks on construction; a plain dataclass calls
    [`check_params`][]):

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     eta: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="learning rate")
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Config().eta, Config(eta=0.5).eta
        (1.0, 0.5)
        >>> Config(eta=-0.1)
        Traceback (most recent call last):
        ...
        ValueError: Config.eta must be a finite number > 0, got -0.1
        >>> Config(eta="fast")
        Traceback (most recent call last):
        ...
        ValueError: Config.eta must be a finite number > 0, got 'fast'
    """
    return eqx.field(default=default, metadata={PARAM_META: (allowed, doc, traced)})


def dtype_param(default: str):
    """The `dtype` field every simulation has: `"float32"` or `"float64"`, with its default
    (float64 where a result is compared with a closed form, float32 for large batches).

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Config().dtype
        'float64'
        >>> Config(dtype="float16")
        Traceback (most recent call last):
        ...
        ValueError: Config.dtype must be one of 'float32', 'float64', got 'float16'
    """
    return param(default, OneOf("float32", "float64"), doc="floating-point precision")


def log_saves_param():
    """The `log_saves` field of a simulation that trains in steps and saves every `every`: `None`
    (every `every` steps) or the number of saves after step 0, log-spaced
    ([`log_spaced_steps`][]), where the phases of a run are seen (build its save with
    [`training_save`][]; check `every` with [`every_divides`][]).

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Schedule:
        ...     num_steps: int = dynamics.param(100, dynamics.Interval(1))
        ...     every: int = dynamics.param(10, dynamics.Interval(1))
        ...     log_saves: int | None = dynamics.log_saves_param()
        ...     requires = (dynamics.every_divides(),)
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Schedule(every=30, log_saves=20).log_saves
        20
        >>> Schedule(every=30)
        Traceback (most recent call last):
        ...
        ValueError: Schedule: every must divide num_steps (or set log_saves), got every=30, ...
    """
    return param(
        None,
        Interval(1),
        doc="saves after step 0, log-spaced in steps, instead of every `every` (None: every `every`)",
    )


def every_divides(steps: str = "num_steps") -> Require:
    """The condition of a simulation with `every`, `log_saves` ([`log_saves_param`][]) and a step
    count named `steps`: `every` divides the steps, unless the saves are log-spaced.

    **Example:** (a class holding these fields: see [`log_saves_param`][])

        >>> import dynamics
        >>> rule = dynamics.every_divides("stage2_steps")
        >>> rule.fields, rule.message
        (('every', 'stage2_steps', 'log_saves'), 'every must divide stage2_steps (or set log_saves)')
    """
    return Require(
        ("every", steps, "log_saves"),
        lambda every, num_steps, log_saves: log_saves is not None or num_steps % every == 0,
        f"every must divide {steps} (or set log_saves)",
    )


def _field_type(annotation) -> tuple[type, bool]:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0], True
    return annotation, False


@functools.cache
def params(cls) -> tuple[ParamInfo, ...]:
    """The declared fields of a config class, in order (fields made with [`param`][]); read once
    per class, since every construction checks them.

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     eta: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="learning rate")
        ...     num_steps: int = dynamics.param(100, dynamics.Interval(1), doc="steps")
        ...     label: str = "not declared"
        >>> [(info.name, info.default, info.describe_allowed()) for info in dynamics.params(Config)]
        [('eta', 1.0, 'a finite number > 0'), ('num_steps', 100, 'an integer >= 1')]
    """
    hints = typing.get_type_hints(cls)
    infos = []
    for f in dataclasses.fields(cls):
        if PARAM_META not in f.metadata:
            continue
        allowed, doc, traced = f.metadata[PARAM_META]
        kind, optional = _field_type(hints[f.name])
        infos.append(ParamInfo(f.name, kind, optional, f.default, allowed, doc, traced))
    return tuple(infos)


def check_value(owner: str, info: ParamInfo, value) -> None:
    """Raise `ValueError` naming `owner`, the field, the value and what is allowed, unless `value`
    is a valid value of the field `info`."""
    if value is None and info.optional:
        return
    allowed = Interval() if info.allowed is None and info.type in (int, float) else info.allowed
    ok = _has_type(info.type, value) and (allowed is None or allowed.admits(value))
    if not ok:
        raise ValueError(f"{owner}.{info.name} must be {info.describe_allowed()}, got {value!r}")


def check_params(config) -> None:
    """Check every field of `config` declared with [`param`][], then the class's `requires`
    ([`Require`][] conditions between fields), raising the first `ValueError`. Every
    [`AbstractSimulation`][] does this on construction; call it from `__post_init__` to validate
    a plain dataclass the same way.

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     num_seeds: int = dynamics.param(8, dynamics.Interval(1))
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> Config(num_seeds=4).num_seeds
        4
        >>> Config(num_seeds=2.5)
        Traceback (most recent call last):
        ...
        ValueError: Config.num_seeds must be an integer >= 1, got 2.5
    """
    owner = type(config).__name__
    for info in params(type(config)):
        check_value(owner, info, getattr(config, info.name))
    for condition in getattr(type(config), "requires", ()):
        condition.check(config)


def is_count(value, low: int = 1) -> bool:
    """Whether `value` is an integer (Python's or NumPy's, not a bool) of at least `low`."""
    return _has_type(int, value) and value >= low


def _has_type(kind: type, value) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind is int:
        return isinstance(value, numbers.Integral)
    if kind is float:
        return isinstance(value, numbers.Real)
    return isinstance(value, kind)


def is_config(kind) -> bool:
    """Whether `kind` is a config class of its own (a dataclass with fields declared by
    [`param`][]): a simulation's field of that type holds a task's settings as one value, whose
    fields are set by dotted names (`task.d`).

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Task:
        ...     d: int = dynamics.param(4, dynamics.Interval(1))
        >>> dynamics._params.is_config(Task), dynamics._params.is_config(int)
        (True, False)
    """
    return (
        isinstance(kind, type)
        and dataclasses.is_dataclass(kind)
        and any(PARAM_META in f.metadata for f in dataclasses.fields(kind))
    )


@functools.cache
def settings(cls) -> tuple[ParamInfo, ...]:
    """Every setting of a config class by the name the command line (`--set`, `--grid`) and a sweep's
    grid give it: its declared fields, and in place of a field that holds a config of its own
    (`is_config`) that config's settings as `field.name`. A nested config's settings are static
    (each value compiles its own program); one declared `traced` is refused.

    **Example:** a task's settings held in one field:

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Task:
        ...     d: int = dynamics.param(4, dynamics.Interval(1), doc="dimension")
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     task: Task = dynamics.param(Task(), doc="the task")
        ...     lr: float = dynamics.param(0.1, dynamics.Interval.positive(), doc="step")
        >>> [(info.name, info.default) for info in dynamics.settings(Config)]
        [('task.d', 4), ('lr', 0.1)]
    """
    infos = []
    for info in params(cls):
        if not is_config(info.type):
            infos.append(info)
            continue
        if info.default is dataclasses.MISSING or info.default is None:
            raise TypeError(
                f"{cls.__name__}.{info.name} holds a {info.type.__name__}: give it a default instance"
            )
        for inner in settings(info.type):
            if inner.traced:
                raise TypeError(
                    f"{info.type.__name__}.{inner.name} is traced, but the settings of a config held in a "
                    f"field ({cls.__name__}.{info.name}) are static"
                )
            default = setting_value(info.default, inner.name)
            infos.append(dataclasses.replace(inner, name=f"{info.name}.{inner.name}", default=default))
    return tuple(infos)


def setting_values(config) -> dict[str, Any]:
    """The value of every setting of `config` ([`settings`][]), by its dotted name.

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Task:
        ...     d: int = dynamics.param(4, dynamics.Interval(1))
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     task: Task = dynamics.param(Task())
        ...     lr: float = dynamics.param(0.1)
        >>> dynamics._params.setting_values(Config(task=Task(d=8)))
        {'task.d': 8, 'lr': 0.1}
    """
    return {info.name: setting_value(config, info.name) for info in settings(type(config))}


def setting_value(config, name: str):
    """The value of the setting `name` of `config`, a field or a dotted `field.name`."""
    for part in name.split("."):
        config = getattr(config, part)
    return config


def with_settings(config, values: Mapping[str, Any]):
    """A checked copy of `config` with some settings replaced, a nested config's by dotted names
    (`{"task.d": 8}`), the others kept.

    **Raises:** `ValueError` naming an unknown setting (and the known ones) or a bad value.

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Task:
        ...     d: int = dynamics.param(4, dynamics.Interval(1))
        ...     q: int = dynamics.param(2, dynamics.Interval(1))
        ...
        ...     def __post_init__(self):
        ...         dynamics.check_params(self)
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     task: Task = dynamics.param(Task())
        ...     lr: float = dynamics.param(0.1)
        >>> dynamics.with_settings(Config(), {"task.d": 8, "lr": 0.5})
        Config(task=Task(d=8, q=2), lr=0.5)
        >>> dynamics.with_settings(Config(), {"task.d": 0})
        Traceback (most recent call last):
        ...
        ValueError: Config.task: Task.d must be an integer >= 1, got 0
    """
    return dataclasses.replace(config, **fields_of_settings(type(config), values, config))


def fields_of_settings(cls, values: Mapping[str, Any], base=None) -> dict[str, Any]:
    """The field values of `cls` that `values` (settings by dotted name, see [`settings`][]) give:
    a nested config built from `base`'s (or the field's default) with its settings replaced.

    **Raises:** `ValueError` naming an unknown setting or a bad value of a nested config.
    """
    infos = {info.name: info for info in params(cls)}
    fields: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        head, dot, rest = name.partition(".")
        info = infos.get(head)
        if info is None or (dot and not is_config(info.type)):
            known = ", ".join(i.name for i in settings(cls))
            raise ValueError(f"{cls.__name__} has no setting {name!r}; known: {known}")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            fields[head] = value
    for head, changes in nested.items():
        inner = fields.get(head, infos[head].default if base is None else getattr(base, head))
        try:
            fields[head] = with_settings(inner, changes)
        except ValueError as err:
            raise ValueError(f"{cls.__name__}.{head}: {err}") from None
    return fields


def from_setting_values(cls, values: Mapping[str, Any]):
    """Build `cls` from settings by dotted name, e.g. a recorded `setting_values` (names it
    does not know are ignored: a config recorded by an older version builds with today's defaults
    for settings added since, and drops settings removed since).

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Task:
        ...     d: int = dynamics.param(4, dynamics.Interval(1))
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     task: Task = dynamics.param(Task())
        ...     lr: float = dynamics.param(0.1)
        >>> recorded = {"simulation": "mine:Config", "task.d": 8, "lr": 0.5}
        >>> dynamics.from_setting_values(Config, recorded)
        Config(task=Task(d=8), lr=0.5)
    """
    known = {info.name for info in settings(cls)}
    return cls(**fields_of_settings(cls, {k: v for k, v in values.items() if k in known}))


def parse_settings(cls, settings_text: Mapping[str, str]) -> dict[str, Any]:
    """Convert `key=value` strings (the command line's `--set`) to typed setting values of `cls`.

    **Arguments:**

    - `cls`: a config class with fields declared by [`param`][].
    - `settings_text`: setting name (see [`settings`][]: `task.d` for a nested config's) → value
      as text; `none` gives `None` for an optional setting.

    **Returns:** setting name → typed value (not yet range-checked: building `cls` with
    [`with_settings`][] or `cls.from_settings` does that).

    **Raises:** `ValueError` naming an unknown setting (and the known ones) or a value of the
    wrong type.

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     eta: float = dynamics.param(1.0, dynamics.Interval.positive())
        ...     seed: int | None = dynamics.param(None)
        ...     center: bool = dynamics.param(False)
        >>> values = dynamics.parse_settings(Config, {"eta": "0.5", "seed": "none", "center": "true"})
        >>> values
        {'eta': 0.5, 'seed': None, 'center': True}
        >>> Config(**values)
        Config(eta=0.5, seed=None, center=True)
        >>> dynamics.parse_settings(Config, {"lr": "0.5"})
        Traceback (most recent call last):
        ...
        ValueError: Config has no setting 'lr'; known: eta, seed, center
    """
    infos = {info.name: info for info in settings(cls)}
    values = {}
    for key, text in settings_text.items():
        if key not in infos:
            raise ValueError(f"{cls.__name__} has no setting {key!r}; known: {', '.join(infos)}")
        values[key] = parse_value(cls.__name__, infos[key], text)
    return values


def parse_value(owner: str, info: ParamInfo, text: str):
    """One value of the field `info` from its text (see [`parse_settings`][]).

    **Example:**

        >>> import dataclasses
        >>> import dynamics
        >>> from dynamics._params import parse_value
        >>> @dataclasses.dataclass(frozen=True)
        ... class Config:
        ...     num_steps: int = dynamics.param(100, dynamics.Interval(1))
        >>> (info,) = dynamics.params(Config)
        >>> parse_value("Config", info, " 250 ")
        250
        >>> parse_value("Config", info, "1e3")
        Traceback (most recent call last):
        ...
        ValueError: Config.num_steps must be an integer >= 1, got '1e3'
    """
    text = text.strip()
    if info.optional and text.lower() == "none":
        return None
    try:
        if info.type is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return text.lower() in ("true", "1")
        if info.type is int:
            return int(text)
        return info.type(text)
    except ValueError:
        raise ValueError(f"{owner}.{info.name} must be {info.describe_allowed()}, got {text!r}") from None
