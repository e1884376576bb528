"""Analyses that compile as one program when called outside `jit`."""

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import equinox as eqx

_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")


def one_program(fn: Callable[_Args, _Result]) -> Callable[_Args, _Result]:
    """`fn` compiled as one program by `equinox.filter_jit`: its arrays are traced and everything
    else (a loss function, an iteration count, a setting) is static, so a new value of a static
    argument compiles anew. Still a plain function, with `fn`'s name, signature and docstring.

    Called outside `jit`, an analysis would otherwise compile each of its operations as a program
    of its own, for every new shape: tens to hundreds of them, seconds on a CPU for a first call.
    Inside `jit` or `vmap` the compiled call is traced into the caller's program as it was.

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
    compiled = eqx.filter_jit(fn)

    @functools.wraps(fn)
    def call(*args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        return compiled(*args, **kwargs)

    return call
