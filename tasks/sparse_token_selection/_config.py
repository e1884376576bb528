"""The STS_q configuration (spec §1, §2, §7): sizes, the positional-encoding family and the model options.

Every [RECON]/[UNKNOWN] choice of the spec is a field with the spec's default.
"""

import dataclasses

PE_SAMPLERS = ("onehot", "dictionary_onehot", "haar_orthonormal", "iid_sphere")
"""Positional-encoding families (spec §2.1): `onehot` is Definition 2 (E = I_T, deterministic);
`dictionary_onehot` (N slots, a random injective map per example), `haar_orthonormal` (first T
columns of a Haar orthogonal matrix) and `iid_sphere` (i.i.d. columns on a sphere, only
near-orthogonal, Definition 3) are the stochastic samplers of Definition 5."""

KEY_SETS = ("tokens", "tokens_and_query")
"""Keys/values of the attention (spec §2.4): the T token columns of Z, or [Z, z_query]."""

X_QUERY_MODES = ("zeros", "gaussian")
"""The token part of the query (spec §1.2): 0_d (the theorems) or a fresh N(0, I_d) vector."""


@dataclasses.dataclass(frozen=True)
class STSConfig:
    """One STS_q instance and its transformer.

    **Fields:**

    - `d`: token dimension (default 10 [RECON]).
    - `T`: training sequence length (paper: 200 [PAPER]).
    - `q`: sparsity, 1 <= q < T (paper: 3 [PAPER]).
    - `pe_sampler`: one of [`PE_SAMPLERS`][] (default `dictionary_onehot` [RECON]).
    - `pe_dim`: PE dimension m_E: the number of slots N (`dictionary_onehot`), m_E >= T
      (`haar_orthonormal`), any m_E >= 1 (`iid_sphere`); ignored for `onehot` (m_E = T).
      Default 400 [RECON] (>= the largest test length).
    - `rho`: PE norm ρ > 0 (default 1 [RECON]).
    - `fixed_pe`: freeze the PE (spec §2.1 "Fixed PE"): `dictionary_onehot` uses π(i) = i (padded
      one-hot); the other samplers use one draw with seed `pe_seed` at length `max_length`.
    - `pe_seed`: the seed of the frozen draw.
    - `max_length`: the largest sequence length the PE must serve (default: `pe_dim`, or `T` for
      `onehot`).
    - `keys`: one of [`KEY_SETS`][] (default `tokens` [RECON]).
    - `x_query_mode`: one of [`X_QUERY_MODES`][] (default `zeros` [PAPER, Thm 1]).
    - `init_scale`: σ_0 of the Gaussian random init of the practical model (default 0.01 [RECON]).
    """

    d: int = 10
    T: int = 200
    q: int = 3
    pe_sampler: str = "dictionary_onehot"
    pe_dim: int = 400
    rho: float = 1.0
    fixed_pe: bool = False
    pe_seed: int = 0
    max_length: int | None = None
    keys: str = "tokens"
    x_query_mode: str = "zeros"
    init_scale: float = 0.01

    def __post_init__(self):
        if self.d < 1:
            raise ValueError(f"d must be >= 1, got {self.d}")
        if self.T < 2:
            raise ValueError(f"T must be >= 2, got {self.T}")
        if not 1 <= self.q < self.T:
            raise ValueError(f"q must satisfy 1 <= q < T = {self.T}, got q={self.q}")
        if self.pe_sampler not in PE_SAMPLERS:
            raise ValueError(f"pe_sampler must be one of {PE_SAMPLERS}, got {self.pe_sampler!r}")
        if self.keys not in KEY_SETS:
            raise ValueError(f"keys must be one of {KEY_SETS}, got {self.keys!r}")
        if self.x_query_mode not in X_QUERY_MODES:
            raise ValueError(f"x_query_mode must be one of {X_QUERY_MODES}, got {self.x_query_mode!r}")
        if not self.rho > 0:
            raise ValueError(f"rho (PE norm) must be > 0, got {self.rho}")
        if not self.init_scale >= 0:
            raise ValueError(f"init_scale must be >= 0, got {self.init_scale}")
        if self.max_length is not None and self.max_length < self.T:
            raise ValueError(f"max_length must be >= T = {self.T}, got {self.max_length}")
        if self.pe_sampler == "dictionary_onehot" and self.pe_dim < max(self.T, self.lengths_served):
            raise ValueError(
                f"pe_dim (number of slots N) must be >= T and >= max_length = {self.lengths_served}, "
                f"got {self.pe_dim}"
            )
        if self.pe_sampler == "haar_orthonormal" and self.pe_dim < max(self.T, self.lengths_served):
            raise ValueError(
                f"pe_dim (m_E) must be >= T and >= max_length = {self.lengths_served} for haar_orthonormal, "
                f"got {self.pe_dim}"
            )
        if self.pe_sampler == "iid_sphere" and self.pe_dim < 1:
            raise ValueError(f"pe_dim (m_E) must be >= 1, got {self.pe_dim}")
        if self.pe_sampler == "onehot" and self.max_length not in (None, self.T):
            raise ValueError(f"onehot PE serves only length T = {self.T}; max_length must be None or T")

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
        if self.max_length is not None:
            return self.max_length
        return self.T if self.pe_sampler in ("onehot", "iid_sphere") else self.pe_dim

    @property
    def trivial_loss(self) -> float:
        """L_0 = d / (2q), the loss of the zero output (spec §1.3)."""
        return self.d / (2 * self.q)

    def replace(self, **changes) -> "STSConfig":
        """A copy with `changes` (validated)."""
        return dataclasses.replace(self, **changes)
