"""The task config [`SCBConfig`][] that names a random sparse contextual bigram instance; every
simulation holds one as its `task` field."""

import dataclasses
import functools

import jax

from dynamics import Interval, Require, check_params, param

from ._data import Instance, random_instance


@functools.lru_cache(maxsize=16)
def _cached_instance(seed: int, N: int, Q: int, T: int, dtype: str) -> Instance:
    with jax.ensure_compile_time_eval():  # concrete arrays, also when first built inside a trace
        inst = random_instance(seed, N, Q, T)
        return jax.tree.map(lambda a: a.astype(dtype), inst)


@dataclasses.dataclass(frozen=True)
class SCBConfig:
    """The task of every simulation: the random SCB instance `random_instance(instance_seed, N, Q,
    T)`, drawn on the host (rejection sampling until Assumption 2.1 holds), the same for every run
    (its settings are static, never traced). Every field is checked on construction.

    **Fields:** `instance_seed` (the NumPy seed of the draw), `N` (vocabulary size), `Q`
    (sparsity, ≤ T), `T` (context length); `dynamics.params(SCBConfig)` lists their defaults,
    allowed values and meaning. The defaults are the default instance of the checks, figures and
    simulations, `random_instance(0, N=3, Q=2, T=50)` (sizes recon).

    **Example:**

        >>> import dynamics
        >>> from tasks import contextual_bigram as cb
        >>> inst = cb.SCBConfig(T=8).instance()
        >>> inst.P.shape, inst.Q_star.shape
        ((3, 3), (8, 3))
        >>> dynamics.with_settings(cb.SGD(), {"task.T": 8}).task
        SCBConfig(instance_seed=0, N=3, Q=2, T=8)
        >>> cb.SCBConfig(Q=9, T=8)
        Traceback (most recent call last):
        ...
        ValueError: SCBConfig: the sparsity Q must be <= T, got Q=9, T=8
    """

    instance_seed: int = param(0, Interval(0), doc="seed of the random SCB instance (fixed for all runs)")
    N: int = param(3, Interval(2), doc="vocabulary size N")
    Q: int = param(2, Interval(1), doc="sparsity Q: non-zero weights of each q^(k) (<= T)")
    T: int = param(50, Interval(1), doc="context length T")

    requires = (Require(("Q", "T"), lambda q, t: q <= t, "the sparsity Q must be <= T"),)

    def __post_init__(self):
        check_params(self)

    def instance(self, dtype: str = "float64") -> Instance:
        """The SCB instance, its arrays in `dtype` (built once per setting and dtype).

        **Raises:** `ValueError` when no instance satisfying Assumption 2.1 is found (e.g. N
        above about 20, where K_P falls below its floor 0.05).
        """
        return _cached_instance(self.instance_seed, self.N, self.Q, self.T, dtype)


def default_instance(T: int = SCBConfig().T) -> Instance:
    """The default random instance (float64) at context length `T`:
    `SCBConfig(T=T).instance()`, i.e. `random_instance(0, N=3, Q=2, T)`, built once per `T`."""
    return SCBConfig(T=T).instance()
