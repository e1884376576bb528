"""Next-token prediction with query-dependent partial orders (Huang, Liang, Yang, NeurIPS 2024,
arXiv 2409.17335): data model, random realizable datasets, the reparameterised one-layer
transformer and Algorithm 1 (two-stage normalized GD)."""

from ._data import Dataset, QueryReport, TokenTypes, hall_condition, svop, validate
from ._generate import RecipeA, RecipeB
from ._model import Batch, NTPModel, attention, cross_entropy, logits, loss, make_batch, predict
from ._simulate import RECIPES, Simulation, simulate
from ._train import algorithm1, paper_step_sizes

__all__ = [
    "Batch",
    "Dataset",
    "NTPModel",
    "QueryReport",
    "RECIPES",
    "RecipeA",
    "RecipeB",
    "Simulation",
    "TokenTypes",
    "algorithm1",
    "attention",
    "cross_entropy",
    "hall_condition",
    "logits",
    "loss",
    "make_batch",
    "paper_step_sizes",
    "predict",
    "simulate",
    "svop",
    "validate",
]
