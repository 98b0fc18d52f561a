"""The in-batch (hallucinated) posterior that BBKB, BKB and GP-BUCB build batches with.

A rule asks for posterior quantities over candidates through this object and never touches the
model's matrices. Within a batch the dictionary, the embedding and the mean are frozen; the
selected points only lower the variances, with no feedback needed
(:mod:`~trieste_scalable.numerics.hallucination`).
"""

from __future__ import annotations

import tensorflow as tf

from ..numerics import dtc
from ..numerics.dtc import CompiledDTC
from ..numerics.hallucination import HallucinatedPoints
from ..numerics.linalg import SliceableRows, chunked_map


class InBatchPosterior:
    """Batch-start posterior plus the points selected so far in the batch.

    :param ops: The model's compiled numerics.
    :param posterior: The batch-start DTC posterior.
    :param extend: Whether the posterior is exact (an exact dictionary): selected points are then
        conditioned on through the whole batch-start covariance, as if they joined the
        dictionary.
    :param chunk_size: Candidates per compiled call.
    """

    def __init__(
        self, ops: CompiledDTC, posterior: dtc.DTCPosterior, extend: bool, chunk_size: int
    ):
        self._ops = ops
        self._posterior = posterior
        self._hallucinated = HallucinatedPoints.none(posterior)  # the points selected so far
        self._extend = extend
        self._chunk_size = chunk_size

    @property
    def noise(self) -> float:
        """The regulariser :math:`\\lambda`."""
        return float(self._posterior.noise)

    @property
    def exact(self) -> bool:
        """Whether the posterior is exact (an exact dictionary)."""
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
        ops = self._ops
        variance = ops.hallucinated_variance_exact if self._extend else ops.hallucinated_variance
        return variance(self._posterior, self._hallucinated, candidates)

    def add(self, points: tf.Tensor) -> None:
        """Hallucinate selected points [K, D] (one compiled call, O(K M (M + t)) for t points
        selected before; no observation: the variances do not depend on it)."""
        hallucinate = self._ops.hallucinate_exact if self._extend else self._ops.hallucinate
        self._hallucinated = hallucinate(self._posterior, self._hallucinated, points)

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
