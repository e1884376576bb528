"""Algorithm 1 on random realizable datasets as a simulation: one run draws its dataset from its
integer seed on the host and trains on it, so many seeds run in one compiled call."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

import dynamics
from dynamics import Interval, OneOf, Require, dtype_param, param

from ._data import Dataset
from ._generate import RecipeA, RecipeB
from ._model import Batch, loss, make_batch
from ._train import algorithm1, paper_step_sizes

RECIPES = ("B", "A")
_STEP = Interval(0)
_B_VOCAB = RecipeB.k_max + RecipeB.m_max


def _padded_batches(generator: RecipeA | RecipeB, rows: int, length: int, dtype, seed) -> tuple[Batch, Batch]:
    """The dataset `generator` draws with integer seed `seed`, padded to `rows` samples of `length`
    positions, and its collocation (one row per token), as numpy batches."""
    data = generator.build(int(seed))
    if data.num_sentences > rows:
        raise ValueError(
            f"Algorithm1: the dataset of seed {int(seed)} has {data.num_sentences} samples, more than "
            f"max_sentences={rows}; set max_sentences to at least {data.num_sentences}"
        )
    batch = make_batch(data, dtype=dtype, num_rows=rows, length=length)
    colloc = make_batch(data, dtype=dtype, num_rows=data.vocab_size, collocation=True)
    return jax.tree.map(np.asarray, (batch, colloc))


def _batch_shape(rows: int, length: int, vocab_size: int, dtype) -> Batch:
    """The shapes and dtypes of a padded one-hot [`Batch`][] of `rows` samples and `length` positions."""
    ints = jnp.int32
    return Batch(
        tokens=jax.ShapeDtypeStruct((rows, length), ints),
        mask=jax.ShapeDtypeStruct((rows, length), jnp.bool_),
        lengths=jax.ShapeDtypeStruct((rows,), ints),
        labels=jax.ShapeDtypeStruct((rows,), ints),
        weights=jax.ShapeDtypeStruct((rows,), dtype),
        embeddings=jax.ShapeDtypeStruct((vocab_size, vocab_size), dtype),
    )


class Algorithm1(dynamics.AbstractSimulation):
    """Algorithm 1 (two-stage normalized GD from `W_ov = W_kq = 0`) on a random realizable
    dataset: stage 1 trains `W_ov` on the collocation loss with step `η_0`, stage 2 trains `W_kq`
    on the loss of Eqn 1 with step `η`, `W_ov` frozen.

    Run i of `dynamics.simulate(sim, n, seed=s)` draws its dataset with the integer seed `s + i`
    ([`Algorithm1.dataset`][]) on the host, padded to `max_sentences` samples of `max_length`
    positions (padding samples have `π = 0`: they change the values only by the rounding of the
    longer sums).

    **Saves:** `W_kq` and `loss` (Eqn 1) every `every` stage-2 steps (stage-2 step numbers); with
    `save_stage1`, also `W_ov` and its collocation loss `loss0` at the same step numbers of stage 1
    (so both stages have the same length); `final`: the model after stage 2, `W_ov` and `W_kq`.

    **Example:** `dynamics.simulate(Algorithm1(num_steps2=5000), num_seeds=64)`.
    """

    recipe: str = param(
        "B", OneOf(*RECIPES), doc="dataset recipe: B (query-wise orders) or A (prefix closed)"
    )
    vocab_size: int = param(20, Interval(3), doc="|V| = d (one-hot embeddings)")
    max_length: int = param(6, Interval(2), doc="L_max, the longest sentence the recipe draws")
    complete: bool = param(False, doc="Recipe B: every pair of O_q × N_q co-occurs (Proposition 2 exact)")
    max_sentences: int | None = param(
        None,
        Interval(1),
        doc="samples per padded dataset (none: vocab_size × max_length); a dataset with more is refused",
    )
    eta0: float = param(0.0, _STEP, doc="stage-1 step size η_0 (0: the paper's 0.2/√d)", traced=True)
    eta: float = param(0.0, _STEP, doc="stage-2 step size η (0: the paper's 0.05/√d)", traced=True)
    num_steps1: int = param(900, Interval(1), doc="stage-1 steps T")
    num_steps2: int = param(900, Interval(1), doc="stage-2 steps T_2")
    every: int = param(100, Interval(1), doc="save period in stage-2 steps (divides both step counts)")
    save_stage1: bool = param(False, doc="also save stage 1 (W_ov, loss0) at its own step numbers")
    dtype: str = dtype_param("float64")

    small = {"recipe": "A", "vocab_size": 6, "num_steps1": 20, "num_steps2": 20, "every": 10}
    requires = (
        Require(
            ("every", "num_steps1", "num_steps2"),
            lambda e, n1, n2: n1 % e == 0 and n2 % e == 0,
            "every must divide num_steps1 and num_steps2",
        ),
        Require(
            ("recipe", "vocab_size"),
            lambda r, v: r == "A" or v >= _B_VOCAB,
            f"Recipe B needs vocab_size >= k_max + m_max = {_B_VOCAB}",
        ),
        Require(("recipe", "complete"), lambda r, c: r == "B" or not c, "complete applies to Recipe B only"),
        Require(
            ("save_stage1", "num_steps1", "num_steps2"),
            lambda saved, n1, n2: not saved or n1 == n2,
            "save_stage1 needs num_steps1 == num_steps2 (the stages share the save axis)",
        ),
    )

    def generator(self) -> RecipeA | RecipeB:
        """The dataset recipe."""
        if self.recipe == "A":
            return RecipeA(self.vocab_size, self.max_length)
        return RecipeB(self.vocab_size, self.max_length, complete=self.complete)

    def dataset(self, seed: int) -> Dataset:
        """The dataset of the run with integer seed `seed` (validated by the recipe)."""
        return self.generator().build(seed)

    @property
    def num_rows(self) -> int:
        """The padded number of samples per dataset: `max_sentences`, or `vocab_size × max_length`."""
        return self.vocab_size * self.max_length if self.max_sentences is None else self.max_sentences

    def step_sizes(self) -> tuple[float, float]:
        """`(η_0, η)` as used: the fields, or the paper's `0.2/√d`, `0.05/√d` where they are 0."""
        paper0, paper = paper_step_sizes(self.vocab_size)
        return self.eta0 or paper0, self.eta or paper

    def describe(self) -> dict:
        """Every field, and the step sizes used (`eta0_used`, `eta_used`)."""
        eta0, eta = self.step_sizes()
        return super().describe() | {"eta0_used": eta0, "eta_used": eta}

    def batches(self, seed: int) -> tuple[Batch, Batch]:
        """The dataset of integer seed `seed` and its collocation as padded batches of this
        simulation's fixed shape (numpy leaves), as each run draws them.

        **Raises:** `ValueError` when the dataset has more than `num_rows` samples.
        """
        return _padded_batches(self.generator(), self.num_rows, self.max_length, self.float_dtype, seed)

    def landscape(self, key) -> dynamics.Landscape:
        """Eqn 1's loss of the model `(W_ov, W_kq)` (the final state) on the run's dataset, the
        loss it saves; stage 2 descends it in `W_kq` with `W_ov` frozen, so `W_ov` is generally
        not at a critical point of it."""
        V, dtype = self.vocab_size, self.float_dtype
        shapes = (_batch_shape(self.num_rows, self.max_length, V, dtype), _batch_shape(V, 1, V, dtype))
        draw = functools.partial(_padded_batches, self.generator(), self.num_rows, self.max_length, dtype)
        batch, _ = jax.pure_callback(draw, shapes, dynamics.key_seed(key), vmap_method="sequential")
        return dynamics.Landscape(lambda model: loss(model, batch))

    def run(self, key) -> dynamics.Run:
        V, dtype = self.vocab_size, self.float_dtype
        shapes = (_batch_shape(self.num_rows, self.max_length, V, dtype), _batch_shape(V, 1, V, dtype))
        draw = functools.partial(_padded_batches, self.generator(), self.num_rows, self.max_length, dtype)
        batch, colloc = jax.pure_callback(draw, shapes, dynamics.key_seed(key), vmap_method="sequential")
        paper0, paper = paper_step_sizes(self.vocab_size)  # the traced fields allow only jnp arithmetic
        eta0 = jnp.where(self.eta0 > 0, self.eta0, paper0)
        eta = jnp.where(self.eta > 0, self.eta, paper)

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
            save=save,
        )
        if not self.save_stage1:
            return second
        stage1 = {name: first.values[name] for name in ("W_ov", "loss0")}
        return dataclasses.replace(second, values=second.values | stage1)


SIMULATIONS = {"algorithm1": Algorithm1}
"""The ways of training of this paper by name (Algorithm 1 only)."""
