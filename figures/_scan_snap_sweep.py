"""The Syn-Medium sweep behind Scan and Snap Figs. 6, 11 and 12, cached on disk.

L0 mini-batch SGD with heavy-ball momentum from the random init U(±1/√M), one compiled
`dynamics.run_many` call per vocabulary, `vmap`ped over every (η_Z, η_Y/η_Z, seed). Each run
keeps only what the figures plot: the final distinct-token entropy and the final recall curve.
The results are written to `scan_snap_sweep.npz` next to the figures, with the config that
made them and a digest of the code that ran, and reused by any later figure asking for the same
config while the code is the same.
"""

import dataclasses
import hashlib
import json
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

import dynamics
from tasks.scan_snap import (
    ClassArrays,
    Dataset2,
    YZModel,
    distinct_token_entropy,
    recall_at_threshold,
    sgd_run,
)

CACHE_NAME = "scan_snap_sweep.npz"

TAU_RANGES = {1: (0.028, 0.038), 3: (0.012, 0.016), 5: (0.0075, 0.0105), 10: (0.0040, 0.0050)}
"""The x-axis ranges of the recall curves in the paper's Figs. 11-12, per `num_last`."""


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """What the sweep runs (the official Fig. 6 sweep): Syn-Medium vocabularies × η_Z × η_Y/η_Z × seeds.

    Seed `s` uses `jax.random.split(PRNGKey(s))` = (init key, mini-batch key), the same for
    every rate pair (the official sweep reuses `seed=1..10` across its grid).

    **Fields:**

    - `num_lasts`: the vocabularies, `Dataset2.syn_medium(num_last)`.
    - `eta_zs`: attention learning rates η_Z.
    - `ratios`: η_Y/η_Z.
    - `seeds`: integer seeds.
    - `num_steps`, `batch_size`, `T`, `momentum`: the L0 optimiser (heavy ball, PyTorch form).
    - `dtype`: floating dtype of the simulation, `"float32"` like the official PyTorch code.
    - `num_taus`: points of each recall curve, spread over `TAU_RANGES[num_last]`
      (over `[0.85/M, 1.25/M]` for a `num_last` the paper does not plot).
    - `full`: whether these are the paper's sizes (recorded, it changes nothing by itself).
    """

    num_lasts: tuple[int, ...] = (1, 3, 5, 10)
    eta_zs: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)
    ratios: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0)
    seeds: tuple[int, ...] = (1, 2, 3)
    num_steps: int = 100
    batch_size: int = 128
    T: int = 128
    momentum: float = 0.9
    dtype: str = "float32"
    num_taus: int = 41
    full: bool = False

    @classmethod
    def paper(cls, full: bool) -> "SweepConfig":
        """The figures' sweep: all 4 vocabularies × 16 rate pairs, with the paper's 10 seeds
        (640 runs) when `full`, else seeds 1-3 (192 runs, about half a minute on 2 CPU cores)."""
        return cls(seeds=tuple(range(1, 11)) if full else (1, 2, 3), full=full)

    def tau_range(self, num_last: int) -> tuple[float, float]:
        """The threshold range of the recall curve of vocabulary `num_last`."""
        if num_last in TAU_RANGES:
            return TAU_RANGES[num_last]
        M = Dataset2.syn_medium(num_last).M
        return 0.85 / M, 1.25 / M

    def taus(self, num_last: int) -> np.ndarray:
        """The thresholds τ of the recall curve of vocabulary `num_last`, shape `(num_taus,)`."""
        return np.linspace(*self.tau_range(num_last), self.num_taus)

    def to_dict(self) -> dict:
        """JSON-ready description, with the derived sizes and seeding written out."""
        return dataclasses.asdict(self) | {
            "vocabulary_sizes_M": [Dataset2.syn_medium(n).M for n in self.num_lasts],
            "num_classes_K": [Dataset2.syn_medium(n).K for n in self.num_lasts],
            "tau_ranges": [list(self.tau_range(n)) for n in self.num_lasts],
            "num_runs": len(self.num_lasts) * len(self.eta_zs) * len(self.ratios) * len(self.seeds),
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
    - `seconds`: wall time of each vocabulary's batched call (compilation included), shape `(V,)`.
    """

    config: SweepConfig
    entropy: np.ndarray
    recall: np.ndarray
    completed: np.ndarray
    taus: np.ndarray
    seconds: np.ndarray

    def entropy_mean_std(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and sample std (ddof = 1) over the completed seeds, shapes `(V, Z, R)`."""
        values = np.where(self.completed, self.entropy, np.nan)
        return np.nanmean(values, axis=-1), np.nanstd(values, axis=-1, ddof=1)

    def recall_mean(self) -> np.ndarray:
        """Mean recall over the completed seeds, shape `(V, Z, R, num_taus)`."""
        return np.nanmean(np.where(self.completed[..., None], self.recall, np.nan), axis=-2)


def _one_run(
    seed: Int[Array, ""],
    eta_z: Float[Array, ""],
    ratio: Float[Array, ""],
    classes: ClassArrays,
    taus: Float[Array, " S"],
    config: SweepConfig,
) -> dict[str, Array]:
    """One seed at one rate pair: final entropy, final recall curve and stop code."""
    init_key, data_key = jax.random.split(jax.random.PRNGKey(seed))
    model = YZModel.uniform(init_key, classes.probs.shape[1], jnp.dtype(config.dtype))
    run = sgd_run(
        data_key,
        model,
        classes,
        T=config.T,
        batch_size=config.batch_size,
        num_steps=config.num_steps,
        every=config.num_steps,
        eta_y=eta_z * ratio,
        eta_z=eta_z,
        momentum=config.momentum,
        save=lambda m: (),
    )
    return {
        "entropy": distinct_token_entropy(run.final, classes),
        "recall": recall_at_threshold(run.final, classes, taus),
        "stop": run.stop,
    }


def vocabulary_runs(config: SweepConfig, num_last: int) -> tuple[eqx.Partial, tuple[np.ndarray, ...]]:
    """The runs of one vocabulary: the sweep's one run function and its arguments.

    **Arguments:** `config`: the sweep; `num_last`: the vocabulary, `Dataset2.syn_medium(num_last)`.

    **Returns:** `(one, (seeds, eta_zs, ratios))`: `one(seed, eta_z, ratio)` is one run
    (final entropy, recall curve and stop code, as a dict), a PyTree callable for
    `dynamics.run_many`; the three arrays hold every (η_Z, ratio, seed) of the sweep, seed fastest.
    """
    dtype = jnp.dtype(config.dtype)
    classes = Dataset2.syn_medium(num_last).build().arrays(dtype)
    taus = jnp.asarray(config.taus(num_last), dtype)
    points = dynamics.grid(eta_z=config.eta_zs, ratio=config.ratios, seed=config.seeds)
    one = eqx.Partial(_one_run, classes=classes, taus=taus, config=config)
    return one, (points["seed"], points["eta_z"].astype(dtype), points["ratio"].astype(dtype))


def _run_vocabulary(config: SweepConfig, num_last: int) -> dict[str, np.ndarray]:
    """Every (η_Z, ratio, seed) of one vocabulary in one compiled, `vmap`ped call.

    **Returns:** `entropy (Z, R, S)`, `recall (Z, R, S, num_taus)`, `completed (Z, R, S)`.
    """
    one, arguments = vocabulary_runs(config, num_last)
    outputs, _ = dynamics.run_many(one, *arguments)
    shape = (len(config.eta_zs), len(config.ratios), len(config.seeds))
    completed = (outputs["stop"] == dynamics.StopReason.completed) & np.isfinite(outputs["entropy"])
    return {
        "entropy": outputs["entropy"].reshape(shape),
        "recall": outputs["recall"].reshape(*shape, config.num_taus),
        "completed": completed.reshape(shape),
    }


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run the sweep: one batched call per vocabulary.

    **Arguments:** `config`: what to run.

    **Returns:** a [`SweepResult`][].
    """
    pieces, seconds = [], []
    for num_last in config.num_lasts:
        start = time.perf_counter()
        pieces.append(_run_vocabulary(config, num_last))
        seconds.append(time.perf_counter() - start)
    return SweepResult(
        config=config,
        entropy=np.stack([p["entropy"] for p in pieces]),
        recall=np.stack([p["recall"] for p in pieces]),
        completed=np.stack([p["completed"] for p in pieces]),
        taus=np.stack([config.taus(n) for n in config.num_lasts]),
        seconds=np.asarray(seconds),
    )


def code_digest() -> str:
    """A digest of the code the sweep runs: the source files of `dynamics`, `tasks.scan_snap` and
    this module, and the versions of JAX and jaxlib. A cache made by other code is not reused."""
    import jaxlib

    import tasks.scan_snap

    digest = hashlib.sha256(f"{jax.__version__} {jaxlib.__version__}".encode())
    for package in (dynamics, tasks.scan_snap):
        for file in sorted(Path(package.__file__).parent.rglob("*.py")):
            digest.update(file.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def _save(result: SweepResult, path: Path) -> None:
    """Write atomically: a partial file never looks like a cache hit."""
    dynamics.save_npz_atomic(
        path,
        {
            "code": np.asarray(code_digest()),
            "config": np.asarray(json.dumps(result.config.to_dict(), sort_keys=True)),
            "entropy": result.entropy,
            "recall": result.recall,
            "completed": result.completed,
            "taus": result.taus,
            "seconds": result.seconds,
        },
    )


def _load(path: Path, config: SweepConfig) -> SweepResult | None:
    """The cached result at `path` if it exists and was made with `config` by this code, else None."""
    if not path.exists():
        return None
    with np.load(path) as stored:
        if "code" not in stored.files or str(stored["code"]) != code_digest():
            return None
        if json.loads(str(stored["config"])) != json.loads(json.dumps(config.to_dict(), sort_keys=True)):
            return None
        return SweepResult(
            config=config,
            entropy=stored["entropy"],
            recall=stored["recall"],
            completed=stored["completed"],
            taus=stored["taus"],
            seconds=stored["seconds"],
        )


def load_or_run_sweep(out_dir: Path, config: SweepConfig) -> tuple[SweepResult, bool]:
    """The sweep's results from `out_dir/scan_snap_sweep.npz` when they were made with the same
    config by the same code ([`code_digest`][]); otherwise run it and write that file.

    **Arguments:**

    - `out_dir`: the figures' folder (created if needed).
    - `config`: what the results must have been made with.

    **Returns:** `(result, cached)`, `cached` True when read from disk.
    """
    path = Path(out_dir) / CACHE_NAME
    cached = _load(path, config)
    if cached is not None:
        return cached, True
    result = run_sweep(config)
    _save(result, path)
    return result, False
