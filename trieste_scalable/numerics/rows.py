"""Rows in NumPy: which rows of one array appear in another, and where (vectorised), and arrays
TensorFlow can share without a copy. No TensorFlow here: building a library store loads none."""

from __future__ import annotations

import numpy as np

ALIGNMENT = 64  # bytes: Eigen's largest (AVX-512) alignment, which TensorFlow's CPU kernels use


def row_keys(points: np.ndarray) -> np.ndarray:
    """One opaque key per row (its bytes) [N], so row membership is a vectorised ``np.isin`` and
    row lookup a ``np.searchsorted``; no Python loop over rows."""
    rows = np.ascontiguousarray(points)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))[:, 0]


def first_occurrences(table: np.ndarray, chunk_size: int = 65536) -> np.ndarray:
    """Index of the first occurrence of each distinct row of ``table`` [A, D], ascending [U].

    As ``np.unique(..., return_index=True)`` but without its sorted copy of the rows: a stable
    sort order (8 bytes a row) and adjacent rows compared ``chunk_size`` at a time, so a library
    of millions of packed fingerprints is not duplicated to deduplicate it.
    """
    keys = row_keys(table)
    order = np.argsort(keys, kind="stable")  # equal rows keep their order: the first leads
    new = np.ones(len(order), dtype=bool)
    for start in range(1, len(order), chunk_size):
        stop = min(start + chunk_size, len(order))
        new[start:stop] = keys[order[start:stop]] != keys[order[start - 1 : stop - 1]]
    return np.sort(order[new])


class RowIndex:
    """Finds the position of rows in a fixed table of rows.

    Holds a view of the table and its sort order (8 bytes a row), not a sorted copy: a library
    of millions of packed fingerprints is not duplicated. Lookups cost O(K log A).

    :param table: The rows to look up in [A, D] (C-contiguous: a view is kept).
    """

    def __init__(self, table: np.ndarray):
        self._dtype = table.dtype
        self._keys = row_keys(table)
        self._order = np.argsort(self._keys)

    def find(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position in the table of each row [K] (meaningful where found) and whether it is
        there [K]."""
        keys = row_keys(np.asarray(rows, dtype=self._dtype))
        if not keys.size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
        rank = np.searchsorted(self._keys, keys, sorter=self._order)
        position = self._order[np.minimum(rank, len(self._order) - 1)]
        return position, self._keys[position] == keys

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """Position in the table of each row [K].

        :raise ValueError: If a row is not in the table.
        """
        position, found = self.find(rows)
        if not found.all():
            raise ValueError("query point is not a candidate of this problem")
        return position

    def mask(self, rows: np.ndarray) -> np.ndarray:
        """Whether each table row is among ``rows`` [A] (every copy of a repeated table row;
        rows not in the table are ignored)."""
        keys = row_keys(np.asarray(rows, dtype=self._dtype))
        first = np.searchsorted(self._keys, keys, side="left", sorter=self._order)
        last = np.searchsorted(self._keys, keys, side="right", sorter=self._order)
        counts = last - first
        ends = np.cumsum(counts)
        ranks = np.repeat(first - (ends - counts), counts) + np.arange(ends[-1] if ends.size else 0)
        mask = np.zeros(len(self._keys), dtype=bool)
        mask[self._order[ranks]] = True
        return mask


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised C-contiguous array aligned to ``ALIGNMENT`` bytes (see
    :func:`~.bits.shared_tensor`)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = np.empty(size + ALIGNMENT, dtype=np.uint8)
    offset = -buffer.ctypes.data % ALIGNMENT
    return buffer[offset : offset + size].view(dtype).reshape(shape)
