"""Scan and Snap checks of the theorems: Theorem 1 (Eqn 9) on the decoder dynamics, Theorems
2-3 on the reference instance in the L1 and L2 flows, Theorem 4 on the L3 model and in L2."""

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import tasks.scan_snap as ss

from .._check import Measured, claim
from . import _runs
from . import closed_forms as cf

# --------------------------------------------------------------------------------------
# Theorem 1: the back-propagated gradient (Eqn 9)
# --------------------------------------------------------------------------------------


@functools.cache
def _theorem1_run() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """The modified decoder dynamics (Eqn 26) with Z frozen on an instance satisfying
    Assumption 2: K = 3 classes sharing one query, one common token (P = 0.18), four distinct
    tokens per class (P = 0.82 · (0.1, 0.15, 0.3, 0.45)), M = 600, query row of Z frozen at
    0.1 N(0, 1) on the support.

    **Returns:** `(ts, G, F, info)`: the simulated g_n (time, M, K), F (M, K), and the
    Assumption 2 numbers.
    """
    K, M, eta_y = 3, 600, 0.5
    probs = np.zeros((K, M))
    probs[:, _runs.CT] = 0.18
    for n in range(K):
        probs[n, _runs.dt_block(n)] = 0.82 * _runs.DT_WEIGHTS
    query = jnp.full(K, _runs.QUERY)
    Z = (
        jnp.zeros((M, M), jnp.float64)
        .at[_runs.QUERY, :13]
        .set(0.1 * jax.random.normal(jax.random.PRNGKey(4), (13,), jnp.float64))
    )
    F = ss.normalized_attention_features(Z, jnp.asarray(probs), query)
    ts = jnp.asarray([100.0, 300.0, 1000.0, 3000.0, 10_000.0])
    G = _runs.decoder_run(F, jnp.arange(14, 17), _runs.f64(eta_y), ts)
    eig = np.linalg.eigvalsh(np.asarray(F.T @ F) - np.eye(K))
    info = {"M": M, "K": K, "eta_y": eta_y, "lambda": eig}
    return np.asarray(ts), np.asarray(G), np.asarray(F), info


@claim(
    r"Theorem 1, Eqn 9: $Y(e_n - \alpha_n) = \gamma F(I - E')Qe_n$",
    method=r"expected Eqn 26 with $Z$ frozen ($K = 3$, $M = 600$, satisfying Assumption 2), $t \in "
    r"[10^2, 10^4]$, against `backprop_gradient`: max relative error",
    tolerance=1e-6,
    provenance="derived",
)
def theorem1_backprop_gradient(*, formula: Callable = cf.backprop_gradient) -> Measured:
    """Theorem 1 (Eqn 9), deterministic form: with Z frozen and the expected modified decoder
    update (Eqn 26), g_n = Y(e_n − α_n) = γ(t) F (I − E') Q e_n.

    **Arguments:** `formula`: `(t, F, η_Y) -> G` (columns g_n) under test.

    **Returns:** the [`Check`][]: max over n and late times of ||g_sim − g_pred|| / ||g_pred||.
    """
    ts, G, F, info = _theorem1_run()
    predicted = np.stack([np.asarray(formula(t, jnp.asarray(F), info["eta_y"])) for t in ts])
    rel = np.linalg.norm(G - predicted, axis=1) / np.linalg.norm(predicted, axis=1)
    lam = np.abs(info["lambda"])
    return Measured(
        predicted=float(np.linalg.norm(predicted[-1, :, 0])),
        simulated=float(np.linalg.norm(G[-1, :, 0])),
        error=float(rel.max()),
        note=f"K={info['K']}, M={info['M']}, η_Y={info['eta_y']}, Y(0)=0, π_n=1/K, Tsit5 rtol=1e-11, "
        f"t ∈ {ts.tolist()}; Assumption 2: |λ₁|={lam.max():.3f} < 1/K={1 / info['K']:.3f}, "
        f"min|λ_i|={lam.min():.3f} ≥ √(6/M)={np.sqrt(6 / info['M']):.3f}. "
        "predicted/simulated: ‖g₁‖ at t=1e4.",
    )


