"""Candidate sets for the rules, and the lazy (exact) argmin over in-batch lower bounds."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.observer import OBJECTIVE
from trieste.space import Box, DiscreteSearchSpace, SearchSpace
from trieste.types import Tag


def objective_of(
    models: Mapping[Tag, Any], datasets: Optional[Mapping[Tag, Dataset]]
) -> tuple[Any, Optional[Dataset]]:
    """The model and (if any) dataset tagged ``OBJECTIVE``: our rules optimise one objective.

    :raise ValueError: If no model has that tag.
    """
    if OBJECTIVE not in models:
        raise ValueError(f"expected a model tagged {OBJECTIVE!r}, got tags {list(models)}")
    return models[OBJECTIVE], None if datasets is None else datasets.get(OBJECTIVE)


def candidate_points(
    search_space: SearchSpace,
    dataset: Optional[Dataset],
    pool_size: int,
    seed: int,
) -> tf.Tensor:
    """The candidates a rule scores this step [N, D].

    On a :class:`~trieste.space.DiscreteSearchSpace` every point is a candidate. On a
    :class:`~trieste.space.Box` a fresh uniform pool of ``pool_size`` points (drawn from
    ``seed``) plus the unique evaluated points is used: a heuristic, since the papers'
    guarantees are for finite candidate sets only.

    :raise ValueError: For any other search space.
    """
    if isinstance(search_space, DiscreteSearchSpace):
        return search_space.points
    if isinstance(search_space, Box):
        lower, upper = search_space.lower, search_space.upper
        rng = np.random.default_rng(seed)
        unit = rng.uniform(size=(pool_size, int(lower.shape[-1])))
        pool = lower + tf.constant(unit, dtype=lower.dtype) * (upper - lower)
        if dataset is not None and dataset.query_points.shape[0] > 0:
            evaluated = np.unique(dataset.query_points.numpy(), axis=0)
            pool = tf.concat([pool, tf.constant(evaluated, dtype=lower.dtype)], axis=0)
        return pool
    raise ValueError(
        f"this rule supports DiscreteSearchSpace and Box search spaces, got "
        f"{type(search_space).__name__}"
    )


class LazyArgmin:
    r"""Exact argmin of :math:`\mu - \alpha\sqrt{\tilde\sigma^2_t}` with lazy refreshes.

    Within a batch the mean and :math:`\alpha` are frozen and variances only shrink, so stale
    scores are lower bounds of the current ones (BBKB App. A.3, in Trieste's minimisation form).
    The argmin is refreshed in blocks of ``block`` candidates until it is fresh; it is then the
    exact argmin over all candidates.

    :param mean: Batch-start means [N].
    :param variance: Batch-start ridge-leverage variances [N].
    :param alpha: Confidence width multiplying :math:`\tilde\sigma`.
    :param refresh: Maps candidate indices [K] to current variances [K].
    :param block: Candidates refreshed per call (fixed, so the compiled refresh traces once).
    """

    def __init__(
        self,
        mean: np.ndarray,
        variance: np.ndarray,
        alpha: float,
        refresh: Callable[[np.ndarray], np.ndarray],
        block: int = 64,
    ):
        self._mean = mean.copy()
        self._variance = np.maximum(variance, 0.0).copy()
        self._alpha = alpha
        self._refresh = refresh
        self._block = min(block, mean.size)
        self._scores = self._score(np.arange(mean.size))
        self._fresh = np.ones(mean.size, dtype=bool)
        self.refreshed = 0

    def _score(self, index: np.ndarray) -> np.ndarray:
        return self._mean[index] - self._alpha * np.sqrt(self._variance[index])

    def invalidate(self) -> None:
        """Mark every score stale (after a hallucinated update)."""
        self._fresh[:] = False

    def exclude(self, index: int) -> None:
        """Never select ``index`` again (for batches of distinct points)."""
        self._mean[index] = np.inf
        self._scores[index] = np.inf
        self._fresh[index] = True

    def argmin(self) -> tuple[int, float]:
        """Index of the exact current argmin and its current variance."""
        while True:
            best = int(np.argmin(self._scores))
            if not np.isfinite(self._scores[best]):
                raise ValueError("every candidate is excluded: the batch cannot grow")
            if self._fresh[best]:
                return best, float(self._variance[best])
            stale = np.flatnonzero(~self._fresh)
            if stale.size > self._block:
                part = np.argpartition(self._scores[stale], self._block - 1)[: self._block]
                index = stale[part]
            else:
                index = np.concatenate([stale, np.full(self._block - stale.size, stale[0])])
            self._variance[index] = np.maximum(self._refresh(index), 0.0)
            self._scores[index] = self._score(index)
            self._fresh[index] = True
            self.refreshed += len(np.unique(index))
