"""Stages 2-3 of Algorithm 1 apart from Stage 1: the paper's claim that after Stage 1 the samples
needed are poly(N, Q, 1/ε) times log factors, with no poly(T). At a fixed batch the final error must
then stay flat as T grows, while Stage 1's batch need grows as a power of T
(`stage1_batch_exponent`); and after the transfer step (Thm 4.1), Stages 2-3 at a small batch must
end no worse than Algorithm 1 from scratch at that batch."""

import dataclasses

import equinox as eqx
import numpy as np

import dynamics
import tasks.contextual_bigram as cb

from .._check import Measured, claim
from ._checks import TRANSFER_BATCH, TRANSFER_DELTA, TRANSFER_T, _inst_note, transfer_setup

FLAT_EXPONENT = 0.25
"""The "flat in T" criterion: the upper end of the 95% interval of the fitted exponent q (final
error ∝ T^q) must stay below 0.25, far below Stage 1's p ≈ 0.7 and above what log T factors give
on the grid (q ≈ 0.1 for √log T)."""


@dataclasses.dataclass(frozen=True)
class TExponent:
    """A power law error ∝ T^q fitted to per-seed errors at several T.

    **Fields:** `exponent` (least squares of log mean error on log T), `low`, `high` (the 2.5% and
    97.5% percentiles over a bootstrap of the seeds within each T), `means` (the mean error per T).
    """

    exponent: float
    low: float
    high: float
    means: tuple[float, ...]


def fit_T_exponent(Ts, errors, num_bootstrap: int = 2000, seed: int = 0) -> TExponent:
    """Fit error ∝ T^q to `errors[i]` (the per-seed errors at `Ts[i]`) with a bootstrap interval.

    **Arguments:** `Ts`; `errors`: one 1-d sample per T; `num_bootstrap`; `seed` (NumPy generator).

    **Returns:** a [`TExponent`][].

    **Example:** errors that halve each time T doubles give q = −1:

        >>> from theory.contextual_bigram import fit_T_exponent
        >>> fit = fit_T_exponent([10, 20, 40], [[4.0, 4.0], [2.0, 2.0], [1.0, 1.0]])
        >>> round(fit.exponent, 6), round(fit.low, 6), round(fit.high, 6)
        (-1.0, -1.0, -1.0)
    """
    logT = np.log(np.asarray(Ts, np.float64))
    samples = [np.asarray(e, np.float64) for e in errors]

    def slope(means):
        return float(np.polyfit(logT, np.log(means), 1)[0])

    means = [s.mean() for s in samples]
    rng = np.random.default_rng(seed)
    boot = [slope([rng.choice(s, s.size).mean() for s in samples]) for _ in range(num_bootstrap)]
    low, high = np.percentile(boot, [2.5, 97.5])
    return TExponent(slope(means), float(low), float(high), tuple(float(m) for m in means))


def _later_stage_errors(base, Ts, batch: int, seeds: int, steps: int) -> tuple[list, list]:
    """Final ‖Q − Q*‖_F per seed at each T, and the mean off-support |Q| per entry before the
    normalisation 2→3, for Stages 2-3 at `batch` from α = β = δ₁ on the population lines."""
    keys = dynamics.seed_keys(11, seeds)
    final, noise = [], []
    for T in Ts:
        inst = cb.extend_context(base, T)
        cfg = cb.Algorithm1(task=cb.SCBConfig(T=T), batch=batch, stage2_steps=steps, every=steps)
        start = cb.on_line(cfg.delta1, cfg.delta1, inst)
        out, _ = dynamics.run_many(eqx.Partial(cb.run_later_stages, inst, start, cfg=cfg), keys)
        final.append(np.asarray(out["final_metrics"]["dist_Q"]))
        off_entries = float(np.sum(np.asarray(inst.Q_star) == 0))
        noise.append(float(np.mean(out["stage2_metrics"]["off_support"])) / off_entries)
    return final, noise