@claim(
    r"Theorem 1(a): $\xi_n > 0$",
    method=r"$\beta$ read off the simulated $g_n$ by least squares: fraction of (time, $n$) with "
    r"$\xi_n > 0$, against 1",
    tolerance=0.0,
)
def theorem1_xi_positive() -> Measured:
    """Theorem 1(a): ξ_n = γ Σ_{n'≠n} β_{nn'} f_n^T f_{n'} > 0, with β read off the simulated g_n.

    **Returns:** the [`Check`][]: the fraction of (time, n) with ξ_n > 0 (must be 1).
    """
    ts, G, F, _ = _theorem1_run()
    E = F.T @ F - np.eye(F.shape[1])
    coefficients = np.linalg.lstsq(F, G.transpose(1, 0, 2).reshape(F.shape[0], -1), rcond=None)[0]
    coefficients = coefficients.reshape(F.shape[1], len(ts), F.shape[1]).transpose(1, 0, 2)  # g_n = F c_n
    xi = -np.einsum("nk,tkn->tn", E, coefficients)  # ξ_n = -Σ_{n'≠n} c_n[n'] E_{nn'}
    return Measured(
        predicted=1.0,
        simulated=float(np.mean(xi > 0)),
        error=float(1 - np.mean(xi > 0)),
        note=f"the `theorem1_backprop_gradient` run; β from g_n = F c_n (least squares); "
        f"ξ ∈ [{xi.min():.3g}, {xi.max():.3g}].",
    )


# --------------------------------------------------------------------------------------
# Theorems 2-3 on the reference instance, levels L1 and L2
# --------------------------------------------------------------------------------------

_ETA_Z = (0.1, 1.0)
_REFERENCE = "reference instance (K=3, M=17), Y=Z=0, η_Y=1, t ∈ [0, 2000]"
_L2 = f"L2 class-weighted theory flow (π_n=1/K, as in L1), {_REFERENCE}"


def _sign_fraction(dt_entries, ct_entries, floor: float = 1e-12) -> float:
    """Fraction of entries with Theorem 2's sign: distinct-token entries > 0 and common-token
    entries < 0, an entry of modulus below `floor` counting as either (f_nl underflows there)."""
    dt_entries, ct_entries = np.ravel(dt_entries), np.ravel(ct_entries)
    right = np.concatenate(
        [(dt_entries > 0) | (np.abs(dt_entries) < floor), (ct_entries < 0) | (np.abs(ct_entries) < floor)]
    )
    return float(np.mean(right))


def _l1_z_dot(models: ss.YZModel, eta_z: float) -> np.ndarray:
    """ż of the query row along saved L1 models (time, M)."""
    arrays = _runs.reference_classes().arrays()
    _, Z_dot = jax.jit(jax.vmap(ss.population_gradient_formula, in_axes=(0, None)))(
        jax.tree.map(jnp.asarray, models), arrays
    )
    return eta_z * np.asarray(Z_dot)[:, _runs.QUERY]


def _fates(z_dots: list[np.ndarray], level_note: str) -> Measured:
    """Theorem 2's signs over the query rows ż (time, M) of several runs."""
    dt = [z_dot[:, 1:13] for z_dot in z_dots]
    ct = [z_dot[:, _runs.CT] for z_dot in z_dots]
    fraction = _sign_fraction(dt, ct)
    return Measured(
        predicted=1.0,
        simulated=fraction,
        error=1 - fraction,
        note=f"{level_note}, "
        f"η_Z ∈ {_ETA_Z}, {_runs.NUM_SAVES} saves; |ż| < 1e-12 counts as either sign "
        f"(ż = 0 at t=0); for t > 0 min DT ż {min(np.min(d[1:]) for d in dt):.2g}, max CT ż "
        f"{max(np.max(c[1:]) for c in ct):.2g}.",
    )


@claim(
    r"Theorem 2 in L1: $\dot z > 0$ on DTs, $< 0$ on the CT",
    method=r"L1 reference runs, $\eta_Z \in \{0.1, 1\}$: fraction of entries with the right sign "
    r"($\lvert\dot z\rvert < 10^{-12}$ counts as either)",
    tolerance=0.0,
)
def theorem2_fates_L1() -> Measured:
    """Theorem 2 in L1: every distinct token's logit grows (ż > 0), the common token's shrinks.

    **Returns:** the [`Check`][]: the fraction of (η_Z, time, token) entries with the right sign.
    """
    z_dots = [_l1_z_dot(_runs.reference_l1(eta_z)[1], eta_z) for eta_z in _ETA_Z]
    return _fates(z_dots, f"L1, {_REFERENCE}")


