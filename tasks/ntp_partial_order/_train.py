"""Algorithm 1 of the paper: two-stage normalized gradient descent from zero."""

import math
import numbers
from collections.abc import Callable

import jax.numpy as jnp
from jaxtyping import PyTree

import dynamics

from ._model import Batch, NTPModel, loss


def paper_step_sizes(dim: int) -> tuple[float, float]:
    """The experiment's step sizes `η_0 = 0.2/√d`, `η = 0.05/√d` (paper, Section 7)."""
    return 0.2 / math.sqrt(dim), 0.05 / math.sqrt(dim)


def algorithm1(
    batch: Batch,
    collocation: Batch,
    *,
    eta0: float,
    eta: float,
    num_steps1: int,
    num_steps2: int,
    every: int = 1,
    save: Callable[[NTPModel], PyTree] | None = None,
) -> tuple[dynamics.Run, dynamics.Run]:
    """Algorithm 1: stage 1 trains `W_ov` on the collocation loss `L_0` by normalized GD with step
    `η_0`; stage 2 trains `W_kq` on `L` (all of `D_0`) with `W_ov` frozen, step `η`. Both start
    from 0; each step moves the trained block by exactly its step size (Frobenius norm), and a
    block with an exactly zero gradient stays put. The cross-entropy is computed stably
    (`cross_entropy`), so the normalized direction stays meaningful when logit margins exceed
    float64's `1 − softmax` resolution (the SVOP run with the paper's step sizes).

    **Arguments:**

    - `batch`, `collocation`: the dataset and its collocation ([`make_batch`][]).
    - `eta0`, `eta`: step sizes of the stages (> 0; checked when given as numbers, so they may
      also be traced arrays).
    - `num_steps1`, `num_steps2`: `T` and `T_2`.
    - `every`: save period (divides both counts).
    - `save`: function of the model to save; default the model.

    **Returns:** the two stages' `dynamics.Run`s (steps restart at 0 in stage 2).
    """
    for name, value in (("eta0", eta0), ("eta", eta)):
        if isinstance(value, numbers.Real) and not value > 0:
            raise ValueError(f"{name} must be > 0, got {value}")
    V, d = collocation.embeddings.shape[1], collocation.embeddings.shape[0]
    model = NTPModel.zeros(V, d, collocation.embeddings.dtype)
    dtype = collocation.embeddings.dtype
    record = dynamics.Save(every=every, fn=None if save is None else (lambda step, m, args: save(m)))
    stages = [
        dynamics.Stage(
            loss=lambda m: loss(m, collocation),
            optimizer=dynamics.normalized_gd(jnp.asarray(eta0, dtype)),
            trainable=NTPModel(W_ov=True, W_kq=False),
            num_steps=num_steps1,
            save=record,
        ),
        dynamics.Stage(
            loss=lambda m: loss(m, batch),
            optimizer=dynamics.normalized_gd(jnp.asarray(eta, dtype)),
            trainable=NTPModel(W_ov=False, W_kq=True),
            num_steps=num_steps2,
            save=record,
        ),
    ]
    first, second = dynamics.train_stages(model, stages)
    return first, second
