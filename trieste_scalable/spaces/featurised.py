"""A model of the points of one search space through features computed from them: a make-on-demand
space's reagent tuples seen through their products' fingerprints
(:class:`~trieste_scalable.spaces.search_space.MakeOnDemandSpace`).

Trieste's loops hold this model and tell it datasets of tuples; the model it wraps (any of this
package's fingerprint models, or Trieste's) only ever sees feature rows. It is Trieste's
:class:`~trieste.models.interfaces.EncodedTrainableProbabilisticModel` whose encoder is a
:class:`FeatureRows`: datasets grow by appending, so only the rows a dataset gained since the
last call are featurised, and the evaluated rows are kept once, as the tensor the wrapped model
is told (our models share a dataset's tensor instead of copying it:
:mod:`~trieste_scalable.models.data`; what a copy a call cost: ``design_measurements.md``).
Where the wrapped model reads packed bits (a Nyström GP built with ``packed_width``), they are
kept packed, so 100,000 evaluations of 6,144 bits take 77 MB, not 4.9 GB.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.models.interfaces import (
    EncodedSupportsPredictY,
    EncodedTrainableProbabilisticModel,
    SupportsGetKernel,
    SupportsGetObservationNoise,
    SupportsPredictY,
    TrainableProbabilisticModel,
)
from trieste.types import TensorType

Featurise = Callable[[np.ndarray], np.ndarray]
"""Feature rows [N, W] of points [N, C]; raises ``ValueError`` on a point without features."""


class FeaturedSpace(Protocol):
    """A search space whose points have packed 0/1 features
    (:class:`~trieste_scalable.spaces.search_space.MakeOnDemandSpace`,
    :class:`~trieste_scalable.spaces.catalog_space.CatalogSpace`)."""

    width: int

    def features(self, points: TensorType) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``points`` whose features exist [K] and their packed features."""


