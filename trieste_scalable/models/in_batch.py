"""The in-batch (hallucinated) posterior that BBKB, BKB and GP-BUCB build batches with.

A rule asks for posterior quantities over candidates through this object and never touches the
model's matrices. Within a batch the dictionary, the embedding and the mean are frozen; only
:math:`V` changes, by one rank-one update per selected point, with no feedback needed.
"""

from __future__ import annotations

import tensorflow as tf

from ..numerics import dtc
from ..numerics.dtc import CompiledDTC
from ..numerics.linalg import SliceableRows, chunked_map


class InBatchPosterior:
    """Batch-start posterior plus the points selected so far in the batch.

    :param ops: The model's compiled numerics.
    :param posterior: The batch-start DTC posterior.
    :param extend: Whether selected points join the dictionary (exact dictionaries only).
    :param chunk_size: Candidates per compiled call.
    """

    def __init__(
        self, ops: CompiledDTC, posterior: dtc.DTCPosterior, extend: bool, chunk_size: int
    ):
        self._ops = ops
        self._posterior = posterior
        self._current = posterior  # with the points selected so far hallucinated
        self._extend = extend
        self._chunk_size = chunk_size

    @property
    def noise(self) -> float:
        """The regulariser :math:`\\lambda`."""
        return float(self._posterior.noise)

    @property
    def exact(self) -> bool:
        """Whether the posterior is exact (an exact dictionary, which selected points join)."""
        return self._extend

    @property
    def dictionary_size(self) -> int:
        """Dictionary size at the batch start."""
        return self._posterior.size

    def batch_start_marginals(self, candidates: SliceableRows) -> tuple[tf.Tensor, tf.Tensor]:
        """Batch-start mean and ridge-leverage variance of each candidate [N] (chunked)."""
        mean, var = chunked_map(
            lambda chunk: self._ops.marginals(self._posterior, chunk),
            candidates,
            self._chunk_size,
        )
        return mean, var

    def variance(self, candidates: tf.Tensor) -> tf.Tensor:
        """Ridge-leverage variance [N] under the hallucinated posterior (one compiled call)."""
        return self._ops.marginals(self._current, candidates)[1]

    def add(self, points: tf.Tensor) -> None:
        """Hallucinate selected points [K, D] (K rank-one updates of V, O(K M^2), in one
        compiled call; no observation: the variances do not depend on it)."""
        condition = self._ops.condition_extending if self._extend else self._ops.condition
        zeros = tf.zeros(tf.shape(points)[:1], dtype=points.dtype)
        self._current = condition(self._current, points, zeros)

    def local_terms(
        self, batch: tf.Tensor, candidates: SliceableRows
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Sums over ``batch`` [B, D] of the squared full and projected batch-start covariances
        with each candidate [N] (the local stopping statistic of BBKB Lemma 3)."""
        full, projected = chunked_map(
            lambda chunk: self._ops.local_terms(self._posterior, batch, chunk),
            candidates,
            self._chunk_size,
        )
        return full, projected
