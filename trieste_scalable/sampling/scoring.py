"""Scoring B pathwise samples over N candidates in chunks: the k lowest values of each sample.

One compiled function per (feature map, mean function) runs the whole chunk loop in-graph: each
chunk's features are computed once and shared by all B samples (one [C, F] x [F, B] product),
and a running top-k per sample is merged with each chunk's scores. Memory is O(C (F + M + B)),
whatever N is. Every chunk has the same shape: the last chunk ends at the last candidate and
skips the rows the chunk before it scored (no padded copy of the candidates).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

import numpy as np
import tensorflow as tf

from ..numerics.bits import Rows, dense_rows, slice_rows, stored_rows
from .feature_cache import PackedSigns
from .features import Draws, FeatureMap
from .pathwise import MeanFunction, PathwiseWeights, evaluate


def chunk_rows(num: int, chunk_size: int) -> int:
    """Rows per chunk: the chunk count is fixed by ``chunk_size``, then chunks are evened out
    (at most ``num``)."""
    chunks = -(-num // chunk_size)
    return -(-num // chunks)


class RemoteSampleScoring(Protocol):
    """Scores B samples over a candidate set held elsewhere, e.g. a library store's shards on Ray
    actors (:class:`~trieste_scalable.cluster.scoring_actors.ScoringActors`), with the same
    results as :meth:`ChunkedSampleScorer.lowest` over the whole set in this process."""

    @property
    def num_candidates(self) -> int:
        """N, the candidates scored (in the order of the rule's search space)."""

    def lowest(
        self,
        features: FeatureMap,
        mean_function: MeanFunction,
        draws: Draws,
        weights: PathwiseWeights,
        k: int,
        excluded: np.ndarray,
        draw: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Values [B, k] (ascending, ties by index) and candidate indices [B, k] of each sample's
        k lowest allowed candidates; ``excluded`` the positions of the candidates no sample may
        pick, ascending [A] (not an [N] mask: at 10^8 candidates that is 100 MB a call), ``draw``
        which draw of sign features ``draws`` is (see :class:`~.feature_cache.SignCache`)."""


class ChunkedSampleScorer:
    """The k lowest values of each of B samples over a candidate set, and their indices.

    :param features: The feature map of the samples' prior part.
    :param mean_function: The prior mean function.
    :param chunk_size: Candidates per chunk (at most the feature map's ``max_rows`` where the
        features are computed while scoring; any size with cached sign features, whose chunks
        only unpack bits and multiply).
    :param products: The dtype of the matrix products (default: the samples' dtype; see
        :func:`~.pathwise.evaluate`).
    """

    def __init__(
        self,
        features: FeatureMap,
        mean_function: MeanFunction,
        chunk_size: int = 4096,
        products: Optional[tf.DType] = None,
    ):
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.features = features
        self.mean_function = mean_function
        self.chunk_size = chunk_size
        self.feature_chunk_size = min(chunk_size, features.max_rows or chunk_size)
        self.products = products
        self._compiled: dict[bool, Any] = {}  # by whether sign features are cached

    @property
    def tracing_count(self) -> int:
        return sum(f.experimental_get_tracing_count() for f in self._compiled.values())

    def lowest(
        self,
        candidates: Rows,
        excluded: tf.Tensor,
        draws: Draws,
        weights: PathwiseWeights,
        k: int,
        signs: Optional[PackedSigns] = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """:param candidates: Dense candidates [N, D], or 0/1 candidates as
            :class:`~trieste_scalable.numerics.bits.PackedRows` (unpacked a chunk at a time).
        :param excluded: True for candidates no sample may pick [N].
        :param signs: The candidates' cached sign features under ``draws`` (for a map with
            ``signs_only``): used instead of computing the features.
        :return: Values [B, k] (ascending; +inf where fewer than k candidates are allowed) and
            candidate indices [B, k]."""
        points, width = stored_rows(candidates)
        num = int(points.shape[0])
        if num == 0:
            raise ValueError("there are no candidates to score")
        args: tuple = (
            points,
            excluded,
            draws,
            weights,
            k,
            chunk_rows(num, self.chunk_size if signs is not None else self.feature_chunk_size),
            width,
        )
        cached = signs is not None
        if cached:
            args += (signs,)
        if cached not in self._compiled:
            signature = tf.nest.map_structure(
                lambda t: tf.TensorSpec([None] * len(t.shape), t.dtype),
                tuple(tf.nest.map_structure(tf.convert_to_tensor, args)),
            )
            # no AutoGraph: the loop is an explicit tf.while_loop, and converting the source of
            # everything it calls cost 1.3 s of a 3.5 s first acquisition (screening, 20k)
            self._compiled[cached] = tf.function(
                self._lowest, input_signature=signature, autograph=False
            )
        values, indices = self._compiled[cached](*args)  # in the products' dtype
        return -tf.cast(values, weights.prior.dtype), indices

    def _lowest(
        self,
        points: tf.Tensor,
        excluded: tf.Tensor,
        draws: Draws,
        weights: PathwiseWeights,
        k: tf.Tensor,
        chunk: tf.Tensor,
        width: tf.Tensor,
        signs: Optional[PackedSigns] = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        dtype = weights.prior.dtype

        def values(start: tf.Tensor) -> tf.Tensor:
            prior = None
            if signs is None:
                x = dense_rows(points, start, chunk, width, dtype)
            else:  # the rows and their cached signs, scaled, in the products' dtype
                features = self.products or dtype
                x = dense_rows(points, start, chunk, width, features)
                rows = PackedSigns(
                    slice_rows(signs.bits, start, chunk), tf.slice(signs.nonzero, [start], [chunk])
                )
                amplitude = self.features.amplitude(features)
                prior = amplitude * rows.signs(self.features.num_features, features)
            return evaluate(
                self.features,
                self.mean_function,
                draws=draws,
                weights=weights,
                x=x,
                prior_features=prior,
                products=self.products,
            )

        return _running_top_k(values, excluded, k, chunk, tf.shape(weights.prior)[1])


def _running_top_k(
    values: Callable[[tf.Tensor], tf.Tensor],
    excluded: tf.Tensor,
    k: tf.Tensor,
    chunk: tf.Tensor,
    num_samples: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The k largest negated ``values(start)`` [C, B] per sample over every chunk (in-graph
    loop), skipping ``excluded`` candidates [N]: negated values [B, k] and their indices [B, k].
    The last chunk starts at N - C and skips the rows the chunk before it scored."""
    num = tf.shape(excluded)[0]
    num_chunks = (num + chunk - 1) // chunk
    minus_inf = tf.constant(-np.inf, values(0).dtype)
    best = tf.fill([num_samples, k], minus_inf)  # negated values: top_k finds the lowest
    best_index = tf.zeros([num_samples, k], tf.int32)

    def body(i: tf.Tensor, best: tf.Tensor, best_index: tf.Tensor) -> tuple[tf.Tensor, ...]:
        start = tf.minimum(i * chunk, num - chunk)
        rows = tf.range(start, start + chunk)
        skip = tf.slice(excluded, [start], [chunk]) | (rows < i * chunk)  # scored already
        scores = tf.where(skip[None, :], minus_inf, -tf.transpose(values(start)))  # [B, C]
        index = tf.broadcast_to(rows[None, :], tf.shape(scores))
        merged = tf.concat([best, scores], axis=1)
        merged_index = tf.concat([best_index, index], axis=1)
        top = tf.math.top_k(merged, k=k, sorted=True)
        return i + 1, top.values, tf.gather(merged_index, top.indices, batch_dims=1)

    _, best, best_index = tf.while_loop(
        lambda i, *_: i < num_chunks, body, [tf.constant(0), best, best_index]
    )
    return best, best_index
