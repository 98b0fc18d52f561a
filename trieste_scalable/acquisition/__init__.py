"""Trieste acquisition rules: BBKB, BKB, GP-BUCB, MINI-GP-UCB and MINI-GP-EI."""

from .bbkb import BBKB, BKB, GPBUCB, BatchUCBState
from .confidence import ConfidenceWidth
from .minimeta import MiniGPEI, MiniGPUCB, MiniMetaState, repeats
from .stopping import GlobalLocalStopping, GlobalStopping, ProductStopping, StoppingRule

__all__ = [
    "BBKB",
    "BKB",
    "GPBUCB",
    "BatchUCBState",
    "ConfidenceWidth",
    "GlobalLocalStopping",
    "GlobalStopping",
    "MiniGPEI",
    "MiniGPUCB",
    "MiniMetaState",
    "ProductStopping",
    "StoppingRule",
    "repeats",
]
