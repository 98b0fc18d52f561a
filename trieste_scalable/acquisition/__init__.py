"""Trieste acquisition rules: BBKB, BKB, GP-BUCB, MINI-GP-UCB, MINI-GP-EI and batch Thompson
sampling (S-GP-TS)."""

from .bbkb import BBKB, BKB, GPBUCB, BatchUCBState
from .confidence import ConfidenceWidth
from .minimeta import MiniGPEI, MiniGPUCB, MiniMetaState, repeats
from .stopping import GlobalLocalStopping, GlobalStopping, ProductStopping, StoppingRule
from .thompson import BatchThompsonSampling, ThompsonState

__all__ = [
    "BBKB",
    "BKB",
    "GPBUCB",
    "BatchThompsonSampling",
    "BatchUCBState",
    "ConfidenceWidth",
    "GlobalLocalStopping",
    "GlobalStopping",
    "MiniGPEI",
    "MiniGPUCB",
    "MiniMetaState",
    "ProductStopping",
    "StoppingRule",
    "ThompsonState",
    "repeats",
]
