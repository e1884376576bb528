"""Sparse contextual bigrams learned by a linear transformer (Ren, Wang, Lee, NeurIPS 2024,
arXiv 2410.23438): the SCB data model, the linear and softmax learners, population loss and
expected gradients, Algorithm 1 (preconditioned projected proximal descent), SGD baselines,
transfer initialisation, the population processes (the (α, β) ODE of Eqn 8, population GD, the
matrix flow) and the Gaussian-noise surrogate.

The ways of training are simulations ([`SIMULATIONS`][]): `algorithm1` ([`Algorithm1`][]),
`sgd` ([`SGD`][]) and `population_ode` ([`PopulationODE`][]); each holds its random instance as
one field, `task`, an [`SCBConfig`][] (`--set task.T=200`)."""

from .._paper import PaperInfo
from ._algorithm import (
    SGD_KINDS,
    STAGE1_RULES,
    STAGE3_MODES,
    SWITCHES,
    preconditioned_step,
    preconditioned_steps,
    related_transition,
    round_1_2,
    run_algorithm,
    run_later_stages,
    run_sgd,
    run_stage1,
    run_transfer,
    sparsity,
    stage3_least_squares,
    theta1,
    transfer_init,
)
from ._config import SCBConfig, default_instance
from ._data import (
    Assumption,
    Instance,
    check_assumption,
    extend_context,
    k_p,
    k_q,
    make_instance,
    mu_inner,
    random_instance,
    stationary,
)
from ._metrics import (
    least_squares_V,
    line_coordinates,
    metrics,
    normalise_attention,
    on_line,
    round_attention,
)
from ._model import (
    LOSS_SCALE,
    Batch,
    LinearSCB,
    SoftmaxSCB,
    batch_loss,
    enumerate_population,
    expected_gradients,
    expected_preconditioned,
    population_loss,
    population_scalars,
    precondition,
    sample,
    sample_gradients,
    sample_loss,
    scratch_init,
)
from ._population import line_flow, line_vector_field, matrix_flow, population_gd, solve_line_ode
from ._simulate import SGD, SIMULATIONS, Algorithm1, PopulationODE
from ._surrogate import probe_gradients, run_later_stages_surrogate, surrogate_noise, surrogate_stage

PAPER = PaperInfo(
    name="contextual_bigram",
    title=(
        "Ren, Wang, Lee, Learning and Transferring Sparse Contextual Bigrams with Linear "
        "Transformers (NeurIPS 2024)"
    ),
    label="Sparse contextual bigrams",
    levels=SIMULATIONS,
    cost={
        "checks": 263,
        "figures": 51,
        "full checks": 3352,
    },  # seconds on two cores: verify --quick, its quick figures, verify --full
)
"""This paper as a unit: its name, title, levels, data and cost (see `tasks.PaperInfo`)."""

__all__ = [
    "PAPER",
    "SGD",
    "SIMULATIONS",
    "Algorithm1",
    "PopulationODE",
    "SGD_KINDS",
    "STAGE1_RULES",
    "STAGE3_MODES",
    "SWITCHES",
    "preconditioned_step",
    "preconditioned_steps",
    "related_transition",
    "run_algorithm",
    "run_sgd",
    "run_later_stages",
    "run_later_stages_surrogate",
    "run_stage1",
    "run_transfer",
    "sparsity",
    "stage3_least_squares",
    "theta1",
    "transfer_init",
    "least_squares_V",
    "line_coordinates",
    "metrics",
    "normalise_attention",
    "on_line",
    "round_1_2",
    "round_attention",
    "line_flow",
    "line_vector_field",
    "matrix_flow",
    "population_gd",
    "solve_line_ode",
    "probe_gradients",
    "surrogate_noise",
    "surrogate_stage",
    "LOSS_SCALE",
    "Assumption",
    "Batch",
    "Instance",
    "SCBConfig",
    "LinearSCB",
    "SoftmaxSCB",
    "batch_loss",
    "check_assumption",
    "default_instance",
    "extend_context",
    "enumerate_population",
    "expected_gradients",
    "expected_preconditioned",
    "k_p",
    "k_q",
    "make_instance",
    "mu_inner",
    "population_loss",
    "population_scalars",
    "precondition",
    "random_instance",
    "sample",
    "sample_gradients",
    "sample_loss",
    "scratch_init",
    "stationary",
]
