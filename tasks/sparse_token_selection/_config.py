"""The STS_q configuration: sizes, the positional-encoding family and the model options, each a
declared field (type, default, allowed values, doc); every simulation of this task holds one as
its `task` field (`--set task.T=50`)."""

import dataclasses

from dynamics import Interval, OneOf, Require, check_params, param

PE_SAMPLERS = ("onehot", "dictionary_onehot", "haar_orthonormal", "iid_sphere")
"""Positional-encoding families: `onehot` is Definition 2 (E = I_T, deterministic);
`dictionary_onehot` (N slots, a random injective map per example), `haar_orthonormal` (first T
columns of a Haar orthogonal matrix) and `iid_sphere` (i.i.d. columns on a sphere, only
near-orthogonal, Definition 3) are the stochastic samplers of Definition 5."""

ORTHONORMAL_PE = ("onehot", "dictionary_onehot", "haar_orthonormal")
"""The families with exactly orthonormal columns, where the reduced loss is a closed form."""

KEY_SETS = ("tokens", "tokens_and_query")
"""Keys/values of the attention: the T token columns of Z, or [Z, z_query]."""

X_QUERY_MODES = ("zeros", "gaussian")
"""The token part of the query: 0_d (the theorems) or a fresh N(0, I_d) vector."""


def lengths_served(T: int, pe_sampler: str, pe_dim: int, max_length: int | None = None) -> int:
    """The longest sequence the PE serves: `max_length` when given, else T (onehot, iid_sphere) or
    pe_dim (dictionary_onehot, haar_orthonormal)."""
    if max_length is not None:
        return max_length
    return T if pe_sampler in ("onehot", "iid_sphere") else pe_dim


def _pe_dim_serves(pe_sampler: str, pe_dim: int, T: int, max_length: int | None = None) -> bool:
    return pe_sampler not in ("dictionary_onehot", "haar_orthonormal") or pe_dim >= max(T, max_length or 0)


_REQUIRES = (
    Require(("q", "T"), lambda q, T: q < T, "q must be < T"),
    Require(
        ("max_length", "T", "pe_sampler"),
        lambda m, T, s: m is None or m == T or (m > T and s != "onehot"),
        "max_length must be >= T (and T for onehot PE, which serves length T only)",
    ),
    Require(
        ("pe_sampler", "pe_dim", "T", "max_length"),
        _pe_dim_serves,
        "pe_dim (N slots of dictionary_onehot, m_E of haar_orthonormal) must be >= T and >= max_length",
    ),
)


@dataclasses.dataclass(frozen=True)
class STSConfig:
    """One STS_q instance and its transformer; every field is checked on construction.

    **Fields:** `d`, `T`, `q`, `pe_sampler` (one of [`PE_SAMPLERS`][]), `pe_dim`, `rho`,
    `fixed_pe`, `pe_seed`, `max_length`, `keys` (one of [`KEY_SETS`][]), `x_query_mode` (one of
    [`X_QUERY_MODES`][]), `init_scale`; `dynamics.params(STSConfig)` lists their defaults,
    allowed values and meaning. The defaults are the paper's T = 200, q = 3 with d = 10,
    dictionary one-hot PE with N = 400 slots (≥ the longest test length), ρ = 1, x_query = 0.
    """

    d: int = param(10, Interval(1), doc="token dimension d")
    T: int = param(200, Interval(2), doc="training sequence length (the paper: 200)")
    q: int = param(3, Interval(1), doc="sparsity q, 1 <= q < T (the paper: 3)")
    pe_sampler: str = param("dictionary_onehot", OneOf(*PE_SAMPLERS), doc="positional-encoding family")
    pe_dim: int = param(
        400,
        Interval(1),
        doc="PE dimension m_E: the slots N of dictionary_onehot, m_E >= T for haar_orthonormal, "
        "any m_E for iid_sphere; unused by onehot (m_E = T)",
    )
    rho: float = param(1.0, Interval.positive(), doc="PE norm ρ")
    fixed_pe: bool = param(
        False,
        doc="freeze the PE: dictionary_onehot uses π(i) = i (padded one-hot), the other samplers one "
        "draw with seed pe_seed",
    )
    pe_seed: int = param(0, Interval(0), doc="the seed of the frozen PE draw")
    max_length: int | None = param(
        None,
        Interval(2),
        doc="the longest sequence the PE must serve (none: pe_dim, or T for onehot and iid_sphere)",
    )
    keys: str = param("tokens", OneOf(*KEY_SETS), doc="keys/values: the token columns, or with the query too")
    x_query_mode: str = param(
        "zeros", OneOf(*X_QUERY_MODES), doc="token part of the query: zeros or gaussian"
    )
    init_scale: float = param(0.01, Interval(0), doc="σ_0 of the Gaussian random init of the practical model")

    requires = _REQUIRES

    def __post_init__(self):
        check_params(self)

    @property
    def m_E(self) -> int:
        """The PE dimension."""
        return self.T if self.pe_sampler == "onehot" else self.pe_dim

    @property
    def D(self) -> int:
        """The token width d + m_E."""
        return self.d + self.m_E

    @property
    def lengths_served(self) -> int:
        """The largest sequence length the PE serves."""
        return lengths_served(self.T, self.pe_sampler, self.pe_dim, self.max_length)

    @property
    def trivial_loss(self) -> float:
        """L₀ = d / (2q), the loss of the zero output."""
        return self.d / (2 * self.q)

    def replace(self, **changes) -> "STSConfig":
        """A copy with `changes` (validated)."""
        return dataclasses.replace(self, **changes)
