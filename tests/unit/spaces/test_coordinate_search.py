"""Coordinate search over reagent tuples against brute force over small spaces: each move is
exact, the end is a coordinate-wise minimum, a separable score is minimised globally in one
sweep, and excluded tuples (``inf``) are never chosen."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trieste_scalable.spaces.coordinate_search import coordinate_search

COUNTS = (7, 5, 6)


def _table(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=COUNTS)


def _score_of(table: np.ndarray):  # type: ignore[no-untyped-def]
    calls = []

    def score(tuples: np.ndarray) -> np.ndarray:
        calls.append(len(tuples))
        return table[tuple(tuples.T)]

    return score, calls


def _options() -> list[np.ndarray]:
    return [np.arange(n) for n in COUNTS]


def _every_tuple() -> np.ndarray:
    return np.array(list(itertools.product(*(range(n) for n in COUNTS))))


def test_a_separable_score_is_minimised_globally_in_one_sweep() -> None:
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=n) for n in COUNTS]
    table = parts[0][:, None, None] + parts[1][None, :, None] + parts[2][None, None, :]
    score, _ = _score_of(table)
    starts = np.array([[0, 0, 0], [6, 4, 5], [3, 2, 1]])
    found = coordinate_search(score, _options(), starts, np.random.default_rng(1))
    best = np.unravel_index(np.argmin(table), COUNTS)
    assert (found.tuples == np.array(best)).all()
    np.testing.assert_allclose(found.scores, table.min())
    assert (found.sweeps == 2).all()  # one that moved, one that confirmed


@pytest.mark.parametrize("seed", range(5))
def test_the_end_is_a_coordinate_wise_minimum_of_any_score(seed: int) -> None:
    """No change of one component improves on where a search ended (brute force over every
    single-component neighbour), and the scores returned are the table's."""
    table = _table(seed)
    score, _ = _score_of(table)
    starts = np.random.default_rng(seed).integers(0, 5, size=(8, 3))
    found = coordinate_search(score, _options(), starts, np.random.default_rng(seed), max_sweeps=50)
    np.testing.assert_array_equal(found.scores, table[tuple(found.tuples.T)])
    for end in found.tuples:
        for k, n in enumerate(COUNTS):
            neighbours = np.repeat(end[None], n, axis=0)
            neighbours[:, k] = np.arange(n)
            assert table[tuple(end)] <= table[tuple(neighbours.T)].min()
    assert found.scores.min() <= table[tuple(starts.T)].min()


def test_excluded_tuples_are_never_chosen_and_moves_score_each_option_once() -> None:
    table = _table(7)
    table[table < 0.5] = np.inf  # most tuples excluded
    score, calls = _score_of(table)
    starts = np.array([[0, 0, 0], [1, 1, 1]])
    found = coordinate_search(score, _options(), starts, np.random.default_rng(0), max_sweeps=1)
    finite = np.isfinite(found.scores)
    assert finite.any()
    assert np.all(np.isfinite(table[tuple(found.tuples[finite].T)]))
    assert calls[0] == 2 and sorted(calls[1:]) == sorted(2 * n for n in COUNTS)  # one a move


def test_moves_of_a_subset_are_repeatable_and_bounded() -> None:
    table = _table(3)
    score, calls = _score_of(table)
    starts = _every_tuple()[::37]
    first = coordinate_search(score, _options(), starts, np.random.default_rng(5), move_size=2)
    again = coordinate_search(
        _score_of(table)[0], _options(), starts, np.random.default_rng(5), move_size=2
    )
    np.testing.assert_array_equal(first.tuples, again.tuples)
    assert max(calls[1:]) <= 2 * len(starts)
    with pytest.raises(ValueError, match="starts must be"):
        coordinate_search(score, _options(), np.zeros((2, 2)), np.random.default_rng(0))
