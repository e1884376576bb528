"""Test set-up: float64 everywhere and strict dtype promotion."""

import jax
import pytest

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")


@pytest.fixture
def getkey():
    """A fresh PRNG key per call, deterministic within a test."""
    state = {"key": jax.random.PRNGKey(0)}

    def _getkey():
        state["key"], sub = jax.random.split(state["key"])
        return sub

    return _getkey
