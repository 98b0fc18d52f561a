"""Asynchronous campaigns: ``num_workers`` evaluations in flight, each result told to the model
as it comes, new points asked for given those still pending (``docs/asynchronous.md``).

Whenever workers are free the loop hands out the points the rule proposed last and asks for more
once they are used up (Trieste's ``AskTellOptimizer`` with our rules' pending points: see
:mod:`~trieste_scalable.acquisition.pending`); a rule may propose nothing while points are in
flight, and is asked again after the next result. A failed evaluation is recorded, never told:
it stays pending in the rule's state, so the rules that exclude pending points never propose it
again (a MINI-META epoch with repeats waits for its failed repeat: the loop then stops with an
error rather than wait forever).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.space import SearchSpace

from .distributed import Evaluation, RayEvaluator


@dataclass
class AsynchronousResult:
    """What an asynchronous campaign did.

    :ivar dataset: Every told evaluation, the initial data first.
    :ivar evaluations: Every finished or failed evaluation, in the order they came back.
    :ivar wall_seconds: From the first submission to the last result.
    :ivar num_workers: Evaluations kept in flight.
    """

    dataset: Dataset
    evaluations: list[Evaluation] = field(default_factory=list)
    wall_seconds: float = 0.0
    num_workers: int = 1

    @property
    def failures(self) -> list[Evaluation]:
        return [e for e in self.evaluations if e.failed]

    @property
    def utilisation(self) -> float:
        """Share of the workers' time spent evaluating: the evaluations' summed durations over
        ``num_workers * wall_seconds``."""
        busy = sum(e.finished - e.started for e in self.evaluations)
        return busy / max(self.num_workers * self.wall_seconds, 1e-12)


def run_asynchronous(
    search_space: SearchSpace,
    model: Any,
    rule: AcquisitionRule,
    initial: Dataset,
    evaluator: RayEvaluator,
    budget: int,
    *,
    whole_batches: bool = False,
    max_seconds: Optional[float] = None,
    on_results: Optional[Callable[[list[Evaluation], Any], None]] = None,
    before_submit: Optional[Callable[[np.ndarray, np.ndarray, Any], None]] = None,
    payload: Optional[Callable[[np.ndarray], Any]] = None,
    rule_state: Any = None,
    resubmit: Optional[np.ndarray] = None,
) -> AsynchronousResult:
    """Submit ``budget`` evaluations after ``initial``, keeping ``evaluator.num_workers`` in
    flight (module docstring).

    :param whole_batches: The synchronous baseline on the same workers: submit a batch, wait for
        all of it, tell it, ask again (a batch then waits for its slowest evaluation).
    :param max_seconds: Submit nothing after this many seconds (what is in flight finishes).
    :param on_results: Called with each group of finished evaluations and the rule's ``State``
        value after they were told (e.g. to log them).
    :param before_submit: Called with each group of points [K, D] about to be submitted, the
        acquisition that proposed each [K] (1 for the first ``ask``, 0 for ``resubmit``) and
        the rule's ``State`` value (e.g. to note them down first, so a crash loses none).
    :param payload: Maps a point to what the objective is called with (e.g. its SMILES).
    :param rule_state: The rule's ``State`` value to start from (a resumed campaign's).
    :param resubmit: Points [R, D] to submit first, within the budget (those a resumed campaign
        had in flight; ``rule_state`` must hold them as pending).
    :raise RuntimeError: If the rule proposes nothing while nothing is in flight.
    """
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    ask_tell = AskTellOptimizer(search_space, initial, model, rule, acquisition_state=rule_state)
    dtype = initial.query_points.dtype
    result = AsynchronousResult(initial, num_workers=evaluator.num_workers)
    proposed = [] if resubmit is None else [(0, point) for point in resubmit]
    submitted, asks, start = 0, 0, time.time()
    held: list[Evaluation] = []  # finished, not told yet (whole batches only)

    def free_workers() -> int:
        if max_seconds is not None and time.time() - start > max_seconds:
            return 0
        return min(evaluator.num_workers - evaluator.in_flight, budget - submitted)

    while free_workers() > 0 or evaluator.in_flight:
        chosen: list[tuple[int, np.ndarray]] = []
        while len(chosen) < free_workers():
            if not proposed:
                if whole_batches and (evaluator.in_flight or chosen):
                    break  # the batch is out: wait for all of it
                asks += 1
                proposed.extend((asks, x) for x in ask_tell.ask().numpy())  # given the pending
                if not proposed:
                    break  # the rule waits for results
            chosen.append(proposed.pop(0))
        if chosen:
            if before_submit is not None:
                tags, points = np.array([a for a, _ in chosen]), np.stack([x for _, x in chosen])
                before_submit(points, tags, ask_tell.acquisition_state)
            for _, point in chosen:
                evaluator.submit(point, None if payload is None else payload(point))
            submitted += len(chosen)
        if not evaluator.in_flight:
            raise RuntimeError(
                "the rule proposes nothing while nothing is in flight (its pending points "
                f"include {len(result.failures)} failed evaluations it waits for)"
            )
        finished = evaluator.collect()
        result.evaluations.extend(finished)
        held.extend(finished)
        if whole_batches and evaluator.in_flight:
            continue
        finished, held = held, []
        told = [e for e in finished if not e.failed]
        if told:
            x = tf.constant(np.stack([e.point for e in told]), dtype=dtype)
            ask_tell.tell(Dataset(x, tf.constant([[e.value] for e in told], dtype=dtype)))
        if on_results is not None:
            on_results(finished, ask_tell.acquisition_state)
    result.dataset, result.wall_seconds = ask_tell.dataset, time.time() - start
    return result
