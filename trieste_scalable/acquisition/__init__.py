"""Trieste acquisition rules: BBKB, BKB and GP-BUCB."""

from .bbkb import BBKB, BKB, GPBUCB, BatchUCBState
from .confidence import ConfidenceWidth
from .stopping import GlobalLocalStopping, GlobalStopping, ProductStopping, StoppingRule

__all__ = [
    "BBKB",
    "BKB",
    "GPBUCB",
    "BatchUCBState",
    "ConfidenceWidth",
    "GlobalLocalStopping",
    "GlobalStopping",
    "ProductStopping",
    "StoppingRule",
]
