"""The Stage-1 success experiment: whether mini-batch Stage 1 ends on the positive branch of the
(α, β) dynamics, against the batch size (Stage 1 needs poly(T) samples)."""

import dataclasses
import functools

import equinox as eqx
import jax
import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

import dynamics
import tasks.contextual_bigram as cb

STAGE1_STEPS = 40
"""Stage-1 length of the success-rate experiments (η₁ = 0.5): twice the population exit time at
T = 200 on the default instances."""


def _stage1_reaches_positive_branch(inst, key, cfg) -> jax.Array:
    """Whether Stage 1 of `cfg` from scratch ends with α > 0."""
    model, _ = cb.run_stage1(inst, key, cfg)
    return cb.line_coordinates(model, inst)["alpha"] > 0


def stage1_success(T: int, batch: int, seeds: int, steps: int = STAGE1_STEPS, eta: float = 0.5) -> np.ndarray:
    """Whether Stage 1 (λ = 0, fixed length `steps`, step `eta`, on the default instance at `T`)
    ends on the positive branch (α > 0), per seed; `False` = locked onto the negative branch
    (α, β < 0) or diverged.

    **Arguments:** `T`; `batch`; `seeds` (the keys `dynamics.seed_keys(1000 T + batch, seeds)`);
    `steps`; `eta`.

    **Returns:** bool array (seeds,).
    """
    inst = cb.default_instance(T)
    cfg = cb.Algorithm1(task=cb.SCBConfig(T=T), batch=batch, eta1=eta, switch="fixed", tau1=steps)

    reaches = eqx.Partial(_stage1_reaches_positive_branch, inst, cfg=cfg)
    out, finite = dynamics.run_many(reaches, dynamics.seed_keys(T * 1000 + batch, seeds))
    return np.asarray(out) & np.asarray(finite)


def batch_for_success(T: int, batches, seeds: int, level: float = 0.9) -> tuple[float, np.ndarray]:
    """The smallest batch of `batches` (increasing) whose Stage-1 success rate is >= `level`.

    **Returns:** `(batch, rates)`: that batch (inf if none reaches `level`) and every rate.
    """
    rates = success_rates(T, tuple(batches), seeds)
    ok = np.flatnonzero(rates >= level)
    return (float(batches[ok[0]]) if ok.size else float("inf")), rates


@functools.cache
def success_rates(T: int, batches: tuple[int, ...], seeds: int) -> np.ndarray:
    """The Stage-1 success rate ([`stage1_success`][]) at each batch of `batches`, at `T`; cached,
    so the checks that share a grid simulate it once."""
    return np.array([stage1_success(T, B, seeds).mean() for B in batches])


@dataclasses.dataclass(frozen=True)
class BatchExponent:
    """The fitted growth of Stage 1's batch need with T (see [`fit_batch_exponent`][]).

    **Fields:** `exponent` p; `low`, `high` its confidence interval; `level` the interval's
    coverage; `offset` c and `sharpness` b of the fitted success curve.
    """

    exponent: float
    low: float
    high: float
    level: float
    offset: float
    sharpness: float


def _success_probability(theta, log_T, log_B):
    offset, exponent, log_sharpness = theta
    return 0.5 + 0.5 * expit(np.exp(log_sharpness) * (log_B - exponent * log_T - offset))


def _negative_log_likelihood(theta, log_T, log_B, successes, trials):
    P = np.clip(_success_probability(theta, log_T, log_B), 1e-12, 1 - 1e-12)
    return -np.sum(successes * np.log(P) + (trials - successes) * np.log1p(-P))


def _maximum_likelihood(log_T, log_B, successes, trials) -> np.ndarray:
    fits = [
        minimize(
            _negative_log_likelihood,
            [np.log(16.0), start, 0.5],
            args=(log_T, log_B, successes, trials),
            method="Nelder-Mead",
            options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 5000},
        )
        for start in (0.0, 1.0, 2.0)
    ]
    return min(fits, key=lambda fit: fit.fun).x


def fit_batch_exponent(
    rates: dict[int, np.ndarray],
    batches,
    seeds: int,
    *,
    level: float = 0.95,
    resamples: int = 400,
    seed: int = 0,
) -> BatchExponent:
    """How the batch Stage 1 needs grows with T: the exponent p of
    `P(success | T, B) = 1/2 + 1/2 σ(b (log B − p log T − c))` fitted by maximum likelihood to the
    success counts (recon). A run that Stage 1 does not steer ends on either branch with
    probability 1/2, hence the floor; the success rate depends on B / T^p only, so the batch
    giving any success level grows as T^p. The interval comes from a parametric bootstrap: counts
    redrawn from the fitted model, the model refitted.

    **Arguments:**

    - `rates`: the success rate at each batch, by T (at least two T).
    - `batches`: the batch sizes of the rates.
    - `seeds`: the runs behind each rate.
    - `level`: the interval's coverage; `resamples`: bootstrap draws; `seed`: their seed.

    **Returns:** a [`BatchExponent`][].

    **Example:** counts drawn from the model with p = 1.5 give an interval around 1.5:

    >>> batches = 2.0 ** np.arange(2, 12)
    >>> rng = np.random.default_rng(1)
    >>> rates = {
    ...     T: rng.binomial(200, _success_probability([-4.0, 1.5, 0.7], np.log(T), np.log(batches))) / 200
    ...     for T in (25, 50, 100, 200, 400)
    ... }
    >>> fit = fit_batch_exponent(rates, batches, 200, resamples=100)
    >>> bool(fit.low < 1.5 < fit.high), round(fit.exponent, 1)
    (True, 1.5)
    """
    Ts = sorted(rates)
    log_T = np.repeat(np.log(Ts), len(batches))
    log_B = np.tile(np.log(np.asarray(batches, float)), len(Ts))
    successes = np.round(np.concatenate([rates[T] for T in Ts]) * seeds)
    theta = _maximum_likelihood(log_T, log_B, successes, seeds)
    fitted = _success_probability(theta, log_T, log_B)
    rng = np.random.default_rng(seed)
    draws = [
        _maximum_likelihood(log_T, log_B, rng.binomial(seeds, fitted), seeds)[1] for _ in range(resamples)
    ]
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return BatchExponent(
        float(theta[1]), float(low), float(high), level, float(theta[0]), float(np.exp(theta[2]))
    )
