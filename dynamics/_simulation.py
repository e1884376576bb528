"""The simulation interface: a validated config whose `run(key)` is one run of one model."""

import abc
import contextlib
import contextvars
import dataclasses
import functools
import importlib
import math
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

import equinox as eqx
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree, UInt32

from ._params import PARAM_META as _PARAM_META
from ._params import (
    ParamInfo,
    Require,
    check_params,
    fields_of_settings,
    params,
    parse_settings,
    setting_value,
    setting_values,
    settings,
)
from ._run import Run


class AbstractSimulation(eqx.Module):
    r"""One way of training one model, as a small validated config.

    A final subclass declares its settings as fields made with [`param`][] (type, default,
    allowed values, doc) and implements `run(key) -> Run`, one run from one PRNG key. Every
    value is checked when the config is built, from Python and from the command line alike: a
    bad one raises a `ValueError` naming the class, the field, the value and what is allowed,
    before any work starts; so is a float beyond the range of the simulation's `dtype`. A field
    declared without [`param`][] is refused (`TypeError`) when the class is defined.

    The engine runs many seeds of it ([`simulate`][]) or a grid of settings × seeds
    ([`sweep`][]); every output records [`AbstractSimulation.describe`][].

    **Class attributes:**

    - `event_names`: the names of the events `run` stops on, in the order of `Run.event`
      ([`sweep`][] refuses a run that stops on events not named here).
    - `requires`: conditions between fields ([`Require`][]), checked after each field.
    - `seed_hint`: what makes the seeds differ where some settings make every run the same
      (e.g. `"set init=uniform"`); [`simulate`][] warns with it when all seeds agree.
    - `loss_name`: the saved value that is the run's loss, one number per save (default
      `"loss"`): what [`sweep_phases`][dynamics.landscape.sweep_phases] (`attnflow sweep --analyse phases`)
      splits into plateaus.
    - `labels`: what each saved value is, in a few words with its unit where it has one
      (`{"loss": "population loss (nats)"}`): the axis label of its plots (`attnflow sweep`); a
      value not named here is labelled by its name.
    - `small`: settings that make a run take seconds, compilation included (fewer steps, smaller
      sizes): a first try (`attnflow list PAPER` prints them as `--set` options), and the
      settings at which the project tests every level against the one contract of this
      interface.

    **Fields every simulation has:** `dtype` (`"float32"` or `"float64"`).

    **Optional methods:**

    - `landscape(key)`, the loss of the run with that key as a function of its final state
      ([`Landscape`][]): where a level declares it, the engine analyses the state a run ends in
      (`attnflow sweep --analyse critical_point,sharpness`). Default: none.
    - `draw(seed)`, data of the run with integer seed `seed` drawn on the host (by NumPy, say),
      which `run` and `landscape` read with [`AbstractSimulation.drawn`][]. Default: none (a run
      draws what it needs from its key with `jax.random`).

    **Example:** $dy/dt = -r y$ from a random start; a bad rate fails on construction; one run
    from one seed (float64) ends at $y(1) = y(0)\, e^{-r}$:

        >>> import math
        >>> import jax
        >>> import dynamics
        >>> class Decay(dynamics.AbstractSimulation):
        ...     rate: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="r", traced=True)
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         y0 = 1.0 + jax.random.uniform(key, (), self.dtype)
        ...         return dynamics.ode_flow(lambda t, y, args: -self.rate * y, y0, t1=1.0)
        >>> Decay(rate=0.0)
        Traceback (most recent call last):
        ...
        ValueError: Decay.rate must be a finite number > 0, got 0.0
        >>> sim = Decay(rate=2.0)
        >>> sim.describe()
        {'simulation': '...:Decay', 'rate': 2.0, 'dtype': 'float64', 'event_names': []}
        >>> run = sim.run(dynamics.seed_key(0))
        >>> round(float(run.final / run.values[0]), 6), round(math.exp(-2.0), 6)
        (0.135335, 0.135335)

    [`simulate`][] runs many seeds of it, [`sweep`][] a grid of rates × seeds.
    """

    dtype: eqx.AbstractVar[str]
    event_names: ClassVar[tuple[str, ...]] = ()
    requires: ClassVar[tuple[Require, ...]] = ()
    seed_hint: ClassVar[str] = ""
    loss_name: ClassVar[str] = "loss"
    labels: ClassVar[Mapping[str, str]] = MappingProxyType({})
    small: ClassVar[Mapping[str, object]] = MappingProxyType({})

    def __init_subclass__(cls, **kwargs):
        """Refuse, when the class is defined, a field declared without [`param`][]: it would be
        neither checked, listed nor recorded with the results."""
        super().__init_subclass__(**kwargs)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            value = cls.__dict__.get(name, dataclasses.MISSING)
            declared = isinstance(value, dataclasses.Field) and _PARAM_META in value.metadata
            if not (declared or _is_class_level(annotation)):
                kind = getattr(annotation, "__name__", annotation)
                raise TypeError(
                    f"{cls.__name__}.{name} is declared without dynamics.param(...), so it would be neither "
                    f"checked, listed nor recorded: declare it as `{name}: {kind} = dynamics.param(default, "
                    "allowed, doc=...)`, or annotate a class constant with ClassVar"
                )

    @abc.abstractmethod
    def run(self, key: PRNGKeyArray) -> Run:
        """One run from one PRNG key (traceable: it is `vmap`ped over keys).

        **Arguments:** `key`: this run's key.

        **Returns:** a [`Run`][].
        """

    def landscape(self, key: PRNGKeyArray) -> "Landscape | None":
        """The loss of the run with PRNG key `key` (its data depend on the key) as a function of
        its final state, or `None` where the simulation declares none (the default).

        Traceable (it is `vmap`ped over keys); whether it is `None` must depend on the settings
        only, not on the key's value. The loss should be the one the run saves as `loss_name`, so
        that at a run's final state it equals the run's last saved loss (where the run saves one at
        its end).

        **Arguments:** `key`: the run's key.

        **Returns:** a [`Landscape`][], or `None`.
        """
        return None

    def draw(self, seed: int) -> PyTree | None:
        """The data of the run with integer seed `seed`, drawn on the host (NumPy arrays), or
        `None` where the runs draw everything from their keys with `jax.random` (the default).

        The engine draws it for every run before it calls the runs' compiled program, and passes
        it in as arguments: the program never calls back to the host, so JAX's persistent cache
        keeps it and a second process loads it instead of compiling it. `run` and `landscape`
        read it with [`AbstractSimulation.drawn`][]. It must depend on the settings and `seed`
        only, with the same shapes and dtypes for every seed.

        **Arguments:** `seed`: the run's integer seed (run i of [`simulate`][] has `seed + i`).

        **Returns:** a PyTree of arrays, or `None`.
        """
        return None

    def drawn(self, key: PRNGKeyArray) -> PyTree:
        """Inside `run` or `landscape`: the [`AbstractSimulation.draw`][] of the run with PRNG
        key `key`, the seed being the one [`seed_key`][] made `key` from.

        Where the engine runs it ([`simulate`][], [`sweep`][] and the analyses of a sweep), the
        engine drew it before the program and passed it in. Called on a concrete key (outside
        `jit`), it is drawn here. Inside a `jit` or `vmap` of one's own, it is drawn through
        `jax.pure_callback`, one seed at a time: such a program calls back to the host, and JAX
        does not keep it in its persistent cache.

        **Arguments:** `key`: the run's key.

        **Returns:** the draw, as JAX arrays.

        **Example:** a decay whose start is drawn by NumPy from the run's seed:

            >>> import numpy as np
            >>> import dynamics
            >>> class Drawn(dynamics.AbstractSimulation):
            ...     dtype: str = dynamics.dtype_param("float64")
            ...
            ...     def draw(self, seed):
            ...         return {"y0": np.random.default_rng(seed).uniform(1.0, 2.0)}
            ...
            ...     def run(self, key):
            ...         y0 = self.drawn(key)["y0"]
            ...         return dynamics.ode_flow(lambda t, y, args: -y, y0, t1=1.0)
            >>> ds = dynamics.simulate(Drawn(), num_seeds=3, seed=5)
            >>> starts = [np.random.default_rng(s).uniform(1.0, 2.0) for s in (5, 6, 7)]
            >>> bool(np.allclose(ds["value"][:, 0], starts))
            True
        """
        given = _DRAWN.get()
        if given is not None:
            return given
        if not isinstance(key, jax.core.Tracer):
            return jax.tree.map(jnp.asarray, _host_draw(self, int(key_seed(key))))
        return jax.pure_callback(
            lambda seed: _host_draw(self, int(seed)),
            draw_shapes(self),
            key_seed(key),
            vmap_method="sequential",
        )

    def __check_init__(self):
        check_params(self)
        _check_representable(self)

    @property
    def float_dtype(self) -> jnp.dtype:
        """`dtype` as a JAX dtype."""
        return jnp.dtype(self.dtype)

    @classmethod
    def path(cls) -> str:
        """`module:ClassName`, what `attnflow simulate` and `sweep` load it by: the shortest
        public module that exports the class (`tasks.scan_snap:SGD`)."""
        parts = cls.__module__.split(".")
        while len(parts) > 1 and parts[-1].startswith("_"):
            if getattr(importlib.import_module(".".join(parts[:-1])), cls.__qualname__, None) is not cls:
                break
            parts.pop()
        return f"{'.'.join(parts)}:{cls.__qualname__}"

    @classmethod
    def params(cls) -> tuple[ParamInfo, ...]:
        """The settings, with their types, defaults, allowed values and docs: the declared fields,
        and for a field holding a task's config (e.g. `task`) that config's fields as `task.d`
        (see [`settings`][])."""
        return settings(cls)

    @classmethod
    def from_settings(cls, text: Mapping[str, str]) -> "AbstractSimulation":
        """Build from `key=value` strings (the command line's `--set`, `task.d=5` for a setting of
        the task's config), checking every value."""
        return cls(**fields_of_settings(cls, parse_settings(cls, text)))

    def describe(self) -> dict:
        """Everything needed to make the runs again: the class path and every setting's value, a
        task config's by dotted name (`"task.d"`), as `--set` and a grid name them."""
        return {"simulation": self.path(), **setting_values(self), "event_names": list(self.event_names)}


