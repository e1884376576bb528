"""The landscape a level declares (`AbstractSimulation.landscape`) is the loss its runs save: at a
run's final state it gives the run's last saved loss, for every level of every paper that declares
one, as the registry finds them, at its `small` settings."""

import jax
import numpy as np
import pytest

import dynamics
from attnflow.papers import papers
from dynamics._store import variables

ENDS_AT_LAST_SAVE = {("decision_lists", "result1_flow"): {"stop_at_perfect": False}}
"""Settings that make a level's run end at its last save (no early stop), so that its last saved
loss is the loss of its final state."""
FINAL_LOSS = {("contextual_bigram", "algorithm1"): "final.metrics.loss"}
"""The variable that holds the loss of the final state, where it is not the last saved loss (the
Stage-3 model of Algorithm 1 comes after its last save)."""


def _small(paper: str, level: str) -> dynamics.AbstractSimulation:
    cls = papers()[paper].simulation(level)
    return dynamics.from_setting_values(cls, dict(cls.small) | ENDS_AT_LAST_SAVE.get((paper, level), {}))


LANDSCAPES = [
    pytest.param(name, level, marks=() if level == paper.default_level else pytest.mark.slow)
    for name, paper in papers().items()
    for level, cls in paper.simulations.items()
    if dynamics.has_landscape(dynamics.from_setting_values(cls, cls.small))
]
"""Every level that declares a landscape; all but each paper's default level only under `-m slow`."""


def test_each_paper_s_default_level_declares_a_landscape():
    for name, paper in papers().items():
        cls = paper.simulation(paper.default_level)
        assert dynamics.has_landscape(dynamics.from_setting_values(cls, cls.small)), (
            f"{name}: {cls.__name__} declares no landscape"
        )


@pytest.mark.parametrize(("paper", "level"), LANDSCAPES)
def test_the_landscape_at_a_run_s_final_state_is_its_last_saved_loss(paper, level):
    sim = _small(paper, level)
    key = dynamics.seed_key(3)
    run = jax.jit(sim.run)(key)
    land = sim.landscape(key)
    assert float(run.t_stop) == float(run.ts[-1]), "the run stopped before its last save"
    named = variables(run)
    if (paper, level) in FINAL_LOSS:
        saved = np.asarray(named[FINAL_LOSS[paper, level]][1])
    else:
        saved = np.asarray(named[sim.loss_name][1])[-1]
    loss = jax.jit(lambda final: land.loss(land.params(final)))(run.final)
    assert np.isfinite(saved)
    rtol = 1e-12 if sim.dtype == "float64" else 1e-5
    np.testing.assert_allclose(np.asarray(loss), saved, rtol=rtol)
    if land.step_size is not None:
        assert float(land.step_size(run.final)) > 0
