"""Trieste models: the Nystrom (DTC) GP of BKB/BBKB/GP-BUCB and its dictionary policies."""

from .dictionary import DictionaryPolicy, ExactDictionary, RidgeLeverageSampler
from .in_batch import InBatchPosterior
from .nystrom import NystromGPR

__all__ = [
    "DictionaryPolicy",
    "ExactDictionary",
    "InBatchPosterior",
    "NystromGPR",
    "RidgeLeverageSampler",
]