def _whole(final: PyTree) -> PyTree:
    return final


class Landscape(eqx.Module):
    """A run's loss as a function of its parameters, and where the parameters are in its final
    state: what [`AbstractSimulation.landscape`][] returns, and what the analyses of a run's final
    state ([`sweep_critical_points`][dynamics.landscape.sweep_critical_points],
    [`sweep_sharpness`][dynamics.landscape.sweep_sharpness]) differentiate.

    **Fields:**

    - `loss`: `params -> scalar`, the loss of the run (its data fixed by the run's key).
    - `params`: `final -> params`, the parameters in the run's final state (`Run.final`), a PyTree
      of float arrays; default: the whole final state.
    - `step_size`: `final -> η`, the step size of a discrete level (gradient descent is stable on a
      quadratic only where the sharpness is below 2/η); `None` for a flow or where there is none.
    - `saved`: `values -> params`, the parameters in what the run saves at one save (`Run.values`
      at that save, a dict by saved name), where it saves them: what
      [`sweep_saddles`][dynamics.landscape.sweep_saddles] polishes on each plateau of the run. `None` (the
      default) where the run does not save its parameters.

    **Example:** a run that ends in `{"w": w, "steps": n}` with loss ½‖w‖², trained at step 0.1:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> land = dynamics.Landscape(
        ...     loss=lambda w: 0.5 * jnp.sum(w**2),
        ...     params=lambda final: final["w"],
        ...     step_size=lambda final: 0.1,
        ... )
        >>> final = {"w": jnp.array([3.0, 4.0]), "steps": jnp.array(10)}
        >>> float(land.loss(land.params(final))), 2 / land.step_size(final)
        (12.5, 20.0)
    """

    loss: Callable[[PyTree], Float[Array, ""]]
    params: Callable[[PyTree], PyTree] = _whole
    step_size: Callable[[PyTree], Float[Array, ""]] | None = None
    saved: Callable[[dict], PyTree] | None = None


