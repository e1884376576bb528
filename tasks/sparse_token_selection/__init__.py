"""Sparse token selection (Wang, Wei, Hsu, Lee, ICML 2024, arXiv 2406.06893): the STS_q task, its
positional encodings, the one-layer transformer (theory and practical model), the FCN baseline, the
exact population loss, the reduced two-scalar dynamics and the online training runs.

Spec: `specs/sparse_token_selection.md`. Section references below are to that spec.

- [`STSConfig`][]: sizes, PE family ([`PE_SAMPLERS`][]), key set, x_query mode, init scale (§1-2).
- PE (§2.1): [`onehot_pe`][], [`dictionary_onehot_pe`][], [`padded_onehot_pe`][],
  [`haar_orthonormal_pe`][], [`iid_sphere_pe`][], [`near_orthogonal_pe`][], [`sample_pe`][],
  [`coherence`][], [`selection_scores`][].
- Data (§1.1): [`Batch`][], [`sample`][], [`random_subset`][], [`target`][], [`antithetic`][].
- Models (§2.2-2.5): [`STSTransformer`][] with [`zero_init`][], [`random_init`][],
  [`from_blocks`][], [`from_scalars`][], [`ground_truth`][], [`direction_cosines`][]; [`FCN`][].
- Losses (§1.3-1.4): [`loss`][], [`lemma_a_loss`][], [`exact_population_loss`][],
  [`bank_population_loss`][], [`mc_loss`][], [`all_subsets`][], [`pe_bank`][].
- Reduced dynamics (§3): [`reduced_loss`][], [`reduced_gd`][], [`reduced_flow`][],
  [`reduced_state_loss`][], [`reduced_rates`][], [`block_norm_sq`][], [`optimal_gamma`][].
- `iid_sphere` floor (§4.2): [`sphere_scores`][], [`sphere_moments`][], [`sphere_example_losses`][],
  [`sphere_loss`][], [`sphere_floor`][], [`sphere_flow`][].
- Online training (§5): [`OnlineConfig`][], [`online_runs`][].
- FCN risk (§4.4): [`linear_readout_risk`][], [`top_eigenspace_layer`][], [`coordinate_layer`][],
  [`trained_fcn_losses`][].
"""

from ._config import KEY_SETS, PE_SAMPLERS, X_QUERY_MODES, STSConfig
from ._data import Batch, antithetic, random_subset, sample, target
from ._fcn import (
    coordinate_layer,
    linear_readout_risk,
    subset_second_moment,
    top_eigenspace_layer,
    trained_fcn_losses,
)
from ._loss import (
    all_subsets,
    bank_population_loss,
    exact_population_loss,
    example_loss,
    lemma_a_loss,
    loss,
    mc_loss,
    pe_bank,
)
from ._model import (
    FCN,
    STSTransformer,
    centring,
    cosine,
    direction_cosines,
    from_blocks,
    from_scalars,
    ground_truth,
    pe_block_direction,
    random_init,
    zero_init,
)
from ._online import OnlineConfig, online_runs
from ._pe import (
    coherence,
    dictionary_onehot_pe,
    haar_orthonormal_pe,
    iid_sphere_pe,
    near_orthogonal_pe,
    onehot_pe,
    padded_onehot_pe,
    sample_pe,
    selection_scores,
)
from ._reduced import (
    block_norm_sq,
    optimal_gamma,
    reduced_flow,
    reduced_gd,
    reduced_loss,
    reduced_rates,
    reduced_state_loss,
    zero_state,
)
from ._sphere import (
    sphere_example_losses,
    sphere_floor,
    sphere_flow,
    sphere_loss,
    sphere_moments,
    sphere_scores,
)

__all__ = [
    "FCN",
    "KEY_SETS",
    "PE_SAMPLERS",
    "X_QUERY_MODES",
    "Batch",
    "OnlineConfig",
    "STSConfig",
    "STSTransformer",
    "all_subsets",
    "antithetic",
    "bank_population_loss",
    "block_norm_sq",
    "centring",
    "coherence",
    "coordinate_layer",
    "cosine",
    "dictionary_onehot_pe",
    "direction_cosines",
    "exact_population_loss",
    "example_loss",
    "from_blocks",
    "from_scalars",
    "ground_truth",
    "haar_orthonormal_pe",
    "iid_sphere_pe",
    "lemma_a_loss",
    "linear_readout_risk",
    "loss",
    "mc_loss",
    "near_orthogonal_pe",
    "online_runs",
    "onehot_pe",
    "optimal_gamma",
    "padded_onehot_pe",
    "pe_bank",
    "pe_block_direction",
    "random_init",
    "random_subset",
    "reduced_flow",
    "reduced_gd",
    "reduced_loss",
    "reduced_rates",
    "reduced_state_loss",
    "sample",
    "sample_pe",
    "selection_scores",
    "subset_second_moment",
    "sphere_example_losses",
    "sphere_floor",
    "sphere_flow",
    "sphere_loss",
    "sphere_moments",
    "sphere_scores",
    "target",
    "top_eigenspace_layer",
    "trained_fcn_losses",
    "zero_init",
    "zero_state",
]