@claim(
    r"Theorem 2 in L2 (Eqns 98-100): $\dot z > 0$ on DTs, $< 0$ on the CT",
    method="as above on L2",
    tolerance=0.0,
)
def theorem2_fates_L2() -> Measured:
    """Theorem 2 in L2 (Eqns 98-100): distinct tokens grow, the single common token shrinks.

    **Returns:** the [`Check`][]: the fraction of (η_Z, time, token) entries with the right sign.
    """
    z_dots = [_runs.reference_l2(1.0, eta_z)[2] for eta_z in _ETA_Z]
    return _fates(z_dots, _L2)


def _dominant_pair(f: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """Eqn 11 for the dominant (token 4) and the least likely (token 1) DT of class 1 at the
    last save: `(r(0) χ_l(t), r(t))`."""
    r0 = f[0, 4, 0] ** 2 / f[0, 1, 0] ** 2 - 1
    return float(r0 * cf.growth_factor(z[-1, 4], z[0, 4])), float(f[-1, 4, 0] ** 2 / f[-1, 1, 0] ** 2 - 1)


@claim(
    r"Theorem 3, Eqn 11: $r(t) = r(0)\chi_l(t)$",
    method=r"L2, $\eta_Z \in \{0.1, 1\}$, all 12 ordered DT pairs per class: max relative error",
    tolerance=1e-6,
)
def theorem3_eqn11_L2() -> Measured:
    """Theorem 3, Eqn 11 in L2: r_{l/l'|n}(t) = r_{l/l'|n}(0) χ_l(t) exactly.

    **Returns:** the [`Check`][]: max relative error over ordered DT pairs, classes, times, η_Z.
    """
    runs = [_runs.reference_l2(1.0, eta_z)[1] for eta_z in _ETA_Z]
    runs = [(_runs.features(states.Z), states.Z[:, _runs.QUERY]) for states in runs]
    predicted, simulated = _dominant_pair(*runs[-1])
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=max(float(_runs.eqn11_errors(f, z).max()) for f, z in runs),
        note=f"{_L2}, η_Z ∈ {_ETA_Z}, all 12 ordered DT pairs of each class; predicted/simulated: "
        "r(0) χ_l / r at t=2000 for the dominant vs the least likely DT of class 1, η_Z=1. "
        "Reference value: ≤ 2e-15.",
    )


@claim(
    r"Theorem 3, Eqn 12: $e^{2f_{nl_0}^2(0)B_n} \le \chi_{l_0} \le e^{2B_n}$",
    method="L2 with $B_n$ in the ODE state: largest violation of either bound",
    tolerance=1e-8,
    bound="upper",
)
def theorem3_eqn12_L2() -> Measured:
    """Theorem 3, Eqn 12 in L2: e^{2 f_{nl0}(0)² B_n(t)} ≤ χ_{l0}(t) ≤ e^{2 B_n(t)}.

    **Returns:** the [`Check`][]: the largest violation of either bound (0 when both hold),
    over classes, times and η_Z.
    """
    slack, gap = np.inf, 0.0
    for eta_z in _ETA_Z:
        _, states, _ = _runs.reference_l2(1.0, eta_z)
        f, z = _runs.features(states.Z), states.Z[:, _runs.QUERY]
        for n in range(f.shape[-1]):
            l0 = _runs.dt_block(n)[-1]
            chi = cf.growth_factor(z[:, l0], z[0, l0])
            lower, upper = cf.eqn12_bounds(f[0, l0, n], states.B[:, n])
            slack = min(slack, float(np.min(chi - lower)), float(np.min(upper - chi)))
            gap = max(gap, float(upper[-1] - lower[-1]))
    return Measured(
        predicted=float(upper[-1]),
        simulated=float(chi[-1]),
        error=max(0.0, -slack),
        note=f"{_L2}, η_Z ∈ {_ETA_Z}, B_n integrated in the ODE state; min slack {slack:.3g} (0 at t=0); "
        f"largest final gap between the bounds {gap:.3g}; predicted/simulated: the upper bound / χ_l₀ "
        "of class 3 at t=2000, η_Z=1 (the lower bound exp(2 f_l₀(0)² B_n) enters the error).",
    )


