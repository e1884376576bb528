"""Sparse-token-selection checks: the invariant set, Theorem 1's rate and limits, Theorem 2's
floor, Theorem 3's length generalisation, the fixed-PE floor and the FCN width bound. A `sized`
check is `name(full) -> Check` (`full`: the paper's sizes, quick ones otherwise, never a looser
tolerance); the others are `name() -> Check`."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dynamics
import tasks.sparse_token_selection as sts

from .._check import Measured, claim, claims, relative_error
from . import _runs
from . import closed_forms as F
from ._runs import PAPER_SIZE, SMALL

# --------------------------------------------------------------------------------------
# Lemma 1 / Lemma B: the invariant set and the reduced dynamics (derived)
# --------------------------------------------------------------------------------------


@claim(
    r"Lemma 1: GD from zero init stays on $W_{EE} = aM_T$, $V = [\gamma I, 0]$",
    method=r"small GD against `from_scalars` of the reduced $(\gamma, a)$: max entry deviation",
    tolerance=1e-10,
    provenance="derived",
)
def lemma1_invariant_set() -> Measured:
    """Lemma B: full-matrix GD from zero init stays on W = [[0,0],[0,a M_T]], V = [γ I, 0] with
    (γ, a) from the reduced recursion."""
    run = _runs.small_full_gd()
    on_set = jax.vmap(lambda g, a: sts.from_scalars(SMALL, g, a))(
        jnp.asarray(run["gamma"]), jnp.asarray(run["a"])
    )
    dev = max(np.abs(run["W"] - np.asarray(on_set.W)).max(), np.abs(run["V"] - np.asarray(on_set.V)).max())
    return Measured(
        predicted=0.0,
        simulated=float(dev),
        error=float(dev),
        note=f"d={SMALL.d}, T={SMALL.T}, q={SMALL.q}, one-hot PE, x_query=0, η = 0.5, 300 steps, exact "
        f"population loss (Lemma A, all subsets), float64; "
        f"final a={run['a'][-1]:.4f}, g={run['gamma'][-1]:.4f}.",
    )


@claim(
    r"Lemma 1: $L(\gamma, a)$ under the recursion $(\eta/d, \eta/(T-1))$ equals full-matrix GD",
    method="small GD loss against the reduced recursion's: max difference over 300 steps",
    tolerance=1e-10,
    provenance="derived",
)
def lemma1_reduced_equals_full_gd() -> Measured:
    """The reduced two-scalar recursion reproduces the full-matrix GD loss to float64 precision."""
    run = _runs.small_full_gd()
    dev = np.abs(run["loss"] - run["loss_r"]).max()
    return Measured(
        predicted=float(run["loss_r"][-1]),
        simulated=float(run["loss"][-1]),
        error=float(dev),
        note="same run as `lemma1_invariant_set`; predicted/simulated: the final losses.",
    )


@claim(
    "Lemma B: with antithetic Monte Carlo in $X$, $W_{XX}, W_{XE}, W_{EX}, V_E$ stay 0",
    method=r"50 GD steps ($\eta = 0.5$, $d = 3$, $T = 8$) on a fixed bank of 200 / 1000 antithetic "
    r"pairs: max entry",
    tolerance=1e-12,
    provenance="derived",
    sized=True,
)
def lemma1_antithetic_off_blocks(full: bool = False) -> Measured:
    """With Monte Carlo in X over antithetic pairs, the blocks outside (W_EE, V_X) stay exactly 0."""
    cfg = SMALL
    batch = sts.antithetic(sts.sample(cfg, jax.random.PRNGKey(3), 1000 if full else 200))
    run = dynamics.train(lambda m: sts.loss(m, batch), sts.zero_init(cfg), dynamics.gd(0.5), num_steps=50)
    W, V, d = np.asarray(run.final.W), np.asarray(run.final.V), cfg.d
    off = max(np.abs(W[:d]).max(), np.abs(W[:, :d]).max(), np.abs(V[:, d:]).max())
    return Measured(
        predicted=0.0,
        simulated=float(off),
        error=float(off),
        note=f"d={d}, T={cfg.T}, q={cfg.q}, one-hot PE, "
        f"fixed bank of {batch.X.shape[0] // 2} antithetic pairs, "
        f"η = 0.5, 50 steps; ‖W_EE‖_F={np.linalg.norm(W[d:, d:]):.3g}.",
    )


# --------------------------------------------------------------------------------------
# Theorem 1: O(1/t) rate, t_eps, attention and value scales, limit directions
# --------------------------------------------------------------------------------------

_FLOW_NOTE = (
    f"reduced gradient flow (time t = ηk) of full-matrix GD, d={PAPER_SIZE.d}, T={PAPER_SIZE.T}, "
    f"q={PAPER_SIZE.q}, one-hot PE, zero init, Kvaerno5 rtol=1e-10, t up to 1e7"
)


@claim(
    r"Theorem 1 $O(1/t)$ rate: $L(t)\,t \to (T-1)/4$ (P2)",
    method=r"$(T-1)/4$ against reduced flow $L \cdot t$ at $t = 10^7$, relative error",
    tolerance=0.02,
    provenance="derived",
)
def theorem1_rate_constant() -> Measured:
    """P2: L(t) · t → (T − 1)/4."""
    flow = _runs.paper_flow()
    predicted = F.rate_constant(PAPER_SIZE.T - 1)
    simulated = float(flow["loss"][-1] * flow["ts"][-1])
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=relative_error(predicted, simulated),
        note=_FLOW_NOTE,
    )


@claim(
    "Theorem 1, Fig. 1: $1/L$ linear with slope $4/(T-1)$ (P2)",
    method=r"least-squares slope of $1/L$ on $t \in [10^6, 10^7]$ of the reduced flow, relative error",
    tolerance=0.02,
    provenance="derived",
)
def theorem1_inverse_loss_slope() -> Measured:
    """P2: 1/L is asymptotically linear in t with slope 4/(T − 1) (fit on the last decade)."""
    flow = _runs.paper_flow()
    last = flow["ts"] >= flow["ts"][-1] / 10
    slope = np.polyfit(flow["ts"][last], 1.0 / flow["loss"][last], 1)[0]
    predicted = 4.0 / (PAPER_SIZE.T - 1)
    return Measured(
        predicted=predicted,
        simulated=float(slope),
        error=relative_error(predicted, slope),
        note=_FLOW_NOTE,
    )


@claim(
    r"Theorem 1: $L \le \varepsilon$ at $t_\varepsilon = (T-1)/(4\varepsilon)$",
    method=r"event `loss_below` of the reduced flow, $\varepsilon = 10^{-5}$, relative error",
    tolerance=0.02,
    provenance="derived",
)
def theorem1_t_eps() -> Measured:
    """P2 (derived): the event L <= ε fires at t_ε ≈ (T − 1)/(4ε) (up to the plateau time)."""
    eps = _runs.FLOW_EPS
    flow = _runs.paper_flow(eps)
    predicted = F.t_eps(eps, PAPER_SIZE.T - 1)
    eps_max = F.theorem1_eps_max(PAPER_SIZE.d, PAPER_SIZE.T, PAPER_SIZE.q)
    return Measured(
        predicted=predicted,
        simulated=flow["t_stop"],
        error=relative_error(predicted, flow["t_stop"]),
        note=f"{_FLOW_NOTE}; ε = {eps} inside Theorem 1's range (0, {eps_max:.4g}); "
        f"stop={dynamics.StopReason(flow['stop']).name}; the step-size condition η ≤ 1/(20d²) = "
        f"{F.theorem1_step_max(PAPER_SIZE.d):.2g} is met in the flow limit.",
    )


@claim(
    r"P3: $a(t) = \frac12\ln(2d(T-q)t/(q^2(T-1)))$",
    method="formula against reduced flow $a$ at $t = 10^7$, absolute error",
    tolerance=0.05,
    provenance="derived",
)
def theorem1_attention_scale() -> Measured:
    """P3: a(t) ≈ ½ ln(2 d (T − q) t / (q² (T − 1)))."""
    flow = _runs.paper_flow()
    predicted = F.attention_scale(flow["ts"][-1], PAPER_SIZE.d, PAPER_SIZE.T, PAPER_SIZE.q)
    return Measured(
        predicted=predicted,
        simulated=float(flow["a"][-1]),
        error=abs(predicted - float(flow["a"][-1])),
        note=f"{_FLOW_NOTE}; ‖W‖_F = a√(T − 1) = {flow['a'][-1] * np.sqrt(PAPER_SIZE.T - 1):.3f}.",
    )


SCORE_GAP_T1 = 1e10
"""End time of [`theorem1_score_gap_half_log_t`][]: its fitted window (the later half in log-time,
t ≥ 1e5) starts where the 1/t corrections to α are about 3% of α's offset (at t1 = 1e7 the window
would start at t ≈ 3e3, still inside the plateau's wake: fitted slope 0.556)."""


