"""Next-token prediction with query-dependent partial orders (Huang, Liang, Yang, NeurIPS 2024,
arXiv 2409.17335): data model, random realizable datasets, the reparameterised one-layer
transformer, Algorithm 1 (two-stage normalized GD) and its simulation on random datasets, whose
dataset settings are one [`NTPConfig`][]."""

from .._paper import PaperInfo
from ._config import NTPConfig
from ._data import Dataset, QueryReport, TokenTypes, hall_condition, svop, validate
from ._generate import RECIPES, RecipeA, RecipeB
from ._model import Batch, NTPModel, attend, attention, cross_entropy, logits, loss, make_batch, predict
from ._simulate import SIMULATIONS, Algorithm1
from ._train import algorithm1, paper_step_sizes

PAPER = PaperInfo(
    name="ntp_partial_order",
    title=(
        "Huang, Liang, Yang, Non-asymptotic Convergence of Training Transformers for Next-token "
        "Prediction (NeurIPS 2024)"
    ),
    label="Next-token prediction",
    levels=SIMULATIONS,
    cost={
        "checks": 23,
        "figures": 4,
        "full checks": 63,
    },  # seconds on two cores: verify --quick, its quick figures, verify --full
)
"""This paper as a unit: its name, title, levels, data and cost (see `tasks.PaperInfo`)."""

__all__ = [
    "PAPER",
    "Algorithm1",
    "Batch",
    "Dataset",
    "NTPConfig",
    "NTPModel",
    "QueryReport",
    "RECIPES",
    "RecipeA",
    "RecipeB",
    "SIMULATIONS",
    "TokenTypes",
    "algorithm1",
    "attend",
    "attention",
    "cross_entropy",
    "hall_condition",
    "logits",
    "loss",
    "make_batch",
    "paper_step_sizes",
    "predict",
    "svop",
    "validate",
]
