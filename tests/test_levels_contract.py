"""What every level of every paper promises, tested on each as the registry finds them (a new
paper's levels are tested with no change here)."""

import diffrax
import jax
import pytest

import dynamics
from attnflow.papers import papers

LEVELS = [(name, level) for name, paper in papers().items() for level in paper.simulations]


@pytest.mark.parametrize(("paper", "level"), LEVELS)
def test_a_flow_level_exposes_and_passes_its_step_budget(paper, level, monkeypatch):
    """A level whose run integrates a flow has a `max_steps` field, and its run gives the solver
    that budget (traced, not run: `jax.eval_shape`)."""
    budgets = []
    solve = diffrax.diffeqsolve

    def spy(*args, **kwargs):
        budgets.append(kwargs.get("max_steps"))
        return solve(*args, **kwargs)

    monkeypatch.setattr(diffrax, "diffeqsolve", spy)
    cls = papers()[paper].simulation(level)
    jax.eval_shape(cls().run, dynamics.seed_key(0))
    if not budgets:
        return  # no flow in this level
    assert "max_steps" in {info.name for info in cls.params()}, f"{cls.__name__} integrates a flow"
    budgets.clear()
    jax.eval_shape(cls(max_steps=7).run, dynamics.seed_key(0))
    assert budgets and set(budgets) == {7}
