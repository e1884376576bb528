"""Decision lists learned by a one-layer transformer (anonymous extended abstract, "Provable
Gradient-Descent-Based Learning of Decision Lists by Transformers"): the model
`f_{W,V}(X) = σ(V X σ(Xᵀ W X))`, the sequence-to-sequence decision-list task, its exact population
loss, the perfect-classification tests and the three trainings of the paper.

The model, the task and the results are the paper's; the task generator, the sampling
distribution `D` (`distinct` by default) and the frozen Monte-Carlo population are ours (spec §2-3).
"""

from ._criteria import certified, mu, mu_criterion_applies, mu_table
from ._data import (
    MAX_SUPPORT,
    Population,
    distinct_event_probabilities,
    event_probabilities,
    exact_population,
    label_determining,
    labels,
    make_population,
    presence_probabilities,
    sample_tokens,
    sampled_population,
    support,
)
from ._dynamics import (
    centred_cosine,
    column_argmax_agreement,
    permutation_matrix,
    result1_flow,
    result1_gd,
    result1_time,
    result2_gd,
    result2_metrics,
    uniform_attention_gd,
)
from ._model import TAU_TIE, DecisionListModel, margins, perfect, population_loss, sequence_loss
from ._task import DISTRIBUTIONS, DecisionLists, TaskArrays, stack_arrays

__all__ = [
    "DISTRIBUTIONS",
    "MAX_SUPPORT",
    "TAU_TIE",
    "DecisionListModel",
    "DecisionLists",
    "Population",
    "TaskArrays",
    "centred_cosine",
    "certified",
    "column_argmax_agreement",
    "distinct_event_probabilities",
    "event_probabilities",
    "exact_population",
    "label_determining",
    "labels",
    "make_population",
    "margins",
    "mu",
    "mu_criterion_applies",
    "mu_table",
    "perfect",
    "permutation_matrix",
    "population_loss",
    "presence_probabilities",
    "result1_flow",
    "result1_gd",
    "result1_time",
    "result2_gd",
    "result2_metrics",
    "sample_tokens",
    "sampled_population",
    "sequence_loss",
    "stack_arrays",
    "support",
    "uniform_attention_gd",
]
