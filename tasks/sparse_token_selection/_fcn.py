"""The FCN side of spec §4.4: the exact Gaussian conditional-mean risk of any predictor that sees
X only through a linear first layer, the first layers that attain or miss Proposition C's bound,
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
    """E[1_y 1_y^T] for y ~ Uniform(binom([T], q)): q/T on the diagonal, q(q−1)/(T(T−1)) off it."""
    off = q * (q - 1) / (T * (T - 1))
    return np.full((T, T), off) + np.eye(T) * (q / T - off)


def linear_readout_risk(A: np.ndarray, d: int, T: int, q: int) -> float:
    """The smallest ½-normalised loss of any predictor of X u_y from (A vec X, y), X Gaussian
    (spec §4.4 proof): `(1/(2q²)) tr((I − Π_A)(E[1_y 1_y^T] ⊗ I_d))`, vec X position-major
    ([x_1; …; x_T]); computed by exact linear algebra.

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
    for m > d, m − d random directions (spec §4.4 tightness)."""
    total = np.kron(np.ones((1, T)), np.eye(d)) / np.sqrt(T)
    rest = np.random.default_rng(key).standard_normal((max(m - d, 0), T * d))
    return np.concatenate([total[: min(m, d)], rest])


def coordinate_layer(d: int, T: int, m: int) -> np.ndarray:
    """A first layer that reads m coordinates of vec X (whole positions first)."""
    return np.eye(T * d)[:m]


def _train_fcn(task: STSConfig, width: int, num_steps: int, batch_size: int, lr: float, num_eval: int, key):
    k_init, k_train, k_eval = jax.random.split(key, 3)
    params, static = eqx.partition(FCN(task.d, task.T, width, k_init, dtype=jnp.float32), eqx.is_array)
    run = dynamics.train(
        lambda p, batch: loss(eqx.combine(p, static), batch),
        params,
        dynamics.adam(lr),
        num_steps=num_steps,
        every=num_steps,
        key=k_train,
        sample=lambda k: sample(task, k, batch_size, dtype=jnp.float32),
        save=lambda m: None,
    )
    return mc_loss(eqx.combine(run.final, static), task, k_eval, num_eval, dtype=jnp.float32)


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
    """Train ReLU MLPs of first-layer width `width` with Adam on fresh STS_q samples (spec §4.4 (ii))
    and measure their population loss by Monte Carlo (`num_eval` antithetic pairs, float32).

    **Returns:** `(loss, standard error)`, one per seed.
    """
    fn = functools.partial(_train_fcn, task, width, num_steps, batch_size, lr, num_eval)
    (mean, se), _ = dynamics.run_many(fn, dynamics.seed_keys(seed, num_seeds))
    return np.asarray(mean, float), np.asarray(se, float)