def has_landscape(sim: AbstractSimulation) -> bool:
    """Whether `sim` declares a [`Landscape`][] for its settings ([`AbstractSimulation.landscape`][]
    traced with a placeholder key: nothing runs).

    **Example:**

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> def descent(self, key):  # GD on w² from w = 1
        ...     return dynamics.train(lambda w: w**2, jnp.asarray(1.0), dynamics.gd(0.1), num_steps=1)
        >>> class Still(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...     run = descent
        >>> class Bowl(dynamics.AbstractSimulation):
        ...     dtype: str = dynamics.dtype_param("float64")
        ...     run = descent
        ...
        ...     def landscape(self, key):
        ...         return dynamics.Landscape(lambda w: w**2)
        >>> dynamics._simulation.has_landscape(Still()), dynamics._simulation.has_landscape(Bowl())
        (False, True)
    """
    return landscape_shows(sim, lambda landscape: landscape is not None)


def landscape_shows(sim: AbstractSimulation, test: Callable[["Landscape | None"], bool]) -> bool:
    """`test` of what [`AbstractSimulation.landscape`][] returns for `sim`'s settings, traced with
    a placeholder key (nothing runs): whether it declares one, whether it says where the runs save
    their parameters."""
    found = []
    jax.eval_shape(lambda key: found.append(bool(test(sim.landscape(key)))), seed_key(0))
    return found[0]


