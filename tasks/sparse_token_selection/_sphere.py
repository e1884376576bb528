"""The `iid_sphere` loss floor (derived, our reading of Theorem 2): on the rotation-invariant set
`W_EE = a I_{m_E}`, `V = [γ I_d, 0]` the attention is `p = softmax(α c)` with the score vector
`c = E^T s_y` and `α = a ρ²`, so by Lemma A the population loss is

`L(γ, a) = (d/2) [ γ² A(α) − 2 γ B(α) + 1/q ]`,  `A = E ||p||²`,  `B = E[p · u_y]`,

with the expectations over the PE law (Monte Carlo over a fixed bank of score vectors, common random
numbers). Minimising over γ in closed form (γ* = B/A) gives `L / (d/(2q)) = 1 − q B²/A`, scanned in α.
"""

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray
from scipy.optimize import minimize_scalar

import dynamics

from ._config import STSConfig
from ._pe import iid_sphere_pe

SPHERE_FLOW_CONTROLLER = diffrax.PIDController(rtol=1e-8, atol=1e-10)
"""The default step-size controller of [`sphere_flow`][] (rtol 1e-8, atol 1e-10)."""


def _require_sphere(config: STSConfig) -> None:
    if config.pe_sampler != "iid_sphere" or config.fixed_pe:
        raise ValueError(
            f"the sphere floor needs pe_sampler='iid_sphere' with fixed_pe=False, got "
            f"pe_sampler={config.pe_sampler!r}, fixed_pe={config.fixed_pe}"
        )


