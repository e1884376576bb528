"""Population theory of the SCB (spec §4): the line recursion (Eqn 7), the 2-D ODE for (α, β)
(Eqn 8) integrated with Diffrax, the line-restricted loss, the error dynamics (Lemmas C.5-C.6),
the Stage-1 linearisation and the near-optimum rates; the full matrix population process run
with the engine's steps; and the Gaussian-noise surrogate of Appendix I (spec §4.4)."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.linalg

import dynamics
import tasks.contextual_bigram as cb


def line_recursion(alpha0, beta0, K_P, K_Q, T, eta, steps) -> np.ndarray:
    """Eqn 7: α⁺ = α + η K_P β (1 − αβ), β⁺ = β + η [K_Q α (1 − αβ) + (1 − β)/T].

    **Returns:** (steps + 1, 2) array of (α, β), float64.
    """
    out = np.empty((steps + 1, 2))
    a, b = float(alpha0), float(beta0)
    out[0] = a, b
    for i in range(steps):
        a, b = a + eta * K_P * b * (1 - a * b), b + eta * (K_Q * a * (1 - a * b) + (1 - b) / T)
        out[i + 1] = a, b
    return out


def vector_field(t, y, args):
    """Eqn 8: d(α, β)/dt = (1 − αβ)[[0, K_P], [K_Q, 0]](α, β) + (1/T)(0, 1 − β)."""
    del t
    K_P, K_Q, T = args
    a, b = y[0], y[1]
    return jnp.stack([K_P * b * (1 - a * b), K_Q * a * (1 - a * b) + (1 - b) / T])


def solve_ode(y0, K_P, K_Q, T, save_ts, rtol=1e-10, atol=1e-12) -> np.ndarray:
    """Integrate Eqn 8 with Diffrax (Dopri8) from `y0 = (α₀, β₀)`; returns (len(save_ts), 2)."""
    args = tuple(jnp.asarray(v, jnp.float64) for v in (K_P, K_Q, T))
    run = dynamics.ode_flow(
        vector_field,
        jnp.asarray(y0, jnp.float64),
        t1=float(save_ts[-1]),
        args=args,
        save_ts=jnp.asarray(save_ts, jnp.float64),
        solver=diffrax.Dopri8(),
        rtol=rtol,
        atol=atol,
    )
    return np.asarray(run.values)


def line_loss(alpha, beta, K_P, K_Q, T, mu_sq):
    """Line-restricted population loss: ½[1 − ‖μ‖² − 2βK_P(1/T + αK_Q) + β²K_P(1/T + α²K_Q)]."""
    return 0.5 * (
        1 - mu_sq - 2 * beta * K_P * (1 / T + alpha * K_Q) + beta**2 * K_P * (1 / T + alpha**2 * K_Q)
    )


def stage1_linear(ts, K_P, K_Q, T) -> np.ndarray:
    """Stage-1 linearisation with drift (spec §4.5): x(t) = A⁻¹(e^{At} − I) b with
    A = [[0, K_P], [K_Q, −1/T]], b = (0, 1/T). Returns (len(ts), 2) = (α, β)."""
    A = np.array([[0.0, K_P], [K_Q, -1.0 / T]])
    b = np.array([0.0, 1.0 / T])
    Ainv = np.linalg.inv(A)
    return np.stack([Ainv @ (scipy.linalg.expm(A * t) - np.eye(2)) @ b for t in np.atleast_1d(ts)])


def first_crossing(ts, values, level) -> float:
    """The first time `values` reaches `level` (linear interpolation between saves); NaN if never."""
    idx = np.flatnonzero(values >= level)
    if idx.size == 0:
        return float("nan")
    i = idx[0]
    if i == 0:
        return float(ts[0])
    frac = (level - values[i - 1]) / (values[i] - values[i - 1])
    return float(ts[i - 1] + frac * (ts[i] - ts[i - 1]))


def stage1_exit_time_log(delta1, K_P, K_Q, T) -> float:
    """The logarithmic estimate t₁ ≈ (1/w) ln(2 T δ₁ min(K_Q, w)), w = √(K_P K_Q) (spec §4.5)."""
    w = np.sqrt(K_P * K_Q)
    return float(np.log(2 * T * delta1 * min(K_Q, w)) / w)


def near_optimum_jacobian(K_P, K_Q, T) -> np.ndarray:
    """Jacobian of Eqn 8 at (1, 1) in (1 − α, 1 − β) coordinates: −[[K_P, K_P], [K_Q, K_Q + 1/T]]."""
    return -np.array([[K_P, K_P], [K_Q, K_Q + 1.0 / T]])


def error_step(alpha, beta, dV, dQ, inst, eta):
    """One population step of the line coordinates and errors (Lemmas C.5, C.6, spec §4.4).

    **Returns:** `(alpha⁺, beta⁺, dV⁺, dQ⁺)`.
    """
    mu = np.asarray(inst.mu)
    K_P, K_Q, T = float(cb.k_p(inst)), float(cb.k_q(inst)), inst.T
    dV, dQ = np.asarray(dV), np.asarray(dQ)
    dVmu = dV @ mu
    dV2 = float(np.sum(mu * np.sum(dV * dV, axis=0))) - float(dVmu @ dVmu)
    dQ2 = float(np.sum(mu * np.sum(dQ * dQ, axis=0)))
    A2 = beta**2 * K_P + dV2
    c2 = 1 / T + alpha**2 * K_Q + dQ2
    a_new = alpha + eta * (K_P * beta * (1 - alpha * beta) - alpha * dV2)
    b_new = beta + eta * (K_Q * alpha * (1 - alpha * beta) + (1 - beta) / T - beta * dQ2)
    dQ_new = (1 - eta * A2) * dQ
    dV_new = (1 - eta * c2) * dV + eta * (c2 - 1) * np.outer(dVmu, np.ones(inst.N))
    return a_new, b_new, dV_new, dQ_new


def population_gd(inst, model, eta, steps, lam=0.0, every=1):
    """The matrix population process: `steps` Algorithm-1 steps (Eqns 4-6) on the exact
    population loss, run with the engine (`dynamics.train`, full batch).

    **Returns:** the `dynamics.Run` (saved: line coordinates and distances to the lines).
    """

    def save(p):
        line = cb.line_coordinates(p, inst)
        return {k: line[k] for k in ("alpha", "beta", "dV_norm", "dQ_norm")}

    return dynamics.train(
        lambda p: cb.population_loss(p, inst),
        model,
        cb.preconditioned_step(inst.mu, eta, lam),
        num_steps=steps,
        every=every,
        save=save,
    )


def matrix_flow(inst, model, save_ts, rtol=1e-10, atol=1e-12):
    """The matrix population flow dθ/dt = −E G(θ) (spec §4.3) with Diffrax (Dopri8).

    **Returns:** the `dynamics.Run` (saved: α, β, ‖ΔV‖_μ, ‖ΔQ‖_μ).
    """

    def field(t, p, args):
        del t, args
        G = cb.precondition(jax.grad(cb.population_loss)(p, inst), inst.mu)
        return jax.tree.map(lambda g: -g, G)

    def save(p):
        line = cb.line_coordinates(p, inst)
        return {k: line[k] for k in ("alpha", "beta", "dV_norm", "dQ_norm")}

    return dynamics.ode_flow(
        field,
        model,
        t1=float(save_ts[-1]),
        save_ts=jnp.asarray(save_ts, jnp.float64),
        save=save,
        solver=diffrax.Dopri8(),
        rtol=rtol,
        atol=atol,
    )


def probe_gradients(model, inst, key, probes: int):
    """`probes` per-sample preconditioned gradients at `model` (leading axis = probe)."""
    b = cb.sample(key, inst, probes)
    grads = jax.vmap(cb.sample_gradients, in_axes=(None, 0, 0, 0))(model, b.context, b.last, b.label)
    return jax.vmap(cb.precondition, in_axes=(0, None))(grads, inst.mu)


def surrogate_noise(model, inst, key, *, batch: int, probes: int, covariance: str = "full"):
    """A draw of ξ ~ N(0, Σ(θ)/B), Σ = the per-sample covariance of the preconditioned gradient
    estimated from `probes` per-sample gradients at θ (spec §4.4 [RECON]).

    `covariance="full"`: ξ = Σ_m z_m (G_m − Ḡ) / √(M B) with z ~ N(0, I_M) (exactly the empirical
    covariance, correlations included); `"diagonal"`: independent entries with the empirical
    per-entry variances. Columns stay centred (every G_m has centred columns).
    """
    k1, k2 = jax.random.split(key)
    G = probe_gradients(model, inst, k1, probes)
    dtype = inst.mu.dtype
    scale = jnp.asarray(1.0 / np.sqrt(batch), dtype)
    if covariance == "full":
        z = jax.random.normal(k2, (probes,), dtype)
        norm = jnp.asarray(1.0 / np.sqrt(probes), dtype)
        return jax.tree.map(lambda g: scale * norm * jnp.tensordot(z, g - jnp.mean(g, axis=0), axes=1), G)
    if covariance == "diagonal":
        leaves, tree = jax.tree.flatten(G)
        keys = jax.random.split(k2, len(leaves))
        noise = [jnp.std(g, axis=0) * jax.random.normal(k, g.shape[1:], dtype) for g, k in zip(leaves, keys)]
        noise = [x - jnp.mean(x, axis=0, keepdims=True) for x in noise]
        return jax.tree.unflatten(tree, [scale * x for x in noise])
    raise ValueError(f"covariance must be 'full' or 'diagonal', got {covariance!r}")


def surrogate_stage(inst, model, key, *, eta, lam, batch, steps, probes=512, covariance="full"):
    """Gaussian-noise surrogate of mini-batch Algorithm 1 (spec §4.4, Appendix I [RECON]):
    θ ← prox(θ − η (E G(θ) + ξ)), ξ from [`surrogate_noise`][] re-estimated every step, then the
    l1 prox with threshold η λ and re-projection on Q. Lets B be far larger than a real batch.

    **Returns:** the final [`tasks.contextual_bigram.LinearSCB`][].
    """
    prox = dynamics.proximal_l1(eta * lam, mask=cb.LinearSCB(V=False, Q=True), column_sum=1.0)

    def step(p, k):
        noise = surrogate_noise(p, inst, k, batch=batch, probes=probes, covariance=covariance)
        u = jax.tree.map(lambda g, n: -eta * (g + n), cb.expected_preconditioned(p, inst), noise)
        u, _ = prox.update(u, optax.EmptyState(), p)
        return jax.tree.map(jnp.add, p, u), None

    final, _ = jax.lax.scan(step, model, jax.random.split(key, steps))
    return final