_INT32_MAX = 2**31 - 1


def _check_representable(sim: AbstractSimulation) -> None:
    """Refuse a number the run cannot hold: a float beyond the range of the simulation's `dtype`
    (it would be infinite), a traced integer beyond 32 bits (it would wrap without x64)."""
    if sim.dtype not in ("float32", "float64"):
        return
    largest = float(np.finfo(sim.dtype).max)
    for info in settings(type(sim)):
        value = setting_value(sim, info.name)
        if value is None or isinstance(value, bool):
            continue
        if info.type is float and math.isfinite(value) and abs(value) > largest:
            raise ValueError(
                f"{type(sim).__name__}.{info.name} = {value!r} is beyond {sim.dtype} (largest "
                f"{largest:.4g}), where it would be infinite: set dtype=float64, or a smaller value"
            )
        if info.type is int and info.traced and abs(value) > _INT32_MAX:
            raise ValueError(
                f"{type(sim).__name__}.{info.name} = {value!r} is beyond a 32-bit integer "
                f"(largest {_INT32_MAX})"
            )


def _is_class_level(annotation) -> bool:
    """Whether an annotation declares a class attribute or an abstract field, not a field."""
    if isinstance(annotation, str):
        return annotation.split("[")[0].split(".")[-1] in ("ClassVar", "AbstractVar", "AbstractClassVar")
    return annotation is ClassVar or typing.get_origin(annotation) in (
        ClassVar,
        eqx.AbstractVar,
        eqx.AbstractClassVar,
    )


def run_shape(sim: AbstractSimulation) -> Run:
    """The shapes and dtypes of a run of `sim` (`jax.ShapeDtypeStruct` leaves), traced (nothing
    runs) once per static part and JAX setting, the same trace the checks before a sweep make. The
    analyses of a sweep read its final state and its saves by it."""
    return trace_one_run(static_part(sim), sim).out_info


def seed_key(seed) -> PRNGKeyArray:
    """The PRNG key of the run with integer seed `seed` (traceable).

    **Example:**

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> bool(jnp.all(dynamics.seed_key(7) == jax.random.PRNGKey(7)))
        True
        >>> jax.vmap(dynamics.seed_key)(jnp.arange(3)).shape
        (3, 2)
    """
    return jax.random.PRNGKey(seed)


def key_seed(key: PRNGKeyArray) -> UInt32[Array, ""]:
    """The integer seed that [`seed_key`][] made `key` from (for seeds below 2³²), e.g. for data
    drawn on the host from a run's integer seed ([`AbstractSimulation.drawn`][]): run i of
    [`simulate`][] uses exactly seed `seed + i`.

    **Example:**

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> int(dynamics._simulation.key_seed(dynamics.seed_key(7)))
        7
        >>> jax.vmap(dynamics._simulation.key_seed)(jax.vmap(dynamics.seed_key)(jnp.arange(3))).tolist()
        [0, 1, 2]
    """
    return jax.random.key_data(key)[-1]


def with_values(sim: AbstractSimulation, values: Mapping) -> AbstractSimulation:
    """A copy of `sim` with some fields replaced, without re-validating: the values may be
    traced arrays inside a batched call. Use `dataclasses.replace` for checked copies."""
    new = object.__new__(type(sim))
    for f in dataclasses.fields(sim):
        object.__setattr__(new, f.name, values[f.name] if f.name in values else getattr(sim, f.name))
    return new


def static_part(sim: AbstractSimulation) -> AbstractSimulation:
    """`sim` with its traced fields reset to their defaults: two simulations with the same static
    part share one compiled program."""
    return with_values(sim, {info.name: info.default for info in params(type(sim)) if info.traced})


_DRAWN = contextvars.ContextVar("drawn", default=None)
"""The [`AbstractSimulation.draw`][] of the run being traced, where the engine passes it in."""


@contextlib.contextmanager
def given_draw(drawn: PyTree | None) -> Iterator[None]:
    """Within the block, [`AbstractSimulation.drawn`][] returns `drawn` (when not `None`): the run
    traced there reads the draw the engine passes in as an argument of its program."""
    token = _DRAWN.set(drawn)
    try:
        yield
    finally:
        _DRAWN.reset(token)


def _host_draw(sim: AbstractSimulation, seed: int) -> PyTree | None:
    """`sim.draw(seed)` with NumPy leaves, computed on the host even where a trace is under way."""
    with jax.ensure_compile_time_eval():
        return jax.tree.map(np.asarray, sim.draw(seed))