def _eqn11_l1(eta_z: float, reference: str) -> Measured:
    """Eqn 11 in L1: max relative error over DT pairs and times, plus one reference pair at t = 2000."""
    _, models = _runs.reference_l1(eta_z)
    f, z = _runs.features(models.Z), models.Z[:, _runs.QUERY]
    errors = _runs.eqn11_errors(f, z)
    predicted, simulated = _dominant_pair(f, z)
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=float(errors.max()),
        note=f"L1, {_REFERENCE}, η_Z={eta_z}, all 12 ordered DT pairs of each class. The (dominant, least "
        f"likely) pair of class 1 at t=2000 (predicted/simulated: its r(0) χ_l / r): error "
        f"{errors[0, 3, 0, -1]:.2g} (reference value: {reference}). "
        "Tolerance 1e-2 for η_Y/η_Z ≥ 10 (recon).",
    )


@claim(
    r"Theorem 3, Eqn 11 in L1 with $\eta_Y/\eta_Z = 10$: $r(t) = r(0)\chi_l(t)$ approximately",
    method=r"L1 reference run, $\eta_Z = 0.1$: max relative error",
    tolerance=1e-2,
    provenance="recon",
)
def theorem3_eqn11_L1() -> Measured:
    """Theorem 3, Eqn 11 in L1 with η_Y/η_Z = 10 (approximate: the rows of the true Y are not
    exactly proportional to the current f_n).

    **Returns:** the [`Check`][]: max relative error over ordered DT pairs and times.
    """
    return _eqn11_l1(0.1, "8e-4")


@claim(
    r"Theorem 3, Eqn 11 in L1 with $\eta_Y = \eta_Z = 1$, outside Assumption 1(c): $r(t) = "
    r"r(0)\chi_l(t)$ approximately",
    method=r"as above, $\eta_Z = 1$",
    tolerance=1e-2,
    provenance="recon",
    expected_deviation="in L1 Eqn 11 is only approximate (the rows of the true Y are not exactly "
    "proportional to the current f_n), with an error that grows with "
    "η_Z/η_Y; the 10⁻² tolerance is for η_Y/η_Z ≥ 10 and this run has η_Y/η_Z = 1.",
)
def theorem3_eqn11_L1_eta_z_1() -> Measured:
    """Theorem 3, Eqn 11 in L1 with η_Y = η_Z = 1, outside Assumption 1(c): reported with its
    error, expected to exceed the η_Y/η_Z ≥ 10 tolerance.

    **Returns:** the [`Check`][]: max relative error over ordered DT pairs and times.
    """
    return _eqn11_l1(1.0, "1.7e-2")


# --------------------------------------------------------------------------------------
# Theorem 4: the phase transition (L3 scalar model, and the snap in L2)
# --------------------------------------------------------------------------------------

_C0_VALUES = (1.0, 5.68e-3)
_REGIME_CONFIGS = ((100, 2, 1.0), (1000, 10, 0.5), (1000, 10, 5.0), (10_000, 20, 0.1))
_REGIME_ETA_Z = 0.5
_NU_CONFIGS = ((100, 1, 10.0), (10_000, 1, 1.0), (1000, 10, 1.0))
_INVARIANCE_ETA_Z = (0.5, 1.0, 2.0, 4.0, 8.0)


def _l3_saves(full: bool) -> int:
    """Save times of every L3 run (one compiled shape per mode)."""
    return 161 if full else 41


def _l3_B(M, K, eta_y, eta_z, C0, save_ts) -> np.ndarray:
    """B_n of the L3 scalar model at `save_ts`."""
    run = _runs.scalar_run(*(_runs.f64(x) for x in (M, K, eta_y, eta_z, C0)), jnp.asarray(save_ts))
    return np.asarray(run.values.B)


