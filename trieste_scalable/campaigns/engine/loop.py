"""The campaign engine, for every campaign: points proposed by a Trieste rule, evaluated by an
:class:`~.evaluators.Evaluator` (in this process, on Ray workers), each result handed on as it
arrives (to be logged) and told to the model.

Two modes. **Whole batches** (synchronous campaigns): ask for a batch, submit it, wait for all
of it, tell it, ask again. **Asynchronous** (``docs/asynchronous.md``): ``num_workers``
evaluations in flight, new points asked for given those still pending. Whenever workers are
free the loop hands out proposals in hand; a :class:`~.proposer.BackgroundProposer` tells the
model what finished and asks the rule for more on its own thread (Trieste's
``AskTellOptimizer`` with our rules' pending points: see
:mod:`~trieste_scalable.acquisition.pending`), ahead of the workers: it keeps in hand the free
workers' share plus twice the evaluations expected to finish during one acquisition. A rule
may propose nothing while points are in flight; it is asked again after the next result.

A failed evaluation is recorded, never told: it moves from the rule state's pending points to its
failed ones (:func:`~trieste_scalable.acquisition.pending.with_failures`), so no rule proposes it
again nor counts it as in-flight variance. Whole batches are told in submission order, so a seed
gives the same campaign on any evaluator.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np
from trieste.acquisition.rule import AcquisitionRule
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.space import SearchSpace

from ...acquisition.candidates import CandidatesExhausted
from ...evaluation.evaluators import Evaluation, Evaluator
from .ask_tell import CampaignAskTell
from .proposer import BackgroundProposer, Proposal, tell


@dataclass(frozen=True)
class Acquisition:
    """One call of the rule: points proposed [K], how many distinct, the model's size
    (:func:`model_size`) and the seconds it took, the tell of the results before it included."""

    size: int
    distinct: int
    model_size: int
    seconds: float


@dataclass
class CampaignResult:
    """What a campaign did, in any mode and on any evaluator.

    :ivar dataset: Every told evaluation, the initial data (or a resumed campaign's) first.
    :ivar num_initial: Rows of ``dataset`` from before the campaign's first acquisition.
    :ivar evaluations: This run's finished or failed evaluations, in the order they came back.
    :ivar acquisitions: This run's calls of the rule, in order.
    :ivar wall_seconds: From the first submission to the last result.
    :ivar num_workers: Evaluations kept in flight.
    :ivar exhausted: The rule had nothing left to pick before the budget was used up.
    """

    dataset: Dataset
    num_initial: int = 0
    evaluations: list[Evaluation] = field(default_factory=list)
    acquisitions: list[Acquisition] = field(default_factory=list)
    wall_seconds: float = 0.0
    num_workers: int = 1
    exhausted: bool = False

    @property
    def num_evaluations(self) -> int:
        """Told evaluations after the initial design."""
        return int(self.dataset.query_points.shape[0]) - self.num_initial

    @property
    def failures(self) -> list[Evaluation]:
        return [e for e in self.evaluations if e.failed]

    @property
    def utilisation(self) -> float:
        """Share of the workers' time spent evaluating: the evaluations' summed durations over
        ``num_workers * wall_seconds``."""
        busy = sum(e.finished - e.started for e in self.evaluations)
        return busy / max(self.num_workers * self.wall_seconds, 1e-12)

    @property
    def batch_sizes(self) -> list[int]:
        return [a.size for a in self.acquisitions]

    @property
    def distinct_per_batch(self) -> list[int]:
        return [a.distinct for a in self.acquisitions]

    @property
    def model_sizes(self) -> list[int]:
        return [a.model_size for a in self.acquisitions]

    @property
    def batch_seconds(self) -> list[float]:
        return [a.seconds for a in self.acquisitions]


def model_size(model: Any) -> int:
    """Dictionary size (Nystrom), inducing points (SVGP) or unique points (exact models); of
    the model of features a model of a make-on-demand space's tuples wraps (``inner``)."""
    model = getattr(model, "inner", model)
    if hasattr(model, "num_inducing"):
        return int(model.num_inducing)
    if hasattr(model, "dictionary"):
        return int(model.dictionary.shape[0])
    return int(getattr(model, "num_unique_points", 0))


class EngineCallbacks:
    """What a campaign does at the engine's events, each a no-op here: subclass and override the
    hooks wanted (as Ray Tune's ``Callback``)."""

    def on_results(self, finished: list[Evaluation]) -> None:
        """Each group of finished evaluations as it arrives, before they are told (e.g. to log
        them)."""

    def on_ask(self, record: Acquisition) -> None:
        """Each acquisition's record, also kept in the result (on the proposer's thread in
        asynchronous mode)."""

    def before_submit(self, points: np.ndarray, asks: np.ndarray, state: Any) -> None:
        """Each group of points [K, D] about to be submitted, the acquisition that proposed
        each [K] (1 for the first ``ask``, 0 for a point submitted again) and the rule's
        ``State`` value (e.g. to note them down first, so a crash loses none)."""


def run_asynchronous(
    search_space: SearchSpace,
    model: Any,
    rule: AcquisitionRule,
    initial: Dataset,
    evaluator: Evaluator,
    budget: int,
    *,
    whole_batches: bool = False,
    max_seconds: Optional[float] = None,
    callbacks: Optional[EngineCallbacks] = None,
    payload: Optional[Callable[[np.ndarray], Sequence[Any]]] = None,
    rule_state: Any = None,
    resubmit: Optional[np.ndarray] = None,
    num_initial: Optional[int] = None,
) -> CampaignResult:
    """Submit ``budget`` evaluations after ``initial``, keeping ``evaluator.num_workers`` in
    flight (module docstring).

    :param whole_batches: Synchronous campaigns: submit a batch, wait for all of it, tell it, ask
        again (a batch then waits for its slowest evaluation; the whole batch is in flight at
        once if ``evaluator.num_workers`` allows).
    :param max_seconds: Submit nothing after this many seconds (what is in flight finishes).
    :param callbacks: Told of the engine's events (:class:`EngineCallbacks`; default none).
    :param payload: Maps points [K, D] to what the objective is called with, one each (e.g.
        candidate indices or SMILES).
    :param rule_state: The rule's ``State`` value to start from (a resumed campaign's).
    :param resubmit: Points [R, D] to submit first, within the budget (those a resumed campaign
        had in flight; ``rule_state`` must hold them as pending).
    :param num_initial: Rows of ``initial`` from before this campaign (all of them by default).
    :raise RuntimeError: If the rule proposes nothing while nothing is in flight.
    """
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    ask_tell = CampaignAskTell(search_space, initial, model, rule, acquisition_state=rule_state)
    hooks = callbacks or EngineCallbacks()
    loop = _Submissions(evaluator, budget, max_seconds, hooks.before_submit, payload)
    first = [Proposal(x, 0, rule_state) for x in ([] if resubmit is None else resubmit)]
    told = int(initial.query_points.shape[0]) if num_initial is None else num_initial
    result = CampaignResult(initial, told, num_workers=evaluator.num_workers)

    def asked(points: np.ndarray, seconds: float) -> None:
        distinct = int(np.unique(points, axis=0).shape[0]) if len(points) else 0
        record = Acquisition(len(points), distinct, model_size(model), seconds)
        result.acquisitions.append(record)
        hooks.on_ask(record)

    if whole_batches:
        _whole_batches(ask_tell, loop, first, result, hooks.on_results, asked)
    else:
        _overlapped(BackgroundProposer(ask_tell, first, asked), loop, result, hooks.on_results)
    result.dataset, result.wall_seconds = ask_tell.dataset, time.time() - loop.start
    return result


POLL_SECONDS = 0.01
"""How often the loop looks for new proposals while workers are free and an acquisition runs."""


def _overlapped(
    proposer: BackgroundProposer,
    loop: _Submissions,
    result: CampaignResult,
    on_results: Callable[[list[Evaluation]], None],
) -> None:
    """Hand out proposals as workers free up; the proposer tells and asks meanwhile."""
    evaluator = loop.evaluator
    try:
        while True:
            loop.submit(proposer.take(loop.free_workers()))
            proposer.want(loop.ahead(result.evaluations, proposer.ask_seconds))
            if not evaluator.in_flight:
                if loop.free_workers() == 0:
                    break  # the budget or the time is used up
                if not proposer.wait():
                    if proposer.exhausted:  # what could be proposed was: the campaign ends
                        result.exhausted = True
                        break
                    raise RuntimeError(
                        "the rule proposes nothing while nothing is in flight (its pending "
                        f"points include {len(result.failures)} failed evaluations it waits for)"
                    )
                continue
            waiting = loop.free_workers() > 0 and (proposer.asking or proposer.in_hand > 0)
            finished = evaluator.collect(POLL_SECONDS if waiting else None)
            if finished:
                result.evaluations.extend(finished)
                loop.submit(proposer.take(loop.free_workers()))  # before logging them
                on_results(finished)
                proposer.tell_later(finished)
    finally:
        proposer.close()


def _whole_batches(
    ask_tell: AskTellOptimizer,
    loop: _Submissions,
    first: list[Proposal],
    result: CampaignResult,
    on_results: Callable[[list[Evaluation]], None],
    asked: Callable[[np.ndarray, float], None],
) -> None:
    """Submit a batch, wait for all of it, tell it, ask again. Each evaluation goes to
    ``on_results`` as it arrives, not when its batch is complete."""
    in_hand, asks = deque(first), 0
    held: list[Evaluation] = []
    while loop.free_workers() > 0:
        if not in_hand:
            asks += 1
            start = time.perf_counter()
            # told lazily, in submission order: the same campaign whatever order the evaluator
            # returned them in (Ray workers finish in any order)
            tell(ask_tell, sorted(held, key=lambda e: e.key))
            held.clear()
            try:
                points = ask_tell.ask().numpy()
            except CandidatesExhausted:
                result.exhausted = True
                break
            asked(points, time.perf_counter() - start)
            in_hand.extend(Proposal(x, asks, ask_tell.acquisition_state) for x in points)
        loop.submit([in_hand.popleft() for _ in range(min(loop.free_workers(), len(in_hand)))])
        if not loop.evaluator.in_flight:
            if loop.free_workers() == 0:
                break  # the time ran out while asking
            raise RuntimeError("the rule proposed nothing while nothing is in flight")
        while loop.evaluator.in_flight:
            finished = loop.evaluator.collect()
            held.extend(finished)
            result.evaluations.extend(finished)
            on_results(finished)  # logged as it arrives: a crash redoes none of them
    tell(ask_tell, sorted(held, key=lambda e: e.key))


class _Submissions:
    """The budget, the clock and the submissions of :func:`run_asynchronous`."""

    def __init__(
        self,
        evaluator: Evaluator,
        budget: int,
        max_seconds: Optional[float],
        before_submit: Callable[[np.ndarray, np.ndarray, Any], None],
        payload: Optional[Callable[[np.ndarray], Sequence[Any]]],
    ):
        self.evaluator, self.budget, self.max_seconds = evaluator, budget, max_seconds
        self.before_submit, self.payload = before_submit, payload
        self.submitted, self.start = 0, time.time()
        self._busy, self._counted = 0.0, 0  # run seconds of the evaluations finished, how many

    def late(self) -> bool:
        return self.max_seconds is not None and time.time() - self.start > self.max_seconds

    def free_workers(self) -> int:
        if self.late():
            return 0
        return min(
            self.evaluator.num_workers - self.evaluator.in_flight, self.budget - self.submitted
        )

    def ahead(self, finished: list[Evaluation], ask_seconds: float) -> int:
        """Proposals to keep in hand: the free workers' share and twice the evaluations
        expected to finish during one acquisition, within the budget.

        Expected at the rate of busy workers, ``num_workers`` over the mean run time of the
        evaluations ``finished`` so far (a list that only grows), not at the rate seen since
        the start: that counts the first acquisition, when nothing ran, and kept the second
        from starting until the first's proposals had run out (``design_measurements.md``)."""
        if self.late():
            return 0
        self._busy += sum(e.finished - e.started for e in finished[self._counted :])
        self._counted = len(finished)
        mean_run = self._busy / self._counted if self._counted else math.inf
        rate = self.evaluator.num_workers / max(mean_run, 1e-9)
        expected = math.ceil(2 * rate * ask_seconds)
        free = self.evaluator.num_workers - self.evaluator.in_flight
        return min(free + expected, self.budget - self.submitted)

    def submit(self, chosen: list[Proposal]) -> None:
        """Note down (``before_submit``, with the state of the last acquisition among them)
        and submit ``chosen``."""
        if not chosen:
            return
        points, asks = np.stack([p.point for p in chosen]), np.array([p.ask for p in chosen])
        self.before_submit(points, asks, chosen[-1].state)
        payloads = [None] * len(points) if self.payload is None else self.payload(points)
        for point, payload in zip(points, payloads):
            self.evaluator.submit(point, payload)
        self.submitted += len(chosen)
