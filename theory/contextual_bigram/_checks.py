"""The checks of the sparse contextual bigram paper: each prediction is computed from a closed form
([`closed_forms`][]), each simulated value from an actual simulation (exact enumeration, Monte
Carlo, population GD, Diffrax flows, mini-batch Algorithm 1 and SGD). A `sized` check takes
`full: bool`, the paper's sizes (quick ones otherwise), never a looser tolerance; the others take
no argument.

Provenance: `paper` = a claim stated in the paper's prose; `derived` = a formula derived from the
paper's definitions and checked numerically; `recon` = a reconstruction of a lost detail."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import dynamics
import tasks.contextual_bigram as cb

from .._check import Measured, claim, relative_error
from . import closed_forms as cf
from ._runs import algorithm1_runs
from ._stage1 import STAGE1_STEPS, batch_for_success, fit_batch_exponent, stage1_success, success_rates


def _consts(inst):
    return float(cb.k_p(inst)), float(cb.k_q(inst)), inst.T


def _inst_note(inst) -> str:
    KP, KQ, T = _consts(inst)
    return f"instance N={inst.N}, Q={cb.sparsity(inst)}, T={T}, K_P={KP:.4f}, K_Q={KQ:.4f}."


def _off_line_point(inst, seed, scale=0.3) -> cb.LinearSCB:
    """A random (V, Q) with unit column sums, off the population lines."""
    rng = np.random.default_rng(seed)
    V = np.asarray(inst.mu)[:, None] + scale * rng.normal(size=(inst.N, inst.N))
    Q = 1.0 / inst.T + scale / np.sqrt(inst.T) * rng.normal(size=(inst.T, inst.N))
    V = V - V.mean(0) + 1.0 / inst.N
    Q = Q - Q.mean(0) + 1.0 / inst.T
    return cb.LinearSCB(V=jnp.asarray(V), Q=jnp.asarray(Q))


def _max_tree(tree) -> float:
    return float(max(np.max(np.abs(np.asarray(x))) for x in jax.tree.leaves(tree)))


@claim(
    r"Lemma B.8: closed-form $\mathbb E G_V$, $\mathbb E G_Q$",
    method="formula against exact enumeration of all $N^{T+1}$ sequences ($N = 3$, $T = 4$) at a "
    "random unit-column-sum point: max abs difference",
    tolerance=1e-12,
    provenance="derived",
)
def lemma_b8_enumeration() -> Measured:
    """Lemma B.8: the expected preconditioned gradients equal exact enumeration (N=3, T=4)."""
    inst = cb.random_instance(1, 3, 2, 4, cb.Assumption(sparsity=2, k_p_min=0.0))
    model = _off_line_point(inst, 7)
    _, grads = cb.enumerate_population(model, inst)
    exact = cb.precondition(grads, inst.mu)
    formula = cf.expected_preconditioned(model, inst)
    err = _max_tree(jax.tree.map(jnp.subtract, exact, formula))
    return Measured(
        predicted=float(formula.Q[0, 0]),
        simulated=float(exact.Q[0, 0]),
        error=err,
        note=f"{_inst_note(inst)} Random unit-column-sum point; predicted/simulated: E G_Q[0,0].",
    )


@claim(
    r"Lemma B.8: the closed-form $\mathbb E G_V$, $\mathbb E G_Q$ equal the mean of sampled "
    r"per-example gradients",
    method=r"formula against the mean of 20 000 / 200 000 per-example $G$ at a random point: max "
    r"$\lvert z\rvert$ over all entries",
    tolerance=5.0,
    provenance="derived",
    sized=True,
)
def lemma_b8_monte_carlo(full: bool) -> Measured:
    """Lemma B.8 vs a Monte-Carlo average of per-sample preconditioned gradients (default instance)."""
    inst = cb.default_instance()
    model = _off_line_point(inst, 3)
    M = 200_000 if full else 20_000
    b = cb.sample(jax.random.PRNGKey(11), inst, M)
    grads = jax.vmap(cb.sample_gradients, in_axes=(None, 0, 0, 0))(model, b.context, b.last, b.label)
    G = jax.vmap(cb.precondition, in_axes=(0, None))(grads, inst.mu)
    formula = cf.expected_preconditioned(model, inst)
    z = []
    for g, f in zip(jax.tree.leaves(G), jax.tree.leaves(formula)):
        g = np.asarray(g)
        se = g.std(axis=0) / np.sqrt(M)
        z.append(np.abs(g.mean(axis=0) - np.asarray(f)) / se)
    zmax = float(max(np.max(x) for x in z))
    return Measured(
        predicted=float(formula.V[0, 0]),
        simulated=float(np.asarray(G.V)[:, 0, 0].mean()),
        error=zmax,
        note=f"{_inst_note(inst)} {M} samples; error = max over {sum(x.size for x in z)} entries of "
        "|mean − formula| / standard error (tolerance 5 standard errors (recon)); "
        "predicted/simulated: G_V[0,0].",
    )


@claim(
    "Eqn 7: population iterates stay on the two lines",
    method=r"population GD: max $\lVert\Delta V\rVert_\mu$, $\lVert\Delta Q\rVert_\mu$",
    tolerance=1e-12,
    provenance="paper",
    sized=True,
)
def population_lines(full: bool) -> Measured:
    """Eqn 7 (paper): from the scratch init, population GD stays on the two lines."""
    inst = cb.default_instance()
    steps = 400 if full else 100
    run = cb.population_gd(inst, cb.scratch_init(inst), 0.5, steps)
    off = float(max(np.max(np.asarray(run.values["dV_norm"])), np.max(np.asarray(run.values["dQ_norm"]))))
    return Measured(
        predicted=0.0,
        simulated=off,
        error=off,
        note=f"{_inst_note(inst)} η = 0.5, {steps} steps of the engine's preconditioned projected step "
        "on the exact population loss.",
    )


@claim(
    r"Eqn 7: $(\alpha, \beta)$ follow the scalar recursion",
    method="recursion against the line coordinates of population GD: max abs difference",
    tolerance=1e-10,
    provenance="derived",
    sized=True,
)
def line_recursion(full: bool) -> Measured:
    """Eqn 7: the line coordinates of the matrix population GD follow the scalar recursion."""
    inst = cb.default_instance()
    steps = 400 if full else 100
    KP, KQ, T = _consts(inst)
    run = cb.population_gd(inst, cb.scratch_init(inst), 0.5, steps)
    rec = cf.line_recursion(0.0, 0.0, KP, KQ, T, 0.5, steps)
    sim = np.stack([np.asarray(run.values["alpha"]), np.asarray(run.values["beta"])], axis=1)
    return Measured(
        predicted=float(rec[-1, 0]),
        simulated=float(sim[-1, 0]),
        error=float(np.max(np.abs(sim - rec))),
        note=f"{_inst_note(inst)} η = 0.5, {steps} steps; predicted/simulated: final α.",
    )


@claim(
    r"Eqn 8 is the $\eta \to 0$ limit of Eqn 7 at first order",
    method=r"max $\lvert$recursion $-$ ODE$\rvert$ on $t \in [0, 40]$ at $\eta = 0.1$ and $0.05$: "
    r"ratio against 2, relative error",
    tolerance=0.05,
    provenance="derived",
)
def ode_first_order() -> Measured:
    """Eqn 8: the recursion approaches the 2-D ODE at first order in η (error halves with η)."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    errs = []
    for eta in (0.1, 0.05):
        steps = int(round(40 / eta))
        rec = cf.line_recursion(0.0, 0.0, KP, KQ, T, eta, steps)
        ode = cf.solve_line_ode([0.0, 0.0], KP, KQ, T, eta * np.arange(steps + 1))
        errs.append(float(np.max(np.abs(ode - rec))))
    ratio = errs[0] / errs[1]
    return Measured(
        predicted=2.0,
        simulated=ratio,
        error=relative_error(2.0, ratio),
        note=f"{_inst_note(inst)} errors {errs[0]:.3e} (η = 0.1), {errs[1]:.3e} (η = 0.05); "
        "Diffrax Dopri8 rtol 1e-10.",
    )


