"""Algorithm 1 of the paper: two-stage normalized gradient descent from zero."""

import functools
import math
import numbers
from collections.abc import Callable

import jax.numpy as jnp
from jaxtyping import Array, Float, PyTree

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
    log_saves: int | None = None,
    save: Callable[[NTPModel], PyTree] | None = None,
    along: dynamics.Along | None = None,
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
    - `log_saves`: save each stage at step 0 and at `dynamics.log_spaced_steps(its steps,
      log_saves)` instead of every `every` steps (`None`: every).
    - `save`: function of the model to save; default the model.
    - `along`: what stage 2 also records along its run ([`dynamics.Along`][]): the sharpness of
      `L` over `W_kq` against normalized GD's edge, and the normalized flow from stage 2's start;
      `None`: neither.

    **Returns:** the two stages' `dynamics.Run`s (steps restart at 0 in stage 2).
    """
    for name, value in (("eta0", eta0), ("eta", eta)):
        if isinstance(value, numbers.Real) and not value > 0:
            raise ValueError(f"{name} must be > 0, got {value}")
    fn = None if save is None else (lambda step, m, args: save(m))
    first = stage1(
        collocation,
        eta0=eta0,
        num_steps=num_steps1,
        save=dynamics.training_save(fn, num_steps=num_steps1, every=every, log_saves=log_saves),
    )
    W_ov = first.final.W_ov
    record = dynamics.training_save(fn, num_steps=num_steps2, every=every, log_saves=log_saves)
    if along is not None:
        record = along.save(
            record,
            stage2_loss(W_ov, batch),
            first.final,
            dynamics.NormalizedSteps(jnp.asarray(eta, W_ov.dtype)),
            num_steps=num_steps2,
            params=_W_kq,
        )
    (second,) = dynamics.train_stages(
        first.final,
        [
            dynamics.Stage(
                loss=lambda m: loss(m, batch),
                optimizer=dynamics.normalized_gd(jnp.asarray(eta, W_ov.dtype)),
                trainable=NTPModel(W_ov=False, W_kq=True),
                num_steps=num_steps2,
                save=record,
            )
        ],
    )
    return first, second


def stage1(
    collocation: Batch, *, eta0: float, num_steps: int, save: dynamics.Save | None = None
) -> dynamics.Run:
    """Algorithm 1's stage 1 from `W_ov = W_kq = 0`: normalized GD with step `η_0` on `W_ov` over
    the collocation loss `L_0`, `W_kq` held at 0. `save`: what to record of the whole model, as
    [`dynamics.train`][]'s; default the model at every step."""
    V, d = collocation.embeddings.shape[1], collocation.embeddings.shape[0]
    dtype = collocation.embeddings.dtype
    (first,) = dynamics.train_stages(
        NTPModel.zeros(V, d, dtype),
        [
            dynamics.Stage(
                loss=lambda m: loss(m, collocation),
                optimizer=dynamics.normalized_gd(jnp.asarray(eta0, dtype)),
                trainable=NTPModel(W_ov=True, W_kq=False),
                num_steps=num_steps,
                save=save,
            )
        ],
    )
    return first


def stage2_loss(W_ov: Float[Array, "V d"], batch: Batch) -> Callable[[Float[Array, "d d"]], Float[Array, ""]]:
    """`W_kq ↦ L(W_ov, W_kq)`, the loss of Eqn 1 that stage 2 descends, `W_ov` held."""
    return functools.partial(_loss_over_W_kq, W_ov, batch)


def _loss_over_W_kq(W_ov, batch: Batch, W_kq) -> Float[Array, ""]:
    return loss(NTPModel(W_ov=W_ov, W_kq=W_kq), batch)


def _W_kq(model: NTPModel) -> Float[Array, "d d"]:
    return model.W_kq
