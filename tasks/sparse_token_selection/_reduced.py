"""The reduced two-scalar dynamics of Lemma 1 (derived, our Lemma B): on the invariant set
`W_EE = a M`, `V = [γ I_d, 0]` the population loss is a closed form in (γ, α = a ρ²), and GD or
gradient flow on the full matrices moves (γ, a) with the preconditioners 1/d and 1/‖M‖_F² (see
"Training dynamics" on the sparse_token_selection page of the documentation)."""

import diffrax
import jax.numpy as jnp
from jaxtyping import Array, Float

import dynamics

from ._config import STSConfig

FLOW_CONTROLLER = diffrax.PIDController(rtol=1e-10, atol=1e-12)
"""The default step-size controller of [`reduced_flow`][] (rtol 1e-10, atol 1e-12)."""


def reduced_loss(gamma, alpha, d: int, T: int, q) -> Float[Array, ""]:
    """L(γ, α) = (d/2) [ q (γ p_in − 1/q)² + (T − q) γ² p_out² ] (derived), with
    p_in = exp(α) / (q exp(α) + T − q), p_out = 1 / (q exp(α) + T − q); valid for exactly orthonormal PE at
    any length T and subset size q (our reading of Theorem 3, derived). Overflow-safe for large α.

    **Arguments:** `gamma` (value scale), `alpha` (score gap a ρ²), sizes `d`, `T`, `q` (q may be
    traced).
    """
    dtype = jnp.result_type(gamma, alpha)
    q = jnp.asarray(q, dtype)
    T = jnp.asarray(T, dtype)
    rest = T - q
    # p_in = 1 / (q + (T − q) e^{−α}), p_out = e^{−α} p_in
    p_in = 1.0 / (q + rest * jnp.exp(-alpha))
    p_out = jnp.exp(-alpha) * p_in
    return 0.5 * jnp.asarray(d, dtype) * (q * (gamma * p_in - 1.0 / q) ** 2 + rest * (gamma * p_out) ** 2)


def block_norm_sq(config: STSConfig) -> float:
    r"""$\lVert M \rVert_F^2$ of the $W_{EE}$ direction: $m_E - 1$ (one-hot families, $M = M_{m_E}$) or $m_E$
    ($I_{m_E}$)."""
    m = config.m_E
    return float(m - 1) if config.pe_sampler in ("onehot", "dictionary_onehot") else float(m)


def reduced_rates(config: STSConfig, eta: float) -> dict[str, float]:
    """The rates GD on the full matrices induces on (γ, a): η/d and η/‖M‖_F² (derived)."""
    return {"gamma": eta / config.d, "a": eta / block_norm_sq(config)}


def _check_orthonormal(config: STSConfig) -> None:
    if config.pe_sampler == "iid_sphere":
        raise ValueError(
            "the closed-form reduced loss needs exactly orthonormal PE; iid_sphere is Monte Carlo only"
        )


def reduced_state_loss(config: STSConfig, *, T: int | None = None, q: int | None = None):
    """`state -> L` on the invariant set, state `{"gamma": γ, "a": a}` (α = a ρ²), at the training
    (T, q) or at (T, q) given (Theorem 3's closed form)."""
    _check_orthonormal(config)
    T = config.T if T is None else T
    q = config.q if q is None else q
    rho2 = config.rho**2

    def fn(state):
        return reduced_loss(state["gamma"], rho2 * state["a"], config.d, T, q)

    return fn


def zero_state(dtype=jnp.float64) -> dict[str, Array]:
    """(γ, a) = (0, 0): zero init."""
    return {"gamma": jnp.zeros((), dtype), "a": jnp.zeros((), dtype)}


def reduced_gd(
    config: STSConfig, eta: float, num_steps: int, *, every: int = 1, save=None, dtype=jnp.float64
) -> dynamics.Run:
    """GD on the full matrices from zero init, run on (γ, a) (derived):
    γ ← γ − (η/d) ∂_γ L, a ← a − (η/‖M‖²) ∂_a L.

    **Returns:** a `dynamics.Run` saving `save(state)` (default: state and loss) every `every` steps.
    """
    fn = reduced_state_loss(config)
    save = (lambda s: {"loss": fn(s), **s}) if save is None else save
    return dynamics.train(
        fn,
        zero_state(dtype),
        dynamics.gd(reduced_rates(config, eta)),
        num_steps=num_steps,
        save=dynamics.Save(every=every, fn=lambda step, p, args: save(p)),
    )


def reduced_flow(
    config: STSConfig,
    t1: float,
    save_ts,
    *,
    eps: float | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController = FLOW_CONTROLLER,
    max_steps: int = 200_000,
    solver: diffrax.AbstractSolver | None = None,
    dtype=jnp.float64,
) -> dynamics.Run:
    """Gradient flow of the full matrices from zero init, on (γ, a), in time t = η k (derived),
    under `stepsize_controller` and with an optional event `loss_below` where the loss crosses `eps`
    (Theorem 1's t_ε), located by root finding (`Run.t_stop` is that time).
    The default solver is the implicit `Kvaerno5`: late in the run γ relaxes on a time scale of
    order q while t reaches 1e7, which makes explicit solvers (such as Tsit5) exhaust any step
    budget; pass `solver=diffrax.Tsit5()` for short horizons.

    **Returns:** a `dynamics.Run` saving `{"loss", "gamma", "a"}` at `save_ts`.
    """
    fn = reduced_state_loss(config)
    events = None if eps is None else {"loss_below": dynamics.Crossing(lambda s: fn(s) - eps)}
    return dynamics.gradient_flow(
        fn,
        zero_state(dtype),
        rates=reduced_rates(config, 1.0),
        t1=t1,
        save=dynamics.Save(ts=jnp.asarray(save_ts, dtype), fn=lambda t, s, args: {"loss": fn(s), **s}),
        events=events,
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
        solver=diffrax.Kvaerno5() if solver is None else solver,
    )


def optimal_gamma(alpha, d: int, T: int, q, *, bias=0.0) -> Float[Array, ""]:
    """argmin_γ L(γ, α) = p_in / (q p_in² + (T − q) p_out²) (P4, derived).

    With `bias` > 0, the minimiser when the attention output carries an extra term of mean square
    `bias` independent of the target, to first order in it (derived):
    p_in / (q p_in² + (T − q) p_out² + bias/d). On the plateau (α ≈ 0) that is
    (d/T) / (d/T + bias): a bias comparable to the signal d/T halves the value scale (mini-batch
    noise in the token-key block W_XE gives such a bias, E_y ‖W_XE s_y‖²).

    **Arguments:** `alpha` (score gap a ρ²), sizes `d`, `T`, `q`, and `bias` (≥ 0).

    **Example:** on the plateau a bias equal to the signal d/T = 0.05 halves the value scale:

        >>> import tasks.sparse_token_selection as sts
        >>> round(float(sts.optimal_gamma(0.0, 10, 200, 3, bias=0.05)), 12)
        0.5
    """
    dtype = jnp.result_type(alpha, float)
    q = jnp.asarray(q, dtype)
    rest = jnp.asarray(T, dtype) - q
    p_in = 1.0 / (q + rest * jnp.exp(-alpha))
    p_out = jnp.exp(-alpha) * p_in
    return p_in / (q * p_in**2 + rest * p_out**2 + jnp.asarray(bias, dtype) / d)
