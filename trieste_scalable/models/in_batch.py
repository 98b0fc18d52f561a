"""The in-batch (hallucinated) posterior that BBKB, BKB and GP-BUCB build batches with.

A rule asks for posterior quantities over candidates through this object and never touches the
model's matrices. Within a batch the dictionary, the embedding and the mean are frozen; the
selected points only lower the variances, with no feedback needed
(:mod:`~trieste_scalable.numerics.hallucination`).

So what a row needs from the batch-start posterior (its
:class:`~trieste_scalable.numerics.hallucination.RowFeatures`) is fixed within the batch, and
this object keeps it for the rows it is asked about (:class:`FeatureCache`). A lazy argmin asks
about the same few best candidates after every selected point, and adds the one it selected: each of
those asks cost two triangular solves against [M, M] factors, memory-bound for a few rows, and
keeping their features halves it (measured: ``benchmarks/results/design_measurements.md``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Hashable, Iterable, Optional, Protocol

import numpy as np
import tensorflow as tf

from ..numerics import dtc
from ..numerics.dtc import CompiledDTC
from ..numerics.dtc_posterior import DTCPosterior
from ..numerics.hallucination import HallucinatedPoints, RowFeatures
from ..numerics.host_tensors import host_tensor
from ..numerics.linalg import SliceableRows, chunked_map


class RemoteMarginals(Protocol):
    """Computes the batch-start marginals of a candidate set held elsewhere, e.g. a library
    store's shards on Ray actors (:class:`~trieste_scalable.cluster.scoring_actors.ScoringActors`),
    equal to those :class:`InBatchPosterior` computes over the whole set in this process (row by
    row: each row's values do not depend on the rows it is chunked with). Here, not beside the
    rules' protocols: the models do not import the rules."""

    @property
    def num_candidates(self) -> int:
        """N, the candidates (in the order of the rule's search space)."""

    def marginals(
        self, kernel: Any, posterior: DTCPosterior, chunk_size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The mean and ridge-leverage variance [N] of every candidate under ``posterior``
        (:func:`~trieste_scalable.numerics.dtc.marginals` with ``kernel``, ``chunk_size`` rows
        a call)."""


class InBatchPosterior:
    """Batch-start posterior plus the points selected so far in the batch.

    :param ops: The model's compiled numerics.
    :param posterior: The batch-start DTC posterior.
    :param extend: Whether the posterior is exact (the dictionary holds every evaluated input,
        by the policy or by a draw's chance): selected points are then
        conditioned on through the whole batch-start covariance, as if they joined the
        dictionary.
    :param chunk_size: Candidates per compiled call.
    :param by_chance: Whether an exact posterior is a random draw's chance (a ridge-leverage
        draw that kept every input), not the dictionary policy's promise.
    """

    def __init__(
        self,
        ops: CompiledDTC,
        posterior: dtc.DTCPosterior,
        extend: bool,
        chunk_size: int,
        by_chance: bool = False,
    ):
        self._ops = ops
        self._posterior = self._batch_start = posterior
        self._hallucinated = HallucinatedPoints.none(posterior)  # the points selected so far
        self._extend = extend
        self._by_chance = by_chance
        self._chunk_size = chunk_size
        self._features = self._feature_cache()

    @property
    def noise(self) -> float:
        """The regulariser :math:`\\lambda`."""
        return float(self._posterior.noise)

    @property
    def exact(self) -> bool:
        """Whether the posterior is exact (the dictionary holds every evaluated input)."""
        return self._extend

    @property
    def guaranteed_exact(self) -> bool:
        """Whether it is exact by the dictionary policy, not by a random draw that happened to
        keep every input."""
        return self._extend and not self._by_chance

    @property
    def dictionary_size(self) -> int:
        """Dictionary size at the batch start."""
        return self._posterior.size

    def batch_start_marginals(
        self, candidates: SliceableRows, remote: Optional[RemoteMarginals] = None
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Batch-start mean and ridge-leverage variance of each candidate [N] (chunked); with
        ``remote``, computed there from the batch-start posterior, in chunks of the same size.

        :raise ValueError: If ``remote`` holds another number of candidates.
        """
        if remote is not None:
            if remote.num_candidates != int(candidates.shape[0]):
                raise ValueError(
                    f"the remote candidates are {remote.num_candidates} rows, the search "
                    f"space's {int(candidates.shape[0])}"
                )
            parts = remote.marginals(self._ops.kernel, self._batch_start, self._chunk_size)
            dtype = self._batch_start.mean.dtype
            return host_tensor(parts[0], dtype), host_tensor(parts[1], dtype)
        mean, var = chunked_map(
            lambda chunk: self._ops.marginals(self._batch_start, chunk),
            candidates,
            self._chunk_size,
        )
        return mean, var

    def variance(self, candidates: tf.Tensor, keys: Optional[Iterable[int]] = None) -> tf.Tensor:
        """Ridge-leverage variance [N] under the hallucinated posterior (one compiled call).

        :param keys: The rows' indices among the batch's candidates, which key their kept
            features (default: a digest of each row's bytes)."""
        ops = self._ops
        variance = ops.hallucinated_variance_exact if self._extend else ops.hallucinated_variance
        candidates = tf.convert_to_tensor(candidates)
        features = self._features(candidates, keys)
        return variance(self._posterior, self._hallucinated, candidates, features)

    def marginals(self, points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Batch-start mean and in-batch ridge-leverage variance [N] of ``points`` [N, D],
        differentiable in the points (nothing cached: the refinement on a ``Box`` asks about
        points no other call sees)."""
        ops = self._ops
        variance = ops.hallucinated_variance_exact if self._extend else ops.hallucinated_variance
        mean, _ = ops.marginals(self._posterior, points)
        features = ops.row_features(self._posterior, points)
        return mean, variance(self._posterior, self._hallucinated, points, features)

    def add(self, points: tf.Tensor, keys: Optional[Iterable[int]] = None) -> None:
        """Hallucinate selected points [K, D] (one compiled call, O(K M (M + t)) for t points
        selected before; no observation: the variances do not depend on it). Over a fixed
        dictionary, once t reaches M the points are folded into the posterior
        (:func:`~trieste_scalable.numerics.hallucination.fold`) and t starts again."""
        hallucinate = self._ops.hallucinate_exact if self._extend else self._ops.hallucinate
        points = tf.convert_to_tensor(points)
        features = self._features(points, keys)
        self._hallucinated = hallucinate(self._posterior, self._hallucinated, points, features)
        if not self._extend and self.num_hallucinated >= self._posterior.capacity:
            self._posterior = self._ops.fold(self._posterior, self._hallucinated)
            self._hallucinated = HallucinatedPoints.none(self._posterior)
            self._features = self._feature_cache()

    @property
    def num_hallucinated(self) -> int:
        """t, the points hallucinated and not folded into the posterior yet."""
        return int(self._hallucinated.points.shape[0])

    def _feature_cache(self) -> FeatureCache:
        ops, posterior = self._ops, self._posterior
        prepared = ops.row_features_prepared
        if prepared is None:
            return FeatureCache(lambda x: ops.row_features(posterior, x), posterior.capacity)
        # the dictionary made once into what each kernel row reads (Tanimoto.prepare): made
        # on every call, it was most of a pick's refresh (1,000 x 6,144: 8 ms of 10)
        rows, counts = ops.kernel.prepare(posterior.inducing)
        return FeatureCache(lambda x: prepared(posterior, rows, counts, x), posterior.capacity)

    def local_terms(
        self, batch: tf.Tensor, candidates: SliceableRows
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Sums over ``batch`` [B, D] of the squared full and projected batch-start covariances
        with each candidate [N] (the local stopping statistic of BBKB Lemma 3)."""
        full, projected = chunked_map(
            lambda chunk: self._ops.local_terms(self._batch_start, batch, chunk),
            candidates,
            self._chunk_size,
        )
        return full, projected


_DIGEST_BYTES = 16
"""A row's key: a 128-bit BLAKE2b digest of its bytes (collisions: never in practice)."""


class FeatureCache:
    """The :class:`~trieste_scalable.numerics.hallucination.RowFeatures` of rows asked about
    before, keyed by a digest of each row's bytes, within a memory bound; the rows not held
    are computed in one call and kept while the bound allows.

    :param compute: Maps rows [K, D] (K >= 1) to their features ([K, M], [K, M], [K]).
    :param capacity: M, the features' width.
    :param max_bytes: Memory the kept features may take.
    """

    def __init__(
        self,
        compute: Callable[[tf.Tensor], RowFeatures],
        capacity: int,
        max_bytes: int = 64 * 2**20,
    ):
        self._compute = compute
        self._max_rows = max_bytes // (8 * (2 * capacity + 1) + _DIGEST_BYTES)
        self._kept: dict[Hashable, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def __call__(self, rows: tf.Tensor, keys: Optional[Iterable[int]] = None) -> RowFeatures:
        """The features of ``rows`` [N, D], in their order.

        :param keys: Integers naming the rows (one row each, always the same row), so they need
            no digest (which, for rows of thousands of columns, costs more than their features);
            by default a digest of each row's bytes (never equal to an integer)."""
        named: list[Hashable]
        if keys is not None:
            named = [int(key) for key in keys]
        else:
            named = [hashlib.blake2b(r, digest_size=_DIGEST_BYTES).digest() for r in rows.numpy()]
        if not named:
            return self._compute(rows)
        first = {key: i for i, key in reversed(list(enumerate(named)))}
        missing = [i for key, i in first.items() if key not in self._kept]
        new: dict[Hashable, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        if missing:
            asked = tf.gather(rows, host_tensor(missing, tf.int64))
            z, p, residual = (t.numpy() for t in self._compute(asked))
            new = {named[i]: (z[j], p[j], residual[j]) for j, i in enumerate(missing)}
            for key in list(new)[: max(self._max_rows - len(self._kept), 0)]:
                self._kept[key] = new[key]
        parts = [self._kept[key] if key in self._kept else new[key] for key in named]
        z, p, residual = (np.stack(column) for column in zip(*parts))
        dtype = rows.dtype
        return RowFeatures(*(host_tensor(column, dtype) for column in (z, p, residual)))
