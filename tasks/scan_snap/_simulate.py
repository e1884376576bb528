"""`attnflow simulate scan_snap`: a validated configuration and a batched run of many seeds."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

import dynamics

from .._settings import from_settings
from ._generator import Dataset2
from ._levels import OPTIMIZERS, population_flow, scalar_flow, sgd_run, theory_flow
from ._model import YZModel

LEVELS = ("L0", "L1", "L2", "L3")
DATASETS = ("syn_small", "syn_medium")
INITS = ("zeros", "uniform")


@dataclasses.dataclass(frozen=True)
class Simulation:
    """Everything a batched Scan and Snap simulation needs; the defaults are the paper's.

    **Fields:**

    - `level`: `L0` (mini-batch SGD), `L1` (population flow), `L2` (theory flow),
      `L3` (scalar model) — spec §5.
    - `dataset`: `syn_small` (§6.2) or `syn_medium` (§6.3, with `num_last` query tokens).
    - `num_last`: query tokens of Syn-Medium, in {1, 3, 5, 10} for the paper's sizes (>= 1).
    - `init`: `zeros` (Y = Z = 0, the theory's) or `uniform` (U(±1/√M), Fig. 6's).
    - `eta_y`, `eta_z`: learning rates (> 0).
    - `optimizer`, `momentum`: L0's optimiser (`sgd`, `momentum`, `adam`) and μ ∈ [0, 1).
    - `T`, `batch_size`, `num_steps`, `every`: L0's sequence length (>= 2), batch (>= 1),
      steps (>= 1), save period (divides `num_steps`).
    - `t1`, `num_saves`: end time (> 0) and number of equally spaced saves (>= 2) of L1-L3.
    - `class_weighted`: L2 multiplies class terms by π_n (§4.4).
    - `M`, `K`, `C0`: L3's vocabulary (>= 2), classes (>= 1) and C_0 (> 0).
    - `seed`: the integer seed; run i uses key i of `dynamics.seed_keys(seed, num_seeds)`.
    - `dtype`: `float32` or `float64`; default float32 for L0 (large batches), float64 for flows.
    - `chunk_size`: runs per compiled call (>= 1).
    """

    level: str = "L0"
    dataset: str = "syn_small"
    num_last: int = 1
    init: str = "zeros"
    eta_y: float = 1.0
    eta_z: float = 1.0
    optimizer: str = "momentum"
    momentum: float = 0.9
    T: int = 128
    batch_size: int = 128
    num_steps: int = 100
    every: int = 2
    t1: float = 1000.0
    num_saves: int = 51
    class_weighted: bool = False
    M: int = 1000
    K: int = 10
    C0: float = 1.0
    seed: int = 0
    dtype: str | None = None
    chunk_size: int = 64

    def __post_init__(self):
        _one_of("level", self.level, LEVELS)
        _one_of("dataset", self.dataset, DATASETS)
        _one_of("init", self.init, INITS)
        _one_of("optimizer", self.optimizer, OPTIMIZERS)
        _one_of("dtype", self.dtype, (None, "float32", "float64"))
        for name, low in [("num_last", 1), ("T", 2), ("batch_size", 1), ("num_steps", 1), ("every", 1),
                          ("num_saves", 2), ("M", 2), ("K", 1), ("chunk_size", 1)]:  # fmt: skip
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")
        for name in ("eta_y", "eta_z", "t1", "C0"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum}")
        if self.num_steps % self.every:
            raise ValueError(
                f"every must divide num_steps, got every={self.every}, num_steps={self.num_steps}"
            )

    @classmethod
    def from_settings(cls, settings: dict[str, str]) -> "Simulation":
        """Build from `key=value` strings (the CLI's `--set`), converting each to its field's type."""
        return from_settings(cls, settings)

    @property
    def float_dtype(self) -> jnp.dtype:
        """The dtype of the simulation (the level's default when `dtype` is unset)."""
        name = self.dtype or ("float32" if self.level == "L0" else "float64")
        return jnp.dtype(name)

    def dataset_config(self) -> Dataset2:
        """The generator config of the chosen dataset."""
        return Dataset2.syn_small() if self.dataset == "syn_small" else Dataset2.syn_medium(self.num_last)


def _one_of(name: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def simulate(sim: Simulation, num_seeds: int, *, progress: bool = False) -> dynamics.Trajectory:
    """Run `num_seeds` seeds of `sim` batched (`dynamics.run_many`) and collect a trajectory.

    **Arguments:**

    - `sim`: the configuration.
    - `num_seeds`: number of runs (>= 1).
    - `progress`: show a progress bar.

    **Returns:** a `dynamics.Trajectory` whose config holds `sim`, the number of seeds and the
    sequence classes.
    """
    if num_seeds < 1:
        raise ValueError(f"num_seeds must be >= 1, got {num_seeds}")
    dtype = sim.float_dtype
    classes = sim.dataset_config().build()
    arrays = classes.arrays(dtype)
    save_ts = jnp.linspace(0.0, sim.t1, sim.num_saves, dtype=dtype)

    def initial_model(key) -> YZModel:
        if sim.init == "zeros":
            return YZModel.zeros(classes.M, dtype=dtype)
        return YZModel.uniform(key, classes.M, dtype=dtype)

    def one_run(key) -> dynamics.Run:
        init_key, data_key = jax.random.split(key)
        if sim.level == "L0":
            return sgd_run(
                data_key, initial_model(init_key), arrays, T=sim.T, batch_size=sim.batch_size,
                num_steps=sim.num_steps, every=sim.every, eta_y=sim.eta_y, eta_z=sim.eta_z,
                method=sim.optimizer, momentum=sim.momentum,
            )  # fmt: skip
        if sim.level == "L1":
            return population_flow(
                initial_model(init_key), arrays, eta_y=sim.eta_y, eta_z=sim.eta_z, t1=sim.t1, save_ts=save_ts
            )
        if sim.level == "L2":
            return theory_flow(
                initial_model(init_key).Z, arrays, eta_y=sim.eta_y, eta_z=sim.eta_z, t1=sim.t1,
                save_ts=save_ts, class_weighted=sim.class_weighted,
            )  # fmt: skip
        return scalar_flow(
            M=sim.M,
            K=sim.K,
            eta_y=sim.eta_y,
            eta_z=sim.eta_z,
            C0=sim.C0,
            t1=sim.t1,
            save_ts=save_ts,
            dtype=dtype,
        )

    keys = dynamics.seed_keys(sim.seed, num_seeds)
    runs, _ = dynamics.run_many(
        one_run, keys, chunk_size=sim.chunk_size, progress=progress, description=f"scan_snap {sim.level}"
    )
    config = {
        "task": "scan_snap",
        "num_seeds": num_seeds,
        "dtype": str(np.dtype(dtype)),
        **dataclasses.asdict(sim),
        "classes": classes.to_dict() if sim.level != "L3" else None,
    }
    return dynamics.Trajectory.from_runs(runs, config)