def draws(sims: Sequence[AbstractSimulation], seeds: Sequence[int] | Int[np.ndarray, " n"]) -> PyTree | None:
    """The draws of runs `(sims[i], seeds[i])` ([`AbstractSimulation.draw`][]) stacked along a
    leading run axis, as NumPy arrays; `None` where the simulations draw nothing on the host."""
    first = _host_draw(sims[0], int(seeds[0])) if len(sims) else None
    if first is None:
        return None
    drawn = [first, *(_host_draw(sim, int(seed)) for sim, seed in zip(sims[1:], seeds[1:]))]
    return jax.tree.map(lambda *leaves: np.stack(leaves), *drawn)


def draw_shapes(sim: AbstractSimulation) -> PyTree | None:
    """The shapes and dtypes of `sim`'s draw (`jax.ShapeDtypeStruct` leaves; that of seed 0), or
    `None` where it draws nothing on the host."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), _host_draw(sim, 0))


def _run_with_values(static: AbstractSimulation, traced_values: dict, seed, drawn=None) -> Run:
    with given_draw(drawn):
        return with_values(static, traced_values).run(seed_key(seed))


def batched_run(static: AbstractSimulation) -> Callable:
    """`(traced_values, seed, drawn=None) -> Run` for simulations sharing `static`'s static part,
    as a PyTree callable (`equinox.Partial`): equal static parts reuse [`run_many`][]'s
    compilations. `drawn` is the run's [`AbstractSimulation.draw`][] (see [`draws`][]); without
    it, a run that draws on the host draws through a callback (see [`AbstractSimulation.drawn`][])."""
    return eqx.Partial(_run_with_values, static)


@functools.lru_cache(maxsize=16)
def _jitted_one_run(static: AbstractSimulation) -> Callable:
    """[`batched_run`][] of `static`, jitted once and kept: JAX then traces it once per argument
    shapes and JAX settings (x64, dtype promotion)."""
    run_of = batched_run(static)

    def one_run(traced_values, seed, drawn):  # the name the program text (and so its digest) carries
        return run_of(traced_values, seed, drawn)

    return jax.jit(one_run)


def trace_one_run(static: AbstractSimulation, sim: AbstractSimulation) -> jax.stages.Traced:
    """One run of `sim`, whose static part is `static`, traced (nothing runs): its output shapes
    (`.out_info`) and, lowered, its program text. Traced once per static part and JAX setting."""
    traced = {k: v[0] for k, v in traced_arrays(static, [sim]).items()}
    return _jitted_one_run(static).trace(traced, np.int64(0), draw_shapes(sim))


class _ByIdentity:
    """A value as an equinox static field, equal only to itself (a traced program has no cheap
    equality): runs replayed from one trace share one compilation."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _ByIdentity) and other.value is self.value

    def __hash__(self):
        return id(self.value)


class _ReplayedRun(eqx.Module):
    """One run of a static part replayed from its traced program ([`replayed_run`][])."""

    program: _ByIdentity = eqx.field(static=True)
    out_tree: jax.tree_util.PyTreeDef = eqx.field(static=True)

    def __call__(self, traced_values: dict, seed, drawn=None) -> Run:
        leaves = jax.tree.leaves((traced_values, seed, drawn))
        outputs = jax.extend.core.jaxpr_as_fun(self.program.value)(*leaves)
        return jax.tree.unflatten(self.out_tree, [jnp.asarray(x) for x in outputs])  # constants come as NumPy


def replayed_run(static: AbstractSimulation) -> Callable:
    """[`batched_run`][] of `static` replayed from the program that [`trace_one_run`][] traced
    before the sweep (for its checks and its fingerprint), not traced from Python again: `vmap` of
    that program is the same program, computes the same numbers bit for bit, and costs about half
    as much to trace (1.0 against 2.2 s for a Result 1 flow of decision lists). The trace is JAX's,
    kept per static part and JAX setting (x64), so a replay under another setting is traced anew.
    (A simulation holds only its settings, no arrays: the program has no array of `static` as a
    constant that [`batched_run`][] would pass as an argument.)"""
    traced = trace_one_run(static, static)
    return _ReplayedRun(_ByIdentity(traced.jaxpr), traced.out_tree)


def traced_arrays(sim: AbstractSimulation, sims: list[AbstractSimulation]) -> dict[str, np.ndarray]:
    """The traced fields of `sims` stacked into arrays (floats in the simulation's dtype)."""
    arrays = {}
    for info in params(type(sim)):
        if info.traced:
            dtype = sim.float_dtype if info.type is float else None
            arrays[info.name] = np.asarray([getattr(s, info.name) for s in sims], dtype=dtype)
    return arrays
