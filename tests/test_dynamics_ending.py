"""How runs end: growth laws and directions fitted to closed forms, and to the gradient flow of the
logistic loss on separable data against the max-margin solution (float64)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics

from .helpers import tree_allclose

ROTATION = np.array(
    [[math.cos(math.pi / 6), -math.sin(math.pi / 6)], [math.sin(math.pi / 6), math.cos(math.pi / 6)]]
)
POINTS = 0.5 * np.array([[1.0, 1.0], [-1.0, 0.5], [3.0, 1.0], [-2.5, 1.0]]) @ ROTATION.T
LABELS = np.array([1.0, -1.0, 1.0, -1.0])
"""Four separable points in the plane, no bias. Their max-margin solution is ŵ = 2·(cos 30°, sin 30°)
with ‖ŵ‖ = 2; the first two are its support vectors, with multipliers 4/3 and 8/3, the other two
have margins 3 and 2.5."""
TIMES = jnp.logspace(-2.0, 6.0, 33)
"""Log-spaced saves, four a decade, up to t = 10⁶; the fits use t ≥ 10²."""
T_END = float(TIMES[-1])
LOG_LOG_OVER_LOG = math.log(math.log(T_END)) / math.log(T_END)
"""log log t / log t at the end of the run, ≈ 0.19: the relative size of the remainder of
θ(t) / log t − ŵ in the theory."""


def _logistic(w):
    return jnp.mean(jax.nn.softplus(-jnp.asarray(LABELS) * (jnp.asarray(POINTS) @ w)))


@pytest.fixture(scope="module")
def max_margin():
    """ŵ = argmin ‖w‖ s.t. yᵢ xᵢᵀw ≥ 1, by the QP solver of the max-margin problems."""
    from theory.ntp_partial_order import solve_qp

    solution = solve_qp(np.eye(2), np.zeros(2), LABELS[:, None] * POINTS, np.ones(4))
    np.testing.assert_allclose(solution.x, 2.0 * ROTATION[:, 0], atol=1e-10)
    np.testing.assert_allclose(solution.dual, [4 / 3, 8 / 3, 0.0, 0.0], atol=1e-10)
    return solution.x


@pytest.fixture(scope="module")
def logistic_run():
    """The gradient flow of the logistic loss from a small start, saved at `TIMES`."""
    run = dynamics.gradient_flow(_logistic, jnp.array([0.01, -0.02]), t1=T_END, save=dynamics.Save(ts=TIMES))
    assert int(run.stop) == dynamics.StopReason.completed
    return run


def test_logistic_norm_grows_as_log_t_with_slope_the_max_margin_norm(logistic_run, max_margin):
    """Soudry et al. (2018) and Ji & Telgarsky: θ(t) = ŵ log t + O(log log t), so ‖θ(t)‖ against
    log t has slope ‖ŵ‖ up to a relative O(log log t / log t). With its constant taken as 1 at the
    end of the run, that is |b − ‖ŵ‖| ≤ ‖ŵ‖ · log log t / log t ≈ 0.19 ‖ŵ‖ (loose: with both
    support vectors carrying positive multipliers the remainder is bounded)."""
    growth = dynamics.landscape.norm_growth(logistic_run.ts, logistic_run.values)
    assert growth.fitted.tolist() == [False] * 16 + [True] * 17
    assert bool(growth.log_fits_better())
    target = float(np.linalg.norm(max_margin))
    assert abs(float(growth.log_slope) - target) <= target * LOG_LOG_OVER_LOG
    assert 0.0 < float(growth.power_exponent) < 1.0


def test_logistic_direction_converges_to_the_max_margin_direction(logistic_run, max_margin):
    """‖θ/‖θ‖ − ŵ/‖ŵ‖‖ = O(log log t / log t), so 1 − cos = ½‖θ/‖θ‖ − ŵ/‖ŵ‖‖² is at most
    ½ (log log t / log t)² ≈ 0.018 at the end (constant 1): slow, as convergence in direction is.
    Not monotone early on (from a small start the flow first swings past ŵ's direction), 1 − cos
    decreases over the fitted window, t ≥ 10^3.25, the later half in log-time of the saves at t > 1."""
    found = dynamics.landscape.direction_convergence(
        logistic_run.ts, logistic_run.values, jnp.asarray(max_margin)
    )
    assert found.fitted.tolist() == [False] * 21 + [True] * 12
    late = np.asarray(found.one_minus_cosine)[21:]
    assert np.all(np.diff(late) < 0)
    assert float(found.one_minus_cosine[-1]) < 0.5 * LOG_LOG_OVER_LOG**2
    np.testing.assert_allclose(found.cosine, 1.0 - found.one_minus_cosine, rtol=0, atol=1e-15)


def test_a_norm_that_converges_shows_no_growth():
    """With a finite minimiser θ* the flow reaches it long before the fitted window: the norm is
    constant there up to the solver's error, a few times its relative tolerance 1e-8, so b ≈ 0,
    p ≈ 0 and a ≈ c ≈ ‖θ*‖, to within ten times that tolerance."""
    minimiser = jnp.array([1.0, 2.0])
    run = dynamics.gradient_flow(
        lambda theta: 0.5 * jnp.sum((theta - minimiser) ** 2),
        jnp.array([0.01, -0.02]),
        t1=T_END,
        save=dynamics.Save(ts=TIMES),
    )
    growth = dynamics.landscape.norm_growth(run.ts, run.values)
    limit = math.sqrt(5.0)
    assert abs(float(growth.log_slope)) < 1e-7 * limit and abs(float(growth.power_exponent)) < 1e-7
    np.testing.assert_allclose([growth.log_intercept, growth.power_scale], [limit] * 2, rtol=1e-7)
    assert max(float(growth.log_residual), float(growth.power_residual)) < 1e-7 * limit


def test_growth_laws_are_recovered_exactly_and_unusable_saves_ignored():
    ts = np.concatenate([np.logspace(-2.0, 6.0, 33), [np.inf, np.inf]])  # a flow stopped early
    with np.errstate(invalid="ignore"):
        log_law = np.where(np.isfinite(ts), 0.3 + 1.7 * np.log(ts), np.inf)
    growth = dynamics.landscape.norm_growth(ts, log_law)  # NumPy norms
    np.testing.assert_allclose([growth.log_intercept, growth.log_slope], [0.3, 1.7], rtol=1e-12)
    assert float(growth.log_residual) < 1e-12 < float(growth.power_residual)
    assert int(np.sum(growth.fitted)) == 17 and not bool(growth.fitted[-1])

    power_law = {"a": 2.0 * ts[:-2, None] ** 0.25 * np.array([0.6, 0.0]), "b": 2.0 * ts[:-2] ** 0.25 * 0.8}
    growth = dynamics.landscape.norm_growth(ts[:-2], power_law)
    np.testing.assert_allclose([growth.power_scale, growth.power_exponent], [2.0, 0.25], rtol=1e-12)
    assert not bool(growth.log_fits_better())


def test_direction_decay_law_is_recovered_and_the_default_direction_is_the_last_finite_save():
    ts = np.logspace(0.5, 6.0, 23)
    angle = np.arccos(1.0 - 0.2 * np.log(ts) ** -1.5)
    saves = 3.0 * np.stack([np.cos(angle), np.sin(angle)], axis=1) @ ROTATION.T
    found = dynamics.landscape.direction_convergence(ts, saves, ROTATION[:, 0])
    np.testing.assert_allclose([found.decay_scale, found.decay_exponent], [0.2, 1.5], rtol=1e-9)
    np.testing.assert_allclose(found.cosine, np.cos(angle), rtol=1e-12)

    stopped = np.concatenate([saves, np.full((2, 2), np.inf)])
    by_default = dynamics.landscape.direction_convergence(np.concatenate([ts, [np.inf] * 2]), stopped)
    assert float(by_default.one_minus_cosine[22]) == 0.0 and not bool(by_default.fitted[22])
    unit = saves[-1] / np.linalg.norm(saves[-1])
    np.testing.assert_allclose(
        by_default.cosine[:23], saves @ unit / np.linalg.norm(saves, axis=1), rtol=1e-12
    )


def test_vmap_over_seeds_equals_a_loop():
    ts = jnp.logspace(0.0, 6.0, 25)
    slopes = jnp.array([0.5, 1.0, 2.0])
    runs = {"w": (slopes[:, None, None] * jnp.log(ts)[None, :, None] + jnp.array([0.3, -1.0]))}

    def both(saves):
        return dynamics.landscape.norm_growth(ts, saves), dynamics.landscape.direction_convergence(
            ts, saves, jnp.array([1.0, 0.0])
        )

    batched = jax.jit(jax.vmap(both))(runs)
    looped = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[both({"w": w}) for w in runs["w"]])
    assert tree_allclose(batched, looped, rtol=1e-12, atol=1e-14)
    assert bool(jnp.all(batched[0].log_slope > 0)) and bool(jnp.all(jnp.isfinite(batched[1].decay_exponent)))
