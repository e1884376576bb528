"""Every run and analysis a user calls on concrete arrays, outside `jit`, compiles as one program
(an operation at a time it was tens of programs, seconds on a CPU, and a flow compiled its solve
anew at every call), with the numbers of the same call under `jit`."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from dynamics import _compiled
from dynamics._progress import meters_on

_CUBIC = lambda t: t[0] ** 3 / 3 - t[0] + 0.5 * t[1] ** 2 + 0.1 * t[0] * t[1]  # noqa: E731
_QUARTIC = lambda t: 0.5 * t @ jnp.diag(jnp.linspace(1.0, 5.0, t.shape[0])) @ t + jnp.sum(t**4)  # noqa: E731
_START = np.array([-1.1, 0.2])
_POINT = np.full(30, 0.1)
_GD = dynamics.gd(0.1)
_SAVES = np.logspace(-2.0, 3.0, 101)
_LATE = np.logspace(2.0, 8.0, 13)
_TURNING = np.stack([np.log(_LATE), np.ones(13)], axis=1)
_BLOCKS = lambda p: _QUARTIC(p["x"]) + _QUARTIC(p["y"]) + jnp.sum(p["x"][:2] * p["y"])  # noqa: E731
_STAGES = (
    dynamics.Stage(
        _BLOCKS,
        _GD,
        {"x": True, "y": False},
        num_steps=20,
        events={"b": lambda p: False, "a": lambda p: False},
    ),
    dynamics.Stage(
        _BLOCKS, _GD, {"x": False, "y": True}, num_steps=10, prepare=lambda p: {**p, "x": 2 * p["x"]}
    ),
)


def _halve(carry, step):
    y, count = carry
    return (y / 2, count + 1), step


OUTSIDE_JIT = {
    "critical_point": (lambda start: dynamics.landscape.critical_point(_CUBIC, start), (_START,)),
    "hessian_spectrum": (lambda point: dynamics.landscape.hessian_spectrum(_CUBIC, point), (_START,)),
    "phases": (dynamics.landscape.phases, (_SAVES, 1.0 / (1.0 + (_SAVES / 10.0) ** 3))),
    "hvp": (lambda point, v: dynamics.landscape.hvp(_QUARTIC, point, v), (_POINT, np.ones(30))),
    "hessian_max_eigenvalue": (
        lambda point: dynamics.landscape.hessian_max_eigenvalue(_QUARTIC, point),
        (_POINT,),
    ),
    "hessian_max_eigenvalue(power)": (
        lambda point: dynamics.landscape.hessian_max_eigenvalue(_QUARTIC, point, method="power"),
        (_POINT,),
    ),
    "top_eigenpair": (
        lambda point, start: dynamics.landscape.top_eigenpair(_QUARTIC, point, num_iters=10, start=start),
        (_POINT, np.ones(30)),
    ),
    "norm_growth": (dynamics.landscape.norm_growth, (_LATE, _TURNING)),
    "direction_convergence": (dynamics.landscape.direction_convergence, (_LATE, _TURNING)),
    "gradient_flow": (lambda start: dynamics.gradient_flow(_QUARTIC, start, t1=2.0), (_POINT[:3],)),
    "train": (lambda start: dynamics.train(_QUARTIC, start, _GD, num_steps=20), (_POINT[:3],)),
    "train_stages": (
        lambda start: dynamics.train_stages(start, _STAGES),
        ({"x": _POINT[:3], "y": _POINT[3:5]},),
    ),
    "scan_with_saves": (
        lambda start: dynamics.scan_with_saves(
            _halve, (start, np.int64(0)), dynamics.Save(every=2), num_steps=4
        ),
        (_POINT[:3],),
    ),
    "gd_flow_gap": (
        lambda start, step_size: dynamics.landscape.gd_flow_gap(
            _QUARTIC, start, step_size, num_steps=20, every=10
        ),
        (_POINT[:3], 0.1),
    ),
}
"""Each run or analysis, and the arrays it is called on (NumPy's, so that making them compiles nothing)."""


def _compiled_by(call) -> tuple[object, list[str]]:
    """What `call()` returns, and the programs compiled while it ran."""
    compiled = []

    def listener(event, seconds, **labels):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(labels.get("fun_name"))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        return jax.block_until_ready(call()), compiled
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@pytest.mark.parametrize("name", OUTSIDE_JIT)
def test_a_run_or_analysis_called_outside_jit_compiles_as_one_program(name):
    analysis, arrays = OUTSIDE_JIT[name]
    outside, compiled = _compiled_by(lambda: analysis(*arrays))
    assert len(compiled) <= 4, compiled  # the analysis, and a few one-off constants (e.g. η made an array)
    jax.tree.map(np.testing.assert_array_equal, outside, jax.jit(analysis)(*arrays))


def test_a_new_step_size_does_not_compile_the_gap_anew():
    """η is an argument of `gd_flow_gap`'s program, not a constant of it."""
    dynamics.landscape.gd_flow_gap(_QUARTIC, _POINT[:3], 0.1, num_steps=20, every=10)
    gap, compiled = _compiled_by(
        lambda: dynamics.landscape.gd_flow_gap(_QUARTIC, _POINT[:3], 0.2, num_steps=20, every=10)
    )
    assert compiled == [] and float(gap.times[-1]) == 4.0


def test_a_run_called_again_with_the_same_loss_compiles_nothing():
    """Before, a flow compiled its solve anew at every call (for the vector field it builds around
    the loss), and training its scan."""
    dynamics.gradient_flow(_QUARTIC, _POINT[:3], t1=2.0)
    dynamics.train(_QUARTIC, _POINT[:3], _GD, num_steps=20)
    dynamics.train_stages({"x": _POINT[:3], "y": _POINT[3:5]}, _STAGES)
    (flow, run, stages), compiled = _compiled_by(
        lambda: (
            dynamics.gradient_flow(_QUARTIC, _POINT[3:6], t1=2.0),
            dynamics.train(_QUARTIC, _POINT[3:6], _GD, num_steps=20),
            dynamics.train_stages({"x": _POINT[3:6], "y": _POINT[6:8]}, _STAGES),
        )
    )
    assert compiled == [] and flow.is_successful() and run.is_successful()
    assert [run.event_names for run in stages] == [("b", "a"), ()]  # in the order given


def test_a_dict_argument_keeps_its_order():
    """JAX's trees sort a dict by key; a run's events are tried in the order given."""
    keys = _compiled.one_program(lambda events, x: (x, tuple(events)))
    assert keys({"never": None, "loss_below": None}, np.zeros(()))[1] == ("never", "loss_below")
    assert keys(x=np.zeros(()), events={"b": 1, "a": 2})[1] == ("b", "a")


def test_a_program_is_compiled_for_the_progress_meters_it_is_called_with():
    """A run reads whether meters are on when it is traced: a program compiled without them is
    not reused inside `progress_inside`, nor one compiled with them outside it."""

    @_compiled.one_program
    def meters_seen(x):
        return x + float(meters_on())

    assert float(meters_seen(np.zeros(()))) == 0.0
    with dynamics.progress_inside():
        assert float(meters_seen(np.zeros(()))) == 1.0
    assert float(meters_seen(np.zeros(()))) == 0.0


def test_one_program_example():
    result = doctest.testmod(_compiled, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
