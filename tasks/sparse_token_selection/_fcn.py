"""The FCN side of the width separation: the exact Gaussian conditional-mean risk of any predictor
that sees X only through a linear first layer, the first layers that attain or miss Proposition C's
bound (derived; see "Training dynamics" on the sparse_token_selection page of the documentation),
and trained ReLU MLPs of a given width."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dynamics

from ._config import STSConfig
from ._data import sample
from ._loss import loss, mc_loss
from ._model import FCN


def subset_second_moment(T: int, q: int) -> np.ndarray:
    """E[1_y 1_yᵀ] for y ∼ Uniform(binom([T], q)): q/T on the diagonal, q(q−1)/(T(T−1)) off it."""
    off = q * (q - 1) / (T * (T - 1))
    return np.full((T, T), off) + np.eye(T) * (q / T - off)


def linear_readout_risk(A: np.ndarray, d: int, T: int, q: int) -> float:
    """The smallest ½-normalised loss of any predictor of X u_y from (A vec X, y), X Gaussian
    (the proof of Proposition C): `(1/(2q²)) tr((I − Π_A)(E[1_y 1_y^T] ⊗ I_d))`, vec X position-major
    ([x₁; …; x_T]); computed by exact linear algebra.

    **Arguments:** `A`: the first layer on vec X, shape `(m, T d)`; sizes `d`, `T`, `q`.
    """
    A = np.asarray(A, float)
    if A.shape[1] != T * d:
        raise ValueError(f"A must have T*d = {T * d} columns, got {A.shape[1]}")
    if A.shape[0]:
        U, s, _ = np.linalg.svd(A.T, full_matrices=False)
        U = U[:, s > s.max() * 1e-10]
        projector = U @ U.T
    else:
        projector = np.zeros((T * d, T * d))
    C = np.kron(subset_second_moment(T, q), np.eye(d))
    return float(np.trace((np.eye(T * d) - projector) @ C)) / (2 * q * q)


def top_eigenspace_layer(d: int, T: int, m: int, key: int = 0) -> np.ndarray:
    """A first layer of width m that reads the token sum Σ_i x_i (the `1 ⊗ I_d` eigenspace) and,
    for m > d, m − d random directions: it attains Proposition C's bound for d ≤ m ≤ Td."""
    total = np.kron(np.ones((1, T)), np.eye(d)) / np.sqrt(T)
    rest = np.random.default_rng(key).standard_normal((max(m - d, 0), T * d))
    return np.concatenate([total[: min(m, d)], rest])


def coordinate_layer(d: int, T: int, m: int) -> np.ndarray:
    """A first layer that reads m coordinates of vec X (whole positions first)."""
    return np.eye(T * d)[:m]


def fcn_run(
    task: STSConfig,
    width: int,
    key: jax.Array,
    *,
    num_steps: int = 3000,
    every: int | None = None,
    log_saves: int | None = None,
    batch_size: int = 256,
    lr=1e-3,
    num_eval: int = 4096,
    dtype=jnp.float32,
    along: dynamics.Along | None = None,
) -> dynamics.Run:
    """Train one ReLU MLP of first-layer width `width` (the [`FCN`][] baseline) with Adam on fresh
    STS_q samples, measuring its population loss by Monte Carlo along the way.

    **Arguments:**

    - `task`: the STS_q instance (the FCN sees X and y only).
    - `width`: the first-layer width m.
    - `key`: split into the init, the training batches and the fixed validation draws.
    - `num_steps`, `every`: Adam steps and the save interval (default: `num_steps`, i.e. saves at
      the start and the end only).
    - `log_saves`: save at step 0 and at `dynamics.log_spaced_steps(num_steps, log_saves)`
      instead of every `every` steps (`None`: every).
    - `batch_size`, `lr`: examples per step and Adam's learning rate (may be traced).
    - `num_eval`: antithetic validation pairs.
    - `dtype`: the floating-point type of the MLP and the data.
    - `along`: what else to record (`dynamics.Along`; `None`: nothing) of the validation loss
      [`fcn_validation_loss`][] (the saved `loss`): its sharpness against Adam's preconditioned
      edge ([`dynamics.AdamSteps`][]); Adam follows no flow.

    **Returns:** a `dynamics.Run` (final state: the MLP's arrays) saving `loss` and `loss_se`
    (its Monte-Carlo standard error) at steps 0, every, ..., num_steps (or the log-spaced steps).
    """
    k_init, k_train, k_eval = _fcn_keys(key)
    params, static = _fcn_parts(task, width, k_init, dtype)

    def validation(p):
        mean, se = mc_loss(eqx.combine(p, static), task, k_eval, num_eval, dtype=dtype)
        return {"loss": mean, "loss_se": se}

    def record(step, p, args):
        return validation(p)

    every = num_steps if every is None else every
    save = dynamics.training_save(record, num_steps=num_steps, every=every, log_saves=log_saves)
    if along is not None:
        validation_loss = functools.partial(_validation_loss, task, static, k_eval, num_eval, dtype)
        save = along.save(save, validation_loss, params, dynamics.AdamSteps(lr), num_steps=num_steps)
    return dynamics.train(
        lambda p, batch: loss(eqx.combine(p, static), batch),
        params,
        dynamics.adam(lr),
        num_steps=num_steps,
        key=k_train,
        sample=lambda k: sample(task, k, batch_size, dtype=dtype),
        save=save,
    )


def fcn_validation_loss(task: STSConfig, width: int, key: jax.Array, *, num_eval: int, dtype):
    """The loss [`fcn_run`][] saves as `loss`, as a function of the MLP's arrays: the Monte-Carlo
    population loss on the run's fixed validation draws (from its `key`)."""
    k_init, _, k_eval = _fcn_keys(key)
    _, static = _fcn_parts(task, width, k_init, dtype)
    return functools.partial(_validation_loss, task, static, k_eval, num_eval, dtype)


def _validation_loss(task: STSConfig, static, k_eval: jax.Array, num_eval: int, dtype, params):
    return mc_loss(eqx.combine(params, static), task, k_eval, num_eval, dtype=dtype)[0]


def _fcn_keys(key: jax.Array) -> jax.Array:
    """The keys of a run's init, training batches and validation draws."""
    return jax.random.split(key, 3)


def _fcn_parts(task: STSConfig, width: int, k_init: jax.Array, dtype):
    """The initial MLP's arrays and the rest of it."""
    return eqx.partition(FCN(task.d, task.T, width, k_init, dtype=dtype), eqx.is_array)


def _final_loss(task: STSConfig, width: int, options: dict, key: jax.Array):
    values = fcn_run(task, width, key, **options).values
    return values["loss"][-1], values["loss_se"][-1]


def trained_fcn_losses(
    task: STSConfig,
    width: int,
    num_seeds: int,
    *,
    num_steps: int = 3000,
    batch_size: int = 256,
    lr: float = 1e-3,
    num_eval: int = 4096,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The population loss of [`fcn_run`][]'s trained MLPs (float32), one per seed; seed i uses
    `dynamics.seed_keys(seed, num_seeds)[i]`.

    **Returns:** `(loss, standard error)`, one per seed.
    """
    options = {"num_steps": num_steps, "batch_size": batch_size, "lr": lr, "num_eval": num_eval}
    fn = eqx.Partial(_final_loss, task, width, options)
    (mean, se), _ = dynamics.run_many(fn, dynamics.seed_keys(seed, num_seeds))
    return np.asarray(mean, float), np.asarray(se, float)