@claim(
    r"After Stage 1, Stages 2-3 need poly$(N, Q)\log T$ samples, not poly($T$)",
    method=r"the default instance's $P$ and $Q^*$ weights at $T \in \{50, 100, 200\}$ / $\{50, \dots, "
    r"400\}$ doubling (`extend_context`), started at $\alpha = \beta = \delta_1 = 0.2$ on the "
    r"population lines (`on_line`, `run_later_stages`), $B = 256$, 2,000 / 4,000 Stage-2 "
    r"steps, 8 / 16 seeds: the upper end of the 95% bootstrap interval of $q$ in $\lVert Q - "
    r"Q^*\rVert_F \propto T^q$ (upper bound 0.25); the same runs at $B = 32$ in the note",
    tolerance=0.0,
    provenance="paper",
    bound="upper",
    sized=True,
)
def stages23_flat_in_T(full: bool) -> Measured:
    """After Stage 1 the samples needed grow only by log T factors (paper): Stages 2-3 at a fixed
    batch from the end of Stage 1 reach the same final error at every T.

    The default instance's P and Q* weights at T ∈ {50, 100, 200, 400} (`extend_context`: only the
    number of positions grows); every run starts where Stage 1 hands over on the population lines,
    α = β = δ₁ = 0.2 (`on_line`), then rounding 1→2, Stage 2 (B = 256, η₂ = 0.05, λ = 10⁻⁴), the
    normalisation and Stage 3 (population least squares) of `Algorithm1`'s defaults. The same runs
    at B = 32 are reported in the note.

    **Arguments:** `full`: 4 T's, 16 seeds, 4,000 Stage-2 steps instead of T ∈ {50, 100, 200},
    8 seeds, 2,000 steps.

    **Returns:** the [`Check`][]: the upper end of the 95% interval of q in ‖Q − Q*‖_F ∝ T^q at
    B = 256 (upper bound 0.25).
    """
    Ts, seeds, steps = ((50, 100, 200, 400), 16, 4000) if full else ((50, 100, 200), 8, 2000)
    base = cb.default_instance()
    threshold = cb.Algorithm1().c_f / int(cb.sparsity(base))
    final, noise = _later_stage_errors(base, Ts, 256, seeds, steps)
    small, small_noise = _later_stage_errors(base, Ts, 32, seeds, steps)
    fit, fit_small = fit_T_exponent(Ts, final), fit_T_exponent(Ts, small)

    def per_T(values):
        return ", ".join(f"{v:.4f}" for v in values)

    return Measured(
        predicted=0.0,
        simulated=fit.high,
        error=fit.high - FLAT_EXPONENT,
        note=f"{_inst_note(base)} P and Q⋆ weights fixed, T ∈ {list(Ts)}; {seeds} seeds, {steps} Stage-2 "
        f"steps from α = β = 0.2 on the population lines. B=256: mean final ‖Q − Q⋆‖_F "
        f"{per_T(fit.means)}, q = {fit.exponent:.3f}, 95% interval [{fit.low:.3f}, {fit.high:.3f}] "
        f"(bootstrap over seeds). B=32: {per_T(fit_small.means)}, q = {fit_small.exponent:.3f} "
        f"[{fit_small.low:.3f}, {fit_small.high:.3f}]. Why B matters: before the normalisation 2 → 3 each "
        f"off-support entry carries noise of a size that does not depend on T (mean |Q| per off-support "
        f"entry {per_T(noise)} at B=256, {per_T(small_noise)} at B=32); the threshold c_f/Q = {threshold:g} "
        "removes nearly all of it at B=256, while at B=32 a fixed fraction of the T positions survives, so "
        "the error grows as about √T. With Gaussian tails, keeping that fraction below 1/T takes a "
        "threshold of √(log T) noise widths, i.e. a batch growing like log T: the paper's log factor. "
        "The 0.25, the start and the batches are ours (recon); Stage 1's batch need grows as Tᵖ with p ≈ 0.7 "
        "(`stage1_batch_exponent`).",
    )


