"""Pending points: evaluations a rule proposed that have not been told yet (asynchronous use).

Every rule's ``State`` carries the points it proposed (``pending``) and the number of dataset rows
it had seen when it proposed them (``seen``). At its next acquisition the rows the dataset gained
since (Trieste's loops only ever append told data) are taken off the pending points, one copy
each, so what remains is exactly what is still being evaluated, repeats included. This follows
Trieste's ``AsynchronousRuleState`` (pending points in the rule's state, ask one batch per free
worker, tell each result as it comes) with an exact bookkeeping of repeats: Trieste removes a
pending point whenever the dataset holds it at all, which loses track of a point evaluated before.

In a synchronous loop every batch is told before the next acquisition, so nothing is pending and
the rules behave exactly as without this.

A point whose evaluation *failed* will never be told: the campaign moves it from ``pending`` to
the state's ``failed`` points (:func:`with_failures`). Rules never propose a failed candidate of a
discrete space again, and never count it as in-flight variance (a stopping rule that did would
end every batch after a few failures, and a MINI epoch would wait for it forever).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import SearchSpace

from ..numerics.rows import row_keys

Points = tuple[tuple[float, ...], ...]
"""Points as nested tuples (frozen, hashable and JSON-able, as ``State`` values should be)."""


def with_failures(state: Any, points: np.ndarray) -> Any:
    """``state`` after the evaluations of ``points`` [F, D] failed: one copy of each taken off
    its ``pending`` points (where it is one) and kept in its ``failed`` ones. A state without
    ``failed`` (a rule of the user's) is returned as it is: its failed points stay pending, as
    before."""
    if not len(points) or state is None or not hasattr(state, "failed"):
        return state
    points = np.asarray(points, dtype=np.float64)
    pending = np.asarray(state.pending, dtype=np.float64).reshape(-1, points.shape[1])
    keep = np.ones(len(pending), dtype=bool)
    if len(pending):  # none pending (a state restored before its batch): nothing to take off
        keys = row_keys(pending)
        for key in row_keys(points):
            copies = np.flatnonzero((keys == key) & keep)
            keep[copies[:1]] = False
    failed = proposed(
        np.asarray(state.failed, dtype=np.float64).reshape(-1, points.shape[1]), points
    )
    return replace(state, pending=proposed(pending[keep], pending[:0]), failed=failed)


def failed_points(failed: Points, dataset: Optional[Dataset]) -> np.ndarray:
    """The failed points of a rule's state [F, D] (:func:`with_failures`; [0, 0] if none),
    checked as :func:`outstanding` checks pending ones."""
    return outstanding(failed, rows_seen(dataset), dataset)


def outstanding(pending: Points, seen: int, dataset: Optional[Dataset]) -> np.ndarray:
    """The points of ``pending`` not told yet [P, D]: ``pending`` less (one copy each) the rows
    ``dataset`` gained after its first ``seen``.

    :raise ValueError: If the pending points are not finite rows of the dataset's width (e.g. a
        state edited by hand).
    """
    if not pending:
        return np.zeros((0, 0))
    try:
        points = np.asarray(pending, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("the rule state's pending points are not rows of numbers") from None
    width = None if dataset is None else int(dataset.query_points.shape[-1])
    if points.ndim != 2 or (width is not None and points.shape[1] != width):
        raise ValueError(
            f"the rule state's pending points have shape {points.shape}; "
            f"expected [P, {width or 'D'}] (the dataset's width)"
        )
    if not np.all(np.isfinite(points)):
        raise ValueError("the rule state's pending points hold NaN or infinite values")
    if dataset is None:
        return points
    # a view of the dataset's rows (``.numpy()`` would copy all of them), the told ones cast
    told = np.asarray(np.asarray(dataset.query_points)[seen:], dtype=np.float64)
    if not told.size:
        return points
    keys, told_keys = row_keys(points), row_keys(told)
    keep = np.ones(len(points), dtype=bool)
    for key, count in zip(*np.unique(told_keys, return_counts=True)):
        copies = np.flatnonzero((keys == key) & keep)
        keep[copies[:count]] = False  # each told row resolves one pending copy
    return points[keep]


def proposed(still_pending: np.ndarray, batch: tf.Tensor | np.ndarray) -> Points:
    """The pending points after a rule proposed ``batch`` [B, D]."""
    parts = (still_pending, np.asarray(batch))
    return tuple(tuple(float(v) for v in row) for part in parts for row in part)


def no_points(search_space: SearchSpace) -> tf.Tensor:
    """An empty batch [0, D] in the search space's dtype (nothing to propose yet)."""
    dtype = tf.convert_to_tensor(search_space.lower).dtype
    return tf.zeros([0, int(search_space.dimension)], dtype=dtype)


def rows_seen(dataset: Optional[Dataset]) -> int:
    """The rows of ``dataset`` (what the next acquisition will have seen told)."""
    return 0 if dataset is None else int(dataset.query_points.shape[0])