@claim(
    r"Theorem 1 (reduced flow): no critical point, $\alpha = a\rho^2 \approx \frac12\log t + "
    r"\frac12\log\frac{2\rho^4 d(T-q)}{\lVert M\rVert_F^2 q^2}$",
    method=r"`ReducedFlow` level to $t = 10^{10}$ (201 log-spaced saves), "
    r"`dynamics.landscape.norm_growth` of "
    r"$\alpha$: fitted slope against $\frac12$ (relative error) and intercept against the closed form "
    r"(absolute error), the larger",
    tolerance=0.023,
    provenance="derived",
)
def theorem1_score_gap_half_log_t() -> Measured:
    """How the reduced flow ends (derived). With x = e^{−α}, r = T − q, p_in = 1/(q + r x),
    p_out = x p_in, L(γ, α) = (d/2)[q(γ p_in − 1/q)² + r γ² p_out²] is quadratic in γ; its minimum
    over γ is L*(α) = (d/2) r x² / (q (q + r x²)) ≈ (d/2)(r/q²) e^{−2α}, positive for every finite α
    and → 0 only as α → ∞: no critical point, the flow runs off to infinity. γ relaxes on a time
    1/A ≤ T (A = q p_in² + r p_out², ∂_γ L = d(Aγ − p_in), rate 1/d), so it tracks its minimiser and,
    by the envelope theorem, α̇ = −(ρ⁴/‖M‖²) ∂_α L = (ρ⁴/‖M‖²) d r x² / (q + r x²)²
    ≈ (ρ⁴ d r / (‖M‖² q²)) e^{−2α}. Hence d(e^{2α})/dt ≈ K = 2 ρ⁴ d r / (‖M‖² q²), e^{2α} ≈ K t + c and
    α(t) ≈ ½ log t + ½ log K: slope ½ in log t, intercept ½ log K (P3; consistently
    L ≈ (d/2)(r/q²)/(K t) = ‖M‖²/(4 ρ⁴ t), P2).

    Tolerance, from the neglected terms: α − ½ log(K t) ≈ −c(t)/(2 K t), where, to first order,
    c(t) = (r/q)² [the −r²e^{−2α}/2 term of ∫(q + r x²)² dα, i.e. the plateau at α = 0]
    + (2r/q) log(K t) [the factor q²/(q + r x²)² ≈ 1 − 2 r x²/q in α̇]
    + (K r/2) log(K t) [γ's lag behind its minimiser, γ − γ* ≈ r x α̇, which lowers α̇ by r/(2t)]
    + K T [γ's rise from 0, over a time T, before α moves]; c grows with t, so its value at t1 bounds
    it over the window. Least squares of −c(t1)/(2 K t) on log t over the fitted window gives the
    slope and intercept offsets this term makes: 2.3e-3 relative on the slope and 0.0226 on the
    intercept at the default instance (recomputed in the note), hence the tolerance 0.023. The
    intercept dominates: it is the fit extrapolated from t ≥ 1e5 back to t = 1, about 17 e-folds.

    One run, through the `ReducedFlow` level with `dynamics.simulate` (deterministic, one seed),
    at its default instance (d = 10, T = 200, q = 3, one-hot PE, ρ = 1) and solver settings, with
    t1 = 1e10 and 20 saves a decade (the level's default density). No quick mode: the run takes
    seconds at any t1, and a shorter one would fit the transient instead of the law.
    """
    level = sts.ReducedFlow(t1=SCORE_GAP_T1, num_saves=201)
    run = dynamics.simulate(level, num_seeds=1)
    ts = np.asarray(run["time"].values[0], dtype=np.float64)
    alpha = np.asarray(run["a"].values[0], dtype=np.float64) * level.task.rho**2
    growth = dynamics.landscape.norm_growth(ts, alpha)
    fitted = np.asarray(growth.fitted)
    slope, intercept = float(growth.log_slope), float(growth.log_intercept)

    q, r = level.task.q, level.task.T - level.task.q
    block = sts.block_norm_sq(level.task)
    K = 2 * level.task.rho**4 * level.task.d * r / (block * q * q)
    predicted_intercept = 0.5 * np.log(K)
    slope_error = abs(slope - 0.5) / 0.5
    intercept_error = abs(intercept - predicted_intercept)

    c_bound = (r / q) ** 2 + (2 * r / q + K * r / 2) * np.log(K * ts[-1]) + K * level.task.T
    offset_slope, offset_intercept = np.polyfit(np.log(ts[fitted]), -c_bound / (2 * K * ts[fitted]), 1)
    return Measured(
        predicted=0.5,
        simulated=slope,
        error=max(slope_error, intercept_error),
        note=f"ReducedFlow d={level.task.d}, T={level.task.T}, q={q}, one-hot PE, ρ={level.task.rho}, "
        f"t₁={SCORE_GAP_T1:.0e}, stop={dynamics.stop_reasons(run).values[0]}; "
        f"fitted t ∈ [{ts[fitted][0]:.3g}, {ts[fitted][-1]:.3g}] ({int(fitted.sum())} saves): "
        f"slope {slope:.6f} (rel. error {slope_error:.3g}), intercept {intercept:.5f} vs "
        f"½ log(2ρ⁴d(T − q)/(‖M‖²q²)) = {predicted_intercept:.5f} "
        f"(abs. error {intercept_error:.3g}); log-law residual {float(growth.log_residual):.3g} vs "
        f"power-law {float(growth.power_residual):.3g} "
        f"(power exponent {float(growth.power_exponent):.3f}); "
        f"the neglected −c/(2Kt), c ≤ {c_bound:.0f}, shifts the fit by "
        f"{abs(offset_slope) / 0.5:.3g} (slope, rel.) and {abs(offset_intercept):.3g} (intercept); "
        f"α − ½ log(Kt) at t₁ = {alpha[-1] - 0.5 * np.log(K * ts[-1]):.3g}.",
    )


