"""Sparse token selection (Wang, Wei, Hsu, Lee, ICML 2024, arXiv 2406.06893): the STS_q task, its
positional encodings, the one-layer transformer (theory and practical model), the FCN baseline, the
exact population loss, the reduced two-scalar dynamics and the online training runs.

- Simulations ([`SIMULATIONS`][]): [`ReducedFlow`][] (`reduced_flow`, the default),
  [`Online`][] (`online`) and [`FCNTraining`][] (`fcn`).
- [`STSConfig`][]: sizes, PE family ([`PE_SAMPLERS`][]), key set, x_query mode, init scale.
- PE: [`onehot_pe`][], [`dictionary_onehot_pe`][], [`padded_onehot_pe`][],
  [`haar_orthonormal_pe`][], [`iid_sphere_pe`][], [`near_orthogonal_pe`][], [`sample_pe`][],
  [`coherence`][], [`selection_scores`][]; the one-hot families' draws as slots: [`SlotPE`][],
  [`sample_slots`][] ([`ONEHOT_FAMILIES`][]).
- Data: [`Batch`][], [`sample`][], [`random_subset`][], [`target`][], [`antithetic`][].
- Models: [`STSTransformer`][] with [`zero_init`][], [`random_init`][], [`from_blocks`][],
  [`from_scalars`][], [`to_scalars`][], [`ground_truth`][], [`direction_cosines`][],
  [`definition4_part`][]; [`FCN`][].
- Losses: [`loss`][], [`lemma_a_loss`][], [`exact_population_loss`][], [`bank_population_loss`][],
  [`mc_loss`][], [`all_subsets`][], [`pe_bank`][].
- Reduced dynamics (Lemma 1): [`reduced_loss`][], [`reduced_gd`][], [`reduced_flow`][],
  [`reduced_state_loss`][], [`reduced_rates`][], [`block_norm_sq`][], [`optimal_gamma`][].
- `iid_sphere` floor (Theorem 2): [`sphere_scores`][], [`sphere_moments`][],
  [`sphere_example_losses`][], [`sphere_loss`][], [`sphere_floor`][], [`sphere_flow`][].
- Online training: [`online_run`][] ([`OPTIMIZERS`][], [`INITS`][], [`BLOCKS`][]), [`validation_lengths`][],
  [`validation_sparsities`][], [`validation_loss`][] (the loss it saves, as a function of the model).
- FCN risk (Proposition C): [`linear_readout_risk`][], [`top_eigenspace_layer`][],
  [`coordinate_layer`][], [`fcn_run`][], [`fcn_validation_loss`][], [`trained_fcn_losses`][].
"""

from .._paper import PaperInfo
from ._config import KEY_SETS, ORTHONORMAL_PE, PE_SAMPLERS, X_QUERY_MODES, STSConfig, lengths_served
from ._data import Batch, antithetic, random_subset, sample, target
from ._fcn import (
    coordinate_layer,
    fcn_run,
    fcn_validation_loss,
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
    definition4_part,
    direction_cosines,
    from_blocks,
    from_scalars,
    ground_truth,
    pe_block_direction,
    random_init,
    to_scalars,
    zero_init,
)
from ._online import (
    BLOCKS,
    INITS,
    OPTIMIZERS,
    online_run,
    validation_lengths,
    validation_loss,
    validation_sparsities,
)
from ._pe import (
    ONEHOT_FAMILIES,
    SlotPE,
    coherence,
    dictionary_onehot_pe,
    haar_orthonormal_pe,
    iid_sphere_pe,
    near_orthogonal_pe,
    onehot_pe,
    padded_onehot_pe,
    sample_pe,
    sample_slots,
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
from ._simulate import SIMULATIONS, SOLVERS, FCNTraining, Online, ReducedFlow
from ._sphere import (
    sphere_example_losses,
    sphere_floor,
    sphere_flow,
    sphere_loss,
    sphere_moments,
    sphere_scores,
)

PAPER = PaperInfo(
    name="sparse_token_selection",
    title=(
        "Wang, Wei, Hsu, Lee, Transformers Provably Learn Sparse Token Selection While "
        "Fully-Connected Nets Cannot (ICML 2024)"
    ),
    label="Sparse token selection",
    levels=SIMULATIONS,
    cost={
        "checks": 167,
        "figures": 173,
        "full checks": 1951,
    },  # seconds on two cores: verify --quick, its quick figures, verify --full
)
"""This paper as a unit: its name, title, levels, data and cost (see `tasks.PaperInfo`)."""

__all__ = [
    "PAPER",
    "BLOCKS",
    "FCN",
    "INITS",
    "KEY_SETS",
    "ONEHOT_FAMILIES",
    "OPTIMIZERS",
    "ORTHONORMAL_PE",
    "PE_SAMPLERS",
    "SIMULATIONS",
    "SOLVERS",
    "X_QUERY_MODES",
    "Batch",
    "FCNTraining",
    "Online",
    "ReducedFlow",
    "STSConfig",
    "STSTransformer",
    "SlotPE",
    "all_subsets",
    "antithetic",
    "bank_population_loss",
    "block_norm_sq",
    "centring",
    "coherence",
    "coordinate_layer",
    "cosine",
    "definition4_part",
    "dictionary_onehot_pe",
    "direction_cosines",
    "exact_population_loss",
    "example_loss",
    "fcn_run",
    "fcn_validation_loss",
    "from_blocks",
    "from_scalars",
    "ground_truth",
    "haar_orthonormal_pe",
    "iid_sphere_pe",
    "lemma_a_loss",
    "lengths_served",
    "linear_readout_risk",
    "loss",
    "mc_loss",
    "near_orthogonal_pe",
    "online_run",
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
    "sample_slots",
    "selection_scores",
    "subset_second_moment",
    "sphere_example_losses",
    "sphere_floor",
    "sphere_flow",
    "sphere_loss",
    "sphere_moments",
    "sphere_scores",
    "target",
    "to_scalars",
    "top_eigenspace_layer",
    "trained_fcn_losses",
    "validation_lengths",
    "validation_loss",
    "validation_sparsities",
    "zero_init",
    "zero_state",
]
