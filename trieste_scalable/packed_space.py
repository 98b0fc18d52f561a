"""A discrete search space of 0/1 rows (molecular fingerprints) held bit-packed.

A library of N fingerprints of D bits takes N D / 8 bytes packed, against 8 N D as the float64
``points`` of Trieste's :class:`~trieste.space.DiscreteSearchSpace` (1.9 M MOSES molecules at
1,024 bits: 243 MB against 15.6 GB). :class:`PackedSearchSpace` is a ``DiscreteSearchSpace``
whose candidates stay packed: this package's rules read them through
:class:`~.numerics.bits.PackedRows`, which unpacks one chunk (or the gathered rows) at a time, so
a step's memory is that of a chunk, not of the library. ``points`` still works for code that
needs the dense matrix (Trieste's own rules), while it fits in
``DENSE_LIMIT_BYTES``; beyond that it raises instead of exhausting memory.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import tensorflow as tf
from trieste.space import DiscreteSearchSpace
from trieste.types import TensorType

from .numerics.bits import PackedRows, aligned_rows, pack_rows, shareable, shared_tensor
from .numerics.rows import RowIndex


class PackedSearchSpace(DiscreteSearchSpace):
    """A :class:`~trieste.space.DiscreteSearchSpace` of 0/1 rows held bit-packed.

    The rows are held once: a writable, C-contiguous uint8 NumPy array is shared with
    TensorFlow, not copied (anything else is copied once).

    :param bits: Packed candidates [N, ceil(width / 8)] (uint8; NumPy, memory-mapped or not).
    :param width: Bits a candidate (the search space's dimension D).
    :param dtype: The dtype of the (unpacked) points, the models and the datasets.
    :raise ValueError: On an empty or malformed set of candidates.
    """

    def __init__(self, bits: np.ndarray | tf.Tensor, width: int, dtype: tf.DType = tf.float64):
        bits = np.asarray(bits)
        if bits.dtype == np.uint8 and not shareable(bits):
            bits = aligned_rows(bits)  # one copy, shared with TensorFlow from here on
        self._hold(PackedRows(shared_tensor(bits), width, dtype))

    @classmethod
    def of_rows(cls, rows: PackedRows, keys: Optional[np.ndarray] = None) -> PackedSearchSpace:
        """The search space of ``rows``, sharing their memory; ``keys``, their row index's
        :func:`~.numerics.rows.index_keys` [2, N] if known, spare the index reading every row
        (a memory-mapped library's pages are then read only where rows are used)."""
        space = cls.__new__(cls)
        space._hold(rows, keys)
        return space

    def _hold(self, rows: PackedRows, keys: Optional[np.ndarray] = None) -> None:
        if len(rows) == 0:
            raise ValueError("a search space needs at least one candidate")
        self.rows = rows
        self._bits = np.asarray(rows.bits)  # a read-only view of the same memory, for the index
        self._dimension = tf.constant(rows.width)
        self._index: Optional[RowIndex] = None
        self._keys = keys

    def __repr__(self) -> str:
        return f"PackedSearchSpace({len(self.rows)} candidates, {self.rows.width} bits)"

    @property
    def dtype(self) -> tf.DType:
        return self.rows.dtype

    @property
    def num_points(self) -> int:
        return len(self.rows)

    @property
    def points(self) -> TensorType:
        """The dense candidates [N, D] (see ``PackedRows.dense``, which may raise)."""
        return self.rows.dense()

    @property
    def lower(self) -> TensorType:
        return tf.zeros([self.rows.width], self.dtype)

    @property
    def upper(self) -> TensorType:
        return tf.ones([self.rows.width], self.dtype)

    def index(self) -> RowIndex:
        """Finds packed rows among the candidates (built once, 16 bytes a candidate)."""
        if self._index is None:
            self._index = RowIndex(self._bits, self._keys)
        return self._index

    def _contains(self, value: TensorType) -> TensorType:
        rows = np.reshape(np.asarray(value), [-1, self.rows.width])
        if not np.all((rows == 0) | (rows == 1)):
            found = np.zeros(len(rows), dtype=bool)
        else:
            found = self.index().find(pack_rows(rows))[1]
        return tf.constant(found.reshape(np.shape(value)[:-1]))

    def sample(self, num_samples: int, seed: Optional[int] = None) -> TensorType:
        """``num_samples`` candidates drawn uniformly with replacement [num_samples, D]."""
        index = np.random.default_rng(seed).integers(self.num_points, size=num_samples)
        return self.rows.gather(index)

    def product(self, other: DiscreteSearchSpace) -> PackedSearchSpace:
        raise NotImplementedError("products of packed search spaces are not supported")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PackedSearchSpace):
            return NotImplemented
        return (
            self.rows.width == other.rows.width
            and self.dtype == other.dtype
            and self.num_points == other.num_points
            and bool(self.index().mask(other._bits).all())
            and bool(other.index().mask(self._bits).all())
        )
