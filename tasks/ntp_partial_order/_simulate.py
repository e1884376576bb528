"""`attnflow simulate ntp_partial_order`: Algorithm 1 on many random datasets of one shape, batched."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

import dynamics

from .._settings import from_settings
from ._generate import RecipeA, RecipeB
from ._model import loss, make_batch
from ._train import algorithm1, paper_step_sizes

RECIPES = ("B", "A")


@dataclasses.dataclass(frozen=True)
class Simulation:
    """A batched run of Algorithm 1 over random realizable datasets (spec §3-§4).

    **Fields:**

    - `level`: `algorithm1` (the only level: two-stage normalized GD from zero).
    - `recipe`: `B` (default, spec §3.1) or `A` (prefix closed, §3.2).
    - `vocab_size` (>= 3), `max_length` (>= 2), `complete` (Recipe B only): the dataset shape.
    - `seed`: dataset `i` is drawn with seed `seed + i`.
    - `eta0`, `eta`: step sizes (> 0); 0 means the paper's `0.2/√d`, `0.05/√d`.
    - `num_steps1`, `num_steps2`: `T` and `T_2` (>= 1); `every` divides both.
    - `dtype`: `float64` (default) or `float32`.
    - `chunk_size`: datasets per compiled call (>= 1).
    """

    level: str = "algorithm1"
    recipe: str = "B"
    vocab_size: int = 20
    max_length: int = 6
    complete: bool = False
    seed: int = 0
    eta0: float = 0.0
    eta: float = 0.0
    num_steps1: int = 900
    num_steps2: int = 900
    every: int = 100
    dtype: str = "float64"
    chunk_size: int = 16

    def __post_init__(self):
        for name, allowed in (
            ("level", ("algorithm1",)),
            ("recipe", RECIPES),
            ("dtype", ("float32", "float64")),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name, low in (
            ("vocab_size", 3),
            ("max_length", 2),
            ("num_steps1", 1),
            ("num_steps2", 1),
            ("every", 1),
            ("chunk_size", 1),
            ("seed", 0),
        ):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")
        for name in ("eta0", "eta"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(
                    f"{name} must be a finite number >= 0 (0: the paper's), got {getattr(self, name)}"
                )
        if self.num_steps1 % self.every or self.num_steps2 % self.every:
            raise ValueError(f"every must divide num_steps1 and num_steps2, got every={self.every}")

    @classmethod
    def from_settings(cls, settings: dict[str, str]) -> "Simulation":
        """Build from `key=value` strings (the CLI's `--set`), converting each to its field's type."""
        return from_settings(cls, settings)

    def generator(self) -> RecipeA | RecipeB:
        """The dataset recipe."""
        if self.recipe == "A":
            return RecipeA(self.vocab_size, self.max_length)
        return RecipeB(self.vocab_size, self.max_length, complete=self.complete)


def simulate(sim: Simulation, num_seeds: int, *, progress: bool = False) -> dynamics.Trajectory:
    """Draw `num_seeds` datasets, pad them to one shape (padding samples have `π = 0`), and run
    Algorithm 1 on all of them with one `jit(vmap)` (`dynamics.run_many`).

    **Returns:** a `dynamics.Trajectory` with `W_kq` and `loss` every `every` stage-2 steps,
    `final/W_ov`, `final/W_kq`, and the dataset seeds in its config.
    """
    if num_seeds < 1:
        raise ValueError(f"num_seeds must be >= 1, got {num_seeds}")
    dtype = jnp.dtype(sim.dtype)
    seeds = [sim.seed + i for i in range(num_seeds)]
    datasets = [sim.generator().build(s) for s in seeds]
    rows = max(d.num_sentences for d in datasets)
    length = max(d.max_length for d in datasets)
    batches = [make_batch(d, dtype=dtype, num_rows=rows, length=length) for d in datasets]
    collocs = [make_batch(d, dtype=dtype, num_rows=sim.vocab_size, collocation=True) for d in datasets]
    stack = lambda items: jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *items)  # noqa: E731
    paper0, paper = paper_step_sizes(sim.vocab_size)
    eta0, eta = sim.eta0 or paper0, sim.eta or paper

    def one_run(batch, colloc) -> dynamics.Run:
        def save(model):
            return {"W_kq": model.W_kq, "loss": loss(model, batch)}

        _, second = algorithm1(
            batch,
            colloc,
            eta0=eta0,
            eta=eta,
            num_steps1=sim.num_steps1,
            num_steps2=sim.num_steps2,
            every=sim.every,
            save=save,
        )
        return second

    runs, _ = dynamics.run_many(
        one_run,
        stack(batches),
        stack(collocs),
        chunk_size=sim.chunk_size,
        progress=progress,
        description="ntp_partial_order",
    )
    config = {
        "task": "ntp_partial_order",
        "num_seeds": num_seeds,
        **dataclasses.asdict(sim),
        "eta0_used": eta0,
        "eta_used": eta,
        "dataset_seeds": seeds,
        "num_sentences": [d.num_sentences for d in datasets],
    }
    return dynamics.Trajectory.from_runs(runs, config)
