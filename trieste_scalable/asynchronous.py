"""Asynchronous campaigns: ``num_workers`` evaluations in flight, each result told to the model
as it comes, new points asked for given those still pending (``docs/asynchronous.md``).

Whenever workers are free the loop hands out the points the rule proposed last and asks for more
once they are used up (Trieste's ``AskTellOptimizer`` with our rules' pending points: see
:mod:`~trieste_scalable.acquisition.pending`); a rule may propose nothing while points are in
flight, and is asked again after the next result. The rule is asked ahead: right after each
tell if no proposals are in hand, and the proposals in hand go to the workers that just
finished *before* their results are told, so workers do not wait for model updates (a rule's
batch size is then how far it proposes ahead of the workers).

A failed evaluation is recorded, never told: it stays pending in the rule's state, so the rules
that exclude pending points never propose it again (a MINI-META epoch with repeats waits for
its failed repeat: the loop then stops with an error rather than wait forever).
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
    on_results: Optional[Callable[[list[Evaluation]], None]] = None,
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
    :param on_results: Called with each group of finished evaluations before they are told
        (e.g. to log them).
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
    loop = _Loop(
        AskTellOptimizer(search_space, initial, model, rule, acquisition_state=rule_state),
        evaluator,
        budget,
        max_seconds,
        whole_batches,
        before_submit,
        payload,
    )
    loop.proposed = [] if resubmit is None else [(0, point) for point in resubmit]
    result = AsynchronousResult(initial, num_workers=evaluator.num_workers)
    held: list[Evaluation] = []  # finished, not told yet (whole batches only)
    while loop.free_workers() > 0 or evaluator.in_flight:
        loop.hand_out(ask=not (whole_batches and evaluator.in_flight))
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
        if not whole_batches:
            loop.hand_out(ask=False)  # proposals in hand go out before the model update
        if on_results is not None:
            on_results(held)
        loop.tell(held)
        held = []
        if not whole_batches:
            loop.propose_ahead()
    result.dataset, result.wall_seconds = loop.ask_tell.dataset, time.time() - loop.start
    return result


class _Loop:
    """The proposals in hand and the submissions of :func:`run_asynchronous`."""

    def __init__(
        self,
        ask_tell: AskTellOptimizer,
        evaluator: RayEvaluator,
        budget: int,
        max_seconds: Optional[float],
        whole_batches: bool,
        before_submit: Optional[Callable[[np.ndarray, np.ndarray, Any], None]],
        payload: Optional[Callable[[np.ndarray], Any]],
    ):
        self.ask_tell, self.evaluator, self.budget = ask_tell, evaluator, budget
        self.max_seconds, self.whole_batches = max_seconds, whole_batches
        self.before_submit, self.payload = before_submit, payload
        self.proposed: list[tuple[int, np.ndarray]] = []  # (acquisition, point), not submitted
        self.submitted, self.asks, self.start = 0, 0, time.time()

    def free_workers(self) -> int:
        if self.max_seconds is not None and time.time() - self.start > self.max_seconds:
            return 0
        return min(
            self.evaluator.num_workers - self.evaluator.in_flight, self.budget - self.submitted
        )

    def hand_out(self, ask: bool) -> None:
        """Submit proposals in hand to the free workers, asking the rule for more (given every
        point still pending) when they run out, if ``ask`` (with whole batches: one batch)."""
        chosen: list[tuple[int, np.ndarray]] = []
        while len(chosen) < self.free_workers():
            if not self.proposed:
                if not ask or (self.whole_batches and chosen):
                    break  # no asking, or the batch is out
                self.asks += 1
                self.proposed.extend((self.asks, x) for x in self.ask_tell.ask().numpy())
                if not self.proposed:
                    break  # the rule waits for results
            chosen.append(self.proposed.pop(0))
        if not chosen:
            return
        if self.before_submit is not None:
            asks, points = np.array([a for a, _ in chosen]), np.stack([x for _, x in chosen])
            self.before_submit(points, asks, self.ask_tell.acquisition_state)
        for _, point in chosen:
            self.evaluator.submit(point, None if self.payload is None else self.payload(point))
        self.submitted += len(chosen)

    def propose_ahead(self) -> None:
        """With no proposals in hand, ask now (given what was just told and what is pending),
        so that the next workers to finish get new points at once, without waiting for the
        next model update."""
        late = self.max_seconds is not None and time.time() - self.start > self.max_seconds
        if not self.proposed and self.submitted < self.budget and not late:
            self.asks += 1
            self.proposed.extend((self.asks, x) for x in self.ask_tell.ask().numpy())

    def tell(self, finished: list[Evaluation]) -> None:
        """Tell the model the evaluations that did not fail."""
        told = [e for e in finished if not e.failed]
        if told:
            dtype = self.ask_tell.dataset.query_points.dtype
            x = tf.constant(np.stack([e.point for e in told]), dtype=dtype)
            y = tf.constant([[e.value] for e in told], dtype=dtype)
            self.ask_tell.tell(Dataset(x, y))
