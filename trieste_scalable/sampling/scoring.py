"""Scoring B pathwise samples over N candidates in chunks: the k lowest values of each sample.

One compiled function per (feature map, mean function) runs the whole chunk loop in-graph: each
chunk's features are computed once and shared by all B samples (one [C, F] x [F, B] product),
and a running top-k per sample is merged with each chunk's scores. Memory is O(C (F + M + B)),
whatever N is. The candidates are padded to a whole number of equal chunks (padding is excluded),
so every chunk has the same shape.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from .features import Draws, FeatureMap
from .pathwise import MeanFunction, PathwiseWeights, evaluate


class PaddedCandidates(NamedTuple):
    """Candidates padded to a whole number of equal chunks.

    :ivar points: [N_pad, D] (padding repeats the last candidate).
    :ivar padding: True for padding rows [N_pad].
    """

    points: tf.Tensor
    padding: tf.Tensor

    @classmethod
    def build(cls, points: tf.Tensor, chunk_size: int) -> PaddedCandidates:
        """Pad to a whole number of chunks of at most ``chunk_size`` rows, as few as possible."""
        num = int(points.shape[0])
        if num == 0:
            raise ValueError("there are no candidates to score")
        missing = -num % cls.chunk_rows(num, chunk_size)
        padded = tf.concat([points, tf.repeat(points[-1:], missing, axis=0)], axis=0)
        padding = tf.constant(np.arange(num + missing) >= num)
        return cls(padded, padding)

    @staticmethod
    def chunk_rows(num: int, chunk_size: int) -> int:
        """Rows per chunk: the chunk count is fixed by ``chunk_size``, then chunks are evened
        out so that padding is less than one row per chunk."""
        chunks = -(-num // chunk_size)
        return -(-num // chunks)


class ChunkedSampleScorer:
    """The k lowest values of each of B samples over a candidate set, and their indices.

    :param features: The feature map of the samples' prior part.
    :param mean_function: The prior mean function.
    :param chunk_size: Candidates per chunk.
    """

    def __init__(
        self,
        features: FeatureMap,
        mean_function: MeanFunction,
        chunk_size: int = 4096,
    ):
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.features = features
        self.mean_function = mean_function
        self.chunk_size = min(chunk_size, features.max_rows or chunk_size)
        self._compiled: Any = None

    @property
    def tracing_count(self) -> int:
        return 0 if self._compiled is None else self._compiled.experimental_get_tracing_count()

    def lowest(
        self,
        candidates: PaddedCandidates,
        excluded: tf.Tensor,
        draws: Draws,
        weights: PathwiseWeights,
        k: int,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """:param excluded: True for candidates no sample may pick [N_pad].
        :return: Values [B, k] (ascending; +inf where fewer than k candidates are allowed) and
            candidate indices [B, k]."""
        num = int(candidates.points.shape[0]) - int(np.sum(candidates.padding.numpy()))
        rows = PaddedCandidates.chunk_rows(num, self.chunk_size)
        args = (candidates.points, excluded | candidates.padding, draws, weights, k, rows)
        if self._compiled is None:
            signature = tf.nest.map_structure(
                lambda t: tf.TensorSpec([None] * len(t.shape), t.dtype),
                tuple(tf.nest.map_structure(tf.convert_to_tensor, args)),
            )
            self._compiled = tf.function(self._lowest, input_signature=signature)
        values, indices = self._compiled(*args)
        return -values, indices

    def _lowest(
        self,
        points: tf.Tensor,
        excluded: tf.Tensor,
        draws: Draws,
        weights: PathwiseWeights,
        k: tf.Tensor,
        chunk: tf.Tensor,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        num_chunks = tf.shape(points)[0] // chunk
        num_samples = tf.shape(weights.prior)[1]
        minus_inf = tf.constant(-np.inf, points.dtype)
        best = tf.fill([num_samples, k], minus_inf)  # negated values: top_k finds the lowest
        best_index = tf.zeros([num_samples, k], tf.int32)

        def body(i: tf.Tensor, best: tf.Tensor, best_index: tf.Tensor) -> tuple[tf.Tensor, ...]:
            start = i * chunk
            x = tf.slice(points, [start, 0], [chunk, tf.shape(points)[1]])
            skip = tf.slice(excluded, [start], [chunk])
            scores = -tf.transpose(evaluate(self.features, self.mean_function, draws, weights, x))
            scores = tf.where(skip[None, :], minus_inf, scores)  # [B, C]
            index = tf.broadcast_to(tf.range(start, start + chunk)[None, :], tf.shape(scores))
            merged = tf.concat([best, scores], axis=1)
            merged_index = tf.concat([best_index, index], axis=1)
            top = tf.math.top_k(merged, k=k, sorted=True)
            return i + 1, top.values, tf.gather(merged_index, top.indices, batch_dims=1)

        _, best, best_index = tf.while_loop(
            lambda i, *_: i < num_chunks, body, [tf.constant(0), best, best_index]
        )
        return best, best_index