class FeatureRows:
    """The feature rows of points (module docstring): of query points a call, and of a growing
    dataset's points kept once (:meth:`dataset`).

    :param featurise: Maps points [N, C] to feature rows [N, W], or where ``packed``, to their
        packed bits [N, ceil(W / 8)] (uint8).
    :param width: W.
    :param packed: Whether :meth:`dataset` keeps the evaluated rows as packed bits (a model
        built with ``packed_width=W`` reads them so: 768 bytes an evaluation at W = 6,144,
        against 49 KB as float64 rows); query points are unpacked either way.
    """

    def __init__(self, featurise: Featurise, width: int, packed: bool = False):
        self._featurise = featurise
        self.width = width
        self.packed = packed
        self._points = np.zeros((0, 0))
        self._rows = self._empty()

    @classmethod
    def of(cls, space: FeaturedSpace, packed: bool = False) -> FeatureRows:
        """The 0/1 features of ``space``'s points: unpacked in float64, or packed bits where
        ``packed`` (``ValueError`` naming the first point without features)."""

        def featurise(points: np.ndarray) -> np.ndarray:
            kept, bits = space.features(points)
            if len(kept) < len(points):
                lost = sorted(set(range(len(points))) - set(kept.tolist()))[0]
                raise ValueError(f"the point {np.asarray(points)[lost]} has no features")
            if packed:
                return bits
            return np.unpackbits(bits, axis=1)[:, : space.width].astype(np.float64)

        return cls(featurise, space.width, packed)

    def __call__(self, points: TensorType) -> tf.Tensor:
        """Feature rows of ``points`` [..., C]: [..., W], in float64 (in a compiled function too,
        where Trieste's acquisition functions call ``predict``: the featurisation then runs as
        a ``tf.numpy_function``)."""

        def rows_of(values: np.ndarray) -> np.ndarray:
            flat = np.asarray(values).reshape(-1, np.shape(values)[-1])
            rows = self._featurise(flat)
            if self.packed:
                rows = np.unpackbits(rows, axis=1)[:, : self.width]
            rows = np.asarray(rows, dtype=np.float64)
            return rows.reshape(*np.shape(values)[:-1], self.width)

        if tf.executing_eagerly():
            return tf.constant(rows_of(np.asarray(points)))
        rows = tf.numpy_function(rows_of, [points], tf.float64, stateful=False)
        rows.set_shape(points.shape[:-1].concatenate([self.width]))
        return rows

    def dataset(self, dataset: Dataset) -> Dataset:
        """``dataset`` with feature rows for query points (packed bits where ``packed``),
        featurising only the rows it gained since the last call (all of them if its first rows
        changed); the same rows tensor for the same points (module docstring)."""
        points = np.asarray(dataset.query_points)
        known = len(self._points)
        if known and (known > len(points) or not np.array_equal(points[:known], self._points)):
            known = 0
        if known < len(points):
            new = tf.constant(self._checked(self._featurise(points[known:])))
            self._rows = new if not known else tf.concat([self._rows, new], axis=0)
        elif not len(points):
            self._rows = self._empty()
        self._points = points
        return Dataset(self._rows, dataset.observations)

    def _checked(self, rows: np.ndarray) -> np.ndarray:
        """Featurised rows in the dtype :meth:`dataset` keeps."""
        return np.asarray(rows, dtype=np.uint8 if self.packed else np.float64)

    def _empty(self) -> tf.Tensor:
        if self.packed:
            return tf.zeros([0, -(-self.width // 8)], tf.uint8)
        return tf.zeros([0, self.width], tf.float64)


class FeaturisedModel(EncodedTrainableProbabilisticModel, EncodedSupportsPredictY):
    """``inner`` applied to the feature rows of the query points (module docstring).

    Built in one step: the inner model is built from ``rows.dataset(data)``, so the two share
    one copy of the evaluated rows.

    :param inner: The model of feature rows.
    :param rows: The feature rows of this model's points.
    """

    def __init__(self, inner: TrainableProbabilisticModel, rows: FeatureRows):
        self.inner = inner
        self.rows = rows

    @property
    def encoder(self) -> FeatureRows:
        """The feature rows of query points."""
        return self.rows

    def encode(self, points: Any) -> Any:
        """Feature rows of query points [..., C], or a dataset with feature rows, featurised
        where it grew (:meth:`FeatureRows.dataset`; Trieste's would featurise it whole)."""
        return self.rows.dataset(points) if isinstance(points, Dataset) else self.rows(points)

    def predict_encoded(self, query_points: TensorType) -> tuple[TensorType, TensorType]:
        return self.inner.predict(query_points)

    def predict_y_encoded(self, query_points: TensorType) -> tuple[TensorType, TensorType]:
        if not isinstance(self.inner, SupportsPredictY):
            raise NotImplementedError(f"{self.inner!r} has no predict_y")
        return self.inner.predict_y(query_points)

    def sample_encoded(self, query_points: TensorType, num_samples: int) -> TensorType:
        return self.inner.sample(query_points, num_samples)

    def update_encoded(self, dataset: Dataset) -> None:
        self.inner.update(dataset)

    def optimize_encoded(self, dataset: Dataset) -> Any:
        return self.inner.optimize(dataset)

    @property
    def outcome_transform(self) -> Any:
        """The inner model's fitted outcome transform (``None`` where it has none)."""
        return getattr(self.inner, "outcome_transform", None)

    def get_kernel(self) -> Any:
        """The inner model's kernel (over feature rows)."""
        if not isinstance(self.inner, SupportsGetKernel):
            raise NotImplementedError(f"{self.inner!r} has no kernel")
        return self.inner.get_kernel()

    def get_observation_noise(self) -> TensorType:
        """The inner model's observation noise variance."""
        if not isinstance(self.inner, SupportsGetObservationNoise):
            raise NotImplementedError(f"{self.inner!r} has no observation noise")
        return self.inner.get_observation_noise()

    def log(self, dataset: Optional[Dataset] = None) -> None:
        """The inner model's summaries (of the featurised ``dataset``)."""
        self.inner.log(None if dataset is None else self.encode(dataset))

    def __repr__(self) -> str:
        return f"FeaturisedModel({self.inner!r})"
