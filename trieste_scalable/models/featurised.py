"""A model of the points of one search space through features computed from them: a make-on-demand
library's reagent tuples seen through their products' fingerprints
(:class:`~trieste_scalable.problems.combinatorial_space.CombinatorialSearchSpace`).

Trieste's loops hold this model and tell it datasets of tuples; the model it wraps (any of this
package's fingerprint models, or Trieste's) only ever sees feature rows. Datasets grow by
appending, so only the rows a dataset gained since the last call are featurised.

The evaluated rows are kept once, as the tensor the wrapped model is told: every call for the
same dataset (a tell's update and optimisation, the rule's acquisition) returns that tensor, and
our models share a dataset's tensor instead of copying it (:mod:`~trieste_scalable.models.data`).
At 10,000 evaluations of 6,144 bits a copy is 490 MB: a fresh tensor a call (and a NumPy copy
besides) held 4.6 GB at the peak of a make-on-demand screen (``benchmarks/combinatorial.py``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.models.interfaces import TrainableProbabilisticModel
from trieste.types import TensorType

Featurise = Callable[[np.ndarray], np.ndarray]
"""Feature rows [N, W] of points [N, C]; raises ``ValueError`` on a point without features."""


class FeaturisedModel(TrainableProbabilisticModel):
    """``inner`` applied to ``featurise`` of the query points (module docstring).

    :param inner: The model of feature rows.
    :param featurise: Maps points [N, C] to feature rows [N, W].
    :param width: W.
    """

    def __init__(self, inner: TrainableProbabilisticModel, featurise: Featurise, width: int):
        self.inner = inner
        self._featurise = featurise
        self.width = width
        self._points = np.zeros((0, 0))
        self._rows = tf.zeros([0, width], tf.float64)

    def features(self, points: TensorType) -> tf.Tensor:
        """Feature rows of ``points`` [..., C]: [..., W], in float64 (in a compiled function too,
        where Trieste's acquisition functions call ``predict``: the featurisation then runs as
        a ``tf.numpy_function``)."""

        def rows_of(values: np.ndarray) -> np.ndarray:
            flat = np.asarray(values).reshape(-1, np.shape(values)[-1])
            rows = np.asarray(self._featurise(flat), dtype=np.float64)
            return rows.reshape(*np.shape(values)[:-1], self.width)

        if tf.executing_eagerly():
            return tf.constant(rows_of(np.asarray(points)))
        rows = tf.numpy_function(rows_of, [points], tf.float64, stateful=False)
        rows.set_shape(points.shape[:-1].concatenate([self.width]))
        return rows

    def dataset_features(self, dataset: Dataset) -> Dataset:
        """``dataset`` with feature rows for query points, featurising only the rows it gained
        since the last call (all of them if its first rows changed); the same rows tensor for
        the same points (module docstring)."""
        points = np.asarray(dataset.query_points)
        known = len(self._points)
        if known and (known > len(points) or not np.array_equal(points[:known], self._points)):
            known = 0
        if known < len(points):
            new = tf.constant(np.asarray(self._featurise(points[known:]), dtype=np.float64))
            self._rows = new if not known else tf.concat([self._rows, new], axis=0)
        elif not len(points):
            self._rows = tf.zeros([0, self.width], tf.float64)
        self._points = points
        return Dataset(self._rows, dataset.observations)

    def predict(self, query_points: TensorType) -> tuple[TensorType, TensorType]:
        """The inner model's marginals at the features of ``query_points`` [..., C]."""
        return self.inner.predict(self.features(query_points))

    def predict_y(self, query_points: TensorType) -> tuple[TensorType, TensorType]:
        """The inner model's marginals of observations at the features of ``query_points``."""
        return self.inner.predict_y(self.features(query_points))  # type: ignore[attr-defined]

    def sample(self, query_points: TensorType, num_samples: int) -> TensorType:
        """The inner model's samples at the features of ``query_points`` [..., N, C]."""
        return self.inner.sample(self.features(query_points), num_samples)

    def update(self, dataset: Dataset) -> None:
        """Update the inner model with the featurised ``dataset``."""
        self.inner.update(self.dataset_features(dataset))

    def optimize(self, dataset: Dataset) -> Any:
        """Train the inner model on the featurised ``dataset``."""
        return self.inner.optimize(self.dataset_features(dataset))

    def log(self, dataset: Optional[Dataset] = None) -> None:
        """The inner model's summaries (of the featurised ``dataset``)."""
        self.inner.log(None if dataset is None else self.dataset_features(dataset))

    def __repr__(self) -> str:
        return f"FeaturisedModel({self.inner!r})"
