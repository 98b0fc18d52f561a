"""One run of a campaign over a problem's candidates, for every campaign: the initial design
evaluated, the model built from what came back, then the engine
(:func:`~.engine.loop.run_asynchronous`) in whole-batch or asynchronous mode; each submission
numbered (a job) and, in a campaign directory, made durable in this order
(:mod:`~trieste_scalable.campaigns.directory.records`):

1. before points are submitted, the rule's state (``rule_state.json``) and the jobs in flight
   (``in_flight.json``) are written;
2. when evaluations finish they are appended to ``evaluations.csv`` (failures with their
   error), then ``in_flight.json`` is rewritten without them, then the model is told.

A failed evaluation is logged, never told: it is among the failed points of the rule's state,
so no rule proposes it again. :func:`run_campaign` is the same run from
Python, without a directory.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset

from ...acquisition import rule_state
from ...acquisition.pending import PendingState, initial_state
from ...errors import CampaignError
from ...evaluation.evaluators import Evaluation, Evaluator, InProcessEvaluator
from ...problems.campaign_problem import CampaignProblem, KnowsValues
from ..directory.lock import write_atomically
from ..directory.records import EvaluationLog, InFlight, Job, LoggedEvaluations
from ..engine.loop import Acquisition, CampaignResult, EngineCallbacks, run_asynchronous
from ..reporting.monitor import CampaignMonitor


class InitialDesignFailed(CampaignError):
    """No evaluation of the initial design succeeded: the model has nothing to start from."""


GROUP_SECONDS = 0.25
"""In-process evaluations are logged in groups of this much run time (one write, not one per
cheap evaluation: :class:`~.evaluators.InProcessEvaluator`)."""

Build = Callable[[Dataset, int], tuple[Any, Any]]
"""Maps the data so far and the evaluations left to the (model, rule) pair."""


@dataclasses.dataclass(frozen=True)
class CampaignFiles:
    """Where a campaign directory's run writes: the log, the jobs in flight, the rule state."""

    log: EvaluationLog
    journal: InFlight
    rule_state: Path


class CampaignRun:
    """One run of the driver: its jobs, what it writes as results come, its monitor.

    :param payload: Maps candidate indices [K] to what the objective is called with.
    :param files: The campaign directory's files (nothing written if ``None``).
    :param logged: What the log held before this run.
    :param next_job: The next job number (unique across resumes).
    """

    def __init__(
        self,
        problem: CampaignProblem,
        evaluator: Evaluator,
        monitor: CampaignMonitor,
        payload: Callable[[np.ndarray], Sequence[Any]],
        files: Optional[CampaignFiles] = None,
        logged: Optional[LoggedEvaluations] = None,
        next_job: int = 0,
    ):
        logged = logged or LoggedEvaluations.empty()
        self.problem, self.evaluator, self.monitor = problem, evaluator, monitor
        self.payload, self.files, self.next_job = payload, files, next_job
        self.ids, self.batches = list(logged.ids), list(logged.batches)
        self.jobs = list(logged.jobs)
        self.observed = list(logged.observed)
        self.round = int(logged.batches.max()) if logged.batches.size else 0
        self.in_flight: dict[int, Job] = {}  # by the evaluator's key
        self.submitted = 0  # this run's submissions (the evaluator's next key)
        self.errors: set[str] = set()  # this run's distinct failure messages

    def initial_design(self, jobs: list[Job]) -> None:
        """Evaluate ``jobs`` (batch 0), at most ``num_workers`` in flight (a ``--timeout`` must
        not run while an evaluation waits in a queue behind slow ones).

        :raise CampaignError: If no initial evaluation succeeded (logged ones included).
        """
        if jobs:
            points = np.asarray(self.problem.points[[job.index for job in jobs]])
            self.submit(points, None, [0] * len(points))  # all noted down, so none is lost
            queue = deque(zip(points, self.payload(np.array([job.index for job in jobs]))))
            while queue or self.evaluator.in_flight:
                while queue and self.evaluator.in_flight < self.evaluator.num_workers:
                    self.evaluator.submit(*queue.popleft())
                self.results(self.evaluator.collect())
        if not any(b == 0 and np.isfinite(y) for b, y in zip(self.batches, self.observed)):
            where = f"all in {self.files.log.path}: " if self.files else ""
            raise InitialDesignFailed(
                f"every initial evaluation failed (e.g. {'; '.join(sorted(self.errors)[:3])}; "
                f"{where}fix the objective and start again)"
            )

    def told(self) -> Dataset:
        """What the model is told: the evaluations that did not fail, in submission (job)
        order, whatever order they finished in, so a seed gives the same campaign on any
        evaluator."""
        order = np.argsort(np.asarray(self.jobs, np.int64), kind="stable")
        ids = np.asarray(self.ids, np.int64)[order]
        batches = np.asarray(self.batches, np.int64)[order]
        observed = np.asarray(self.observed, np.float64)[order]
        return LoggedEvaluations(ids, batches, ids, observed).told(self.problem.points)

    def proceed(
        self,
        model: Any,
        rule: AcquisitionRule,
        state: Any,
        resubmit: list[Job],
        budget: int,
        whole_batches: bool,
    ) -> CampaignResult:
        """Run the engine for ``budget`` evaluations from the data told so far, submitting
        ``resubmit`` first; ``state`` (the rule's, or ``None``) gets what is pending now, the
        resubmitted points, and the failed ones (:func:`~.pending.initial_state`; a state of
        the user's that is no :class:`~.pending.PendingState` is kept as it is)."""
        data = self.told()
        failed = [i for i, y in zip(self.ids, self.observed) if not np.isfinite(y)]
        again = np.asarray(self.problem.points[[job.index for job in resubmit]])
        lost = np.asarray(self.problem.points[failed])
        if isinstance(state, PendingState):
            state = state.restarted(pending=again, failed=lost, seen=len(data))
        elif state is None:
            state = initial_state(rule, pending=again, failed=lost, seen=len(data))
        offset, earlier = self.round, [job.batch for job in resubmit]

        result = run_asynchronous(
            self.problem.search_space,
            model,
            rule,
            data,
            self.evaluator,
            budget,
            whole_batches=whole_batches,
            callbacks=_RunCallbacks(self, offset, earlier),
            payload=lambda points: self.payload(self.problem.indices(points)),
            rule_state=state,
            resubmit=again,
            num_initial=int(np.sum(np.asarray(self.batches)[np.isfinite(self.observed)] == 0)),
        )
        self.monitor.write_scalars(self.evaluator.in_flight)  # the final figures
        return result

    def submit(self, points: np.ndarray, state: Any, batches: list[int]) -> None:
        """Note down the points about to be submitted (and the rule's state) first."""
        self.round = max(self.round, *batches)
        if state is not None and self.files is not None:
            write_atomically(self.files.rule_state, rule_state.encode(state, self.round))
        for index, batch in zip(self.problem.indices(points), batches):
            self.in_flight[self.submitted] = Job(self.next_job, batch, int(index))
            self.submitted += 1
            self.next_job += 1
        if self.files is not None:
            self.files.journal.write(list(self.in_flight.values()), self.next_job)

    def results(self, evaluations: list[Evaluation]) -> None:
        """Log finished evaluations, take them off the journal, report progress."""
        if not evaluations:
            return
        jobs = [self.in_flight.pop(e.key) for e in evaluations]
        if self.files is not None:
            self.files.log.append(jobs, evaluations)
            self.files.journal.write(list(self.in_flight.values()), self.next_job)
        for job, e in zip(jobs, evaluations):
            self.jobs.append(job.job)
            self.ids.append(job.index)
            self.batches.append(job.batch)
            self.observed.append(np.nan if e.value is None else e.value)
            self.errors |= {e.error} if e.failed else set()
        self.monitor.evaluated(jobs, evaluations, len(self.in_flight))


