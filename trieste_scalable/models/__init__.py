"""Trieste models: the Nystrom (DTC) GP of BKB/BBKB/GP-BUCB with its dictionary policies, and
the exact replicated-input GP of MINI-META."""

from .dictionary import DictionaryPolicy, ExactDictionary, RidgeLeverageSampler
from .in_batch import InBatchPosterior
from .nystrom import NystromGPR
from .replicated import ReplicatedGPR

__all__ = [
    "DictionaryPolicy",
    "ExactDictionary",
    "InBatchPosterior",
    "NystromGPR",
    "ReplicatedGPR",
    "RidgeLeverageSampler",
]