@claim(
    r"Theorem 4: $B_n = \frac14\ln(1 + 4\Gamma/C_0)$",
    method=r"L3 ($M = 1000$, $K = 10$, $\eta_Y = \eta_Z = 0.5$, $C_0 \in \{1, 5.68\cdot 10^{-3}\}$, "
    r"$t \le 2\cdot 10^4$, 41 / 161 saves) against `phase_B_exact`: max relative error",
    tolerance=1e-8,
    provenance="derived",
    sized=True,
)
def theorem4_B_closed_form(full: bool = False, *, formula: Callable = cf.phase_B_exact) -> Measured:
    """Theorem 4 (Eqns 124-129): the L3 model ż = −C_0^{−1} η_Z γ e^{4z}, Ḃ = −ż integrates to
    B_n(t) = ¼ ln(1 + 4Γ(t)/C_0).

    **Arguments:**

    - `full`: 161 saves instead of 41.
    - `formula`: `(t, M, K, η_Y, η_Z, C_0) -> B_n(t)` under test.

    **Returns:** the [`Check`][]: max relative error over t ∈ (0, 2e4] and C_0 ∈ {1, 5.68e-3}.
    """
    M, K, eta = 1000, 10, 0.5
    ts = np.asarray(_runs.log_grid(1.0, 2e4, _l3_saves(full)))
    worst, at = 0.0, None
    for C0 in _C0_VALUES:
        B = _l3_B(M, K, eta, eta, C0, ts)
        closed = np.asarray(formula(jnp.asarray(ts), M, K, eta, eta, C0))
        rel = np.abs(B[1:] - closed[1:]) / np.abs(closed[1:])
        if rel.max() >= worst:
            worst, at = float(rel.max()), (closed[-1], B[-1])
    return Measured(
        predicted=at[0],
        simulated=at[1],
        error=worst,
        note=f"M={M}, K={K}, η_Y=η_Z={eta}, C₀ ∈ {_C0_VALUES}, t ∈ [1, 2e4], Tsit5 rtol=1e-12, "
        "atol=1e-14; predicted/simulated: B_n(2e4) of the worst C₀. The paper's printed "
        "¼ ln(C₀ + 4Γ) (Eqns 124, 129) differs by ¼ ln C₀ (they agree for C₀ = 1).",
    )


@functools.cache
def _regimes(full: bool) -> dict[tuple, dict[str, tuple[float, float, float]]]:
    """Eqn 14 against L3 (η_Z = 0.5, C_0 = 1) for each (M, K, η_Y) of `_REGIME_CONFIGS`.

    **Returns:** per configuration, per regime (`early`: t'_0/300 ≤ t ≤ t'_0/3; `t0`: t = t_0;
    `late`: 3t_0 ≤ t ≤ 1e4 t_0), `(max relative error, formula, L3)` at the worst time.
    """
    n = (_l3_saves(full) - 1) // 2
    out = {}
    for M, K, eta_y in _REGIME_CONFIGS:
        t0_prime, t0 = (float(x) for x in cf.transition_times(M, K, eta_y))
        early_t = np.linspace(t0_prime / 300, t0_prime / 3, n)
        late_t = np.logspace(np.log10(3 * t0), np.log10(1e4 * t0), n)
        ts = np.concatenate([early_t, [t0], late_t])
        B = _l3_B(M, K, eta_y, _REGIME_ETA_Z, 1.0, ts)
        cfg = (M, K, eta_y, _REGIME_ETA_Z, 1.0)
        parts = {
            "early": (np.asarray(cf.phase_B_early(jnp.asarray(early_t), *cfg)), B[:n]),
            "t0": (np.asarray(cf.phase_B_late(jnp.asarray([t0]), *cfg)), B[n : n + 1]),
            "late": (np.asarray(cf.phase_B_late(jnp.asarray(late_t), *cfg)), B[n + 1 :]),
        }
        out[(M, K, eta_y)] = {}
        for regime, (formula, exact) in parts.items():
            rel = np.abs(formula / exact - 1)
            i = int(np.argmax(rel))
            out[(M, K, eta_y)][regime] = (float(rel[i]), float(formula[i]), float(exact[i]))
    return out


