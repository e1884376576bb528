"""The Stage-1 success experiment: whether mini-batch Stage 1 ends on the positive branch of the
(α, β) dynamics, against the batch size (Stage 1 needs poly(T) samples)."""

import numpy as np

import dynamics
import tasks.contextual_bigram as cb

STAGE1_STEPS = 40
"""Stage-1 length of the success-rate experiments (η₁ = 0.5): twice the population exit time at
T = 200 on the default instances."""


def stage1_success(T: int, batch: int, seeds: int, steps: int = STAGE1_STEPS, eta: float = 0.5) -> np.ndarray:
    """Whether Stage 1 (λ = 0, fixed length `steps`, step `eta`, on the default instance at `T`)
    ends on the positive branch (α > 0), per seed; `False` = locked onto the negative branch
    (α, β < 0) or diverged.

    **Arguments:** `T`; `batch`; `seeds` (the keys `dynamics.seed_keys(1000 T + batch, seeds)`);
    `steps`; `eta`.

    **Returns:** bool array (seeds,).
    """
    inst = cb.default_instance(T)
    cfg = cb.Algorithm1(T=T, batch=batch, eta1=eta, switch="fixed", tau1=steps)

    def one(k):
        model, _ = cb.run_stage1(inst, k, cfg)
        return cb.line_coordinates(model, inst)["alpha"] > 0

    out, finite = dynamics.run_many(one, dynamics.seed_keys(T * 1000 + batch, seeds))
    return np.asarray(out) & np.asarray(finite)


def batch_for_success(T: int, batches, seeds: int, level: float = 0.9) -> tuple[float, np.ndarray]:
    """The smallest batch of `batches` (increasing) whose Stage-1 success rate is >= `level`.

    **Returns:** `(batch, rates)`: that batch (inf if none reaches `level`) and every rate.
    """
    rates = np.array([stage1_success(T, B, seeds).mean() for B in batches])
    ok = np.flatnonzero(rates >= level)
    return (float(batches[ok[0]]) if ok.size else float("inf")), rates
