"""Random search, the baseline every campaign compares against: uniform random candidates of a
discrete space, with the pending and failed bookkeeping of every rule
(:mod:`~trieste_scalable.acquisition.pending`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from trieste.acquisition.rule import AcquisitionRule
from trieste.space import SearchSpace
from trieste.types import State, TensorType

from ..numerics.bits import take_rows
from .candidates import EvaluatedCandidates, candidate_rows, num_candidates
from .pending import PendingState
from .rule_state import saved_state


@saved_state
@dataclass(frozen=True)
class RandomState(PendingState):
    """Batches drawn so far by :class:`RandomRule` (it seeds the next batch), with the pending
    and failed points (:class:`~trieste_scalable.acquisition.pending.PendingState`)."""

    num_batches: int = 0


class RandomRule(AcquisitionRule[State[Optional[RandomState], TensorType], SearchSpace, Any]):
    """Uniform random candidates, distinct within a batch and from the pending ones (the
    baseline); with ``exclude_evaluated``, never an evaluated candidate (screening without
    replacement). Batch ``k`` is drawn with the seed ``(seed, k)``, so a restored run draws
    what it would have."""

    state_type = RandomState
    """The ``State`` value this rule keeps (a fresh one is ``RandomState()``)."""

    def __init__(self, batch_size: int, seed: int = 0, exclude_evaluated: bool = False):
        self._batch_size = batch_size
        self._seed = seed
        self._exclude = exclude_evaluated
        self._evaluated = EvaluatedCandidates()

    def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
        dataset = next(iter(datasets.values())) if datasets else None
        evaluated = np.zeros(num_candidates(search_space), dtype=bool)
        if self._exclude:
            evaluated = self._evaluated(search_space, dataset)

        def state_func(state: Optional[RandomState]) -> tuple[RandomState, TensorType]:
            state = RandomState.continued(state, self)
            pending, failed = state.outstanding(dataset), state.failures(dataset)
            excluded = self._evaluated.among(search_space, pending)
            excluded |= self._evaluated.among(search_space, failed)
            allowed = np.flatnonzero(~(evaluated | excluded))
            size = min(self._batch_size, allowed.size)  # the last batch shrinks to what is left
            rng = np.random.default_rng([self._seed, state.num_batches])
            index = rng.choice(allowed, size=size, replace=False)
            batch = take_rows(candidate_rows(search_space), index)
            return state.proposing(
                pending, batch, dataset, num_batches=state.num_batches + 1
            ), batch

        return state_func

    def __repr__(self) -> str:
        return f"RandomRule({self._batch_size}, exclude_evaluated={self._exclude})"