def _regime(full: bool, regime: str, reference: str) -> Measured:
    per_config = {cfg: parts[regime] for cfg, parts in _regimes(full).items()}
    worst = max(per_config, key=lambda cfg: per_config[cfg][0])
    error, formula, exact = per_config[worst]
    listing = ", ".join(f"{cfg}: {v[0]:.2%}" for cfg, v in per_config.items())
    return Measured(
        predicted=formula,
        simulated=exact,
        error=error,
        note=f"(M, K, η_Y) → max relative error: {listing}; η_Z=0.5, C₀=1, B_n from L3 (Tsit5, "
        f"rtol=1e-12); predicted/simulated: formula / L3 at the worst point, of {worst}. "
        f"Reference: {reference}",
    )


@claim(
    r"Eqn 14, scanning phase ($t \le t_0'/3$): $B_n \approx \frac14\ln(C_0 + 2(M-1)^2\eta_Y\eta_Z "
    r"t^2/(KM^2))$",
    method=r"`phase_B_early` against L3 for $(M, K, \eta_Y) \in \{(100, 2, 1), (1000, 10, 0.5), "
    r"(1000, 10, 5), (10^4, 20, 0.1)\}$, $\eta_Z = 0.5$, $C_0 = 1$: max relative error",
    tolerance=0.02,
    sized=True,
)
def theorem4_early_regime(full: bool = False) -> Measured:
    """Eqn 14, scanning phase: B_n ≈ ¼ ln(C_0 + 2(M−1)²/(KM²) η_Y η_Z t²) for t ≤ t'_0/3.

    **Arguments:** `full`: more save times.

    **Returns:** the [`Check`][]: max relative error over the grid of configurations and times.
    """
    return _regime(full, "early", "within 1.3%.")


@claim(
    r"Eqn 14, snapping phase at its start $t = t_0$: $B_n \approx \frac14\ln(C_0 + "
    r"2K(M-1)^2(\eta_Z/\eta_Y)\ln^2(M\eta_Y t/K)/M^2)$",
    method="`phase_B_late` against L3 at $t_0$, same configurations",
    tolerance=0.05,
    sized=True,
)
def theorem4_late_regime_t0(full: bool = False) -> Measured:
    """Eqn 14, snapping phase at its start t = t_0 = 2(1 + ω_1) K ln M/η_Y.

    **Arguments:** `full`: more save times.

    **Returns:** the [`Check`][]: max relative error over the configurations.
    """
    return _regime(full, "t0", "within 4.5%.")


@claim(
    r"Eqn 14, snapping phase for $3t_0 \le t \le 10^4 t_0$: $B_n \approx \frac14\ln(C_0 + "
    r"2K(M-1)^2(\eta_Z/\eta_Y)\ln^2(M\eta_Y t/K)/M^2)$",
    method="as above",
    tolerance=0.015,
    sized=True,
)
def theorem4_late_regime(full: bool = False) -> Measured:
    """Eqn 14, snapping phase: B_n ≈ ¼ ln(C_0 + 2K(M−1)²/M² (η_Z/η_Y) ln²(Mη_Y t/K)) for t ≥ 3t_0.

    **Arguments:** `full`: more save times.

    **Returns:** the [`Check`][]: max relative error over the configurations and 3t_0 ≤ t ≤ 1e4 t_0.
    """
    return _regime(full, "late", "within 1.2%, → exact as t → ∞.")


