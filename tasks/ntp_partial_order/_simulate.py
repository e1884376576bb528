"""Algorithm 1 on random realizable datasets as a simulation: one run draws its dataset from its
integer seed on the host, before the runs' program, and trains on it, so many seeds run in one
compiled call."""

import dataclasses
from types import MappingProxyType

import jax
import jax.numpy as jnp
import numpy as np

import dynamics
from dynamics import Interval, Require, dtype_param, param

from ._config import NTPConfig
from ._model import Batch, NTPModel, loss, make_batch
from ._train import algorithm1, paper_step_sizes, stage1, stage2_loss

_STEP = Interval(0)


def _padded_batches(task: NTPConfig, dtype, seed) -> tuple[Batch, Batch]:
    """The dataset of `task` with integer seed `seed`, padded to `task.num_rows` samples of
    `task.max_length` positions, and its collocation (one row per token), as numpy batches."""
    data = task.dataset(int(seed))
    if data.num_sentences > task.num_rows:
        raise ValueError(
            f"Algorithm1: the dataset of seed {int(seed)} has {data.num_sentences} samples, more than "
            f"task.max_sentences={task.num_rows}; set it to at least {data.num_sentences}"
        )
    batch = make_batch(data, dtype=dtype, num_rows=task.num_rows, length=task.max_length)
    colloc = make_batch(data, dtype=dtype, num_rows=data.vocab_size, collocation=True)
    return jax.tree.map(np.asarray, (batch, colloc))


