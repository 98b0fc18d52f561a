"""Trieste models: the Nystrom (DTC) GP of BKB/BBKB/GP-BUCB with its dictionary policies, and
the exact replicated-input GP of MINI-META, and the adaptive SVGP of S-GP-TS."""

from .dictionary import DictionaryPolicy, ExactDictionary, RidgeLeverageSampler
from .in_batch import InBatchPosterior
from .inducing import (
    GreedyVarianceSelector,
    InducingPointSelector,
    InducingSchedule,
    KMeansSelector,
    RandomSubsampleSelector,
)
from .nystrom import NystromGPR
from .replicated import ReplicatedGPR
from .svgp import AdaptiveSVGP

__all__ = [
    "AdaptiveSVGP",
    "GreedyVarianceSelector",
    "InducingPointSelector",
    "InducingSchedule",
    "KMeansSelector",
    "RandomSubsampleSelector",
    "DictionaryPolicy",
    "ExactDictionary",
    "InBatchPosterior",
    "NystromGPR",
    "ReplicatedGPR",
    "RidgeLeverageSampler",
]