@claim(
    r"Eqn 8: the matrix flow $\dot\theta = -\mathbb E G$ stays on the lines and follows the 2-D ODE",
    method="Diffrax matrix flow to $t = 20$ / 60 against the 2-D ODE: max of the coordinate "
    "difference and the off-line norm",
    tolerance=1e-7,
    provenance="paper",
    sized=True,
)
def matrix_flow_on_lines(full: bool) -> Measured:
    """Eqn 8: the matrix population flow (Diffrax) stays on the lines and matches the 2-D ODE."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    ts = np.linspace(0.0, 60.0 if full else 20.0, 61)
    run = cb.matrix_flow(inst, cb.scratch_init(inst), ts)
    ode = cf.solve_line_ode([0.0, 0.0], KP, KQ, T, ts)
    sim = np.stack([np.asarray(run.values["alpha"]), np.asarray(run.values["beta"])], axis=1)
    err = float(np.max(np.abs(sim - ode)))
    off = float(max(np.max(np.asarray(run.values["dV_norm"])), np.max(np.asarray(run.values["dQ_norm"]))))
    return Measured(
        predicted=float(ode[-1, 1]),
        simulated=float(sim[-1, 1]),
        error=max(err, off),
        note=f"{_inst_note(inst)} t ∈ [0, {ts[-1]:g}], both Dopri8 rtol 1e-10; off-line norm {off:.2e}; "
        "predicted/simulated: final β.",
    )


@claim(
    r"Eqn 8 is a preconditioned gradient flow of $L(\alpha, \beta)$",
    method="$L$ along the ODE on $[0, 200]$ (2001 saves): largest increase between saves ($L^*$ "
    "reported as a lower bound)",
    tolerance=1e-12,
    provenance="derived",
    bound="lower",
)
def lyapunov() -> Measured:
    """Eqn 8: the line-restricted loss decreases monotonically along the ODE."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    ts = np.linspace(0.0, 200.0, 2001)
    ode = cf.solve_line_ode([0.0, 0.0], KP, KQ, T, ts)
    mu_sq = float(np.sum(np.asarray(inst.mu) ** 2))
    L = cf.line_loss(ode[:, 0], ode[:, 1], KP, KQ, T, mu_sq)
    rise = float(max(np.max(np.diff(L)), 0.0))
    L_star = 0.5 * (1 - mu_sq - KP * (1 / T + KQ))
    return Measured(
        predicted=L_star,
        simulated=float(L[-1]),
        error=rise,
        note=f"{_inst_note(inst)} 2001 saves on [0, 200]; predicted/simulated: Bayes risk L⋆ (a lower bound "
        "of L) vs L(t = 200).",
    )


