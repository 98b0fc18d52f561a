"""How many inducing points an :class:`~trieste_scalable.models.AdaptiveSVGP` uses, and where.

Trieste's selectors (``trieste.models.gpflow.inducing_point_selectors``) are not reused: they
need a fixed number of points for the whole run, ``ConditionalVarianceReduction`` is an eager
Python loop with float64 hard-coded that returns duplicates on repeated inputs (trieste-notes §2.2),
and ``KMeansInducingPointSelector`` fills missing centroids with points outside the data. These
selectors take the *unique* evaluated inputs, so they never return duplicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np
import tensorflow as tf
from scipy.cluster.vq import kmeans2


@dataclass(frozen=True)
class InducingSchedule:
    r"""The number of inducing points :math:`m(n) = \min(n, m_{\max}, \max(m_{\min},
    \lceil c\, n^{p} \rceil))` for n unique evaluated inputs.

    :func:`fixed` is the paper's setting (m = 250 or 500); a growth law such as
    ``InducingSchedule(scale=10, exponent=0.5, maximum=1000)`` follows the theory's advice that m
    grow with the data (S-GP-TS Theorem 1 needs the approximation error to
    shrink as n grows) while the cap bounds the cost.
    """

    maximum: int = 500
    minimum: int = 1
    scale: float = math.inf
    exponent: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.minimum <= self.maximum:
            raise ValueError(f"need 1 <= minimum <= maximum, got {self.minimum}, {self.maximum}")
        if not (self.scale > 0 and self.exponent >= 0):
            raise ValueError(f"need scale > 0 and exponent >= 0, got {self.scale}, {self.exponent}")

    @classmethod
    def fixed(cls, size: int) -> InducingSchedule:
        """Always ``size`` points (fewer while there are fewer unique inputs)."""
        return cls(maximum=size, minimum=size)

    def size(self, num_unique: int) -> int:
        grown = (
            self.maximum
            if math.isinf(self.scale)
            else math.ceil(self.scale * num_unique**self.exponent)
        )
        return max(1, min(num_unique, self.maximum, max(self.minimum, grown)))


class InducingPointSelector(Protocol):
    """Chooses ``size`` distinct inducing points from the unique evaluated inputs."""

    def select(self, points: np.ndarray, size: int, greedy: Callable[..., Any]) -> np.ndarray:
        """:param points: Unique inputs [n, D]. :param size: m <= n.
        :param greedy: The model's compiled greedy-variance selection (kernel bound).
        :return: Inducing points [m, D]."""


class GreedyVarianceSelector:
    """Greedy conditional-variance selection (Burt et al. 2020), compiled; the paper's
    "eps0-close to a k-DPP" heuristic. Deterministic."""

    def select(self, points: np.ndarray, size: int, greedy: Callable[..., Any]) -> np.ndarray:
        index = greedy(tf.constant(points), tf.constant(size, dtype=tf.int32))
        return points[np.asarray(index)]

    def __repr__(self) -> str:
        return "GreedyVarianceSelector()"


class KMeansSelector:
    """k-means centroids of the standardised unique inputs (k-means++ start, seeded); empty
    clusters are replaced by unused data points. The paper's best selector on Shekel/Hartmann.

    :param seed: Seed of the selector's own random generator.
    :param iterations: Lloyd iterations.
    """

    def __init__(self, seed: int = 0, iterations: int = 10):
        self._rng = np.random.default_rng(seed)
        self._iterations = iterations

    def select(self, points: np.ndarray, size: int, greedy: Callable[..., Any]) -> np.ndarray:
        if size >= points.shape[0]:
            return points.copy()
        scale = points.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        centroids, labels = kmeans2(
            points / scale, size, iter=self._iterations, minit="++", seed=self._rng
        )
        used = np.unique(labels)
        centroids = centroids[used] * scale
        missing = size - used.size
        if missing:
            spare = self._rng.choice(points.shape[0], size=missing, replace=False)
            centroids = np.concatenate([centroids, points[spare]], axis=0)
        return centroids.astype(points.dtype)

    def __repr__(self) -> str:
        return f"KMeansSelector(iterations={self._iterations})"


class RandomSubsampleSelector:
    """A uniform subsample of the unique inputs (the paper's choice for molecules, where k-means
    and greedy selection were not effective on sparse fingerprints).

    :param seed: Seed of the selector's own random generator.
    """

    def __init__(self, seed: int = 0):
        self._rng = np.random.default_rng(seed)

    def select(self, points: np.ndarray, size: int, greedy: Callable[..., Any]) -> np.ndarray:
        return points[np.sort(self._rng.choice(points.shape[0], size=size, replace=False))]

    def __repr__(self) -> str:
        return "RandomSubsampleSelector()"


def selector_named(name: str, seed: int = 0) -> InducingPointSelector:
    """``"kmeans"``, ``"greedy"`` or ``"random"``."""
    selectors: dict[str, Callable[[], InducingPointSelector]] = {
        "kmeans": lambda: KMeansSelector(seed),
        "greedy": GreedyVarianceSelector,
        "random": lambda: RandomSubsampleSelector(seed),
    }
    if name not in selectors:
        raise ValueError(
            f"unknown inducing-point selector {name!r}; choose from {sorted(selectors)}"
        )
    return selectors[name]()
