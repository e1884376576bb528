"""Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023, arXiv 2305.16380): the Y/Z
reparameterisation of a one-layer transformer trained on sequence classes."""

from ._classes import ClassArrays, SequenceClasses
from ._decoder import (
    e_prime as e_prime,
)
from ._decoder import (
    gamma_integral as gamma_integral,
)
from ._decoder import (
    h_continuous as h_continuous,
)
from ._decoder import (
    h_discrete as h_discrete,
)
from ._decoder import (
    omega_1 as omega_1,
)
from ._decoder import (
    phase_B_early as phase_B_early,
)
from ._decoder import (
    phase_B_exact as phase_B_exact,
)
from ._decoder import (
    phase_B_late as phase_B_late,
)
from ._decoder import (
    phase_B_paper as phase_B_paper,
)
from ._decoder import (
    q0 as q0,
)
from ._decoder import (
    q1 as q1,
)
from ._decoder import (
    q_matrix as q_matrix,
)
from ._decoder import (
    speed_gamma as speed_gamma,
)
from ._decoder import (
    transition_times as transition_times,
)
from ._decoder import (
    zeta as zeta,
)
from ._generator import Dataset2
from ._levels import (
    OPTIMIZERS as OPTIMIZERS,
)
from ._levels import (
    default_metrics as default_metrics,
)
from ._levels import (
    model_rates as model_rates,
)
from ._levels import (
    optimizer as optimizer,
)
from ._levels import (
    population_flow as population_flow,
)
from ._levels import (
    scalar_flow as scalar_flow,
)
from ._levels import (
    sgd_run as sgd_run,
)
from ._levels import (
    theory_flow as theory_flow,
)
from ._metrics import distinct_token_entropy, recall_at_threshold
from ._model import (
    Batch,
    YZModel,
    class_attention,
    cross_entropy,
    lemma1_update,
    population_gradient_formula,
    population_loss,
)
from ._sampling import TokenBatch, sample, sample_tokens, token_counts
from ._simulate import LEVELS as LEVELS
from ._simulate import Simulation as Simulation
from ._simulate import simulate as simulate
from ._theory_flow import (
    ScalarArgs as ScalarArgs,
)
from ._theory_flow import (
    ScalarState as ScalarState,
)
from ._theory_flow import (
    TheoryArgs as TheoryArgs,
)
from ._theory_flow import (
    TheoryState as TheoryState,
)
from ._theory_flow import (
    backprop_gradient as backprop_gradient,
)
from ._theory_flow import (
    normalized_attention_features as normalized_attention_features,
)
from ._theory_flow import (
    scalar_vector_field as scalar_vector_field,
)
from ._theory_flow import (
    theory_vector_field as theory_vector_field,
)
from ._theory_flow import (
    xi as xi,
)

__all__ = [
    "LEVELS",
    "Simulation",
    "simulate",
    "Batch",
    "ClassArrays",
    "Dataset2",
    "OPTIMIZERS",
    "ScalarArgs",
    "ScalarState",
    "SequenceClasses",
    "TheoryArgs",
    "TheoryState",
    "TokenBatch",
    "YZModel",
    "backprop_gradient",
    "class_attention",
    "cross_entropy",
    "default_metrics",
    "distinct_token_entropy",
    "e_prime",
    "gamma_integral",
    "h_continuous",
    "h_discrete",
    "lemma1_update",
    "model_rates",
    "normalized_attention_features",
    "omega_1",
    "optimizer",
    "phase_B_early",
    "phase_B_exact",
    "phase_B_late",
    "phase_B_paper",
    "population_flow",
    "population_gradient_formula",
    "population_loss",
    "q0",
    "q1",
    "q_matrix",
    "recall_at_threshold",
    "sample",
    "sample_tokens",
    "scalar_flow",
    "scalar_vector_field",
    "sgd_run",
    "speed_gamma",
    "theory_flow",
    "theory_vector_field",
    "token_counts",
    "transition_times",
    "xi",
    "zeta",
]