@claim(
    r"P4: $\gamma - 1 = (T-q)e^{-a}/q$",
    method=r"formula at the flow's $a$ against its $\gamma - 1$ at $t = 10^7$, relative error",
    tolerance=0.05,
    provenance="derived",
)
def theorem1_value_scale() -> Measured:
    """P4: γ(t) − 1 ≈ (T − q) e^{−a(t)} / q."""
    flow = _runs.paper_flow()
    predicted = F.value_excess(float(flow["a"][-1]), PAPER_SIZE.T, PAPER_SIZE.q)
    simulated = float(flow["gamma"][-1] - 1)
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=relative_error(predicted, simulated),
        note=f"{_FLOW_NOTE}; max g along the run = {flow['gamma'].max():.4f} (overshoot above 1, P4).",
    )


@claim(
    r"Theorem 1 rate for discrete GD: $L(k)\,\eta k \to (T-1)/4$",
    method=r"reduced GD recursion, $\eta = 1$, $k = 10^6$, $d = 10$, $T = 200$, $q = 3$, relative "
    r"error",
    tolerance=0.01,
    provenance="derived",
)
def theorem1_discrete_rate() -> Measured:
    """P2 for discrete GD: L(k) η k / ((T − 1)/4) within 1% of 1 at k = 1e6 (η = 1)."""
    k = 10**6
    run = sts.reduced_gd(PAPER_SIZE, 1.0, k, every=k // 10)
    predicted = F.rate_constant(PAPER_SIZE.T - 1)
    simulated = float(run.values["loss"][-1]) * k
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=relative_error(predicted, simulated),
        note=f"reduced GD recursion of full-matrix GD, d={PAPER_SIZE.d}, T={PAPER_SIZE.T}, q={PAPER_SIZE.q}, "
        "one-hot PE, zero init, float64; η = 1 (the theorem's η ≤ 1/(20d²) is covered by the flow).",
    )


