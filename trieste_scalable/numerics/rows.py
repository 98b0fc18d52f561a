"""Rows in NumPy: which rows of one array appear in another, and where (vectorised), and arrays
TensorFlow can share without a copy. No TensorFlow here: building a library store loads none."""

from __future__ import annotations

from typing import Optional

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


def row_hashes(rows: np.ndarray, chunk_size: int = 65536) -> np.ndarray:
    """A 64-bit hash of each row's bytes [N] (vectorised: multiply-xorshift over 8-byte words,
    ``chunk_size`` rows at a time, so hashing a memory-mapped library holds one chunk)."""
    hashes = np.empty(len(rows), dtype=np.uint64)
    for start in range(0, len(rows), chunk_size):
        chunk = np.ascontiguousarray(rows[start : start + chunk_size])
        data = chunk.view(np.uint8).reshape(len(chunk), -1)
        words = np.pad(data, [(0, 0), (0, -data.shape[1] % 8)]).view(np.uint64)
        h = np.full(len(chunk), 0x9E3779B97F4A7C15, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(words.shape[1]):
                h = (h ^ words[:, j]) * np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(31)
        hashes[start : start + len(chunk)] = h
    return hashes


def index_keys(hashes: np.ndarray) -> np.ndarray:
    """A :class:`RowIndex`'s keys for rows of ``hashes`` [N]: the hashes sorted and their
    (stable) order, as one array [2, N] of uint64, which a cache can store and map."""
    order = np.argsort(hashes, kind="stable")  # equal rows: the first comes first
    return np.stack([hashes[order], order.astype(np.uint64)])


class RowIndex:
    """Finds the position of rows in a fixed table of rows.

    Holds a view of the table and its rows' 64-bit hashes, sorted, with their order
    (:func:`index_keys`, 16 bytes a row), not a sorted copy of the rows; every match of a hash
    is checked against the row's bytes, so a hash collision never finds the wrong row. Building
    it reads every row once, none if ``keys`` are given (e.g. memory-mapped from a cache: a
    library's pages are then read only where rows are looked up); lookups cost O(K log A).

    :param table: The rows to look up in [A, ...] (a view is kept).
    :param keys: :func:`index_keys` of ``table``'s :func:`row_hashes` [2, A], if known.
    """

    def __init__(self, table: np.ndarray, keys: Optional[np.ndarray] = None):
        keys = index_keys(row_hashes(table)) if keys is None else keys
        if keys.shape != (2, len(table)) or keys.dtype != np.uint64:
            found = f"{keys.dtype} {keys.shape}"
            raise ValueError(f"index keys {found} for a table of {len(table)} rows")
        self._table = table
        self._sorted, self._order = keys[0], keys[1].view(np.int64)

    def _matches(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Every (query, table position) pair whose rows are equal, by query then position
        [M] each, and the number of queries."""
        rows = np.asarray(rows, dtype=self._table.dtype)
        if rows.shape[-1:] != self._table.shape[-1:]:
            raise ValueError(f"rows {rows.shape} for a table of rows {self._table.shape[1:]}")
        width = int(np.prod(self._table.shape[1:], dtype=np.int64))
        rows = rows.reshape(-1, width)
        keys = row_hashes(rows)
        first = np.searchsorted(self._sorted, keys, side="left")
        counts = np.searchsorted(self._sorted, keys, side="right") - first
        query = np.repeat(np.arange(len(keys)), counts)
        ends = np.cumsum(counts)
        ranks = np.repeat(first - (ends - counts), counts) + np.arange(ends[-1] if len(ends) else 0)
        position = self._order[ranks]
        stored = np.asarray(self._table[position]).reshape(len(position), width)
        equal = np.all(stored.view(np.uint8) == rows[query].view(np.uint8), axis=1)
        return query[equal], position[equal], len(rows)

    def find(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position in the table of each row [K] (its first copy; meaningful where found) and
        whether it is there [K]."""
        query, position, count = self._matches(rows)
        queries, first = np.unique(query, return_index=True)
        found, where = np.zeros(count, dtype=bool), np.zeros(count, dtype=np.int64)
        found[queries], where[queries] = True, position[first]
        return where, found

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """Position in the table of each row [K].

        :raise ValueError: If a row is not in the table.
        """
        position, found = self.find(rows)
        if not found.all():
            raise ValueError("query point is not a candidate of this problem")
        return position

    def positions(self, rows: np.ndarray) -> np.ndarray:
        """The table's positions holding one of ``rows`` [K], ascending, each once (every copy of
        a repeated table row; rows not in the table are ignored)."""
        return np.unique(self._matches(rows)[1])

    def mask(self, rows: np.ndarray) -> np.ndarray:
        """Whether each table row [A] is among ``rows`` (as :meth:`positions`)."""
        return mask_of(self.positions(rows), len(self._order))


def mask_of(positions: np.ndarray, size: int) -> np.ndarray:
    """True at ``positions`` [K] (integers in [0, size)) and False elsewhere [size]."""
    mask = np.zeros(size, dtype=bool)
    mask[positions] = True
    return mask


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised C-contiguous array aligned to ``ALIGNMENT`` bytes (see
    :func:`~.bits.shared_tensor`)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = np.empty(size + ALIGNMENT, dtype=np.uint8)
    offset = -buffer.ctypes.data % ALIGNMENT
    return buffer[offset : offset + size].view(dtype).reshape(shape)
