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

from dataclasses import dataclass, replace
from typing import Any, Optional, Protocol, TypeVar, runtime_checkable

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import SearchSpace

from ..numerics.rows import row_keys
from .rule_state import check_state

Points = tuple[tuple[float, ...], ...]
"""Points as nested tuples (frozen, hashable and JSON-able, as ``State`` values should be)."""


PendingT = TypeVar("PendingT", bound="PendingState")


@dataclass(frozen=True, kw_only=True)
class PendingState:
    """The bookkeeping every rule state carries: the points proposed and not told yet
    (``pending``), the dataset rows seen when they were proposed (``seen``) and the points whose
    evaluation failed (``failed``). A rule's state subclasses it (a frozen dataclass decorated
    with :func:`~.rule_state.saved_state`), as Trieste's ``AsynchronousRuleState`` holds the
    pending points of its asynchronous rules; its fields are keyword-only.

    :ivar pending: Points proposed and not told yet.
    :ivar seen: Dataset rows when they were proposed.
    :ivar failed: Points whose evaluation failed: never proposed again, never hallucinated.
    """

    pending: Points = ()
    seen: int = 0
    failed: Points = ()

    @classmethod
    def continued(cls: type[PendingT], state: Optional[Any], rule: object) -> PendingT:
        """``state`` (a fresh one for ``None``), refused if it is not of this type.

        :raise TypeError: If ``state`` was saved by another rule (:func:`~.rule_state.check_state`).
        """
        check_state(state, cls, rule)
        return state if state is not None else cls()

    def restarted(
        self: PendingT, *, pending: np.ndarray, failed: np.ndarray, seen: int
    ) -> PendingT:
        """This state with ``pending`` [P, D] still being evaluated, ``failed`` [F, D] given up
        and ``seen`` dataset rows told (a campaign resumed or replayed); the rule's own fields
        are kept."""
        return replace(
            self,
            pending=proposed(pending[:0], pending),
            seen=seen,
            failed=proposed(failed[:0], failed),
        )

    def outstanding(self, dataset: Optional[Dataset]) -> np.ndarray:
        """The pending points not told yet [P, D] (:func:`outstanding`)."""
        return outstanding(self.pending, self.seen, dataset)

    def failures(self, dataset: Optional[Dataset]) -> np.ndarray:
        """The failed points [F, D] (:func:`failed_points`)."""
        return failed_points(self.failed, dataset)

    def proposing(
        self: PendingT,
        still_pending: np.ndarray,
        batch: tf.Tensor | np.ndarray,
        dataset: Optional[Dataset],
        **changes: Any,
    ) -> PendingT:
        """The state after proposing ``batch`` [B, D] with ``still_pending`` [P, D] outstanding
        and ``dataset`` told, with the rule's own ``changes``."""
        return replace(
            self, pending=proposed(still_pending, batch), seen=rows_seen(dataset), **changes
        )

    def with_failures(self: PendingT, points: np.ndarray) -> PendingT:
        """The state after the evaluations of ``points`` [F, D] failed: one copy of each taken
        off the pending points and kept in the failed ones."""
        if not len(points):
            return self
        points = np.asarray(points, dtype=np.float64)
        pending = np.asarray(self.pending, dtype=np.float64).reshape(-1, points.shape[1])
        keep = np.ones(len(pending), dtype=bool)
        if len(pending):  # none pending (a state restored before its batch): nothing to take off
            keys = row_keys(pending)
            for key in row_keys(points):
                copies = np.flatnonzero((keys == key) & keep)
                keep[copies[:1]] = False
        failed = np.asarray(self.failed, dtype=np.float64).reshape(-1, points.shape[1])
        return replace(
            self, pending=proposed(pending[keep], pending[:0]), failed=proposed(failed, points)
        )


@runtime_checkable
class KeepsPendingPoints(Protocol):
    """A rule whose state keeps pending and failed points: campaigns hand it what is pending
    and what failed when they start, resume or replay it (:func:`initial_state`)."""

    state_type: type[PendingState]


def initial_state(
    rule: object, *, pending: np.ndarray, failed: np.ndarray, seen: int
) -> Optional[PendingState]:
    """The state a rule starts a campaign with, shared by ``screen`` and the prospective replay:
    ``None`` (a fresh start) where nothing is pending or failed or the rule keeps no pending
    points, else its fresh state with them (:meth:`PendingState.restarted`)."""
    if not (len(pending) or len(failed)) or not isinstance(rule, KeepsPendingPoints):
        return None
    return rule.state_type().restarted(pending=pending, failed=failed, seen=seen)


def with_failures(state: Any, points: np.ndarray) -> Any:
    """``state`` after the evaluations of ``points`` [F, D] failed
    (:meth:`PendingState.with_failures`). Any other state (a rule of the user's) is returned as
    it is: its failed points stay pending."""
    if state is None or not isinstance(state, PendingState):
        return state
    return state.with_failures(points)


def failed_points(failed: Points, dataset: Optional[Dataset]) -> np.ndarray:
    """The failed points of a rule's state [F, D] (:func:`with_failures`; [0, 0] if none),
    checked as :func:`outstanding` checks pending ones."""
    return outstanding(failed, rows_seen(dataset), dataset)


def outstanding(pending: Points, seen: int, dataset: Optional[Dataset]) -> np.ndarray:
    """The points of ``pending`` not told yet [P, D]: ``pending`` less (one copy each) the rows
    ``dataset`` gained after its first ``seen`` (packed bits there, uint8, are unpacked to the
    pending rows' width).

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
    packed = dataset is not None and dataset.query_points.dtype == tf.uint8
    if packed and points.ndim == 2 and -(-points.shape[1] // 8) == width:
        width = points.shape[1]  # told rows packed bits (a Nyström GP's), pending ones 0/1
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
    told = np.asarray(dataset.query_points)[seen:]
    if packed:
        told = np.unpackbits(told, axis=1)[:, : points.shape[1]]
    told = np.asarray(told, dtype=np.float64)
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
