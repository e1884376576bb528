"""How a run ends when its loss has no minimiser: the growth law of ‖θ(t)‖ and the convergence
of θ/‖θ‖ to a direction, both fitted over the later half of the run in log-time."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, ArrayLike, Bool, Float, PyTree

from ._compiled import one_program


def _flat_saves(saves: PyTree) -> Float[Array, "T n"]:
    """One row per save: the leaves, each flattened after its leading save axis, side by side."""
    leaves = [jnp.asarray(leaf) for leaf in jax.tree.leaves(saves)]
    return jnp.concatenate([leaf.reshape(leaf.shape[0], -1) for leaf in leaves], axis=1)


def _later_half(ts: Float[Array, " T"], usable: Bool[Array, " T"]) -> Bool[Array, " T"]:
    """The usable samples with log t ≥ (log t_first + log t_last)/2, over the usable samples; a
    sample at the midpoint up to rounding (the middle one of log-spaced saves) counts as in."""
    log_t = jnp.log(jnp.where(usable, ts, 1.0))
    first = jnp.min(jnp.where(usable, log_t, jnp.inf))
    last = jnp.max(jnp.where(usable, log_t, -jnp.inf))
    return usable & (log_t >= (first + last) / 2 - 1e-9 * (last - first))


def _line_fit(x: Float[Array, " T"], y: Float[Array, " T"], fitted: Bool[Array, " T"]):
    """Least squares y ≈ intercept + slope·x over the fitted samples: (intercept, slope)."""
    weights = fitted.astype(x.dtype)
    x, y = jnp.where(fitted, x, 0.0), jnp.where(fitted, y, 0.0)
    x_mean, y_mean = (jnp.sum(weights * v) / jnp.sum(weights) for v in (x, y))
    slope = jnp.sum(weights * (x - x_mean) * (y - y_mean)) / jnp.sum(weights * (x - x_mean) ** 2)
    return y_mean - slope * x_mean, slope


class NormGrowth(eqx.Module):
    """Two growth laws fitted to ‖θ(t)‖: ‖θ‖ ≈ a + b·log t and ‖θ‖ ≈ c·tᵖ.

    Every field is an array, so results can be `vmap`ped over runs (each field then gains a leading
    axis). A norm that converges to a finite limit ℓ, as on a loss with a finite minimiser, shows
    as b ≈ 0 and p ≈ 0 with a ≈ c ≈ ℓ: then neither law is a growth law, and `log_fits_better()`
    compares residuals at the level of the numerical error, which says nothing.

    **Fields:**

    - `log_intercept`, `log_slope`: a and b, least squares of ‖θ‖ on log t.
    - `power_scale`, `power_exponent`: c and p, least squares of log‖θ‖ on log t (log-log).
    - `log_residual`, `power_residual`: the root-mean-square of ‖θ‖ minus each fit over the fitted
      samples, both in units of ‖θ‖, so that they compare.
    - `fitted`: which samples were fitted, shape `(T,)`.

    **Example:** ‖θ(t)‖ = 1 + 2 log t exactly, for t from 1 to 10⁸:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(0.0, 8.0, 9)
        >>> growth = dynamics.landscape.norm_growth(ts, 1.0 + 2.0 * jnp.log(ts))
        >>> round(float(growth.log_intercept), 8), round(float(growth.log_slope), 8)
        (1.0, 2.0)
        >>> float(growth.log_residual) < 1e-12
        True
        >>> growth.fitted.tolist(), bool(growth.log_fits_better())
        ([False, False, False, False, True, True, True, True, True], True)
    """

    log_intercept: Float[Array, ""]
    log_slope: Float[Array, ""]
    power_scale: Float[Array, ""]
    power_exponent: Float[Array, ""]
    log_residual: Float[Array, ""]
    power_residual: Float[Array, ""]
    fitted: Bool[Array, " T"]

    def log_fits_better(self) -> Bool[Array, "..."]:
        """True where a + b·log t has the smaller residual (per run, for a batch)."""
        return self.log_residual < self.power_residual


@one_program
def norm_growth(ts: Float[ArrayLike, " T"], saves: PyTree) -> NormGrowth:
    """Which law ‖θ(t)‖ grows by late in a run: a + b·log t, or c·tᵖ.

    Fitted over the later half of the run in log-time: of the usable samples (t > 0 and everything
    finite), those with log t ≥ (log t_first + log t_last)/2, the midpoint included up to rounding.
    Both laws are asymptotic and the early part of a run is the transient from its start; with
    log-spaced saves, as growth on these time scales calls for, the later half keeps half the
    decades the run spans, whatever its time unit. The fits are NaN when fewer than two distinct
    times are fitted.

    **Arguments:**

    - `ts`: the save times, shape `(T,)`.
    - `saves`: the saved parameters, a PyTree whose leaves have a leading save axis of length T
      (`Run.values` where `save` returns the parameters), or the norms themselves, shape `(T,)`
      (the norm of a scalar save is its absolute value). ‖θ‖ is the Euclidean norm over all leaves.

    **Returns:** a [`NormGrowth`][dynamics.landscape.NormGrowth]. Pure JAX: jits and `vmap`s over runs.

    **Example:** ‖θ(t)‖ = 3·√t exactly: the power law fits to rounding, the log law does not:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(-2.0, 4.0, 13)
        >>> w = 3.0 * jnp.sqrt(ts)[:, None] * jnp.array([0.6, 0.8])
        >>> growth = dynamics.landscape.norm_growth(ts, {"w": w})
        >>> round(float(growth.power_scale), 8), round(float(growth.power_exponent), 8)
        (3.0, 0.5)
        >>> bool(growth.log_fits_better()), float(growth.power_residual) < 1e-12 < float(growth.log_residual)
        (False, True)
    """
    norms = jnp.linalg.norm(_flat_saves(saves), axis=1)
    ts = jnp.asarray(ts, norms.dtype)
    fitted = _later_half(ts, jnp.isfinite(ts) & (ts > 0) & jnp.isfinite(norms) & (norms > 0))
    log_t = jnp.log(jnp.where(fitted, ts, 1.0))
    a, b = _line_fit(log_t, norms, fitted)
    log_c, p = _line_fit(log_t, jnp.log(jnp.where(fitted, norms, 1.0)), fitted)
    count = jnp.sum(fitted, dtype=norms.dtype)

    def residual(fit: Float[Array, " T"]) -> Float[Array, ""]:
        return jnp.sqrt(jnp.sum(jnp.where(fitted, (norms - fit) ** 2, 0.0)) / count)

    return NormGrowth(
        log_intercept=a,
        log_slope=b,
        power_scale=jnp.exp(log_c),
        power_exponent=p,
        log_residual=residual(a + b * log_t),
        power_residual=residual(jnp.exp(log_c + p * log_t)),
        fitted=fitted,
    )


class DirectionConvergence(eqx.Module):
    r"""How $\theta(t)/\lVert\theta(t)\rVert$ approaches a direction $d$: the cosine per save, and
    $1 - \cos \approx C (\log t)^{-r}$.

    The power of log t is the law of the logistic (or exponential) loss on linearly separable data,
    θ(t) = ŵ·log t + ρ(t) with ρ bounded in the generic case: 1 − cos ≈ ‖ρ⊥‖² / (2‖ŵ‖² log² t),
    r = 2, where ρ⊥ is the part of ρ orthogonal to ŵ. A run that converges in direction
    exponentially fast shows as a large r. Every field is an array, so results can be `vmap`ped.

    **Fields:**

    - `cosine`: cos(θ, d) per save, shape `(T,)`; NaN for a zero save.
    - `one_minus_cosine`: 1 − cos per save, computed as ½‖θ/‖θ‖ − d‖², accurate where cos ≈ 1.
    - `decay_scale`, `decay_exponent`: C and r, least squares of log(1 − cos) on log log t.
    - `fitted`: which samples were fitted, shape `(T,)`.

    **Example:** $\theta(t)$ at angle $\varphi(t)$ from $d$ with $1 - \cos\varphi = 0.5\,(\log t)^{-2}$
    exactly:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(1.0, 6.0, 11)
        >>> angle = jnp.arccos(1.0 - 0.5 / jnp.log(ts) ** 2)
        >>> saves = 5.0 * jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=1)
        >>> found = dynamics.landscape.direction_convergence(ts, saves, jnp.array([1.0, 0.0]))
        >>> round(float(found.decay_scale), 8), round(float(found.decay_exponent), 8)
        (0.5, 2.0)
    """

    cosine: Float[Array, " T"]
    one_minus_cosine: Float[Array, " T"]
    decay_scale: Float[Array, ""]
    decay_exponent: Float[Array, ""]
    fitted: Bool[Array, " T"]


@one_program
def direction_convergence(
    ts: Float[ArrayLike, " T"], saves: PyTree, direction: PyTree | None = None
) -> DirectionConvergence:
    r"""How the direction θ(t)/‖θ(t)‖ of a run converges to `direction`: cos per save, and the
    exponent $r$ of $1 - \cos \approx C (\log t)^{-r}$.

    The decay is fitted against a power of log t (least squares of log(1 − cos) on log log t), over
    the later half of the run in log-time as in [`norm_growth`][dynamics.landscape.norm_growth], of the
    samples with t > 1 (log log t defined) and 1 − cos > 0. With the default direction the last save itself
    is left out and the saves just before it are biased towards it (r comes out too large): pass the limit
    direction when it is known.

    **Arguments:**

    - `ts`: the save times, shape `(T,)`.
    - `saves`: the saved parameters, a PyTree whose leaves have a leading save axis of length T.
    - `direction`: d, a PyTree like one save (normalised here); default: the direction of the last
      save whose entries are all finite.

    **Returns:** a [`DirectionConvergence`][dynamics.landscape.DirectionConvergence]. Pure JAX: jits and
    `vmap`s over runs.

    **Example:** θ(t) = (log t, 1) turns towards (1, 0): 1 − cos ≈ 1/(2 log² t), so r is close to 2:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> ts = jnp.logspace(2.0, 8.0, 13)
        >>> saves = jnp.stack([jnp.log(ts), jnp.ones(13)], axis=1)
        >>> found = dynamics.landscape.direction_convergence(ts, saves, jnp.array([1.0, 0.0]))
        >>> round(float(found.cosine[-1]), 6), round(float(found.decay_exponent), 2)
        (0.99853, 1.99)
    """
    flat = _flat_saves(saves)
    finite = jnp.all(jnp.isfinite(flat), axis=1)
    units = flat / jnp.linalg.norm(flat, axis=1, keepdims=True)
    saved = jnp.arange(flat.shape[0])
    if direction is None:
        last = jnp.max(jnp.where(finite, saved, 0))
        unit, itself = units[last], saved == last
    else:
        direction = ravel_pytree(direction)[0].astype(flat.dtype)
        unit, itself = direction / jnp.linalg.norm(direction), jnp.zeros(saved.shape, bool)
    # The save that gives the direction is at 1 - cos = 0 exactly, whatever the rounding of a compiled
    # program, so that it is left out of the fit.
    one_minus_cosine = jnp.where(itself, 0.0, 0.5 * jnp.sum((units - unit) ** 2, axis=1))
    ts = jnp.asarray(ts, flat.dtype)
    usable = finite & jnp.isfinite(ts) & (ts > 1) & (one_minus_cosine > 0)
    fitted = _later_half(ts, usable)
    log_log_t = jnp.log(jnp.log(jnp.where(fitted, ts, jnp.e)))
    log_scale, slope = _line_fit(log_log_t, jnp.log(jnp.where(fitted, one_minus_cosine, 1.0)), fitted)
    return DirectionConvergence(
        cosine=1.0 - one_minus_cosine,
        one_minus_cosine=one_minus_cosine,
        decay_scale=jnp.exp(log_scale),
        decay_exponent=-slope,
        fitted=fitted,
    )