@claim(
    "Lemmas C.5-C.6: one population step off the lines",
    method=r"formulas for $\alpha^+, \beta^+, \Delta V^+, \Delta Q^+$ against one population step "
    r"($\eta = 0.3$) from a random point: max abs difference",
    tolerance=1e-12,
    provenance="derived",
)
def error_dynamics() -> Measured:
    """Lemmas C.5-C.6: one population step off the lines = the scalar/matrix error formulas."""
    inst = cb.default_instance()
    model = _off_line_point(inst, 5, scale=0.1)
    eta = 0.3
    line = cb.line_coordinates(model, inst)
    a, b, dV, dQ = cf.error_step(float(line["alpha"]), float(line["beta"]), line["dV"], line["dQ"], inst, eta)
    run = cb.population_gd(inst, model, eta, 1)
    after = cb.line_coordinates(run.final, inst)
    err = max(
        abs(a - float(after["alpha"])),
        abs(b - float(after["beta"])),
        float(np.max(np.abs(dV - np.asarray(after["dV"])))),
        float(np.max(np.abs(dQ - np.asarray(after["dQ"])))),
    )
    return Measured(
        predicted=a,
        simulated=float(after["alpha"]),
        error=err,
        note=f"{_inst_note(inst)} random unit-column-sum point, η = {eta}; predicted/simulated: α⁺.",
    )


@claim(
    "Stage 1: $x(t) = A^{-1}(e^{At} - I)b$",
    method=r"time for $\min(\alpha, \beta)$ to reach 0.1: linearisation against the recursion ($\eta "
    r"= 0.01$), relative error",
    tolerance=0.02,
    provenance="derived",
)
def stage1_linearisation() -> Measured:
    """Stage 1: exit time of the population recursion vs the linearised closed form."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    eta, delta = 0.01, 0.1
    rec = cf.line_recursion(0.0, 0.0, KP, KQ, T, eta, 2000)
    ts = eta * np.arange(2001)
    lin = cf.stage1_linear(ts, KP, KQ, T)
    predicted = cf.first_crossing(ts, lin.min(axis=1), delta)
    simulated = cf.first_crossing(ts, rec.min(axis=1), delta)
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=relative_error(predicted, simulated),
        note=f"{_inst_note(inst)} recursion with η = {eta} (t = η · steps).",
    )


@claim(
    r"Stage 1 length $\frac1w\ln(2T\delta_1\min(K_Q, w))$, $w = \sqrt{K_PK_Q}$",
    method=r"time for $\max(\alpha, \beta)$ to reach 0.2 in the recursion ($\eta = 0.01$) against the "
    r"estimate, relative error",
    tolerance=0.1,
    provenance="derived",
)
def stage1_log_time() -> Measured:
    """Stage 1: t₁ ≈ (1/w) ln(2 T δ₁ min(K_Q, w)) for the first of α, β to reach δ₁."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    eta, delta = 0.01, 0.2
    rec = cf.line_recursion(0.0, 0.0, KP, KQ, T, eta, 3000)
    ts = eta * np.arange(3001)
    simulated = cf.first_crossing(ts, rec.max(axis=1), delta)
    predicted = cf.stage1_exit_time_log(delta, KP, KQ, T)
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=relative_error(predicted, simulated),
        note=f"{_inst_note(inst)} asymptotic estimate (needs 2Tδ min(K_Q, w) ≫ 1; here "
        f"{2 * T * delta * min(KQ, np.sqrt(KP * KQ)):.2f}); tolerance 10% (recon).",
    )


