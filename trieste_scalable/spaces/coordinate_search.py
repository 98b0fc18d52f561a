"""Coordinate search over tuples of reagent indices: how a score is minimised over a make-on-demand
library (:mod:`~trieste_scalable.spaces.reaction`) without enumerating it.

From each start, the components are visited in a random order; a *move* on component ``k`` scores
every tuple that differs from the current one in component ``k`` only, over that component's
options (all its usable reagents, or a random subset of ``move_size`` of them), and keeps the
best. A search ends after a sweep over every component that changed nothing, or after
``max_sweeps`` sweeps. So each move is exact (the best of the tuples it scored) and the search is
a heuristic: its end is a coordinate-wise minimum over the options, not the global minimum of a
score that does not separate over the components. Restarts from the best evaluated products and
from random tuples (the caller's ``starts``) are what make it find good regions.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np

Score = Callable[[np.ndarray], np.ndarray]
"""Scores [N] of tuples [N, C], lower is better; ``inf`` for a tuple that may not be chosen (its
reaction fails, or it is evaluated already)."""


class SearchResult(NamedTuple):
    """Where each start's search ended.

    :ivar tuples: The final tuples [S, C].
    :ivar scores: Their scores [S] (``inf`` where no tuple a search scored could be chosen).
    :ivar sweeps: Sweeps each search made [S].
    """

    tuples: np.ndarray
    scores: np.ndarray
    sweeps: np.ndarray


def coordinate_search(
    score: Score,
    options: Sequence[np.ndarray],
    starts: np.ndarray,
    rng: np.random.Generator,
    *,
    max_sweeps: int = 3,
    move_size: Optional[int] = None,
) -> SearchResult:
    """Minimise ``score`` from each of ``starts`` [S, C] (module docstring).

    :param options: The reagent indices each component's moves choose from [R_k].
    :param rng: Draws the order of the components and the subsets of ``move_size``.
    :param max_sweeps: Most sweeps over the components.
    :param move_size: Options scored by a move (all where ``None`` or at least their number).
    :raise ValueError: If ``starts`` is not [S, C] for C components, or a component has no
        option.
    """
    current = np.array(starts, dtype=np.int64, copy=True)
    if current.ndim != 2 or current.shape[1] != len(options):
        raise ValueError(f"starts must be [S, {len(options)}], got {current.shape}")
    if any(len(o) == 0 for o in options):
        raise ValueError("every component needs at least one option")
    best = np.asarray(score(current), dtype=np.float64)
    sweeps = np.zeros(len(current), dtype=np.int64)
    active = np.ones(len(current), dtype=bool)
    for _ in range(max_sweeps):
        if not active.any():
            break
        changed = np.zeros(len(current), dtype=bool)
        for k in rng.permutation(len(options)):
            choices = np.asarray(options[k], dtype=np.int64)
            if move_size is not None and move_size < choices.size:
                choices = rng.choice(choices, size=move_size, replace=False)
            rows = np.flatnonzero(active)
            moved, scores = _move(score, current[rows], k, choices)
            better = scores < best[rows]
            current[rows[better]] = moved[better]
            best[rows[better]] = scores[better]
            changed[rows[better]] = True
        sweeps[active] += 1
        active &= changed
    return SearchResult(current, best, sweeps)


def _move(
    score: Score, tuples: np.ndarray, component: int, choices: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The best tuple [A, C] and score [A] of each of ``tuples`` [A, C] with ``component``
    replaced by one of ``choices`` [R] (all A x R tuples scored in one call)."""
    candidates = np.repeat(tuples, choices.size, axis=0)
    candidates[:, component] = np.tile(choices, len(tuples))
    scores = np.asarray(score(candidates), dtype=np.float64).reshape(len(tuples), choices.size)
    pick = np.argmin(scores, axis=1)  # ties: the first choice
    rows = np.arange(len(tuples))
    return candidates.reshape(len(tuples), choices.size, -1)[rows, pick], scores[rows, pick]
