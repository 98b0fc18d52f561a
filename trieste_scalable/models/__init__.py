"""Trieste models: the Nystrom (DTC) GP of BKB/BBKB/GP-BUCB with its dictionary policies, and
the exact replicated-input GP of MINI-META, and the adaptive SVGP of S-GP-TS."""

from .builders import build_adaptive_svgp, build_nystrom_gpr, build_replicated_gpr
from .dictionary import (
    DictionaryPolicy,
    ExactDictionary,
    PivotedCholeskyDictionary,
    RidgeLeverageSampler,
)
from .fitting import FitSchedule
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
    "FitSchedule",
    "build_adaptive_svgp",
    "build_nystrom_gpr",
    "build_replicated_gpr",
    "GreedyVarianceSelector",
    "InducingPointSelector",
    "InducingSchedule",
    "KMeansSelector",
    "RandomSubsampleSelector",
    "DictionaryPolicy",
    "ExactDictionary",
    "PivotedCholeskyDictionary",
    "InBatchPosterior",
    "NystromGPR",
    "ReplicatedGPR",
    "RidgeLeverageSampler",
]