@claim(
    r"Theorem 4: $B_n(t_0)$ depends on $K, M, \nu$ only (Fig. 9 dots)",
    method=r"L3 to $t_0$ for $\eta_Z \in \{0.5, 1, 2, 4, 8\}$ at $(M, K, \nu) \in \{(100, 1, 10), "
    r"(10^4, 1, 1), (1000, 10, 1)\}$: largest spread",
    tolerance=1e-10,
    sized=True,
)
def theorem4_fixed_nu_invariance(full: bool = False) -> Measured:
    """Theorem 4: at fixed ν = η_Y/η_Z, B_n(t_0) depends on K, M, ν only, not on η_Z (Fig. 9 dots).

    **Arguments:** `full`: more save times.

    **Returns:** the [`Check`][]: the largest spread of the integrated B_n(t_0) across η_Z.
    """
    results = []  # (closed form, integrated B_n(t_0) per η_Z) per configuration
    for M, K, nu in _NU_CONFIGS:
        values = []
        for eta_z in _INVARIANCE_ETA_Z:
            t0 = float(cf.transition_times(M, K, nu * eta_z)[1])
            values.append(_l3_B(M, K, nu * eta_z, eta_z, 1.0, np.linspace(0.0, t0, _l3_saves(full)))[-1])
        results.append((float(cf.phase_B_exact(t0, M, K, nu * eta_z, eta_z, 1.0)), np.asarray(values)))
    parts = [
        f"(M={M}, K={K}, ν={nu}): B(t₀)={values[0]:.6f} (closed form {closed:.6f}), "
        f"spread {np.ptp(values):.1e}"
        for (M, K, nu), (closed, values) in zip(_NU_CONFIGS, results)
    ]
    return Measured(
        predicted=results[0][0],
        simulated=results[0][1][0],
        error=max(float(np.ptp(values)) for _, values in results),
        note=f"L3 integrated to t₀ = 2(1 + ω₁) K ln M / η_Y for η_Z ∈ {_INVARIANCE_ETA_Z}, C₀=1; "
        + "; ".join(parts)
        + ". predicted/simulated: closed form / integrated B(t₀) of the first configuration (Fig. 9 left).",
    )


_SNAP_ETA_Y = (0.5, 1.0, 2.0, 4.0)
_SNAP_ETA_Z = 0.1
_SNAP_FRACTION = 0.5


def _fall_time(ts: np.ndarray, rate: np.ndarray, fraction: float) -> float:
    """The first time after its peak at which `rate` falls to `fraction` of the peak,
    interpolated linearly in log t between saves; NaN if it never does."""
    peak = int(np.argmax(rate))
    below = np.flatnonzero(rate[peak:] < fraction * rate[peak])
    if below.size == 0:
        return float("nan")
    j = peak + int(below[0])
    level = fraction * rate[peak]
    weight = (rate[j - 1] - level) / (rate[j - 1] - rate[j])
    return float(np.exp(np.log(ts[j - 1]) + weight * (np.log(ts[j]) - np.log(ts[j - 1]))))


@claim(
    r"Theorem 4(a): snap time $\propto 1/\eta_Y$",
    method=r"L2, $\eta_Z = 0.1$, $\eta_Y \in \{0.5, 1, 2, 4\}$; snap time = first time after its peak "
    r"that $\dot z$ of the dominant DT falls to half the peak: fitted exponent against $-1$",
    tolerance=0.15,
    provenance="recon",
)
def theorem4_snap_scaling() -> Measured:
    """Theorem 4(a): the transition ("snap") time scales as 1/η_Y at fixed η_Z.

    The snap time is measured in L2 as the first time after its peak at which the growth
    rate ż_{m l0} of the dominant distinct token's logit falls to half its peak.

    **Returns:** the [`Check`][]: the exponent of a least-squares fit log t_snap = a + p log η_Y.
    """
    l0 = _runs.dt_block(0)[-1]
    times = []
    for eta_y in _SNAP_ETA_Y:
        ts, _, z_dot = _runs.reference_l2(eta_y, _SNAP_ETA_Z)
        times.append(_fall_time(ts, z_dot[:, l0], _SNAP_FRACTION))
    times = np.asarray(times)
    slope = _runs.log_log_slope(_SNAP_ETA_Y, times)
    scaled = times * np.asarray(_SNAP_ETA_Y) / (3 * np.log(17))
    return Measured(
        predicted=-1.0,
        simulated=slope,
        error=abs(slope + 1),
        note=f"L2 class-weighted theory flow, reference instance (K=3, M=17), Z(0)=0, η_Z={_SNAP_ETA_Z}, "
        f"η_Y ∈ {_SNAP_ETA_Y}. Snap time := the first time after its peak at which ż of the dominant "
        f"DT of class 1 falls to {_SNAP_FRACTION} of the peak (log-linear interpolation between "
        f"{_runs.NUM_SAVES} log-spaced saves): {np.array2string(times, precision=4)}; t_snap η_Y/(K ln M) = "
        f"{np.array2string(scaled, precision=3)}.",
    )
