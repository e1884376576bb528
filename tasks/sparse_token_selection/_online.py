"""Online training on fresh samples (spec §5): mini-batch GD or Adam on the practical model, with the
validation loss at the training length, at longer lengths T_test and at other subset sizes q_test,
and the direction cosines of Fig. 1, saved along the run; many seeds at once via `dynamics.run_many`."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

import dynamics

from ._config import STSConfig
from ._data import sample
from ._loss import loss, mc_loss
from ._model import direction_cosines, random_init, zero_init

OPTIMIZERS = ("gd", "adam")
INITS = ("zeros", "random")


@dataclasses.dataclass(frozen=True)
class OnlineConfig:
    """Settings of an online run (all [UNKNOWN] in the paper; spec §5 defaults [RECON]).

    **Fields:**

    - `optimizer`: `gd` (mini-batch GD, Figs. 1, 2, 4) or `adam` (Fig. 5; β = 0.9, 0.999).
    - `lr`: learning rate.
    - `batch_size`: fresh examples per step (default 256).
    - `num_steps`, `every`: run length and save interval.
    - `init`: `zeros` (Theorem 1's init) or `random` (N(0, σ_0²), the practical model).
    - `T_tests`: validation lengths (each <= what the PE serves).
    - `q_tests`: validation subset sizes at the training length.
    - `num_eval`: antithetic pairs per validation point (fixed validation draws per seed).
    - `dtype`: `float32` or `float64`.
    """

    optimizer: str = "gd"
    lr: float = 1.0
    batch_size: int = 256
    num_steps: int = 2000
    every: int = 100
    init: str = "zeros"
    T_tests: tuple[int, ...] = ()
    q_tests: tuple[int, ...] = ()
    num_eval: int = 1024
    dtype: str = "float32"

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.batch_size < 1 or self.num_eval < 1:
            raise ValueError("batch_size and num_eval must be >= 1")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype!r}")


def _validate(task: STSConfig, opt: OnlineConfig) -> None:
    for T_test in opt.T_tests:
        if not task.T <= T_test <= task.lengths_served:
            raise ValueError(f"T_tests entries must be in [T, {task.lengths_served}], got {T_test}")
    for q_test in opt.q_tests:
        if not 1 <= q_test < task.T:
            raise ValueError(f"q_tests entries must be in [1, T), got {q_test}")


def _one_run(task: STSConfig, opt: OnlineConfig, key: jax.Array) -> dict[str, jax.Array]:
    dtype = jnp.dtype(opt.dtype)
    k_init, k_train, k_eval = jax.random.split(key, 3)
    model = zero_init(task, dtype=dtype) if opt.init == "zeros" else random_init(task, k_init, dtype=dtype)
    rate = opt.lr
    optimizer = dynamics.gd(rate) if opt.optimizer == "gd" else dynamics.adam(rate)
    q_tests = jnp.asarray(opt.q_tests or (task.q,))

    def metrics(m):
        out = {"loss": mc_loss(m, task, k_eval, opt.num_eval, dtype=dtype)[0]}
        if opt.T_tests:
            out["loss_T"] = jnp.stack(
                [
                    mc_loss(m, task, jax.random.fold_in(k_eval, T), opt.num_eval, T=T, dtype=dtype)[0]
                    for T in opt.T_tests
                ]
            )
        if opt.q_tests:
            out["loss_q"] = jax.vmap(
                lambda q: mc_loss(m, task, jax.random.fold_in(k_eval, 7919), opt.num_eval, q=q, dtype=dtype)[
                    0
                ]
            )(q_tests)
        return out | direction_cosines(m, task)

    run = dynamics.train(
        loss,
        model,
        optimizer,
        num_steps=opt.num_steps,
        every=opt.every,
        key=k_train,
        sample=lambda k: sample(task, k, opt.batch_size, dtype=dtype),
        save=metrics,
    )
    return run.values | {"stop": run.stop}


def online_runs(
    task: STSConfig, opt: OnlineConfig, num_seeds: int, *, seed: int = 0, chunk_size: int | None = None
) -> dict[str, np.ndarray]:
    """`num_seeds` online runs at once (`dynamics.run_many` over seeds).

    **Arguments:**

    - `task`: the STS_q instance and PE (stochastic or `fixed_pe`).
    - `opt`: the [`OnlineConfig`][].
    - `num_seeds`: runs; seed i uses `dynamics.seed_keys(seed, num_seeds)[i]` (init, batches,
      validation draws).
    - `chunk_size`: runs per compiled call.

    **Returns:** numpy arrays with a leading seed axis: `steps` (S,), `loss` (seeds, S),
    `loss_T` (seeds, S, len(T_tests)), `loss_q` (seeds, S, len(q_tests)), `cos_W`,
    `cos_W_centred`, `cos_V` (seeds, S), `finite` (seeds,).
    """
    _validate(task, opt)
    fn = _runner(task, opt)
    out, finite = dynamics.run_many(fn, dynamics.seed_keys(seed, num_seeds), chunk_size=chunk_size)
    out = dict(out)
    out["steps"] = np.arange(0, opt.num_steps + 1, opt.every)
    out["finite"] = finite & (out.pop("stop") != 2)
    return out


@functools.cache
def _runner(task: STSConfig, opt: OnlineConfig):
    """One run as a function of its key, made once per (task, opt) so compilations are reused."""
    return functools.partial(_one_run, task, opt)
