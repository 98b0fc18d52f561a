"""Validation of Trieste datasets and their aggregation over repeated inputs.

Trieste's loops append every evaluation as a new row (``Dataset.__add__`` is a plain concat), so
repeated inputs arrive as duplicate rows. Our models keep only unique inputs with counts, sums and
the total sum of squares: memory and cost grow with unique points, not evaluations.

Where no input repeats (a screening campaign's, which excludes evaluated molecules), the unique
inputs *are* the dataset's rows: :func:`aggregate` returns them without a copy, and
:attr:`ReplicatedData.input_tensor` is the dataset's own tensor. At 24,000 evaluations of 6,144
bits a copy is 1.2 GB, and NumPy's ``unique(axis=0)`` (a lexicographic sort of whole rows) took
seconds and several copies (measured: ``benchmarks/results/design_measurements.md``); rows are
grouped by a hash of their bytes instead, and rows grouped together are checked equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
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
    :ivar source: The tensor [n, D] whose memory ``inputs`` views, if any (the dataset's
        ``query_points`` when no input repeats).
    """

    inputs: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    sum_squares: float
    within_sum_squares: float
    source: Optional[tf.Tensor] = field(default=None, compare=False, repr=False)

    @cached_property
    def input_tensor(self) -> tf.Tensor:
        """``inputs`` as a tensor [n, D]: ``source`` itself, else one conversion kept for every
        later use (each ``tf.constant`` of the inputs is a copy)."""
        return self.source if self.source is not None else tf.constant(self.inputs)

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
    dataset: Dataset, dtype: tf.DType, input_dim: Optional[int] = None, packed: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Check a dataset for a single-output model and return it as NumPy arrays.

    :param packed: Whether the query points are packed bits (uint8 [N, ceil(D / 8)]; then
        ``input_dim`` counts bytes).
    :raise TypeError: If the dtype is not the model's (uint8 for packed query points).
    :raise ValueError: On wrong ranks or shapes, an empty dataset, or non-finite values.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"expected a trieste Dataset, got {type(dataset).__name__}")
    x, y = dataset.query_points, dataset.observations
    expected = ((tf.uint8 if packed else dtype, "query_points", x), (dtype, "observations", y))
    for want, name, value in expected:
        if value.dtype != want:
            what = "packed bits," if packed and name == "query_points" else "the model's dtype"
            raise TypeError(f"{name} must have {what} {want.name}, got {value.dtype}")
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
    if not packed and not np.all(np.isfinite(x_np)):
        raise ValueError("query_points contain NaN or inf")
    bad = ~np.isfinite(y_np[:, 0])
    if bad.any():
        raise ValueError(
            f"observations contain {int(bad.sum())} NaN/inf values (first at row "
            f"{int(np.flatnonzero(bad)[0])}); the model was left unchanged"
        )
    return x_np, y_np


def aggregate(x: np.ndarray, y: np.ndarray, source: Optional[tf.Tensor] = None) -> ReplicatedData:
    """Group identical rows of ``x`` [N, D] (any dtype: packed bits too) and sum their
    observations ``y`` [N, 1] (counts and sums in ``y``'s dtype).

    :param source: A tensor whose memory ``x`` views (the dataset's ``query_points``): where
        no row repeats, the result's inputs are ``x`` itself and its tensor ``source``.
    """
    groups, first = first_occurrences(x)
    counts = np.bincount(groups, minlength=first.size).astype(y.dtype)
    sums = np.bincount(groups, weights=y[:, 0], minlength=first.size).astype(y.dtype)
    residuals = y[:, 0] - (sums / counts)[groups]
    unique = first.size == x.shape[0]
    return ReplicatedData(
        inputs=x if unique else x[first],
        counts=counts,
        sums=sums,
        sum_squares=float(np.sum(y[:, 0] ** 2)),
        within_sum_squares=float(np.sum(residuals**2)),
        source=source if unique else None,
    )


HASH_CHUNK = 1024
"""Rows hashed at a time (bounds the temporaries of :func:`row_hashes`)."""
_MIX = np.uint64(0xBF58476D1CE4E5B9)


def row_hashes(x: np.ndarray) -> np.ndarray:
    """A 64-bit hash [N] of each row of ``x`` [N, D] (float, or packed bits), equal for rows of
    equal values:
    each 8-byte word mixed (splitmix64's finaliser) and weighted by an odd multiplier of its
    column, summed modulo 2^64; -0.0 is hashed as 0.0."""
    num_bytes = x.shape[1] * x.itemsize
    words = -(-num_bytes // 8)
    multipliers = np.random.default_rng(0).integers(0, 2**63, size=words, dtype=np.uint64)
    multipliers = multipliers * np.uint64(2) + np.uint64(1)
    hashes = np.empty(x.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, x.shape[0], HASH_CHUNK):
            rows = x[start : start + HASH_CHUNK]
            # a C-contiguous copy, -0.0 -> 0.0, of float rows; packed bits are hashed as they are
            rows = rows + 0.0 if x.dtype.kind == "f" else np.ascontiguousarray(rows)
            raw = rows.view(np.uint8).reshape(len(rows), num_bytes)
            if num_bytes % 8:
                raw = np.pad(raw, ((0, 0), (0, 8 * words - num_bytes)))
            word = raw.view(np.uint64)
            word = (word ^ (word >> np.uint64(31))) * _MIX
            word ^= word >> np.uint64(29)
            hashes[start : start + len(rows)] = (word * multipliers).sum(axis=1)
    return hashes


def first_occurrences(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The group of each row of ``x`` [N, D] (rows of equal values share one) [N], numbered
    in first-occurrence order, and the index of each group's first row, ascending [n].

    Rows are grouped by :func:`row_hashes`; rows a hash groups are compared, and a collision
    (distinct rows of one hash) falls back to NumPy's exact ``unique(axis=0)``."""
    _, first, inverse = np.unique(row_hashes(x), return_index=True, return_inverse=True)
    groups, first = _in_first_occurrence_order(first, inverse)
    repeated = np.flatnonzero(first[groups] != np.arange(x.shape[0]))
    if repeated.size and not np.array_equal(x[repeated], x[first[groups[repeated]]]):
        _, first, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
        groups, first = _in_first_occurrence_order(first, inverse)
    return groups, first


def _in_first_occurrence_order(
    first: np.ndarray, inverse: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique``'s groups (sorted by key) renumbered by their first row."""
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.reshape(-1)], first[order]