@claim(
    r"Theorem 1, Fig. 1: $\cos(W, W^\star) = \sqrt{(T-1)/T}$, $\cos(W, W^\star_c) = 1$ (P1)",
    method="cosines of the last small-GD $W$, max of both errors",
    tolerance=1e-10,
    provenance="derived",
    printed="Fig. 1 caption: “The two cosine similarity curves gradually converge to 1” (its settings "
    r"not given; here 1 is reached against the centred $W^\star_c$, the uncentred limit being "
    r"$\sqrt{(T-1)/T}$)",
)
def theorem1_direction_W() -> Measured:
    """Limit direction of W: cos(W, W*) = sqrt((T − 1)/T) for the identity-block W*, 1 for the
    centred one (exact on the invariant set, at every step after the first)."""
    run = _runs.small_full_gd()
    W = run["W"][-1]
    star = np.asarray(sts.ground_truth(SMALL).W)
    centred = np.asarray(sts.ground_truth(SMALL, centred=True).W)
    cos = float(np.vdot(W, star) / (np.linalg.norm(W) * np.linalg.norm(star)))
    cos_c = float(np.vdot(W, centred) / (np.linalg.norm(W) * np.linalg.norm(centred)))
    predicted = float(np.sqrt((SMALL.T - 1) / SMALL.T))
    return Measured(
        predicted=predicted,
        simulated=cos,
        error=max(abs(cos - predicted), abs(cos_c - 1.0)),
        note=f"full-matrix GD of `lemma1_invariant_set` (T={SMALL.T}); cos with the centred W⋆ = "
        f"{cos_c:.12f}; at T=200 the identity cosine limit is {np.sqrt(199 / 200):.5f}.",
    )


@claim(
    r"Theorem 1, Fig. 1: $V \to V^\star = [I, 0]$ (P1)",
    method=r"$\cos(V, V^\star)$ of the last small-GD $V$ against 1",
    tolerance=1e-12,
    provenance="derived",
    printed="Fig. 1 caption: “The two cosine similarity curves gradually converge to 1” (its settings "
    "not given)",
)
def theorem1_direction_V() -> Measured:
    """Limit of V: cos(V, V*) = 1 on the invariant set and γ → 1 (||V − V*|| / ||V*|| at t = 1e7)."""
    run = _runs.small_full_gd()
    V = run["V"][-1]
    star = np.asarray(sts.ground_truth(SMALL).V)
    cos = float(np.vdot(V, star) / (np.linalg.norm(V) * np.linalg.norm(star)))
    flow = _runs.paper_flow()
    return Measured(
        predicted=1.0,
        simulated=cos,
        error=abs(cos - 1.0),
        note=f"full-matrix GD of `lemma1_invariant_set`; at T=200 (reduced flow) ‖V − V⋆‖/‖V⋆‖ = "
        f"|g − 1| = {abs(flow['gamma'][-1] - 1):.4g} at t=1e7 (→ 0 like e⁻ᵃ, see `theorem1_value_scale`).",
    )


# --------------------------------------------------------------------------------------
# Theorem 3: length generalisation (derived)
# --------------------------------------------------------------------------------------

THEOREM3_TASK = sts.STSConfig(d=5, T=20, q=3, pe_sampler="dictionary_onehot", pe_dim=40)
THEOREM3_TESTS = ((40, 3), (30, 3), (20, 5), (40, 5))


@claim(
    r"Theorem 3: the loss at $(T', q')$ of the trained model is $L_{T',q'}(\gamma, a)$",
    method="reduced GD 2e4 steps ($d = 5$, $T = 20$, $q = 3$, dictionary $N = 40$) then `mc_loss` at "
    "$(40,3), (30,3), (20,5), (40,5)$, 4096 / 32768 pairs: worst difference in standard errors",
    tolerance=4.0,
    provenance="derived",
    sized=True,
)
def theorem3_closed_form(full: bool = False) -> Measured:
    """The trained model's loss at (T', q') equals the closed form L_{T',q'}(γ, a) (Monte Carlo of
    the full transformer with fresh stochastic PE, antithetic in X)."""
    task = THEOREM3_TASK
    run = sts.reduced_gd(task, 1.0, 20_000, every=20_000)
    gamma, a = run.final["gamma"], run.final["a"]
    model = sts.from_scalars(task, gamma, a)
    pairs = 32768 if full else 4096
    zs, closed, means, rows = [], [], [], []
    for i, (T_new, q_new) in enumerate(THEOREM3_TESTS):
        closed.append(float(sts.reduced_state_loss(task, T=T_new, q=q_new)(run.final)))
        mean, se = sts.mc_loss(model, task, jax.random.PRNGKey(100 + i), pairs, T=T_new, q=q_new)
        means.append(float(mean))
        zs.append(abs(float(mean) - closed[-1]) / float(se))
        rows.append(
            f"(T′={T_new}, q′={q_new}): closed {closed[-1]:.5g}, MC {float(mean):.5g} ± {float(se):.2g}"
        )
    worst = int(np.argmax(zs))
    return Measured(
        predicted=closed[worst],
        simulated=means[worst],
        error=max(zs),
        note=f"d={task.d}, T={task.T}, q={task.q}, stochastic dictionary_onehot N={task.pe_dim}, reduced GD "
        f"η = 1, 2e4 steps (g={float(gamma):.4f}, a={float(a):.3f}); {pairs} antithetic pairs per point; "
        + "; ".join(rows),
    )


