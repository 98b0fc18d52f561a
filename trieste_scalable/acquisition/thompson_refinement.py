"""Refinement of batch Thompson sampling's picks in a continuous (``Box``) search space: each
sample's best candidate of a random pool is improved by gradient descent on that sample
(L-BFGS-B on all B samples at once, their sum being separable)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize
import tensorflow as tf
from trieste.space import Box

from ..sampling.features import Draws, FeatureMap
from ..sampling.pathwise import PathwiseWeights, evaluate_paired
from ..sampling.scoring import ChunkedSampleScorer
from .pathwise_source import PathwiseSource


def paired_value_and_gradient(features: FeatureMap, source: PathwiseSource) -> Any:
    """Compiled ``(x [B, D], draws, weights) -> (f_b(x_b) [B], gradient of their sum [B, D])``."""

    def value_and_gradient(
        x: tf.Tensor, draws: Draws, weights: PathwiseWeights
    ) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            tape.watch(x)
            values = evaluate_paired(features, source.mean_function, draws, weights, x)
            total = tf.reduce_sum(values)
        return values, tape.gradient(total, x)

    return tf.function(value_and_gradient, reduce_retracing=True)


def refine(
    paired: Any,
    draws: Draws,
    weights: PathwiseWeights,
    start: tf.Tensor,
    space: Box,
    max_iterations: int,
) -> tf.Tensor:
    """L-BFGS-B on :math:`\\sum_b \\tilde f_b(x_b)`: the sum is separable, so this minimises every
    sample at once; a sample keeps its start if the refined point is not better."""
    dtype = start.dtype
    shape = start.shape

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        x = tf.constant(flat.reshape(shape), dtype=dtype)
        values, gradient = paired(x, draws, weights)
        return float(tf.reduce_sum(values)), gradient.numpy().ravel()

    bounds = list(
        zip(np.tile(space.lower.numpy(), shape[0]), np.tile(space.upper.numpy(), shape[0]))
    )
    result = scipy.optimize.minimize(
        objective,
        start.numpy().ravel(),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iterations},
    )
    refined = tf.constant(result.x.reshape(shape), dtype=dtype)
    before = paired(start, draws, weights)[0]
    after = paired(refined, draws, weights)[0]
    return tf.where((after <= before)[:, None], refined, start)


def box_batch(
    space: Box,
    pool: tf.Tensor,
    scorer: ChunkedSampleScorer,
    paired: Any,
    draws: Draws,
    weights: PathwiseWeights,
    max_iterations: int,
) -> tf.Tensor:
    """Each sample's best point [B, D] of ``pool`` [P, D] (scored by ``scorer``), refined on that
    sample by :func:`refine` for at most ``max_iterations`` (0: not refined)."""
    excluded = tf.zeros([int(pool.shape[0])], tf.bool)
    _, index = scorer.lowest(pool, excluded, draws, weights, 1)
    start = tf.gather(pool, index[:, 0])  # [B, D]
    if max_iterations == 0:
        return start
    return refine(paired, draws, weights, start, space, max_iterations)