@claim(
    r"Stage 1 is a plateau at the strict saddle $(-1/(TK_Q), 0)$ of $L(\alpha, \beta)$ (index 1, "
    r"$L = \frac12(1 - \lVert\mu\rVert^2)$)",
    method=r"Eqn 8 from $(0, 0)$, 241 log-spaced saves on $t \in [10^{-3}, 10^3]$; first plateau of "
    r"$L$ (`dynamics.landscape.phases`), its save polished by Newton "
    r"(`dynamics.landscape.critical_point`, float64): "
    r"distance to $(-1/(TK_Q), 0)$ times $TK_Q$ (infinite unless converged with index 1)",
    tolerance=1e-9,
    provenance="derived",
)
def stage1_plateau_is_saddle() -> Measured:
    """Stage 1: the first plateau of the line loss along Eqn 8 from (0, 0) sits at the strict saddle
    (−1/(T K_Q), 0) of L(α, β), of index 1 and loss ½(1 − ‖μ‖²)."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    mu_sq = float(np.sum(np.asarray(inst.mu) ** 2))
    ts = np.logspace(-3.0, 3.0, 241)
    ode = cf.solve_line_ode([0.0, 0.0], KP, KQ, T, ts)
    losses = cf.line_loss(ode[:, 0], ode[:, 1], KP, KQ, T, mu_sq)
    plateaus = dynamics.landscape.phases(ts, losses)
    saddle = np.array([-1.0 / (T * KQ), 0.0])
    if int(plateaus.count) == 0:
        return Measured(
            predicted=float(saddle[0]),
            simulated=float("nan"),
            error=float("inf"),
            note=f"{_inst_note(inst)} no plateau found in the line loss.",
        )
    i = int(plateaus.save_index[0])
    found = dynamics.landscape.critical_point(
        lambda y: cf.line_loss(y[0], y[1], KP, KQ, T, mu_sq), jnp.asarray(ode[i], jnp.float64)
    )
    point = np.asarray(found.point)
    status = dynamics.landscape.CriticalPointStatus(int(found.status))
    index = int(found.index)
    distance = float(np.linalg.norm(point - saddle)) * T * KQ
    failures = []
    if status != dynamics.landscape.CriticalPointStatus.converged:
        failures.append(f"Newton status {status.name}")
    if index != 1:
        failures.append(f"index {index}, not 1")
    eigenvalues = np.asarray(found.eigenvalues)
    gap = float(np.linalg.norm(ode[i] - saddle))
    return Measured(
        predicted=float(saddle[0]),
        simulated=float(point[0]),
        error=float("inf") if failures else distance,
        note=f"{_inst_note(inst)} Dopri8 rtol 1e-10. First plateau of L ({int(plateaus.count)} found) "
        f"on t ∈ [{float(plateaus.start_time[0]):.3g}, {float(plateaus.end_time[0]):.3g}]; its save "
        f"(slowest loss change) at t={ts[i]:.3g}, (α, β)=({ode[i, 0]:.3g}, {ode[i, 1]:.3g}), "
        f"{gap:.4g} = {gap * T * KQ:.4g} × 1/(T K_Q) from the saddle. Polished "
        f"({int(found.num_steps)} Newton steps, {status.name}) to ({point[0]:.12g}, {point[1]:.3g}), "
        f"‖∇L‖={float(found.grad_norm):.2e}; index {index}, Hessian eigenvalues "
        f"{eigenvalues[0]:.6g}, {eigenvalues[1]:.6g}; L={float(found.loss):.12g} against "
        f"½(1 − ‖μ‖²)={0.5 * (1 - mu_sq):.12g}. "
        "Error: the distance relative to 1/(T K_Q)"
        + (f"; infinite because of {', '.join(failures)}." if failures else "."),
    )


@claim(
    "Decay rates near $(1, 1)$ = eigenvalues of the Jacobian",
    method=r"ODE from a $10^{-6}$ displacement along each eigenvector, run for "
    r"$1/\lvert\lambda\rvert$: measured rates, max relative error",
    tolerance=1e-3,
    provenance="derived",
)
def near_optimum_rates() -> Measured:
    """Decay rates of Eqn 8 near (1, 1) = eigenvalues of the Jacobian (fast and slow)."""
    inst = cb.default_instance()
    KP, KQ, T = _consts(inst)
    J = cf.near_optimum_jacobian(KP, KQ, T)
    values, vectors = np.linalg.eig(J)
    errs, rates = [], []
    for lam, v in zip(values, vectors.T):
        t = 1.0 / abs(lam)
        d0 = 1e-6 * v
        tight = diffrax.PIDController(rtol=1e-12, atol=1e-16)
        ode = cf.solve_line_ode(1.0 - d0, KP, KQ, T, np.array([0.0, t]), stepsize_controller=tight)
        d = 1.0 - ode[-1]
        rate = -np.log(np.linalg.norm(d) / np.linalg.norm(d0)) / t
        rates.append(rate)
        errs.append(relative_error(-lam, rate))
    slow = int(np.argmin(np.abs(values)))
    return Measured(
        predicted=float(-values[slow]),
        simulated=float(rates[slow]),
        error=float(max(errs)),
        note=f"{_inst_note(inst)} eigenvalues {values[0]:.4g}, {values[1]:.4g}; displacement 1e-6, run for "
        "1/|λ|; predicted/simulated: the slow rate (≈ K_P/(T(K_P + K_Q))).",
    )


@claim(
    r"Theorem 4.1 setting: one population $Q$ step gives $\alpha_1 = \eta_0\beta_0K_P$",
    method=r"`transfer_init` with `batch0=None`, $\delta = 0.3$, $\eta_0 = 10$, $\tilde V$ = "
    r"`related_transition`: abs difference",
    tolerance=1e-12,
    provenance="derived",
)
def transfer_alpha1() -> Measured:
    """Theorem 4.1 setting: the transfer step gives α₁ = η₀ β₀ K_P (population step)."""
    inst = cb.default_instance()
    V_pre = np.asarray(cb.related_transition(inst))
    eta0, delta = 10.0, 0.3
    model = cb.transfer_init(inst, V_pre, None, delta=delta, eta0=eta0, batch0=None, round_theta1=False)
    KP = float(cb.k_p(inst))
    V0 = np.asarray(inst.mu)[:, None] + delta * (V_pre - np.asarray(inst.mu)[:, None])
    beta0 = float(cb.line_coordinates(cb.LinearSCB(V=jnp.asarray(V0), Q=model.Q), inst)["beta"])
    predicted = eta0 * beta0 * KP
    simulated = float(cb.line_coordinates(model, inst)["alpha"])
    return Measured(
        predicted=predicted,
        simulated=simulated,
        error=abs(predicted - simulated),
        note=f"{_inst_note(inst)} Ṽ = (P + P_reversed)/2 (shares μ; ρ = "
        f"{beta0 * KP / delta:.4f}), δ = {delta}, η₀ = {eta0}; β₀ = {beta0:.4f}.",
    )


@claim(
    "Theorem 3.1, Fig. 1: Algorithm 1 recovers $(P, Q^*)$",
    method=r"default `Algorithm1` (oracle switch, Stage 3 least squares), 8 / 32 seeds, 1000 / 4000 "
    r"Stage-2 steps: max of the medians of $\lVert Q - Q^*\rVert_F$, $\lVert V - P\rVert_F$",
    tolerance=0.1,
    provenance="paper",
    sized=True,
    printed="Sec. 5.1 on Fig. 1: “The final distance to the ground-truth after normalization gets close "
    "to 0, and the similarity between the ground truth and parameters quickly converges close to 1” "
    "(no number printed; its sizes and step sizes lost from the text)",
)
def algorithm1_recovers(full: bool) -> Measured:
    """Theorem 3.1 / Fig. 1 (paper): Algorithm 1 recovers (P, Q*) on the default instance."""
    inst, cfg, alg, _, _ = algorithm1_runs(full)
    dV = float(np.median(alg["final_metrics"]["dist_V"]))
    dQ = float(np.median(alg["final_metrics"]["dist_Q"]))
    return Measured(
        predicted=0.0,
        simulated=dQ,
        error=max(dQ, dV),
        note=f"{_inst_note(inst)} {len(alg['tau1'])} seeds, B={cfg.batch}, η₁ = {cfg.eta1} (oracle switch at "
        f"min(α, β) ≥ {cfg.delta1}, median τ₁ = {np.median(alg['tau1']):.0f}), η₂ = {cfg.eta2}, "
        f"λ = {cfg.lam}, {cfg.stage2_steps} Stage-2 steps, Stage 3 = population least-squares V "
        "(the experiments' oracle: it uses P, so ‖V − P‖ after Stage 3 only measures the scale error). "
        f"Median ‖V − P‖_F = {dV:.4g}, "
        f"‖Q − Q⋆‖_F = {dQ:.4g}; before normalisation {np.median(alg['stage2_metrics']['dist_V']):.4g} / "
        f"{np.median(alg['stage2_metrics']['dist_Q']):.4g}. Tolerance 0.1 (recon: the paper's "
        "accuracy was lost).",
    )


@claim(
    "Stage 2: the l1 prox removes off-support attention mass",
    method=r"median off-support mass at the end of Stage 2 with $\lambda = 10^{-3}$ over $\lambda = "
    r"0$, 4 / 16 seeds, 1000 / 4000 Stage-2 steps: ratio",
    tolerance=0.5,
    provenance="derived",
    expected_deviation="per step the soft threshold shrinks an entry by only η₂λ = 5·10⁻⁵, "
    "far below the mini-batch noise per entry, and the affine re-projection after the prox "
    "(recon) returns the removed mass to every entry of the column alike; off-support entries "
    "therefore stay near (1 − α)/T plus noise. A λ large enough to matter biases α "
    "(with the loss constant ½, λ ≥ 10⁻² already pulls α to about 0.7 when K_P is "
    "about 0.1).",
    sized=True,
)
def l1_reduces_off_support(full: bool) -> Measured:
    """Stage 2: with λ > 0 the off-support attention mass is much smaller than with λ = 0."""
    inst = cb.default_instance()
    seeds, steps = (16, 4000) if full else (4, 1000)
    keys = dynamics.seed_keys(5, seeds)
    mass, alpha = {}, {}
    for lam in (0.0, 1e-3):
        cfg = cb.Algorithm1(lam=lam, stage2_steps=steps)
        out, _ = dynamics.run_many(eqx.Partial(cb.run_algorithm, inst, cfg=cfg), keys)
        mass[lam] = float(np.median(out["stage2_metrics"]["off_support"]))
        alpha[lam] = float(np.median(out["stage2_metrics"]["alpha"]))
    ratio = mass[1e-3] / mass[0.0]
    line_part = (1.0 - alpha[1e-3]) / inst.T * float(np.sum(np.asarray(inst.Q_star) == 0))
    return Measured(
        predicted=mass[0.0],
        simulated=mass[1e-3],
        error=ratio,
        note=f"{_inst_note(inst)} {seeds} seeds, B=256, {steps} Stage-2 steps; median α {alpha[0.0]:.3f} "
        f"(λ = 0), {alpha[1e-3]:.3f} (λ = 1e-3); the line part (1 − α)/T of the off-support entries "
        f"alone sums to {line_part:.3f}.",
    )


def _sgd_measured(full: bool, eta: float) -> Measured:
    inst, cfg, alg, sgd, n_sgd = algorithm1_runs(full)
    s = sgd[eta]["final_metrics"]
    sgd_total = np.asarray(s["dist_V"]) + np.asarray(s["dist_Q"])
    sgd_total = np.where(np.isfinite(sgd_total), sgd_total, np.inf)
    alg_total = np.asarray(alg["stage2_metrics"]["dist_V"]) + np.asarray(alg["stage2_metrics"]["dist_Q"])
    a, b = float(np.median(alg_total)), float(np.median(sgd_total))
    diverged = int(np.sum(np.asarray(sgd[eta]["stop"]) == dynamics.StopReason.nonfinite))
    return Measured(
        predicted=a,
        simulated=b,
        error=a / b if b > 0 else float("inf"),
        note=f"{_inst_note(inst)} {len(alg['tau1'])} seeds, B={cfg.batch}; SGD {n_sgd} steps, Algorithm 1 "
        f"τ₁ + {cfg.stage2_steps} steps (before normalisation). SGD runs diverged (non-finite): "
        f"{diverged}. "
        f"SGD normalised: median ‖V − P‖ = {np.median(s['dist_V_hat']):.4g}, "
        f"‖Q − Q⋆‖ = {np.median(s['dist_Q_hat']):.4g}.",
    )


@claim(
    r"Fig. 1: vanilla SGD at the large step ($\eta = 0.5$) ends farther from $(P, Q^*)$",
    method=r"same seeds and batch, as many steps as Algorithm 1: median of $\lVert V - P\rVert_F + "
    r"\lVert Q - Q^*\rVert_F$ of Algorithm 1 (before normalisation) over SGD's, must be $< 1$",
    tolerance=1.0,
    bound="lower",
    sized=True,
)
def sgd_large_step_worse(full: bool) -> Measured:
    """Fig. 1 (paper): SGD at the large step does not converge (noise)."""
    return _sgd_measured(full, cb.Algorithm1.eta1)


@claim(
    r"Fig. 1: vanilla SGD at the small step ($\eta = 0.05$) ends farther",
    method="as above",
    tolerance=1.0,
    bound="lower",
    sized=True,
)
def sgd_small_step_worse(full: bool) -> Measured:
    """Fig. 1 (paper): SGD at the small step is slower."""
    return _sgd_measured(full, cb.Algorithm1.eta2)


@claim(
    "Stage 1 needs poly($T$) samples: the batch for 90% Stage-1 success grows with $T$",
    method=r"batch $B_{90}$ giving 90% Stage-1 success ($\alpha > 0$ after 40 steps at $\eta_1 = "
    r"0.5$) at $T = 50$ and $T = 200$, batches 8-128 / 8-512, 32 / 128 seeds: "
    r"$B_{90}(50)/B_{90}(200)$",
    tolerance=0.5,
    provenance="paper",
    sized=True,
)
def stage1_needs_poly_T(full: bool) -> Measured:
    """Stage 1 needs poly(T) samples (paper): the batch for 90% success grows with T."""
    seeds = 128 if full else 32
    batches = [8, 16, 32, 64, 128, 256, 512] if full else [8, 16, 32, 64, 128]
    b50, r50 = batch_for_success(50, batches, seeds)
    b200, r200 = batch_for_success(200, batches, seeds)
    return Measured(
        predicted=b50,
        simulated=b200,
        error=b50 / b200,
        note=f"default instances (seed 0, N=3, Q=2) at T=50 and T=200; {seeds} seeds per B; success = "
        f"α > 0 after {STAGE1_STEPS} steps at η₁ = 0.5. B grid {batches}; rates T=50 "
        f"{np.round(r50, 3).tolist()}, T=200 {np.round(r200, 3).tolist()}. At least one doubling demanded "
        "(recon); the paper's exponent was lost.",
    )


@claim(
    "Stage 1 needs poly($T$) samples: the batch for a given success level grows as $T^p$, $p > 0$",
    method=r"success counts over $T \in \{50, 200\}$, $B$ 8-128, 32 seeds (quick) / $T \in \{25, "
    r"\dots, 400\}$ doubling, $B$ 4-2048, 128 seeds; $P = \tfrac12 + \tfrac12\sigma(b(\log B - "
    r"p\log T - c))$ fitted by maximum likelihood, 95% interval of $p$ by parametric "
    r"bootstrap; simulated = the interval's lower end (lower bound 0)",
    tolerance=0.0,
    provenance="paper",
    bound="lower",
    sized=True,
)
def stage1_batch_exponent(full: bool) -> Measured:
    """Stage 1 needs poly(T) samples (paper): the batch giving any Stage-1 success level grows as
    T^p, p fitted with its 95% interval (recon), which must lie above 0."""
    if full:
        Ts, batches, seeds = (25, 50, 100, 200, 400), (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), 128
    else:
        Ts, batches, seeds = (50, 200), (8, 16, 32, 64, 128), 32
    rates = {T: success_rates(T, batches, seeds) for T in Ts}
    fit = fit_batch_exponent(rates, batches, seeds)
    return Measured(
        predicted=0.0,
        simulated=fit.low,
        error=-fit.low,
        note=f"p = {fit.exponent:.3f}, 95% interval [{fit.low:.3f}, {fit.high:.3f}] (parametric bootstrap); "
        f"success model ½ + ½ sigmoid(b(log B − p log T − c)), b = {fit.sharpness:.3g}, "
        f"c = {fit.offset:.3g}, fitted by maximum likelihood (recon). T ∈ {list(Ts)}, B ∈ {list(batches)}, "
        f"{seeds} seeds per cell; "
        f"success = α > 0 after {STAGE1_STEPS} steps at η₁ = 0.5. The paper's exponent was lost.",
    )


@claim(
    "Stage 1 succeeds at $T = 200$ with a large batch",
    method="success rate at $B = 1024$, 16 / 128 seeds: 1 − rate",
    tolerance=0.1,
    provenance="paper",
    sized=True,
)
def stage1_large_batch(full: bool) -> Measured:
    """Algorithm 1 (paper): Stage 1 succeeds at T=200 once B is large (B=1024)."""
    seeds = 128 if full else 16
    s = float(stage1_success(200, 1024, seeds).mean())
    return Measured(
        predicted=1.0,
        simulated=s,
        error=1.0 - s,
        note=f"{seeds} seeds; success = α > 0 after {STAGE1_STEPS} steps at η₁ = 0.5; the batch 1024 and "
        "the 0.9 success rate are ours (Algorithm 1 asks for a poly(T) batch in Stage 1).",
    )


TRANSFER_DELTA = 0.3
"""δ of the transfer checks: V₀ = μ1ᵀ + δ(Ṽ − μ1ᵀ)."""
TRANSFER_T, TRANSFER_BATCH = 200, 16
"""T and the batch of the transfer checks: where Stage 1 from scratch fails."""


def transfer_setup(T: int):
    """The transfer checks' setting (Thm 4.1): the default instance at `T`, Ṽ =
    `related_transition` (it shares μ), ρ = ⟨Ṽ − μ1ᵀ, P − μ1ᵀ⟩_μ, and η₀ = 0.5 / (δ ρ) so that the
    population transfer step gives α₁ = η₀ δ ρ = 0.5.

    **Returns:** `(inst, V_pre, rho, eta0)`.
    """
    inst = cb.default_instance(T)
    V_pre = cb.related_transition(inst)
    mu = inst.mu
    rho = float(cb.mu_inner(V_pre - mu[:, None], inst.P - mu[:, None], mu))
    return inst, V_pre, rho, 0.5 / (TRANSFER_DELTA * rho)


def _transfer_reaches_positive_branch(inst, V_pre, key, *, delta, eta0, batch):
    """Whether one transfer step from `V_pre` on a batch of `batch` reaches α > 0."""
    model = cb.transfer_init(inst, V_pre, key, delta=delta, eta0=eta0, batch0=batch)
    return cb.line_coordinates(model, inst)["alpha"] > 0


@claim(
    "Theorem 4.1: transfer bypasses the sample-intensive stage",
    method=r"$T = 200$, $B = 16$, 32 / 128 seeds: $\max(0.9 - \text{transfer rate}, \text{scratch "
    r"rate} - 0.9)$ with $\alpha_1 = 0.5$ in population",
    tolerance=0.0,
    provenance="paper",
    sized=True,
)
def transfer_skips_stage1(full: bool) -> Measured:
    """Thm 4.1 (paper): with a correlated pre-trained V (ρ > 0), the one-step transfer initialisation
    reaches the positive branch at a batch size where Stage 1 from scratch fails."""
    T, batch = TRANSFER_T, TRANSFER_BATCH
    seeds = 128 if full else 32
    inst, V_pre, rho, eta0 = transfer_setup(T)
    delta = TRANSFER_DELTA

    reaches = eqx.Partial(_transfer_reaches_positive_branch, inst, V_pre, delta=delta, eta0=eta0, batch=batch)
    out, finite = dynamics.run_many(reaches, dynamics.seed_keys(7, seeds))
    s_transfer = float((np.asarray(out) & np.asarray(finite)).mean())
    s_scratch = float(stage1_success(T, batch, seeds).mean())
    return Measured(
        predicted=s_scratch,
        simulated=s_transfer,
        error=max(0.9 - s_transfer, s_scratch - 0.9),
        note=f"{_inst_note(inst)} Ṽ = (P + P_reversed)/2 (shares μ, ρ = {rho:.4f}), δ = {delta}, "
        f"η₀ = 0.5/(δρ) = {eta0:.3g}, one Q step on a batch of {batch}, then rounding 1 → 2; "
        "scratch: "
        f"α > 0 after {STAGE1_STEPS} Stage-1 steps at η₁ = 0.5, same batch; {seeds} seeds each. "
        "predicted = scratch success rate, simulated = transfer success rate.",
    )


@claim(
    r"Lemma F.1: $\lVert\hat Q - Q^*\rVert_\infty = O(1/T)$ on the line, $\alpha \in [0.5, 2]$",
    method=r"$T \max_\alpha \lVert\hat Q - Q^*\rVert_\infty$ (16 values of $\alpha$, $\theta_3 = "
    r"0.1/Q$) at $T = 800$ against $T = 50$: $\lvert\log$ ratio$\rvert$ (tolerance $\ln 2$)",
    tolerance=np.log(2.0),
    provenance="derived",
)
def normalisation_error() -> Measured:
    """Stage 3 (Lemma F.1): renormalising Q on the line (α ∈ [0.5, 2]) gives ‖Q̂ − Q*‖_∞ = O(1/T)."""
    vals = {}
    for T in (50, 800):
        inst = cb.default_instance(T)
        theta3 = cb.Algorithm1().c_f / int(cb.sparsity(inst))
        errs = [
            float(jnp.max(jnp.abs(cb.normalise_attention(cf.on_line(a, 1.0, inst).Q, theta3) - inst.Q_star)))
            for a in np.linspace(0.5, 2.0, 16)
        ]
        vals[T] = T * max(errs)
    ratio = vals[800] / vals[50]
    return Measured(
        predicted=1.0,
        simulated=ratio,
        error=abs(np.log(ratio)),
        note=f"T × error: {vals[50]:.4g} (T=50), {vals[800]:.4g} (T=800); θ₃ = c_F/Q with the "
        f"default c_F = {cb.Algorithm1().c_f} (recon); O(1/T) means the "
        "product stays within a factor 2 (recon).",
    )


def _line_stats(model, inst) -> jax.Array:
    """(α, β, ‖ΔQ‖, ‖ΔV‖) of `model` on the population lines."""
    line = cb.line_coordinates(model, inst)
    return jnp.stack([line["alpha"], line["beta"], line["dQ_norm"], line["dV_norm"]])


def _stage1_line_stats(inst, key, cfg) -> jax.Array:
    """[`_line_stats`][] after Stage 1 of real mini-batch SGD."""
    return _line_stats(cb.run_stage1(inst, key, cfg)[0], inst)


def _surrogate_line_stats(inst, key, *, eta, batch, steps, covariance) -> jax.Array:
    """[`_line_stats`][] after the same steps with the Gaussian-noise surrogate."""
    model = cb.surrogate_stage(
        inst, cb.scratch_init(inst), key, eta=eta, lam=0.0, batch=batch, steps=steps, covariance=covariance
    )
    return _line_stats(model, inst)


@claim(
    "Appendix I: the Gaussian surrogate reproduces mini-batch runs",
    method=r"15 Stage-1 steps, $\eta = 0.5$, $B = 64$, 16 / 128 seeds each: means of $\alpha, \beta, "
    r"\lVert\Delta Q\rVert_\mu, \lVert\Delta V\rVert_\mu$, real against surrogate (full "
    r"covariance, 512 probes): max $\lvert z\rvert$",
    tolerance=4.0,
    provenance="recon",
    sized=True,
)
def surrogate_matches_minibatch(full: bool) -> Measured:
    """Appendix I: the Gaussian-noise surrogate reproduces real mini-batch runs at small N."""
    inst = cb.default_instance()
    seeds = 128 if full else 16
    steps, eta, batch = 15, 0.5, 64
    cfg = cb.Algorithm1(switch="fixed", tau1=steps, batch=batch)
    sizes = {"eta": eta, "batch": batch, "steps": steps}
    r, _ = dynamics.run_many(eqx.Partial(_stage1_line_stats, inst, cfg=cfg), dynamics.seed_keys(0, seeds))
    s, _ = dynamics.run_many(
        eqx.Partial(_surrogate_line_stats, inst, covariance="full", **sizes), dynamics.seed_keys(1, seeds)
    )
    d, _ = dynamics.run_many(
        eqx.Partial(_surrogate_line_stats, inst, covariance="diagonal", **sizes), dynamics.seed_keys(1, seeds)
    )

    def zmax(a, b):
        se = np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))
        return float(np.max(np.abs(a.mean(axis=0) - b.mean(axis=0)) / se))

    return Measured(
        predicted=float(r[:, 0].mean()),
        simulated=float(s[:, 0].mean()),
        error=zmax(r, s),
        note=f"{_inst_note(inst)} {seeds} seeds each, {steps} steps, η = {eta}, B={batch}, 512 probe "
        f"gradients per step; predicted/simulated: mean α. Std of α: real {r[:, 0].std():.4f}, "
        f"surrogate {s[:, 0].std():.4f}. The diagonal-covariance variant gives mean α "
        f"{d[:, 0].mean():.4f}, std {d[:, 0].std():.4f} (max |z| {zmax(r, d):.2f}): ignoring correlations "
        "overstates the noise.",
    )