@claim(
    r"Theorem 3: $L_{400,3}/L_{200,3} \to R$",
    method=r"$R \approx 69.7$ against the closed-form ratio along the reduced flow at $t = 10^7$, "
    r"relative error",
    tolerance=0.02,
    provenance="derived",
    expected_deviation="the approach to R is slow (corrections of order e⁻ᵃ ∼ 1/√t); "
    "theorem3_ratio_gap_rate checks that rate",
)
def theorem3_ratio_limit() -> Measured:
    """Theorem 3 (derived): along GD the OOD/ID loss ratio tends to R (T' = 2T = 400, q' = q = 3)."""
    flow = _runs.paper_flow()
    T_new = 2 * PAPER_SIZE.T
    ratio = _runs.ood_along_flow(T_new, PAPER_SIZE.q) / flow["loss"]
    predicted = F.ood_ratio_limit(PAPER_SIZE.T, PAPER_SIZE.q, T_new, PAPER_SIZE.q)
    late = flow["ts"] >= 1e3
    monotone = bool(np.all(np.diff(ratio[late]) > 0))
    at = {t: float(np.interp(np.log(t), np.log(flow["ts"]), ratio)) for t in (1e5, 1e6, 1e7)}
    return Measured(
        predicted=predicted,
        simulated=at[1e7],
        error=relative_error(predicted, at[1e7]),
        note=f"{_FLOW_NOTE}; ratio at t=1e5, 1e6, 1e7: {at[1e5]:.2f}, {at[1e6]:.2f}, {at[1e7]:.2f} "
        f"(discrete GD, η = 1: 42.6, 59.0, 66.0 at k=1e5, 1e6, 1e7); increasing for t ≥ 1e3: {monotone}; "
        f"OOD loss at 1e7 = {_runs.ood_along_flow(T_new, PAPER_SIZE.q)[-1]:.3g} → 0.",
    )


@claim(
    r"Theorem 3: $R - L_{400,3}/L_{200,3} \propto t^{-1/2}$",
    method=r"log-log slope of the gap on $t \in [10^6, 10^7]$ of the reduced flow against $-1/2$",
    tolerance=0.1,
    provenance="derived",
)
def theorem3_ratio_gap_rate() -> Measured:
    """Theorem 3 (derived): the gap R − ratio shrinks like t^{−1/2} (log-log slope on the last decade)."""
    flow = _runs.paper_flow()
    T_new = 2 * PAPER_SIZE.T
    ratio = _runs.ood_along_flow(T_new, PAPER_SIZE.q) / flow["loss"]
    gap = F.ood_ratio_limit(PAPER_SIZE.T, PAPER_SIZE.q, T_new, PAPER_SIZE.q) - ratio
    last = flow["ts"] >= flow["ts"][-1] / 10
    slope = float(np.polyfit(np.log(flow["ts"][last]), np.log(gap[last]), 1)[0])
    return Measured(
        predicted=-0.5,
        simulated=slope,
        error=abs(slope + 0.5),
        note=f"{_FLOW_NOTE}; gap at 1e7 = {gap[-1]:.3g}.",
    )


# --------------------------------------------------------------------------------------
# Fixed PE: the OOD loss floor (derived)
# --------------------------------------------------------------------------------------

FLOOR_TASK = sts.STSConfig(d=10, T=200, q=3, pe_sampler="dictionary_onehot", pe_dim=400, fixed_pe=True)
FLOOR_A = 40.0


FIXED_PE_FLOOR_T_TESTS = (250, 300, 350, 400)
"""The test lengths of the fixed-PE floor checks, beyond Fig. 4's training length T = 200."""


@claims(
    "fixed_pe_floor_T{}",
    FIXED_PE_FLOOR_T_TESTS,
    r"Figs. 2, 4: fixed PE keeps a positive OOD loss; floor at $T_{\text{test}} = {}$",
    method="hypergeometric formula against `mc_loss` of padded one-hot $W_{EE} = 40 M_T$, $V = [I, "
    "0]$ ($d = 10$, $T = 200$, $N = 400$), 2048 / 16384 pairs: difference in standard errors",
    tolerance=4.0,
    provenance="derived",
    sized=True,
)
def fixed_pe_floors(T_test: int, full: bool = False) -> Measured:
    """The fixed-PE OOD loss floor at length `T_test`: the GD limit's loss by Monte Carlo against
    the hypergeometric formula ([`closed_forms.fixed_pe_floor`][])."""
    task = FLOOR_TASK
    W_EE = jnp.zeros((task.m_E, task.m_E)).at[: task.T, : task.T].set(FLOOR_A * sts.centring(task.T))
    model = sts.from_blocks(task, W_EE, jnp.eye(task.d))
    pairs = 16384 if full else 2048
    mean, se = sts.mc_loss(model, task, jax.random.PRNGKey(T_test), pairs, T=T_test, chunk=128)
    predicted = F.fixed_pe_floor(task.d, task.T, task.q, T_test)
    L0 = task.trivial_loss
    return Measured(
        predicted=predicted,
        simulated=float(mean),
        error=abs(float(mean) - predicted) / float(se),
        note=f"padded one-hot PE (π(i)=i, N=400), W_EE = a M_T on slots 1..T with a={FLOOR_A}, V=[I,0] "
        f"(the GD limit from zero init at T=200, q=3, d=10); {pairs} antithetic pairs; "
        f"floor / (d/2q) = {predicted / L0:.3f} predicted, {float(mean) / L0:.3f} simulated "
        f"(± {float(se) / L0:.2g}).",
    )


