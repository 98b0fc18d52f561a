"""Vectorised row lookups (NumPy): which rows of one array appear in another, and where."""

from __future__ import annotations

import numpy as np


def row_keys(points: np.ndarray) -> np.ndarray:
    """One opaque key per row (its bytes) [N], so row membership is a vectorised ``np.isin`` and
    row lookup a ``np.searchsorted``; no Python loop over rows."""
    rows = np.ascontiguousarray(points)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))[:, 0]


class RowIndex:
    """Finds the position of rows in a fixed table of rows.

    :param table: The rows to look up in [A, D].
    """

    def __init__(self, table: np.ndarray):
        self._dtype = table.dtype
        keys = row_keys(table)
        self._order = np.argsort(keys)
        self._sorted = keys[self._order]

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """Position in the table of each row [N].

        :raise ValueError: If a row is not in the table.
        """
        keys = row_keys(np.asarray(rows, dtype=self._dtype))
        position = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
        if keys.size and not np.all(self._sorted[position] == keys):
            raise ValueError("query point is not a candidate of this problem")
        return self._order[position]
