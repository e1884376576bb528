"""The engine's runs and analyses compile as one program when called outside `jit`."""

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import equinox as eqx

from ._progress import meters_on, progress_inside

_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")


def one_program(fn: Callable[_Args, _Result]) -> Callable[_Args, _Result]:
    """`fn` compiled as one program by `equinox.filter_jit`: its arrays are traced and everything
    else (a loss function, an iteration count, a setting) is static, so the same loss and settings
    reuse the program and a new one compiles it anew. Still a plain function, with `fn`'s name,
    signature and docstring.

    Called outside `jit`, a run or an analysis would otherwise compile each of its operations as a
    program of its own, for every new shape (tens of them, seconds on a CPU for a first call), and
    its solve or scan anew at every call, for the functions it builds around the loss. Inside `jit`
    or `vmap` the compiled call is traced into the caller's program. Whether progress meters are on
    ([`progress_inside`][]) is part of what the program is compiled for, as a run inside it reads
    that when it is traced. A `dict` argument reaches `fn` in its own order, not sorted by key as
    JAX's trees are, so that the first of a run's `events` is still the first.

    **Example:** the three operations of `centred_norm` are one compiled program:

        >>> import jax.numpy as jnp
        >>> from dynamics._compiled import one_program
        >>> @one_program
        ... def centred_norm(x):
        ...     return jnp.linalg.norm(x - jnp.mean(x))
        >>> float(centred_norm(jnp.array([1.0, 3.0])))
        1.4142135623730951
        >>> centred_norm.__name__
        'centred_norm'
    """

    def traced(meters: bool, dicts: tuple, *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        with progress_inside(meters):
            return fn(*_each(args, dicts, dict), **_each(kwargs, dicts, dict))

    traced.__name__ = traced.__qualname__ = fn.__name__  # the program's name in JAX's logs
    compiled = eqx.filter_jit(traced)

    @functools.wraps(fn)
    def call(*args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        dicts = (
            tuple(i for i, value in enumerate(args) if type(value) is dict),
            tuple(name for name, value in kwargs.items() if type(value) is dict),
        )
        return compiled(meters_on(), dicts, *_each(args, dicts, _pairs), **_each(kwargs, dicts, _pairs))

    return call


def _pairs(mapping: dict) -> tuple:
    return tuple(mapping.items())


def _each(arguments: tuple | dict, dicts: tuple[tuple[int, ...], tuple[str, ...]], convert: Callable):
    """The positional (a tuple) or keyword (a dict) `arguments`, those that `dicts` names converted:
    a `dict` to its `(key, value)` pairs (`_pairs`), which keep its order through `jit`, and back."""
    if isinstance(arguments, tuple):
        return tuple(convert(value) if i in dicts[0] else value for i, value in enumerate(arguments))
    return {name: convert(value) if name in dicts[1] else value for name, value in arguments.items()}
