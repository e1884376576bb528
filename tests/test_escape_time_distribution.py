"""The escape time from a small-init saddle, over seeds, against its closed-form law: a
distribution, not a mean.

Two-layer linear network L(W₁, W₂) = ½‖W₂W₁ − A‖²_F, A = diag(s₁, s₂, s₃), hidden width h, every
entry of the start drawn N(0, σ²). Near 0, mode 1's entries pair up: for each hidden unit k,
x = (W₁)_{k1} and y = (W₂)_{1k} follow ẋ = s₁y, ẏ = s₁x, so their sum grows as e^{s₁t}: the
unstable eigenspace of the saddle at 0 (Hessian eigenvalue −s₁) has dimension h, and the start's
projection p on it, p_k = (x + y)/√2, has ‖p‖²/σ² ~ χ²_h. Mode 1's strength u = (W₂W₁)₁₁ then
leaves 0 as ½‖p‖² e^{2s₁t} and follows the logistic u̇ = 2u(s₁ − u), so the loss is halfway
through its first drop (u = s₁/2) at

    t* = log(2s₁/‖p‖² − 1) / (2s₁),

and over seeds P(t* ≤ t) = P(χ²_h ≥ x(t)) with x(t) = 2s₁/(σ²(1 + e^{2s₁t})); for h = 4,
P(χ²₄ ≥ x) = e^{−x/2}(1 + x/2).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics

S = np.array([3.0, 1.0, 0.5])
HIDDEN, SIGMA, SEEDS = 4, 1e-3, 200
KS_CRITICAL = 1.63
"""The Kolmogorov-Smirnov statistic's 1 % critical value times √n (asymptotic)."""


def _loss(p):
    return 0.5 * jnp.sum((p["W2"] @ p["W1"] - jnp.diag(jnp.asarray(S))) ** 2)


HALFWAY = S[0] ** 2 / 8 + 0.5 * np.sum(S[1:] ** 2)
"""The loss when mode 1 is half learned (u = s₁/2), the others not yet."""


def _start(key):
    k1, k2 = jax.random.split(key)
    return {
        "W1": SIGMA * jax.random.normal(k1, (HIDDEN, 3)),
        "W2": SIGMA * jax.random.normal(k2, (3, HIDDEN)),
    }


def _escape(key):
    halfway = dynamics.Crossing(lambda p: _loss(p) - HALFWAY)
    return dynamics.gradient_flow(_loss, _start(key), t1=20.0, events={"halfway": halfway})


def _law(t, rate=S[0], dof=HIDDEN):
    """P(t* ≤ t): the tail of χ²_dof (dof 2 or 4) at x(t) = 2·rate/(σ²(1 + e^{2·rate·t}))."""
    x = 2 * rate / (SIGMA**2 * (1 + np.exp(2 * rate * t)))
    return np.exp(-x / 2) * (1 + x / 2 if dof == 4 else 1.0)


def _ks(sample, law) -> float:
    """The Kolmogorov-Smirnov distance between a sample's empirical law and `law` (a CDF)."""
    t = np.sort(sample)
    cdf, i = law(t), np.arange(1, t.size + 1)
    return float(max(np.max(i / t.size - cdf), np.max(cdf - (i - 1) / t.size)))


@pytest.mark.slow
def test_escape_times_over_seeds_follow_the_closed_form_law_and_each_seed_its_own():
    keys = dynamics.seed_keys(0, SEEDS)
    runs, finite = dynamics.run_many(_escape, keys)
    assert finite.all() and (np.asarray(runs.stop) == dynamics.StopReason.event).all()
    escape = np.asarray(runs.t_stop)
    critical = KS_CRITICAL / np.sqrt(SEEDS)
    assert _ks(escape, _law) < critical
    # the law can fail: a wrong escape rate or a wrong dimension of the unstable eigenspace
    assert _ks(escape, lambda t: _law(t, rate=0.9 * S[0])) > 3 * critical
    assert _ks(escape, lambda t: _law(t, dof=2)) > 3 * critical
    # each seed's escape from its own start's projection on the unstable eigenspace
    starts = jax.vmap(_start)(keys)
    projection = (starts["W1"][:, :, 0] + starts["W2"][:, 0, :]) / np.sqrt(2)
    predicted = np.log(2 * S[0] / np.sum(projection**2, axis=1) - 1) / (2 * S[0])
    np.testing.assert_allclose(escape, predicted, rtol=0, atol=1e-3)
