"""Test set-up: float64 everywhere and strict dtype promotion. The process and the processes it
starts compute at the command line's XLA backend optimisation level
(`attnflow._runtime.BACKEND_OPTIMIZATION`, unless `XLA_FLAGS` names one: compiling is most of the
tests' cost, and faster there than at XLA's default), and the command line, called in-process by a
test, must not change what later tests and the processes they start compute with.

The tests run in one worker process per core (pytest-xdist), each computing on one thread, and
share one compilation cache for the session: a program compiled by one worker, one test module or
one command-line subprocess is loaded, not compiled, by the others."""

import os
import shutil
import tempfile

os.environ.setdefault("EQX_ON_ERROR", "nan")  # as the command line sets it, before Equinox is imported

import jax  # noqa: E402
import pytest

from attnflow import _runtime

_MADE_CACHE = "ATTNFLOW_TEST_COMPILE_CACHE" not in os.environ
if _MADE_CACHE:  # the first process of the session makes it, and removes it at the end
    os.environ["ATTNFLOW_TEST_COMPILE_CACHE"] = tempfile.mkdtemp(prefix="attnflow-tests-jax-")
os.environ["ATTNFLOW_CACHE_DIR"] = os.environ["ATTNFLOW_TEST_COMPILE_CACHE"]  # command-line subprocesses
os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ["ATTNFLOW_TEST_COMPILE_CACHE"]  # other subprocesses
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
_runtime.use_backend_optimization()  # the command line's level, unless XLA_FLAGS names one
if os.environ.get("PYTEST_XDIST_WORKER"):  # as many workers as cores: one thread each
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_runtime.ONE_THREAD}".strip()

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", os.environ["ATTNFLOW_TEST_COMPILE_CACHE"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.devices()  # JAX reads XLA_FLAGS here, once: the command line's changes to them come too late
jax.config.update("jax_numpy_dtype_promotion", "strict")


def pytest_sessionfinish(session, exitstatus):
    if _MADE_CACHE:
        shutil.rmtree(os.environ["ATTNFLOW_TEST_COMPILE_CACHE"], ignore_errors=True)


@pytest.fixture
def getkey():
    """A fresh PRNG key per call, deterministic within a test."""
    state = {"key": jax.random.PRNGKey(0)}

    def _getkey():
        state["key"], sub = jax.random.split(state["key"])
        return sub

    return _getkey


@pytest.fixture(autouse=True)
def _types_unchecked_where_marked(request):
    """The test run checks the engine's annotations on every call (`tests._typechecker`); a test
    marked `unchecked_types` sees what a user sees, whose runs have no such checker: the friendly
    error for a value of the wrong type."""
    if request.node.get_closest_marker("unchecked_types") is None:
        yield
        return
    import jaxtyping

    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping.config.update("jaxtyping_disable", False)


@pytest.fixture(autouse=True, scope="module")
def _compiled_programs_released():
    """Each test module's compiled programs are released when it ends: a whole run otherwise keeps
    thousands of them mapped in one process, and compiling then fails deep inside XLA."""
    yield
    jax.clear_caches()


@pytest.fixture(autouse=True)
def _no_compile_cache_in_process(monkeypatch):
    """The command line, called in-process by a test, would point JAX's persistent compilation
    cache at the user's cache folder for the rest of the test session; tests keep the session's.
    A test of the cache itself patches `use_compile_cache` over this."""
    monkeypatch.setattr(_runtime, "use_compile_cache", lambda directory: None)


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


@pytest.fixture(autouse=True)
def _sweep_plots_readable_in_print(monkeypatch):
    """Every sweep plot a test draws prints its smallest text at `figures.SMALLEST_TEXT` or more once
    scaled to a paper's text width (`figures.printed_size`)."""
    from attnflow import _sweep_plots
    from figures import SMALLEST_TEXT, printed_size

    save = _sweep_plots._save

    def readable(fig, path):
        smallest = printed_size(fig)["smallest_text_pt"]
        assert smallest is None or smallest >= SMALLEST_TEXT, (
            f"{path.name}: its smallest text prints at {smallest} pt"
        )
        return save(fig, path)

    monkeypatch.setattr(_sweep_plots, "_save", readable)