ONLINE = sts.Online(
    task=sts.STSConfig(d=5, T=20, q=3, pe_sampler="dictionary_onehot", pe_dim=40),
    num_T_tests=4,
    num_q_tests=0,
)
"""The reduced-size online run of Fig. 2 (T_test = 25, 30, 35, 40)."""


@claim(
    r"Fig. 2: stochastic PE generalises to longer $T_{\text{test}}$, fixed PE does not",
    method=r"`online` GD lr 1, zero init, $d = 5$, $T = 20$, $N = 40$, $T_{\text{test}} = 25..40$, "
    r"600 / 5000 steps, 2 / 5 seeds: fraction of $T_{\text{test}}$ where the median final "
    r"stochastic loss is below the fixed one, against 1",
    tolerance=0.0,
    provenance="recon",
    sized=True,
)
def fig2_stochastic_beats_fixed(full: bool = False) -> Measured:
    """Fig. 2's claim on a reduced-size online run: at the end of training, the median OOD loss
    of stochastic PE is below that of fixed PE at every T_test (fraction of T_tests)."""
    sim = dataclasses.replace(
        ONLINE,
        optimizer="gd",
        lr=1.0,
        batch_size=128,
        num_steps=5000 if full else 600,
        every=1000 if full else 300,
        num_eval=1024 if full else 256,
    )
    seeds = 5 if full else 2
    keys = dynamics.seed_keys(0, seeds)
    stoch, _ = dynamics.run_many(sim.run, keys)
    fixed, _ = dynamics.run_many(dynamics.with_settings(sim, {"task.fixed_pe": True}).run, keys)
    task = sim.task
    L0 = task.trivial_loss
    s = np.median(stoch.values["loss_T"][:, -1], axis=0) / L0
    f = np.median(fixed.values["loss_T"][:, -1], axis=0) / L0
    frac = float(np.mean(s < f))
    return Measured(
        predicted=1.0,
        simulated=frac,
        error=1.0 - frac,
        note=f"reduced size (recon): d={task.d}, T={task.T}, q={task.q}, "
        "dictionary_onehot "
        f"N={task.pe_dim}, T_test={sim.T_tests}, zero init, mini-batch GD lr=1 batch 128, "
        f"{sim.num_steps} steps, {seeds} seeds, float32; loss/(d/2q) stochastic {np.round(s, 3).tolist()}, "
        f"fixed {np.round(f, 3).tolist()}.",
    )


# --------------------------------------------------------------------------------------
# FCN lower bound: Proposition C (derived)
# --------------------------------------------------------------------------------------

FCN_EXACT = {"d": 3, "T": 12, "q": 3}


@claim(
    "Proposition C is tight: the token-sum first layer attains $(T-q)(Td-m)/(2qT(T-1))$",
    method="`linear_readout_risk` of `top_eigenspace_layer` against the exact minimum for $m = "
    "0..Td$ ($d = 3$, $T = 12$, $q = 3$): max error",
    tolerance=1e-10,
    provenance="derived",
)
def fcn_bound_attained() -> Measured:
    """Proposition C is attained by the top-eigenspace first layer for d <= m <= Td, and the
    m < d formula holds (exact conditional-mean risk)."""
    d, T, q = FCN_EXACT["d"], FCN_EXACT["T"], FCN_EXACT["q"]
    errs = []
    for m in range(0, T * d + 1):
        risk = sts.linear_readout_risk(sts.top_eigenspace_layer(d, T, m), d, T, q)
        errs.append(abs(risk - F.fcn_min_risk(d, T, q, m)))
    m_half = T * d // 2
    return Measured(
        predicted=F.fcn_lower_bound(d, T, q, m_half),
        simulated=sts.linear_readout_risk(sts.top_eigenspace_layer(d, T, m_half), d, T, q),
        error=float(max(errs)),
        note=f"d={d}, T={T}, q={q}; exact Gaussian conditional-mean risk by linear algebra; "
        f"predicted/simulated at m = Td/2 = {m_half}.",
    )


