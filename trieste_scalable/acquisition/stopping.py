r"""Batch-termination rules: when to stop growing a batch and resparsify.

Each rule watches a statistic that bounds the in-batch variance ratio
:math:`\tilde\sigma^2_{fb}(x)/\tilde\sigma^2_t(x)` and ends the batch once it exceeds the
threshold :math:`\tilde C`. The point that crosses the threshold still belongs to the ending
batch (BBKB Algorithm 1).

- :class:`GlobalStopping` (BBKB Lemma 1): :math:`G = 1 + \sum_{s} \tilde\sigma^2_{fb}(x_s)`.
- :class:`GlobalLocalStopping` (Lemma 3 hybrid as in the authors' code; the
  local statistic keeps both the full-DTC and the projected terms, since the full one alone can
  miss the ratio when Nystrom residual cross-terms are negative):
  accumulate :math:`G`; once :math:`G > \tilde C`, switch to
  :math:`\max_i 1 + \max(r^{full}_i, r^{proj}_i)/\tilde\sigma^2_{fb}(x_i)`.
- :class:`ProductStopping` (GP-BUCB, Desautels et al. Prop. 1):
  :math:`\prod_s (1 + \sigma^2_{s-1}(x_s))` with in-batch variances.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Literal, TypeVar

import numpy as np

from ..numerics.bits import Rows, take_rows
from .protocols import InBatchPosteriorLike

Watch = TypeVar("Watch", bound="StoppingRule")

REPEAT_TERMS_BYTES = 64 * 2**20
"""Memory for the local terms of a batch's latest picks, which a repeat adds again instead of
recomputing them (an O(N M) pass over the candidates): over an exact posterior the Global rule
lets a confident point be picked thousands of times in one batch."""


class StoppingRule(ABC):
    """Watches a batch as it grows: ``start`` returns a copy of the rule that watches one
    batch (its accumulators live on that copy, never on the rule a Trieste rule holds, so
    nothing of a batch in progress outlives it or needs a ``State``)."""

    _posterior: InBatchPosteriorLike
    _candidates: Rows
    _s2_0: np.ndarray

    uses_in_batch_variance = True
    """Whether :meth:`add` reads its ``in_batch_variance`` (if not, it may be NaN, and pending
    points are hallucinated in one update)."""

    def __init__(self, ratio_threshold: float):
        if not ratio_threshold >= 1.0:
            raise ValueError(f"the ratio threshold must be >= 1, got {ratio_threshold}")
        self.ratio_threshold = float(ratio_threshold)
        self.statistic = 1.0

    def start(
        self: Watch,
        posterior: InBatchPosteriorLike,
        candidates: Rows,
        batch_start_variance: np.ndarray,
    ) -> Watch:
        """A watch of a new batch over ``candidates`` with their batch-start variances."""
        watch = copy.copy(self)
        watch._posterior = posterior
        watch._candidates = candidates
        watch._s2_0 = batch_start_variance
        watch.reset()
        return watch

    def reset(self) -> None:
        """Set the per-batch accumulators (called on the watch ``start`` returns)."""
        self.statistic = 1.0

    @abstractmethod
    def add(self, index: int, in_batch_variance: float) -> bool:
        """Account for the selected candidate ``index`` (selected with ``in_batch_variance``,
        before its own update); return whether the batch ends with it."""


class GlobalStopping(StoppingRule):
    """BBKB's Global rule (Lemma 1): O(1) per step."""

    uses_in_batch_variance = False

    def add(self, index: int, in_batch_variance: float) -> bool:
        self.statistic += float(self._s2_0[index])
        return self.statistic > self.ratio_threshold


class GlobalLocalStopping(StoppingRule):
    """BBKB's GlobalLocal rule: Global first, then the local statistic.

    :param switch: ``"immediate"`` checks the local statistic as soon as the global one first
        exceeds the threshold (default); ``"after_next"`` waits one more arm as
        the authors' code does.
    """

    uses_in_batch_variance = False

    def __init__(
        self, ratio_threshold: float, switch: Literal["immediate", "after_next"] = "immediate"
    ):
        super().__init__(ratio_threshold)
        if switch not in ("immediate", "after_next"):
            raise ValueError(f"switch must be 'immediate' or 'after_next', got {switch!r}")
        self.switch = switch

    def reset(self) -> None:
        super().reset()
        self.global_statistic = 1.0
        self._batch: list[int] = []
        self._full: np.ndarray | None = None
        self._projected: np.ndarray | None = None
        self._terms_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, index: int, in_batch_variance: float) -> bool:
        self._batch.append(index)
        self.global_statistic += float(self._s2_0[index])
        if self._full is None:
            self.statistic = self.global_statistic
            if self.global_statistic <= self.ratio_threshold:
                return False
            self._accumulate(self._batch)  # the switch: local terms of the whole batch so far
            if self.switch == "after_next":
                return False
        else:
            self._accumulate([index])
        return self.local_statistic() > self.ratio_threshold

    def _accumulate(self, indices: list[int]) -> None:
        if len(indices) == 1 and indices[0] in self._terms_of:
            full, projected = self._terms_of[indices[0]]  # batch-start terms: a repeat's are equal
        else:
            points = take_rows(self._candidates, indices)
            full, projected = self._posterior.local_terms(points, self._candidates)
            full, projected = full.numpy(), projected.numpy()
            if len(indices) == 1:
                self._keep_terms(indices[0], full, projected)
        self._full = full if self._full is None else self._full + full
        self._projected = projected if self._projected is None else self._projected + projected

    def _keep_terms(self, index: int, full: np.ndarray, projected: np.ndarray) -> None:
        """Keep a pick's terms, dropping the oldest kept beyond :data:`REPEAT_TERMS_BYTES`."""
        capacity = max(1, REPEAT_TERMS_BYTES // max(1, full.nbytes + projected.nbytes))
        while len(self._terms_of) >= capacity:
            del self._terms_of[next(iter(self._terms_of))]
        self._terms_of[index] = (full, projected)

    def local_statistic(self) -> float:
        """:math:`\\max_i 1 + \\max(r^{full}_i, r^{proj}_i)/\\tilde\\sigma^2_{fb}(x_i)`."""
        assert self._full is not None and self._projected is not None
        ratio = np.maximum(self._full, self._projected) / np.maximum(self._s2_0, 1e-300)
        self.statistic = float(1.0 + np.max(ratio))
        return self.statistic


class ProductStopping(StoppingRule):
    """GP-BUCB's rule: :math:`\\prod_s (1 + \\sigma^2_{s-1}(x_s)) > C` ends the batch."""

    def add(self, index: int, in_batch_variance: float) -> bool:
        self.statistic *= 1.0 + in_batch_variance
        return self.statistic > self.ratio_threshold