class Algorithm1(dynamics.AbstractSimulation):
    """Algorithm 1 (two-stage normalized GD from `W_ov = W_kq = 0`) on a random realizable
    dataset: stage 1 trains `W_ov` on the collocation loss with step `η_0`, stage 2 trains `W_kq`
    on the loss of Eqn 1 with step `η`, `W_ov` frozen.

    The dataset settings are one field, `task` (an [`NTPConfig`][]: `--set task.vocab_size=10`).
    Run i of `dynamics.simulate(sim, n, seed=s)` draws its dataset with the integer seed `s + i`
    (`sim.task.dataset(s + i)`) on the host, padded to `task.num_rows` samples of
    `task.max_length` positions (padding samples have `π = 0`: they change the values only by the
    rounding of the longer sums).

    **Saves:** `W_kq` and `loss` (Eqn 1) every `every` stage-2 steps (or at `log_saves`
    log-spaced ones; stage-2 step numbers); with
    `save_stage1`, also `W_ov` and its collocation loss `loss0` at the same step numbers of stage 1
    (so both stages have the same length); `final`: the model after stage 2, `W_ov` and `W_kq`.
    With `along.sharpness`, also stage 2's `sharpness` (of `L` over `W_kq`) and `sharpness_ratio`
    (λ_max·η/(2‖∇L‖): a normalized step is a GD step of size η/‖∇L‖); with `along.flow`, the
    distance `flow_distance` from the normalized flow dW_kq/dt = −η∇L/‖∇L‖ from stage 2's start
    (the gradient flow's path at normalized GD's speed) and its loss `flow_loss`.

    **Example:** `dynamics.simulate(Algorithm1(num_steps2=5000), num_seeds=64)`.
    """

    task: NTPConfig = param(
        NTPConfig(), doc="the random datasets: recipe, vocab_size, max_length, complete, max_sentences"
    )
    eta0: float = param(0.0, _STEP, doc="stage-1 step size η_0 (0: the paper's 0.2/√d)", traced=True)
    eta: float = param(0.0, _STEP, doc="stage-2 step size η (0: the paper's 0.05/√d)", traced=True)
    num_steps1: int = param(900, Interval(1), doc="stage-1 steps T")
    num_steps2: int = param(900, Interval(1), doc="stage-2 steps T_2")
    every: int = param(100, Interval(1), doc="save period in stage-2 steps (divides both step counts)")
    log_saves: int | None = dynamics.log_saves_param()
    save_stage1: bool = param(False, doc="also save stage 1 (W_ov, loss0) at its own step numbers")
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="what stage 2 records along its run: the sharpness over W_kq against normalized GD's edge, "
        "the normalized flow from its start",
    )
    dtype: str = dtype_param("float64")

    labels = MappingProxyType(
        {
            "loss": "loss L of Eqn 1, π-weighted cross-entropy (nats)",
            "loss0": "stage-1 collocation loss L₀, summed over tokens (nats)",
            "sharpness": "sharpness λ_max of L's Hessian over W_kq",
            "sharpness_ratio": "λ_max·η/(2‖∇L‖): sharpness / normalized GD's edge",
            "flow_distance": "distance ‖W_kq − normalized flow‖ at t = step",
            "flow_loss": "loss L of the normalized flow at t = step (nats)",
        }
    )
    small = {"task.recipe": "A", "task.vocab_size": 6, "num_steps1": 20, "num_steps2": 20, "every": 10}
    requires = (
        dynamics.every_divides("num_steps1"),
        dynamics.every_divides("num_steps2"),
        Require(
            ("save_stage1", "num_steps1", "num_steps2"),
            lambda saved, n1, n2: not saved or n1 == n2,
            "save_stage1 needs num_steps1 == num_steps2 (the stages share the save axis)",
        ),
    )

    def step_sizes(self) -> tuple[float, float]:
        """`(η_0, η)` as used: the fields, or the paper's `0.2/√d`, `0.05/√d` where they are 0."""
        paper0, paper = paper_step_sizes(self.task.vocab_size)
        return self.eta0 or paper0, self.eta or paper

    def describe(self) -> dict:
        """Every field, and the step sizes used (`eta0_used`, `eta_used`)."""
        eta0, eta = self.step_sizes()
        return super().describe() | {"eta0_used": eta0, "eta_used": eta}

    def batches(self, seed: int) -> tuple[Batch, Batch]:
        """The dataset of integer seed `seed` and its collocation as padded batches of this
        simulation's fixed shape (numpy leaves), as each run draws them.

        **Raises:** `ValueError` when the dataset has more than `task.num_rows` samples.
        """
        return _padded_batches(self.task, self.float_dtype, seed)

    def draw(self, seed: int) -> tuple[Batch, Batch]:
        """The run of integer seed `seed` draws `batches(seed)` (on the host, before the runs'
        program)."""
        return self.batches(seed)

    def _traced_step_sizes(self):
        """`(η_0, η)` as `step_sizes`, in the jnp arithmetic the traced fields allow."""
        paper0, paper = paper_step_sizes(self.task.vocab_size)
        return jnp.where(self.eta0 > 0, self.eta0, paper0), jnp.where(self.eta > 0, self.eta, paper)

    def landscape(self, key) -> dynamics.Landscape:
        """The loss stage 2 descends and saves: Eqn 1 on the run's dataset as a function of
        `W_kq` (`final.W_kq`), `W_ov` held at stage 1's result (stage 1 run again from the key).
        Its step size at the final state is normalized GD's, η/‖∇L‖."""
        batch, colloc = self.drawn(key)
        eta0, eta = self._traced_step_sizes()
        ends = dynamics.Save(every=self.num_steps1)
        first = stage1(colloc, eta0=eta0, num_steps=self.num_steps1, save=ends)
        stage_loss = stage2_loss(first.final.W_ov, batch)

        def step_size(final: NTPModel):
            return eta / jnp.linalg.norm(jax.grad(stage_loss)(final.W_kq))

        return dynamics.Landscape(stage_loss, params=lambda final: final.W_kq, step_size=step_size)

    def run(self, key) -> dynamics.Run:
        batch, colloc = self.drawn(key)
        eta0, eta = self._traced_step_sizes()

        def save(model):
            saved = {"W_kq": model.W_kq, "loss": loss(model, batch)}
            if self.save_stage1:
                saved |= {"W_ov": model.W_ov, "loss0": loss(model, colloc)}
            return saved

        first, second = algorithm1(
            batch,
            colloc,
            eta0=eta0,
            eta=eta,
            num_steps1=self.num_steps1,
            num_steps2=self.num_steps2,
            every=self.every,
            log_saves=self.log_saves,
            save=save,
            along=self.along,
        )
        if not self.save_stage1:
            return second
        stage1 = {name: first.values[name] for name in ("W_ov", "loss0")}
        return dataclasses.replace(second, values=second.values | stage1)


SIMULATIONS = {"algorithm1": Algorithm1}
"""The ways of training of this paper by name (Algorithm 1 only)."""
