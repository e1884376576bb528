"""The Syn-Medium sweep behind Scan and Snap Figs. 6, 11 and 12: one `dynamics.sweep` of the
`SGDOutcome` level (L0 with heavy-ball momentum from the random init, keeping only the final
distinct-token entropy and recall curve) over vocabulary × η_Z × η_Y/η_Z × seeds.

The three figures of one `attnflow figures` or `attnflow reproduce` command share its runs
through `dynamics.store.shared_store`: the first to ask runs them, the others read the store.
"""

import dataclasses
import time

import numpy as np

import dynamics
from tasks.scan_snap import Dataset2, SGDOutcome


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """What the sweep runs (the official Fig. 6 sweep): Syn-Medium vocabularies × η_Z × η_Y/η_Z × seeds.

    Seed `s` is the official sweep's `seed=s`, the same for every rate pair (the official sweep
    reuses `seed=1..10` across its grid): [`tasks.scan_snap.SGDOutcome`][] splits its key into
    (init key, mini-batch key).

    **Fields:**

    - `num_lasts`: the vocabularies, `Dataset2.syn_medium(num_last)`.
    - `eta_zs`: attention learning rates η_Z.
    - `ratios`: η_Y/η_Z.
    - `seeds`: integer seeds, consecutive.
    - `level`: every other setting of a run (steps, batch, T, momentum, points of the recall
      curve, dtype: float32 like the official PyTorch code).
    - `full`: whether these are the paper's sizes (recorded, it changes nothing by itself).
    """

    num_lasts: tuple[int, ...] = (1, 3, 5, 10)
    eta_zs: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)
    ratios: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0)
    seeds: tuple[int, ...] = (1, 2, 3)
    level: SGDOutcome = SGDOutcome()
    full: bool = False

    def __post_init__(self):
        if not self.seeds or list(self.seeds) != list(range(self.seeds[0], self.seeds[0] + len(self.seeds))):
            raise ValueError(f"the seeds of a sweep are consecutive, got {self.seeds}")

    @classmethod
    def paper(cls, full: bool) -> "SweepConfig":
        """The figures' sweep: all 4 vocabularies × 16 rate pairs, with the paper's 10 seeds
        (640 runs) when `full`, else seeds 1-3 (192 runs, about half a minute on 2 CPU cores)."""
        return cls(seeds=tuple(range(1, 11)) if full else (1, 2, 3), full=full)

    @property
    def grid(self) -> dict[str, list]:
        """The sweep's grid: `task.num_last`, `eta_z` and `ratio`."""
        return {"task.num_last": list(self.num_lasts), "eta_z": list(self.eta_zs), "ratio": list(self.ratios)}

    @property
    def chunk_size(self) -> int:
        """Runs per compiled call: one vocabulary's, every rate pair and seed."""
        return len(self.eta_zs) * len(self.ratios) * len(self.seeds)

    def taus(self, num_last: int) -> np.ndarray:
        """The thresholds τ of the recall curve of vocabulary `num_last` ([`SGDOutcome.taus`][])."""
        return dynamics.with_settings(self.level, {"task.num_last": num_last}).taus()

    def to_dict(self) -> dict:
        """JSON-ready description, with the derived sizes and seeding written out."""
        return dataclasses.asdict(self) | {
            "level": self.level.describe(),
            "vocabulary_sizes_M": [Dataset2.syn_medium(n).M for n in self.num_lasts],
            "num_classes_K": [Dataset2.syn_medium(n).K for n in self.num_lasts],
            "tau_ranges": [[float(t[0]), float(t[-1])] for t in map(self.taus, self.num_lasts)],
            "num_runs": len(self.num_lasts) * self.chunk_size,
            "init": "every entry of Y and Z i.i.d. U(-1/sqrt(M), 1/sqrt(M)) (YZModel.uniform)",
            "seeding": "seed s -> (init key, mini-batch key) = jax.random.split(jax.random.PRNGKey(s)), "
            "shared by every rate pair",
            "optimizer": "heavy-ball momentum (PyTorch form), eta_Y = eta_Z * ratio",
            "entropy": "distinct_token_entropy of the final model (nats), mean and std (ddof=1) over seeds",
            "recall": "recall_at_threshold of the final model (softmax of z over all M tokens > tau, "
            "fraction of each class's DTs, class average), mean over seeds",
        }


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """The outcome of a sweep; axes `(vocabulary, η_Z, ratio, seed)`.

    **Fields:**

    - `config`: the [`SweepConfig`][] that made it.
    - `entropy`: final distinct-token entropy, shape `(V, Z, R, S)`.
    - `recall`: final recall at each threshold, shape `(V, Z, R, S, num_taus)`.
    - `completed`: True where the run finished all its steps (False: it diverged and was frozen).
    - `taus`: the thresholds of each vocabulary, shape `(V, num_taus)`.
    - `seconds`: wall time of the sweep (compilation included; short when its runs were read
      from a shared store).
    """

    config: SweepConfig
    entropy: np.ndarray
    recall: np.ndarray
    completed: np.ndarray
    taus: np.ndarray
    seconds: float

    def entropy_mean_std(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and sample std (ddof = 1) over the completed seeds, shapes `(V, Z, R)`."""
        values = np.where(self.completed, self.entropy, np.nan)
        return np.nanmean(values, axis=-1), np.nanstd(values, axis=-1, ddof=1)

    def recall_mean(self) -> np.ndarray:
        """Mean recall over the completed seeds, shape `(V, Z, R, num_taus)`."""
        return np.nanmean(np.where(self.completed[..., None], self.recall, np.nan), axis=-2)


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run the sweep, one compiled call per vocabulary, into `dynamics.store.shared_store` when the
    command names one (so Figs. 6, 11 and 12 share the runs), in memory otherwise.

    **Arguments:** `config`: what to run.

    **Returns:** a [`SweepResult`][].
    """
    sweep = {
        "grid": config.grid,
        "num_seeds": len(config.seeds),
        "seed": config.seeds[0],
        "chunk_size": config.chunk_size,
    }
    start = time.perf_counter()
    ds = dynamics.sweep(config.level, **sweep, store=dynamics.store.shared_store(config.level, **sweep))
    entropy = ds["final.entropy"].values
    completed = (ds["stop"].values == dynamics.StopReason.completed) & np.isfinite(entropy)
    return SweepResult(
        config=config,
        entropy=entropy,
        recall=ds["final.recall"].values,
        completed=completed,
        taus=np.stack([config.taus(n) for n in config.num_lasts]),
        seconds=time.perf_counter() - start,
    )
