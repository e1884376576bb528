"""Test set-up: float64 everywhere and strict dtype promotion. The process computes at XLA's
default backend optimisation level, and the command line, called in-process by a test, must not
change what later tests and the processes they start compute with."""

import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)
jax.devices()  # JAX reads XLA_FLAGS here, once: the command line's changes to them come too late
jax.config.update("jax_numpy_dtype_promotion", "strict")


@pytest.fixture
def getkey():
    """A fresh PRNG key per call, deterministic within a test."""
    state = {"key": jax.random.PRNGKey(0)}

    def _getkey():
        state["key"], sub = jax.random.split(state["key"])
        return sub

    return _getkey


@pytest.fixture(autouse=True, scope="module")
def _compiled_programs_released():
    """Each test module's compiled programs are released when it ends: a whole run otherwise keeps
    thousands of them mapped in one process, and compiling then fails deep inside XLA."""
    yield
    jax.clear_caches()


@pytest.fixture(autouse=True)
def _no_compile_cache_in_process(monkeypatch):
    """The command line, called in-process by a test, would turn JAX's persistent compilation cache
    on for the rest of the test session (in the user's cache folder); tests compile afresh instead.
    A test of the cache itself patches `_use_compile_cache` over this."""
    from attnflow import cli

    monkeypatch.setattr(cli, "_use_compile_cache", lambda directory: None)


@pytest.fixture(autouse=True)
def _xla_flags_restored():
    """`attnflow.cli.main` adds its backend optimisation level to `XLA_FLAGS` for the processes it
    starts; called in-process by a test, that must not reach the subprocesses of later tests."""
    before = os.environ.get("XLA_FLAGS")
    yield
    if before is None:
        os.environ.pop("XLA_FLAGS", None)
    else:
        os.environ["XLA_FLAGS"] = before
