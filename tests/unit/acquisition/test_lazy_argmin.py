"""The lazy argmin of a greedy batch (acquisition/lazy_argmin.py) against the brute-force argmin
of every candidate's current score after every pick."""

from __future__ import annotations

import numpy as np
import pytest

from trieste_scalable.acquisition.lazy_argmin import LazyArgmin

ALPHA = 1.5


class ShrinkingVariances:
    """Variances that shrink near each picked point (as hallucinated ones do), optionally
    rounded to one decimal so that many scores tie; records which candidates were asked."""

    def __init__(self, num: int, seed: int, ties: bool):
        rng = np.random.default_rng(seed)
        self.mean, self.start = rng.normal(size=num), rng.random(num)
        if ties:
            self.mean, self.start = np.round(self.mean, 1), np.round(self.start, 1)
        self.centres, self.ties = rng.random((num, 3)), ties
        self.picked: list[int] = []
        self.asked: set[int] = set()

    def __call__(self, index: np.ndarray) -> np.ndarray:
        self.asked.update(int(i) for i in index)
        variance = self.start[index].copy()
        for pick in self.picked:
            distance = ((self.centres[index] - self.centres[pick]) ** 2).sum(axis=1)
            variance *= 1.0 - 0.9 * np.exp(-distance / 0.05)
        return np.round(variance, 1) if self.ties else variance


def brute_force(problem: ShrinkingVariances, excluded: set[int]) -> tuple[int, float]:
    everything = np.arange(problem.mean.size)
    variance = problem(everything) if problem.picked else problem.start
    scores = problem.mean - ALPHA * np.sqrt(np.maximum(variance, 0.0))
    scores[list(excluded)] = np.inf
    best = int(np.argmin(scores))  # the lowest index among equal scores
    return best, float(max(variance[best], 0.0))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("repeats", [False, True])
def test_every_pick_is_the_brute_force_argmin(seed: int, ties: bool, repeats: bool) -> None:
    problem = ShrinkingVariances(2000, seed, ties)
    excluded = set(np.random.default_rng(seed + 100).choice(2000, 150, replace=False).tolist())
    lazy = LazyArgmin(problem.mean, problem.start, ALPHA, problem, block=8, first_block=32)
    lazy.exclude(np.array(sorted(excluded)))
    for _ in range(40):
        expected = brute_force(problem, excluded)
        index, variance = lazy.argmin()
        assert index == expected[0]
        assert variance == pytest.approx(expected[1], abs=1e-12)
        problem.picked.append(index)
        if not repeats:
            lazy.exclude(index)
            excluded.add(index)
        lazy.invalidate()


def test_a_pick_reads_the_lowest_scores_not_the_library() -> None:
    problem = ShrinkingVariances(20000, seed=7, ties=False)
    lazy = LazyArgmin(problem.mean, problem.start, ALPHA, problem, block=16, first_block=64)
    for _ in range(30):
        index, _ = lazy.argmin()
        problem.picked.append(index)
        lazy.exclude(index)
        lazy.invalidate()
    assert len(problem.asked) < 1000  # of 20,000: the refreshes stay among the best scores
    assert lazy.refreshed >= len(problem.asked)


def test_the_first_pick_needs_no_refresh_and_every_excluded_is_an_error() -> None:
    problem = ShrinkingVariances(50, seed=8, ties=False)
    lazy = LazyArgmin(problem.mean, problem.start, ALPHA, problem)
    scores = problem.mean - ALPHA * np.sqrt(problem.start)
    assert lazy.argmin()[0] == int(np.argmin(scores))
    assert not problem.asked
    lazy.exclude(np.arange(50))
    assert lazy.num_selectable == 0
    with pytest.raises(ValueError, match="every candidate is excluded"):
        lazy.argmin()