def noise_free_score(problem: CampaignProblem) -> Callable[[int, float], float]:
    """The value column of a campaign evaluated in this process: the noise-free value in the
    user's units and direction (a screen's score)."""
    return lambda index, observed: problem.user_value(problem.values[index])


def run_campaign(
    problem: KnowsValues,
    model: Any,
    rule: AcquisitionRule,
    initial: Dataset,
    budget: int,
    seed: int = 0,
    logdir: Optional[str] = None,
    progress: bool = True,
) -> CampaignResult:
    """Evaluate ``budget`` points after ``initial`` (the model's data) with ``rule``, a batch at
    a time (the last batch cut at the budget), observing ``problem`` with its noise in this
    process; TensorBoard events go to ``logdir`` if given. The command line runs the same with a
    directory, a log and resume (:mod:`~trieste_scalable.campaigns.run.session`).

    :param seed: Seed of the observation noise.
    """
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    ids = problem.indices(initial.query_points)
    zeros = np.zeros(len(ids), dtype=np.int64)
    logged = LoggedEvaluations(zeros, zeros, ids, initial.observations.numpy()[:, 0])
    score, higher = noise_free_score(problem), problem.higher_is_better
    monitor = CampaignMonitor(
        problem,
        logdir,
        budget,
        progress,
        logged=logged,
        score=score,
        higher_is_better=higher,
        num_workers=budget,
    )
    objective = problem.objective(seed + 1000)
    evaluator = InProcessEvaluator(lambda i: objective(int(i)), budget, GROUP_SECONDS)
    run = CampaignRun(problem, evaluator, monitor, list, logged=logged)
    with monitor:
        return run.proceed(model, rule, None, [], budget, whole_batches=True)


class _RunCallbacks(EngineCallbacks):
    """A run's hooks: results logged and shown, acquisitions shown, points noted down before
    they are submitted (each with its batch: ``offset`` plus the acquisition's number, or the
    next of ``earlier`` for a point submitted again)."""

    def __init__(self, run: CampaignRun, offset: int, earlier: list[int]):
        self.run, self.offset, self.earlier = run, offset, earlier

    def on_results(self, finished: list[Evaluation]) -> None:
        self.run.results(finished)

    def on_ask(self, record: Acquisition) -> None:
        self.run.monitor.asked(record)

    def before_submit(self, points: np.ndarray, asks: np.ndarray, state: Any) -> None:
        batches = [self.offset + int(a) if a else self.earlier.pop(0) for a in asks]
        self.run.submit(points, state, batches)