def sphere_scores(
    config: STSConfig, key: PRNGKeyArray, size: int, *, chunk: int = 250, dtype=jnp.float64
) -> Float[Array, "B T"]:
    """A bank of `size` unit-norm score vectors `c = E^T s_y / ρ²` (E drawn by [`iid_sphere_pe`][],
    y = {1..q}: by permutation symmetry of the law the loss does not depend on y).

    **Arguments:** `config` (an `iid_sphere` task), `key`, `size` (a multiple of `chunk`, or smaller
    than it), `chunk` (draws per vectorised block).

    **Returns:** `(size, T)` array; columns `0..q−1` are the selected positions.
    """
    _require_sphere(config)
    chunk = min(chunk, size)
    if size % chunk:
        raise ValueError(f"size must be a multiple of chunk={chunk}, got {size}")
    T, q, m = config.T, config.q, config.m_E

    def one(k):
        E = iid_sphere_pe(k, T, m, 1.0, dtype=dtype)
        return E.T @ jnp.sum(E[:, :q], axis=1)

    def block(k):
        return jax.vmap(one)(jax.random.split(k, chunk))

    return jax.lax.map(block, jax.random.split(key, size // chunk)).reshape(size, T)


def sphere_moments(scores: Float[Array, "B T"], alpha, q: int) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """`A(α) = E ||p||²` and `B(α) = E[p · u_y] = E[Σ_{i<q} p_i] / q` with `p = softmax(α c)`."""
    p = jax.nn.softmax(jnp.asarray(alpha, scores.dtype) * scores, axis=-1)
    A = jnp.mean(jnp.sum(p * p, axis=-1))
    B = jnp.mean(jnp.sum(p[:, :q], axis=-1)) / jnp.asarray(q, scores.dtype)
    return A, B


def sphere_example_losses(gamma, alpha, scores: Float[Array, "B T"], d: int, q: int) -> Float[Array, " B"]:
    """Lemma A per bank draw on the invariant set: `(d/2) [γ² ||p||² − 2 γ p · u_y + 1/q]`."""
    dt = scores.dtype
    p = jax.nn.softmax(jnp.asarray(alpha, dt) * scores, axis=-1)
    qa = jnp.asarray(q, dt)
    inside = jnp.sum(p[:, :q], axis=-1) / qa
    return (
        0.5 * jnp.asarray(d, dt) * (gamma * gamma * jnp.sum(p * p, axis=-1) - 2.0 * gamma * inside + 1.0 / qa)
    )


def sphere_loss(gamma, alpha, scores: Float[Array, "B T"], d: int, q: int) -> Float[Array, ""]:
    """`L(γ, α) = (d/2) [γ² A(α) − 2 γ B(α) + 1/q]` on the bank (Lemma A on the invariant set)."""
    A, B = sphere_moments(scores, alpha, q)
    dt = scores.dtype
    return 0.5 * jnp.asarray(d, dt) * (gamma * gamma * A - 2.0 * gamma * B + 1.0 / jnp.asarray(q, dt))


@functools.partial(jax.jit, static_argnums=2)
def _moments_on_grid(scores: Float[Array, "B T"], grid: Float[Array, " G"], q: int):
    """[`sphere_moments`][] at every α of `grid`; compiled once per bank shape and q."""
    return jax.lax.map(lambda a: sphere_moments(scores, a, q), grid)


@functools.partial(jax.jit, static_argnums=2)
def _floor_ratio(scores: Float[Array, "B T"], alpha: Float[Array, ""], q: int) -> Float[Array, ""]:
    """`1 − q B(α)²/A(α)`; compiled once per bank shape and q."""
    A, B = sphere_moments(scores, alpha, q)
    return 1.0 - q * B * B / A


def sphere_floor(
    scores: Float[Array, "B T"], q: int, *, alpha_max: float = 20.0, num_grid: int = 201
) -> dict[str, float]:
    """The smallest `L / (d/(2q)) = 1 − q B(α)²/A(α)` over α (γ = B/A in closed form): a grid
    scan on [0, `alpha_max`] refined by bounded Brent search around the best grid point.

    **Returns:** `{"ratio", "alpha", "gamma"}`: the floor relative to d/(2q), α* and γ*.

    **Raises:** `ValueError` if the minimum lies at the end of the grid (raise `alpha_max`).
    """
    grid = jnp.linspace(0.0, alpha_max, num_grid, dtype=scores.dtype)
    A, B = _moments_on_grid(scores, grid, q)
    ratio = np.asarray(1.0 - q * B * B / A)
    i = int(np.argmin(ratio))
    if i == num_grid - 1:
        raise ValueError(f"the floor's minimiser lies beyond alpha_max={alpha_max}; increase alpha_max")
    step = alpha_max / (num_grid - 1)
    centre = float(grid[i])
    res = minimize_scalar(
        lambda a: float(_floor_ratio(scores, jnp.asarray(a, scores.dtype), q)),
        bounds=(max(centre - step, 0.0), centre + step),
        method="bounded",
        options={"xatol": 1e-10},
    )
    A_star, B_star = sphere_moments(scores, res.x, q)
    return {"ratio": float(res.fun), "alpha": float(res.x), "gamma": float(B_star / A_star)}


def sphere_flow(
    config: STSConfig,
    scores: Float[Array, "B T"],
    t1: float,
    save_ts,
    *,
    stepsize_controller: diffrax.AbstractStepSizeController = SPHERE_FLOW_CONTROLLER,
    max_steps: int = 100_000,
) -> dynamics.Run:
    """The reduced 2-D gradient flow of full-matrix GD from zero init for `iid_sphere` PE (derived,
    our reading of Theorem 2): `dγ/dt = −(1/d) ∂_γ L`, `da/dt = −(1/m_E) ∂_a L` (so
    dα/dt = −(ρ⁴/m_E) ∂_α L, α = a ρ²), L the bank loss of [`sphere_loss`][] (a Monte-Carlo vector
    field with common random numbers); Tsit5 under `stepsize_controller`. The flow settles at the
    finite minimiser within t ≈ 3e4 for T = 200, m_E = 64.

    **Returns:** a `dynamics.Run` saving `{"loss", "gamma", "a"}` at `save_ts`.
    """
    _require_sphere(config)
    rho2 = config.rho**2

    def fn(state):
        return sphere_loss(state["gamma"], rho2 * state["a"], scores, config.d, config.q)

    zero = jnp.zeros((), scores.dtype)
    return dynamics.gradient_flow(
        fn,
        {"gamma": zero, "a": zero},
        rates={"gamma": 1.0 / config.d, "a": 1.0 / config.m_E},
        t1=t1,
        save=dynamics.Save(ts=jnp.asarray(save_ts, scores.dtype), fn=lambda t, s, args: {"loss": fn(s), **s}),
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
        solver=diffrax.Tsit5(),
    )