@claim(
    "Theorem 4.1: after the transfer step, Algorithm 1 from Stage 2 recovers $(P, Q^*)$ with no "
    "poly($T$) stage",
    method=r"$T = 200$, $B = 16$, 4,000 Stage-2 steps, 16 / 64 seeds: median final $\lVert Q - "
    r"Q^*\rVert_F$ after transfer minus from scratch (upper bound 0)",
    tolerance=0.0,
    provenance="paper",
    bound="upper",
    sized=True,
)
def transfer_then_stages23(full: bool) -> Measured:
    """Thm 4.1 (paper): after the transfer step, Algorithm 1 from Stage 2 recovers (P, Q*) with
    poly(N, Q, 1/ε) samples, no poly(T) stage. At T = 200 and the batch B = 16 where Stage 1 from
    scratch fails (`transfer_skips_stage1`), transfer followed by Stages 2-3 must end no worse than
    Algorithm 1 from scratch at the same batch and steps.

    Both run Algorithm 1's 4,000 Stage-2 steps: the transfer start has a small β (V₀ keeps only
    δ = 0.3 of Ṽ's signal), and after 2,000 steps transfer is still behind.

    **Arguments:** `full`: 64 seeds instead of 16.

    **Returns:** the [`Check`][]: the median final ‖Q − Q*‖_F after transfer minus that from
    scratch (upper bound 0).
    """
    T, batch = TRANSFER_T, TRANSFER_BATCH
    seeds, steps = (64 if full else 16), 4000
    inst, V_pre, rho, eta0 = transfer_setup(T)
    delta = TRANSFER_DELTA
    cfg = cb.Algorithm1(task=cb.SCBConfig(T=T), batch=batch, stage2_steps=steps, every=steps)
    keys = dynamics.seed_keys(7, seeds)
    transfer, _ = dynamics.run_many(
        eqx.Partial(cb.run_transfer, inst, V_pre, cfg=cfg, delta=delta, eta0=eta0, batch0=batch), keys
    )
    scratch, _ = dynamics.run_many(eqx.Partial(cb.run_algorithm, inst, cfg=cfg), keys)

    def medians(out, stage):
        return {name: float(np.median(out[stage][name])) for name in ("dist_Q", "dist_V")}

    t_final, s_final = medians(transfer, "final_metrics"), medians(scratch, "final_metrics")
    t_stage2 = float(np.median(transfer["stage2_metrics"]["dist_Q"]))
    s_stage2 = float(np.median(scratch["stage2_metrics"]["dist_Q"]))
    s_blown = float(np.mean(~(np.asarray(scratch["stage2_metrics"]["dist_Q"]) <= 10.0)))
    return Measured(
        predicted=s_final["dist_Q"],
        simulated=t_final["dist_Q"],
        error=t_final["dist_Q"] - s_final["dist_Q"],
        note=f"{_inst_note(inst)} transfer as `transfer_skips_stage1` (ρ = {rho:.4f}, δ = {delta}, "
        f"η₀ = {eta0:.3g}, one step on a batch of {batch}); scratch: Algorithm 1's defaults (oracle switch); "
        f"{steps} Stage-2 steps, B={batch}, {seeds} seeds each. Median final ‖Q − Q⋆‖_F / ‖V − P‖_F: "
        f"transfer {t_final['dist_Q']:.4f} / {t_final['dist_V']:.4f}, scratch {s_final['dist_Q']:.4f} / "
        f"{s_final['dist_V']:.4f}; at the end of Stage 2, before the normalisation: {t_stage2:.4g} / "
        f"{s_stage2:.4g} (scratch's Stage 2 blows up, ‖Q − Q⋆‖_F > 10, in {s_blown:.0%} of seeds; the "
        "normalisation and Stage 3 bring them back). Neither reaches the "
        "accuracy of `algorithm1_recovers` (0.1) at this batch: the Stage 2-3 error floor at a small batch "
        "grows with T (`stages23_flat_in_T`), and the paper's poly(1/ε) samples mean a larger batch. "
        "predicted = scratch, simulated = transfer.",
    )
