"""Decoupled (pathwise) posterior samples: random feature maps, sample weights and chunked
scoring. Pure TensorFlow: no Trieste imports."""

from .features import (
    ArcCosineFeatures,
    FeatureMap,
    FourierFeatures,
    TanimotoFeatures,
    feature_map_for,
    register_feature_map,
)
from .pathwise import PathwiseWeights, evaluate, evaluate_paired, exact_weights, inducing_weights
from .scoring import ChunkedSampleScorer

__all__ = [
    "ArcCosineFeatures",
    "ChunkedSampleScorer",
    "FeatureMap",
    "FourierFeatures",
    "PathwiseWeights",
    "TanimotoFeatures",
    "evaluate",
    "evaluate_paired",
    "exact_weights",
    "feature_map_for",
    "inducing_weights",
    "register_feature_map",
]
