"""Decision lists learned by a one-layer transformer (anonymous extended abstract, "Provable
Gradient-Descent-Based Learning of Decision Lists by Transformers"): the model
`f_{W,V}(X) = σ(V X σ(Xᵀ W X))`, the sequence-to-sequence decision-list task, its exact population
loss, the perfect-classification tests, the paper's constants (`δ`, `γ`, Result 1's `c` and time
bound, Result 2's circular `c`), the trainings of the paper, those trainings as simulations
(`SIMULATIONS`: `result1_flow`, `result2_gd`, `section7_gd`, `joint_gd`), each holding its random
task as `task`, a `DecisionListsConfig`, and compiled for the questions a simulation does not ask
(a given `c`, given save times or start: `result1_tau`, `result1_margins`, `result2_run`, ...).

The model, the task and the results are the paper's; the task generator, the sampling
distribution `D` (`distinct` by default) and the frozen Monte-Carlo population are reconstructed
(recon; see "Task and model" on the decision_lists page of the documentation).
"""

from .._paper import PaperInfo
from ._analyses import (
    classifies_perfectly,
    loss_at_zero,
    loss_lambda_max,
    result1_gd_run,
    result1_margins,
    result1_saved,
    result1_tau,
    result2_c,
    result2_run,
)
from ._config import DecisionListsConfig
from ._constants import (
    DELTA_DEFINITIONS,
    GAMMA_DEFINITIONS,
    delta_gamma,
    distinct_gamma,
    fixed_point_c,
    result1_c,
    result1_time_bound,
)
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
    FLOW_CONTROLLER,
    centred_cosine,
    column_argmax_agreement,
    direction_margin,
    joint_gd,
    permutation_matrix,
    perturbation,
    result1_flow,
    result1_gd,
    result1_time,
    result2_gd,
    result2_metrics,
    result2_start,
    uniform_attention_gd,
)
from ._model import TAU_TIE, DecisionListModel, margins, perfect, population_loss, sequence_loss
from ._simulate import SIMULATIONS, JointGD, Result1Flow, Result2GD, UniformAttentionGD
from ._task import DISTRIBUTIONS, DecisionLists, TaskArrays, stack_arrays

PAPER = PaperInfo(
    name="decision_lists",
    title=("Provable Gradient-Descent-Based Learning of Decision Lists by Transformers (extended abstract)"),
    label="Decision lists",
    levels=SIMULATIONS,
    cost={
        "checks": 89,
        "figures": 130,
        "full checks": 475,
    },  # seconds on two cores: verify --quick, its quick figures, verify --full
)
"""This paper as a unit: its name, title, levels, data and cost (see `tasks.PaperInfo`)."""

__all__ = [
    "PAPER",
    "DELTA_DEFINITIONS",
    "DISTRIBUTIONS",
    "FLOW_CONTROLLER",
    "GAMMA_DEFINITIONS",
    "MAX_SUPPORT",
    "SIMULATIONS",
    "TAU_TIE",
    "DecisionListModel",
    "DecisionLists",
    "DecisionListsConfig",
    "JointGD",
    "Population",
    "Result1Flow",
    "Result2GD",
    "TaskArrays",
    "UniformAttentionGD",
    "centred_cosine",
    "certified",
    "classifies_perfectly",
    "column_argmax_agreement",
    "delta_gamma",
    "direction_margin",
    "distinct_event_probabilities",
    "distinct_gamma",
    "event_probabilities",
    "exact_population",
    "fixed_point_c",
    "joint_gd",
    "label_determining",
    "labels",
    "loss_at_zero",
    "loss_lambda_max",
    "make_population",
    "margins",
    "mu",
    "mu_criterion_applies",
    "mu_table",
    "perfect",
    "permutation_matrix",
    "perturbation",
    "population_loss",
    "presence_probabilities",
    "result1_c",
    "result1_flow",
    "result1_gd",
    "result1_gd_run",
    "result1_margins",
    "result1_saved",
    "result1_tau",
    "result1_time",
    "result1_time_bound",
    "result2_c",
    "result2_gd",
    "result2_metrics",
    "result2_run",
    "result2_start",
    "sample_tokens",
    "sampled_population",
    "sequence_loss",
    "stack_arrays",
    "support",
    "uniform_attention_gd",
]
