"""A command-line screening campaign whose evaluations run on Ray workers
(``trieste-scalable screen --workers N [--asynchronous]``).

The initial design is evaluated on the workers too, then the model is built from what came back
and :func:`~.asynchronous.run_asynchronous` keeps ``N`` evaluations in flight:
asynchronously (each group of results told as it comes, new points asked for given the pending
ones) or, without ``--asynchronous``, in whole batches. What is durable, and in which order
(:mod:`~trieste_scalable.campaigns.worker_log`):

1. before points are submitted, the rule's state (``rule_state.json``) and the jobs in flight
   (``in_flight.json``) are written;
2. when evaluations finish they are appended to ``evaluations.csv`` (failures with their
   error), then ``in_flight.json`` is rewritten without them, then the model is told.

``--resume`` after a crash of the driver (SIGKILL included) submits again the jobs of
``in_flight.json`` the log does not hold, and restores the rule's state with exactly those and
the failed evaluations as its pending points: nothing logged is evaluated again or lost, and a
failed evaluation is never proposed again by the rules that exclude pending points. (A campaign
that crashed after a failed initial evaluation and before its first model proposal restarts
its rule afresh: that candidate may then be proposed again.)
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.data import Dataset

from ..acquisition import rule_state
from ..acquisition.pending import proposed
from ..errors import CampaignError, UsageError
from ..problems.oracles import Oriented
from ..problems.screening import ScreeningProblem
from .asynchronous import run_asynchronous
from .campaign import dimension_histograms_limited, progress_bar
from .campaign_directory import (
    LIBRARY_HASH,
    RULE_STATE,
    check_same_campaign,
    refuse_overwrite,
    saved_rule_state,
)
from .distributed import RayEvaluator, WithLatency
from .evaluators import Evaluation
from .logdir import CampaignLock, write_atomically
from .worker_log import InFlight, Job, WorkerLog, WorkerRecords, jobs_to_resubmit

IN_FLIGHT = "in_flight.json"
LOG_EVERY_SECONDS = 1.0


@dataclass(frozen=True)
class WorkerSessionResult:
    """What a campaign on workers logged (all of it, resumed parts included), and how busy
    this run kept its workers (summed evaluation time over workers times wall time)."""

    records: WorkerRecords
    utilisation: float
    wall_seconds: float


def run_on_workers(
    problem: ScreeningProblem,
    settings: dict[str, Any],
    build: Callable[[Dataset, int], tuple[Any, Any]],
    oracle: Oriented,
    lock: CampaignLock,
    existed: bool,
) -> WorkerSessionResult:
    """Start or resume the campaign of ``settings`` in ``settings["logdir"]`` (module
    docstring); the caller holds ``lock`` if the directory ``existed``.

    :raise UsageError: On a directory holding another campaign, or nothing to resume.
    :raise CampaignError: On damaged records, or if every initial evaluation failed.
    """
    logdir = Path(settings["logdir"])
    log = WorkerLog(logdir / "evaluations.csv", problem, oracle.score)
    saved, journal = logdir / "run.json", InFlight(logdir / IN_FLIGHT)
    if settings["resume"]:
        if not saved.is_file():
            raise UsageError(f"nothing to resume: {saved} does not exist")
        check_same_campaign(saved, settings, problem.content_hash())
        records = log.read_records()
        listed, next_job = journal.read()
        still = jobs_to_resubmit(listed, records, len(problem.points), journal.path)
        next_job = max([next_job, *(records.jobs + 1).tolist()])
        print(f"resuming: {len(records.jobs)} evaluations logged, {len(still)} were in flight")
    else:
        refuse_overwrite(saved, log)
        if not existed:
            logdir.mkdir(parents=True, exist_ok=True)
            lock.acquire()
            refuse_overwrite(saved, log)
        write_atomically(saved, json.dumps({**settings, LIBRARY_HASH: problem.content_hash()}))
        log.start_empty()
        records = WorkerRecords(*(np.zeros(0, dtype=int),) * 3, np.zeros(0))
        rng = np.random.default_rng(settings["seed"])
        ids = rng.choice(len(problem.points), settings["initial"], replace=False)
        still, next_job = [Job(-1, 0, int(i)) for i in ids], 0  # numbered when submitted
    campaign = _Campaign(problem, settings, oracle, log, journal, records, next_job)
    try:
        return campaign.run(build, still, logdir / RULE_STATE)
    except Exception:
        if not settings["resume"] and not campaign.jobs:  # e.g. Ray did not start
            for path in (saved, log.path, journal.path, logdir / RULE_STATE):
                path.unlink(missing_ok=True)  # nothing evaluated: nothing to block a rerun
        raise


class _Campaign:
    """One run of the driver: its evaluator, records so far, and what it writes as results
    come."""

    def __init__(
        self,
        problem: ScreeningProblem,
        settings: dict[str, Any],
        oracle: Oriented,
        log: WorkerLog,
        journal: InFlight,
        records: WorkerRecords,
        next_job: int,
    ):
        self.problem, self.settings, self.oracle = problem, settings, oracle
        self.log, self.journal, self.next_job = log, journal, next_job
        self.jobs, self.batches = list(records.jobs), list(records.batches)
        self.ids, self.observed = list(records.ids), list(records.observed)
        self.round = int(records.batches.max()) if records.batches.size else 0
        self.in_flight: dict[int, Job] = {}  # by the evaluator's key
        self.submitted = 0  # this run's submissions (the evaluator's next key)
        self.busy = 0.0
        self.errors: set[str] = set()  # this run's distinct failure messages
        told = np.isfinite(records.observed)
        self.best = float(records.observed[told].min()) if told.any() else np.inf
        self.failures = int(np.sum(~told))
        self.logged_at = -np.inf  # when the scalars were last written
        self.writer = tf.summary.create_file_writer(settings["logdir"])
        done = int(np.sum(records.batches > 0))
        self.bar = progress_bar(settings["budget"], not settings["quiet"], initial=done)

    def run(
        self, build: Callable[[Dataset, int], tuple[Any, Any]], still: list[Job], state_path: Path
    ) -> WorkerSessionResult:
        objective: Any = self.oracle
        if self.settings.get("latency"):
            objective = WithLatency(objective, self.settings["latency"], seed=self.settings["seed"])
        self.start = time.time()
        self.round = max([self.round, *(job.batch for job in still)])
        evaluator = RayEvaluator(
            objective,
            self.settings["workers"],
            timeout=self.settings.get("timeout"),
            address=self.settings.get("ray_address"),
        )
        limited = dimension_histograms_limited(self.problem.points.shape[1])
        try:
            with logging.tensorboard_writer(self.writer), limited:
                self._initial_design(evaluator, [job for job in still if job.batch == 0])
                later = [job for job in still if job.batch > 0]
                left = self.settings["budget"] - sum(b > 0 for b in self.batches)
                if left > 0:
                    data = self._told()
                    model, rule = build(data, left)
                    resumed = self.settings["resume"]
                    state = saved_rule_state(state_path, self.round) if resumed else None
                    self._continue(evaluator, data, model, rule, state, later[:left], left)
                self._log_scalars([])  # the final figures, whenever the last were written
        finally:
            evaluator.shutdown()
            self.bar.close()
        seconds = time.time() - self.start
        utilisation = self.busy / max(self.settings["workers"] * seconds, 1e-12)
        return WorkerSessionResult(self.log.read_records(), utilisation, seconds)

    def _initial_design(self, evaluator: RayEvaluator, jobs: list[Job]) -> None:
        if jobs:
            points = np.asarray(self.problem.points[[job.index for job in jobs]])
            self.submit(points, None, [0] * len(points))  # all noted down, so none is lost
            queue = deque(points)
            while queue or evaluator.in_flight:
                # no more than the workers at a time: a --timeout runs from the submission, so
                # an evaluation must not wait in Ray's queue behind slow ones
                while queue and evaluator.in_flight < evaluator.num_workers:
                    point = queue.popleft()
                    evaluator.submit(point, self.payload(point))
                self.results(evaluator.collect())
        if not any(b == 0 and np.isfinite(y) for b, y in zip(self.batches, self.observed)):
            raise CampaignError(
                f"every initial evaluation failed (e.g. {'; '.join(sorted(self.errors)[:3])}; "
                f"all in {self.log.path}): fix the objective and start in a new --logdir"
            )

    def _continue(
        self,
        evaluator: RayEvaluator,
        data: Dataset,
        model: Any,
        rule: Any,
        state: Any,
        resubmit: list[Job],
        budget: int,
    ) -> None:
        failed = [i for i, y in zip(self.ids, self.observed) if not np.isfinite(y)]
        pending = np.asarray(self.problem.points[failed + [job.index for job in resubmit]])
        if state is None and hasattr(rule, "state_type"):  # a fresh rule: a fresh state
            state = rule.state_type()
        if state is not None:  # what is pending now: failed and resubmitted points
            state = dataclasses.replace(
                state, pending=proposed(pending[:0], pending), seen=len(data)
            )
        run_asynchronous(
            self.problem.search_space,
            model,
            rule,
            data,
            evaluator,
            budget,
            whole_batches=not self.settings["asynchronous"],
            on_results=self.results,
            before_submit=self._submit_proposed(resubmit),
            payload=self.payload,
            rule_state=state,
            resubmit=np.asarray(self.problem.points[[job.index for job in resubmit]]),
        )

    def _submit_proposed(
        self, resubmit: list[Job]
    ) -> Callable[[np.ndarray, np.ndarray, Any], None]:
        """``before_submit`` of :func:`run_asynchronous`: the batch of a point is its
        acquisition's, counted on from the last logged one (a resubmitted point keeps its own)."""
        offset, earlier = self.round, [job.batch for job in resubmit]

        def submit(points: np.ndarray, asks: np.ndarray, state: Any) -> None:
            batches = [offset + int(a) if a else earlier.pop(0) for a in asks]
            self.submit(points, state, batches)

        return submit

    def payload(self, point: np.ndarray) -> str:
        """The SMILES the oracle is called with."""
        return str(self.problem.labels[self.problem.indices(point[None])[0]])

    def submit(self, points: np.ndarray, state: Any, batches: list[int]) -> None:
        """Note down the points about to be submitted (and the rule's state) first."""
        self.round = max(self.round, *batches)
        if state is not None:
            path = Path(self.settings["logdir"]) / RULE_STATE
            write_atomically(path, rule_state.encode(state, self.round))
        for index, batch in zip(self.problem.indices(points), batches):
            self.in_flight[self.submitted] = Job(self.next_job, batch, int(index))
            self.submitted += 1
            self.next_job += 1
        self.journal.write(list(self.in_flight.values()), self.next_job)

    def results(self, evaluations: list[Evaluation]) -> None:
        """Log finished evaluations, take them off the journal, report progress."""
        if not evaluations:
            return
        jobs = [self.in_flight.pop(e.key) for e in evaluations]
        self.log.append_evaluations(jobs, evaluations)
        self.journal.write(list(self.in_flight.values()), self.next_job)
        for job, e in zip(jobs, evaluations):
            self.jobs.append(job.job)
            self.batches.append(job.batch)
            self.ids.append(job.index)
            self.observed.append(np.nan if e.failed else float(e.value))  # type: ignore[arg-type]
            self.busy += e.finished - e.started
            self.errors |= {e.error} if e.failed else set()
            self.failures += e.failed
            self.best = self.best if e.failed else min(self.best, float(e.value))  # type: ignore[arg-type]
        self.bar.update(sum(job.batch > 0 for job in jobs))
        self.bar.set_postfix(best=f"{self.best_score:.4g}", in_flight=len(self.in_flight))
        if time.time() - self.logged_at >= LOG_EVERY_SECONDS:
            self._log_scalars(evaluations)

    @property
    def best_score(self) -> float:
        """The oracle's best value so far (NaN before any)."""
        return self.oracle.score(self.best) if np.isfinite(self.best) else np.nan

    def _told(self) -> Dataset:
        told = np.isfinite(self.observed)
        points = tf.constant(self.problem.points[np.asarray(self.ids)[told]])
        y = np.asarray(self.observed)[told][:, None]
        return Dataset(points, tf.constant(y, dtype=points.dtype))

    def _log_scalars(self, evaluations: list[Evaluation]) -> None:
        """TensorBoard scalars (at most every :data:`LOG_EVERY_SECONDS`: recall sorts the
        library, and results may come dozens a second)."""
        self.logged_at = time.time()
        step = len(self.jobs)
        logging.set_step_number(step)  # the rules' statistics, logged at their next proposal
        elapsed = max(time.time() - self.start, 1e-9)
        with self.writer.as_default(step=step):
            logging.scalar("campaign/evaluations", step)
            logging.scalar("campaign/best_score", self.best_score)
            logging.scalar("workers/utilisation", self.busy / (self.settings["workers"] * elapsed))
            logging.scalar("workers/in_flight", len(self.in_flight))
            logging.scalar("workers/failures", self.failures)
            if evaluations:
                latency = [e.finished - e.started for e in evaluations]
                logging.scalar("workers/latency_seconds", float(np.mean(latency)))
            if bool(np.all(np.isfinite(self.problem.values))):
                ids = np.asarray(self.ids)[np.isfinite(self.observed)]
                for name, value in self.problem.metrics(ids).items():
                    logging.scalar(f"campaign/{name}", value)
        self.writer.flush()