@claim(
    "Proposition C holds for random first layers; coordinate layers give $(Td-m)/(2qT)$",
    method="exact risks of 3 / 10 Gaussian layers per $m$ (every second / every $m$) minus the "
    "bound, and coordinate-layer errors",
    tolerance=1e-10,
    provenance="derived",
    bound="lower",
    sized=True,
)
def fcn_bound_random_layers(full: bool = False) -> Measured:
    """Random Gaussian and coordinate first layers never beat Proposition C; coordinate layers
    give exactly (Td − m)/(2qT)."""
    d, T, q = FCN_EXACT["d"], FCN_EXACT["T"], FCN_EXACT["q"]
    rng = np.random.default_rng(0)
    min_gap, coord_err = np.inf, 0.0
    for m in range(1, T * d + 1, 1 if full else 2):
        for _ in range(10 if full else 3):
            risk = sts.linear_readout_risk(rng.standard_normal((m, T * d)), d, T, q)
            min_gap = min(min_gap, risk - F.fcn_lower_bound(d, T, q, m))
        coord = sts.linear_readout_risk(sts.coordinate_layer(d, T, m), d, T, q)
        coord_err = max(coord_err, abs(coord - F.coordinate_risk(d, T, q, m)))
    return Measured(
        predicted=0.0,
        simulated=float(min_gap),
        error=max(-float(min_gap), coord_err, 0.0),
        note=f"d={d}, T={T}, q={q}; max coordinate-layer error {coord_err:.2g}.",
    )


FCN_TASK = sts.STSConfig(d=4, T=8, q=2, pe_sampler="onehot")


