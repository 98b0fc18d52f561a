"""Trieste acquisition rules: BBKB, BKB, GP-BUCB, MINI-GP-UCB, MINI-GP-EI and batch Thompson
sampling (S-GP-TS), with their public bases (:class:`~.HallucinatedBatchRule`, ``EpochRule``)
and the Protocols they check models against."""

from .bbkb import BBKB, BKB, GPBUCB
from .confidence import ConfidenceWidth
from .epochs import EpochRule, MiniMetaState, repeats
from .exploration_share import ExplorationShare
from .hallucinated import BatchUCBState, HallucinatedBatchRule
from .minimeta import MiniGPEI, MiniGPUCB
from .protocols import InBatchPosteriorLike, SupportsHallucination, SupportsInformationGain
from .stopping import GlobalLocalStopping, GlobalStopping, ProductStopping, StoppingRule
from .thompson import BatchThompsonSampling, ThompsonState

__all__ = [
    "BBKB",
    "BKB",
    "GPBUCB",
    "BatchThompsonSampling",
    "BatchUCBState",
    "ConfidenceWidth",
    "EpochRule",
    "ExplorationShare",
    "GlobalLocalStopping",
    "GlobalStopping",
    "HallucinatedBatchRule",
    "InBatchPosteriorLike",
    "MiniGPEI",
    "MiniGPUCB",
    "MiniMetaState",
    "ProductStopping",
    "StoppingRule",
    "SupportsHallucination",
    "SupportsInformationGain",
    "ThompsonState",
    "repeats",
]
