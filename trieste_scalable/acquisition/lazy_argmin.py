r"""The exact argmin of a greedy batch's lower confidence bound, with lazy refreshes (pure NumPy).

Within a batch the mean and :math:`\alpha` are frozen and variances only shrink, so a score
computed before the last hallucinated point is a lower bound of the current one (BBKB App. A.3,
in Trieste's minimisation form): the smallest score is the argmin once it is fresh, and only the
few candidates whose bounds come first are ever refreshed.

So the candidates no refresh has touched keep their batch-start scores, and are read in the order of
those scores (sorted once a batch): a pick looks at the touched ones and at the head of that order,
never at the whole library: scanning every candidate's score after every pick was a fifth of a large
batch's time, the sort once a batch is negligible (measured:
``benchmarks/results/design_measurements.md``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np


class LazyArgmin:
    r"""Exact argmin of :math:`\mu - \alpha\sqrt{\tilde\sigma^2_t}` with lazy refreshes (module
    docstring). Among equal scores the lowest index is the argmin, as NumPy's ``argmin`` over
    every score would give.

    :param mean: Batch-start means [N].
    :param variance: Batch-start ridge-leverage variances [N].
    :param alpha: Confidence width multiplying :math:`\tilde\sigma`.
    :param refresh: Maps candidate indices [K] to current variances [K].
    :param block: Candidates refreshed per call: the stale ones of lowest score.
    :param first_block: Candidates refreshed by the first call: the in-batch posterior keeps
        what it computed for them (:class:`~trieste_scalable.models.in_batch.FeatureCache`),
        and the later refreshes mostly return to them: with a first block as large as the
        batch, most later refreshes meet candidates not seen before and solve for them (each
        solve costs about the same however few); with 512, few do (measured:
        ``benchmarks/results/design_measurements.md``).
    """

    def __init__(
        self,
        mean: np.ndarray,
        variance: np.ndarray,
        alpha: float,
        refresh: Callable[[np.ndarray], np.ndarray],
        block: int = 64,
        first_block: int = 512,
    ):
        self._mean = mean.copy()  # inf: excluded
        self._variance = np.maximum(variance, 0.0).copy()
        self._alpha = alpha
        self._refresh = refresh
        self._block = min(first_block, mean.size)
        self._later_block = min(block, mean.size)
        self._scores = self._score(np.arange(mean.size))
        self._order: np.ndarray | None = None  # untouched candidates by batch-start score
        self._head = 0  # order[head:] are untouched
        self._touched = np.zeros(0, dtype=np.int64)  # refreshed at least once
        self._touched_fresh = np.zeros(0, dtype=bool)
        self._invalidated = False  # untouched scores are stale once a point was added
        self.refreshed = 0

    def _score(self, index: np.ndarray) -> np.ndarray:
        return self._mean[index] - self._alpha * np.sqrt(self._variance[index])

    def invalidate(self) -> None:
        """Mark every score stale (after a hallucinated update)."""
        self._touched_fresh[:] = False
        self._invalidated = True

    def exclude(self, index: int | np.ndarray) -> None:
        """Never select ``index`` (one or several) again (for batches of distinct points)."""
        self._mean[index] = np.inf
        self._scores[index] = np.inf
        if self._touched.size:
            kept = ~np.isin(self._touched, index)
            self._touched, self._touched_fresh = self._touched[kept], self._touched_fresh[kept]

    @property
    def num_selectable(self) -> int:
        """Candidates not excluded."""
        return int(np.isfinite(self._mean).sum())

    def argmin(self) -> tuple[int, float]:
        """Index of the exact current argmin and its current variance.

        :raise ValueError: If every candidate is excluded.
        """
        if self._order is None:
            self._order = np.argsort(self._scores, kind="stable")
        while True:
            self._skip_excluded()
            best, fresh = self._lowest()
            if best < 0:
                raise ValueError("every candidate is excluded: the batch cannot grow")
            if fresh:
                return best, float(self._variance[best])
            self._refresh_lowest_stale()

    def _skip_excluded(self) -> None:
        """Move the head of the untouched order past excluded candidates."""
        order = self._order
        assert order is not None
        while self._head < order.size and not np.isfinite(self._mean[order[self._head]]):
            self._head += 1

    def _lowest(self) -> tuple[int, bool]:
        """The candidate of lowest score (lowest index among equals; -1 if none is selectable)
        and whether its score is fresh."""
        order = self._order
        assert order is not None
        best, best_score, fresh = -1, np.inf, False
        if self._touched.size:
            scores = self._scores[self._touched]
            lowest = scores.min()
            if np.isfinite(lowest):
                ties = scores == lowest
                position = np.flatnonzero(ties)[np.argmin(self._touched[ties])]
                best, best_score = int(self._touched[position]), float(lowest)
                fresh = bool(self._touched_fresh[position])
        if self._head < order.size:
            head = int(order[self._head])
            score = float(self._scores[head])
            if score < best_score or (score == best_score and head < best):
                best, fresh = head, not self._invalidated
        return best, fresh

    def _refresh_lowest_stale(self) -> None:
        """Refresh the ``block`` stale candidates of lowest score: touched ones and the head of
        the untouched order (sorted, so the chosen untouched ones are a prefix of it)."""
        order = self._order
        assert order is not None
        stale = self._touched[~self._touched_fresh]
        window = order[self._head : self._head + self._block]
        selectable = np.isfinite(self._mean[window])
        untouched, positions = window[selectable], self._head + np.flatnonzero(selectable)
        pool = np.concatenate([stale, untouched])
        ranked = np.argsort(self._scores[pool], kind="stable")[: self._block]
        chosen = pool[ranked]
        from_untouched = ranked[ranked >= stale.size] - stale.size
        joined = untouched[from_untouched]
        if joined.size:  # a prefix of the window: the head moves past it
            self._head = int(positions[from_untouched.max()]) + 1
        self._variance[chosen] = np.maximum(self._refresh(chosen), 0.0)
        self._scores[chosen] = self._score(chosen)
        self._touched = np.concatenate([self._touched, joined])
        self._touched_fresh = np.concatenate(
            [self._touched_fresh, np.zeros(joined.size, dtype=bool)]
        )
        self._touched_fresh[np.isin(self._touched, chosen)] = True
        self.refreshed += len(chosen)
        self._block = self._later_block
