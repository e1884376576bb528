"""The landscape a level declares (`AbstractSimulation.landscape`) is the loss its runs save: at a
run's final state it gives the run's last saved loss (or the final state's own loss, where the run
keeps it as `final.<loss_name>` or `final.metrics.<loss_name>`: a last stage after the last save),
for every level of every paper that declares one, as the registry finds them, at its `small`
settings. A run that stops at an event before its last save is left to its paper's own tests."""

import jax
import numpy as np
import pytest

import dynamics
from attnflow.papers import papers
from dynamics._store import variables


def _small(paper: str, level: str) -> dynamics.AbstractSimulation:
    cls = papers()[paper].simulation(level)
    return dynamics.from_setting_values(cls, cls.small)


LANDSCAPES = [
    pytest.param(name, level, marks=() if level == paper.default_level else pytest.mark.slow)
    for name, paper in papers().items()
    for level, cls in paper.simulations.items()
    if dynamics._simulation.has_landscape(dynamics.from_setting_values(cls, cls.small))
]
"""Every level that declares a landscape; all but each paper's default level only under `-m slow`."""


def test_each_paper_s_default_level_declares_a_landscape():
    for name, paper in papers().items():
        cls = paper.simulation(paper.default_level)
        assert dynamics._simulation.has_landscape(dynamics.from_setting_values(cls, cls.small)), (
            f"{name}: {cls.__name__} declares no landscape"
        )


@pytest.mark.parametrize(("paper", "level"), LANDSCAPES)
def test_the_landscape_at_a_run_s_final_state_is_its_last_saved_loss(paper, level):
    sim = _small(paper, level)
    key = dynamics.seed_key(3)
    run = jax.jit(sim.run)(key)
    land = sim.landscape(key)
    if float(run.t_stop) < float(run.ts[-1]):
        pytest.skip("the run stopped at an event before its last save: its paper's tests run it to the end")
    named = variables(run)
    kept = [f"final.{sim.loss_name}", f"final.metrics.{sim.loss_name}"]
    if held := [name for name in kept if name in named]:
        saved = np.asarray(named[held[0]][1])
    else:
        saved = np.asarray(named[sim.loss_name][1])[-1]
    loss = jax.jit(lambda final: land.loss(land.params(final)))(run.final)
    assert np.isfinite(saved)
    rtol = 1e-12 if sim.dtype == "float64" else 1e-5
    np.testing.assert_allclose(np.asarray(loss), saved, rtol=rtol)
    if land.step_size is not None:
        assert float(land.step_size(run.final)) > 0