@claim(
    "FCN lower bound: trained FCNs stay above $(T-q)(Td-m)/(2qT(T-1))$",
    method="ReLU MLPs ($d = 4$, $T = 8$, $q = 2$) at $m = Td/8, Td/4, Td/2$ / also $Td, 2Td$, Adam "
    "3e-3, 300 / 4000 steps, 1 / 3 seeds: max (bound − loss)/SE",
    tolerance=3.0,
    provenance="derived",
    bound="upper",
    sized=True,
)
def fcn_trained_widths(full: bool = False) -> Measured:
    """Trained ReLU MLPs of first-layer width m never go below Proposition C (a hard inequality;
    tolerance = Monte Carlo error only)."""
    task = FCN_TASK
    Td = task.T * task.d
    widths = (Td // 8, Td // 4, Td // 2, Td, 2 * Td) if full else (Td // 8, Td // 4, Td // 2)
    worst, rows = -np.inf, []
    for m in widths:
        losses, ses = sts.trained_fcn_losses(
            task,
            m,
            3 if full else 1,
            num_steps=4000 if full else 300,
            lr=3e-3,
            num_eval=8192 if full else 1024,
        )
        bound = F.fcn_lower_bound(task.d, task.T, task.q, m)
        worst = max(worst, float(np.max((bound - losses) / ses)))
        rows.append(f"m={m}: bound {bound:.4f}, trained {np.round(losses, 4).tolist()}")
    return Measured(
        predicted=0.0,
        simulated=worst,
        error=max(worst, 0.0),
        note=f"d={task.d}, T={task.T}, q={task.q} (Td={Td}); ReLU MLP hidden (m, m) on vec(X)+1_y, "
        "Adam lr 3e-3, "
        f"batch 256 fresh samples, float32; " + "; ".join(rows) + f"; trivial loss {task.trivial_loss:.3f}.",
    )


# --------------------------------------------------------------------------------------
# Theorem 2 / Lemma 2: stochastic PE keeps the iterates on W_EE = a I, V = [g I, 0] (derived)
# --------------------------------------------------------------------------------------

THEOREM2_TASK = sts.STSConfig(d=2, T=4, q=2, pe_sampler="haar_orthonormal", pe_dim=5)
THEOREM2_BANKS = (64, 256, 1024)


def _off_manifold(bank: int, key: jax.Array) -> jax.Array:
    """Relative distance of (W, V) from {W_EE = a I, V = [g I, 0]} after 30 GD steps (η = 1) on the
    population loss averaged over a bank of `bank` Haar PE draws (Lemma A, exact in X)."""
    task = THEOREM2_TASK
    E, y = sts.pe_bank(task, key, bank)
    run = dynamics.train(
        lambda m: sts.bank_population_loss(m, E, y),
        sts.zero_init(task),
        dynamics.gd(1.0),
        num_steps=30,
        save=dynamics.Save(every=30),
    )
    W, V = run.final.W, run.final.V
    g, a = sts.to_scalars(task, run.final)
    on_set = sts.from_scalars(task, g, a)
    dev = jnp.sqrt(jnp.sum((W - on_set.W) ** 2) + jnp.sum((V - on_set.V) ** 2))
    return dev / jnp.sqrt(jnp.sum(W**2) + jnp.sum(V**2))


@claim(
    r"Theorem 2, Lemma 2: stochastic PE keeps $W_{EE} = aI$, $V = [\gamma I, 0]$; finite-bank "
    r"distance $\propto \text{bank}^{-1/2}$",
    method=r"30 GD steps ($\eta = 1$) on banks of 64, 256, 1024 Haar PE draws ($d = 2$, $T = 4$, $q = "
    r"2$, $m_E = 5$), median relative distance over 4 / 16 seeds: log-log slope against $-1/2$",
    tolerance=0.1,
    provenance="derived",
    sized=True,
)
def theorem2_bank_invariance(full: bool = False) -> Measured:
    """Theorem 2 / Lemma 2 (derived): for a rotation-invariant PE law the population GD iterates
    stay exactly on W_EE = a I, V = [g I, 0]; with a finite bank of PE draws the distance from that
    set shrinks like bank^{-1/2} (log-log slope of the median over seeds)."""

    seeds = 16 if full else 4
    medians = []
    for bank in THEOREM2_BANKS:
        out, _ = dynamics.run_many(eqx.Partial(_off_manifold, bank), dynamics.seed_keys(0, seeds))
        medians.append(float(np.median(out)))
    slope = float(np.polyfit(np.log(THEOREM2_BANKS), np.log(medians), 1)[0])
    task = THEOREM2_TASK
    return Measured(
        predicted=-0.5,
        simulated=slope,
        error=abs(slope + 0.5),
        note=f"haar_orthonormal PE, d={task.d}, T={task.T}, q={task.q}, m_E={task.m_E}, zero init, GD η = 1, "
        f"30 steps, banks {THEOREM2_BANKS}, {seeds} seeds; median relative distances "
        f"{np.round(medians, 4).tolist()}.",
    )


# --------------------------------------------------------------------------------------
# Theorem 2 with iid_sphere PE: the positive loss floor (derived)
# --------------------------------------------------------------------------------------

SPHERE_FLOW_T1 = 3e4


@claim(
    "Theorem 2: with `iid_sphere` PE the flow stops at the finite minimiser, positive loss",
    method=r"`sphere_flow` to $t = 3\cdot 10^4$ on a bank of 100 / 1000 draws against the floor's "
    r"$(\gamma^\star, \alpha^\star)$ on the same bank: max distance",
    tolerance=1e-4,
    provenance="derived",
    sized=True,
)
def theorem2_sphere_flow_converges(full: bool = False) -> Measured:
    """Theorem 2 (derived): the reduced 2-D gradient flow with the Monte-Carlo (bank) vector field, from zero
    init, converges to the finite minimiser (γ*, α*) of the floor formula on the same bank (distance
    of the end point from (γ*, α*))."""
    task = _runs.SPHERE_TASK
    size = 1000 if full else 100
    scores, floor = _runs.sphere_bank(task.T, task.q, task.m_E, size, 1)
    run = sts.sphere_flow(task, scores, SPHERE_FLOW_T1, [SPHERE_FLOW_T1 / 10, SPHERE_FLOW_T1])
    gamma, a = float(run.values["gamma"][-1]), float(run.values["a"][-1])
    L0 = task.trivial_loss
    loss = np.asarray(run.values["loss"]) / L0
    error = max(abs(gamma - floor["gamma"]), abs(a * task.rho**2 - floor["alpha"]))
    return Measured(
        predicted=floor["ratio"],
        simulated=float(loss[-1]),
        error=error,
        note=f"iid_sphere PE, d={task.d}, T={task.T}, q={task.q}, m_E={task.m_E}, ρ={task.rho}, zero init; "
        f"bank of {size} PE draws (common random numbers) for both the floor scan and the vector field; "
        f"Tsit5 rtol=1e-8 to t={SPHERE_FLOW_T1:.0e} (stop={dynamics.StopReason(int(run.stop)).name}, "
        f"{int(run.num_steps)} steps), float64; (g⋆, a⋆) = ({floor['gamma']:.5f}, {floor['alpha']:.5f}), "
        f"flow end ({gamma:.5f}, {a:.5f}); loss/(d/2q) at t={SPHERE_FLOW_T1 / 10:.0e}: {loss[0]:.6f}.",
    )


@claim(
    r"Theorem 2: the `iid_sphere` floor formula is the full transformer's loss at $(\gamma^\star, "
    r"W_{EE} = \alpha^\star I)$",
    method="floor on a bank of 500 / 3000 draws ($T = 200$, $q = 3$, $m_E = 64$) against `mc_loss` "
    "with fresh PE, 2048 / 16384 pairs: difference in combined standard errors",
    tolerance=4.0,
    provenance="derived",
    sized=True,
)
def theorem2_sphere_floor_mc(full: bool = False) -> Measured:
    """Theorem 2 (derived): the floor of the reduced formula is the population loss of the full transformer
    at (γ*, W_EE = α* I) (Monte Carlo with fresh PE draws and antithetic X; |difference| in
    combined standard errors of the bank and the Monte Carlo)."""
    task = _runs.SPHERE_TASK
    size = 3000 if full else 500
    scores, floor = _runs.sphere_bank(task.T, task.q, task.m_E, size, 0)
    per = np.asarray(sts.sphere_example_losses(floor["gamma"], floor["alpha"], scores, task.d, task.q))
    bank_mean, bank_se = float(per.mean()), float(per.std(ddof=1) / np.sqrt(size))
    model = sts.from_scalars(task, floor["gamma"], floor["alpha"] / task.rho**2)
    pairs = 16384 if full else 2048
    mean, se = sts.mc_loss(model, task, jax.random.PRNGKey(7), pairs, chunk=256)
    mean, se = float(mean), float(se)
    L0 = task.trivial_loss
    return Measured(
        predicted=bank_mean / L0,
        simulated=mean / L0,
        error=abs(mean - bank_mean) / float(np.hypot(se, bank_se)),
        note=f"iid_sphere PE, d={task.d}, T={task.T}, q={task.q}, m_E={task.m_E}, ρ={task.rho}; floor by "
        f"grid scan + Brent over a on a bank of {size} PE draws (g in closed form): a⋆={floor['alpha']:.4f}, "
        f"g⋆={floor['gamma']:.4f}, floor/(d/2q) = {floor['ratio']:.4f} ± {bank_se / L0:.2g}; full model "
        f"(W_EE = a⋆I, V = [g⋆I, 0]) by Monte Carlo, {pairs} antithetic pairs with fresh PE: "
        f"{mean / L0:.4f} ± {se / L0:.2g}; float64.",
    )
