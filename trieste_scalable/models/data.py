"""Validation of Trieste datasets and their aggregation over repeated inputs.

Trieste's loops append every evaluation as a new row (``Dataset.__add__`` is a plain concat), so
repeated inputs arrive as duplicate rows. Our models keep only unique inputs with counts, sums and
the total sum of squares: memory and cost grow with unique points, not evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset


@dataclass(frozen=True)
class ReplicatedData:
    """Sufficient statistics of a dataset with repeated inputs.

    :ivar inputs: Unique inputs [n, D] (first-occurrence order).
    :ivar counts: Evaluations of each unique input [n].
    :ivar sums: Sum of the observations at each unique input [n].
    :ivar sum_squares: Sum of the squared observations over all evaluations.
    :ivar within_sum_squares: :math:`\\sum_i \\sum_j (y_{ij} - \bar y_i)^2`, computed by two
        passes (stable, unlike :math:`\\sum y^2 - n \bar y^2`).
    """

    inputs: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    sum_squares: float
    within_sum_squares: float

    @property
    def num_evaluations(self) -> int:
        return int(self.counts.sum())

    @property
    def means(self) -> np.ndarray:
        return self.sums / self.counts

    @property
    def variance(self) -> float:
        """The variance of every observation (0 for none)."""
        n = self.num_evaluations
        return max(self.sum_squares / n - (self.sums.sum() / n) ** 2, 0.0) if n else 0.0

    def same_as(self, other: ReplicatedData) -> bool:
        """Whether these are ``other``'s data exactly."""
        return (
            self.inputs.shape == other.inputs.shape
            and np.array_equal(self.counts, other.counts)
            and np.array_equal(self.sums, other.sums)
            and np.array_equal(self.inputs, other.inputs)
            and self.sum_squares == other.sum_squares
        )

    def extends(self, other: ReplicatedData) -> bool:
        """Whether these data are ``other`` plus further evaluations, as Trieste's loops append
        them (``other``'s unique inputs first, in order, each evaluated at least as often)."""
        n = other.inputs.shape[0]
        return (
            self.inputs.shape[0] >= n
            and np.array_equal(self.inputs[:n], other.inputs)
            and bool(np.all(self.counts[:n] >= other.counts))
        )


def validate_dataset(
    dataset: Dataset, dtype: tf.DType, input_dim: Optional[int] = None
) -> tuple[np.ndarray, np.ndarray]:
    """Check a dataset for a single-output model and return it as NumPy arrays.

    :raise TypeError: If the dtype is not the model's.
    :raise ValueError: On wrong ranks or shapes, an empty dataset, or non-finite values.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"expected a trieste Dataset, got {type(dataset).__name__}")
    x, y = dataset.query_points, dataset.observations
    for name, value in (("query_points", x), ("observations", y)):
        if value.dtype != dtype:
            raise TypeError(f"{name} must have the model's dtype {dtype.name}, got {value.dtype}")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise ValueError(
            f"query_points must be [N, D] and observations [N, 1], got {x.shape} and {y.shape}"
        )
    if y.shape[1] != 1:
        raise ValueError(
            f"this model has a single output: observations must be [N, 1], got {y.shape}"
        )
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"got {x.shape[0]} query points but {y.shape[0]} observations")
    if x.shape[0] == 0:
        raise ValueError("the dataset is empty: at least one evaluated point is needed")
    if input_dim is not None and x.shape[1] != input_dim:
        raise ValueError(f"query_points must have {input_dim} columns, got {x.shape[1]}")
    x_np, y_np = np.asarray(x), np.asarray(y)
    if not np.all(np.isfinite(x_np)):
        raise ValueError("query_points contain NaN or inf")
    bad = ~np.isfinite(y_np[:, 0])
    if bad.any():
        raise ValueError(
            f"observations contain {int(bad.sum())} NaN/inf values (first at row "
            f"{int(np.flatnonzero(bad)[0])}); the model was left unchanged"
        )
    return x_np, y_np


def aggregate(x: np.ndarray, y: np.ndarray) -> ReplicatedData:
    """Group identical rows of ``x`` [N, D] and sum their observations ``y`` [N, 1]."""
    unique, first_index, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first_index, kind="stable")  # keep first-occurrence order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    groups = rank[inverse]
    counts = np.bincount(groups, minlength=order.size).astype(x.dtype)
    sums = np.bincount(groups, weights=y[:, 0], minlength=order.size).astype(x.dtype)
    residuals = y[:, 0] - (sums / counts)[groups]
    return ReplicatedData(
        inputs=unique[order],
        counts=counts,
        sums=sums,
        sum_squares=float(np.sum(y[:, 0] ** 2)),
        within_sum_squares=float(np.sum(residuals**2)),
    )
