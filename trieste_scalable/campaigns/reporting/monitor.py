"""What a person watches while a campaign runs, the same for every campaign: a tqdm progress bar
and one TensorBoard writer (through ``trieste.logging``, so the rules' and models' own summaries
land beside the campaign's, at the same step).

Step = evaluations logged so far. Tags (``docs/tensorboard.md``): ``campaign/evaluations``,
``campaign/best_value`` (the best of the log's value column: the score for screening, higher is
better; the noise-free value otherwise), ``campaign/cumulative_regret`` where the noise-free
values are known, the problem's metrics (a library's recall where its scores are known; a
make-on-demand space's ``tuples_failed/REASON``), ``campaign/failures``; per
acquisition ``campaign/batch_size``, ``campaign/distinct_points_in_batch``,
``campaign/model_size``, ``campaign/batch_seconds``; and ``workers/utilisation`` (the
evaluations' busy time over the workers' wall time so far), ``workers/in_flight``,
``workers/latency_seconds`` (mean run time of the latest group).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf
from trieste import logging

from ...evaluation.evaluators import Evaluation
from ..directory.records import Job, LoggedEvaluations
from ..engine.loop import Acquisition

LOG_EVERY_SECONDS = 1.0
"""Scalars are written at most this often while evaluations are in flight (recall sorts the
library, and results may come dozens a second), and whenever none is."""


class CampaignMonitor:
    """Progress bar and TensorBoard scalars of one campaign; a context manager for the run.

    :param problem: The campaign's ``DiscreteProblem``.
    :param logdir: Where TensorBoard events go (none written if ``None``).
    :param budget: Evaluations after the initial design (the bar's total).
    :param progress: Whether to show the bar.
    :param logged: What the log held before this run.
    :param score: The log's value column of a candidate and its observation.
    :param higher_is_better: Orientation of ``score``.
    :param num_workers: Evaluations kept in flight.
    """

    def __init__(
        self,
        problem: Any,
        logdir: Optional[str],
        budget: int,
        progress: bool,
        *,
        logged: LoggedEvaluations,
        score: Callable[[int, float], float],
        higher_is_better: bool,
        num_workers: int,
    ):
        self.problem, self.score, self.sign = problem, score, -1.0 if higher_is_better else 1.0
        self.num_workers = num_workers
        self.ids, self.batches = list(logged.ids), list(logged.batches)
        told = ~logged.failed
        self.best = min(
            (self.sign * score(int(i), y) for i, y in zip(logged.ids[told], logged.observed[told])),
            default=np.inf,
        )
        self.told_ids = list(logged.ids[told])
        self.failures = int(logged.failed.sum())
        self.busy, self.start, self.logged_at = 0.0, time.time(), -np.inf
        self.writer = tf.summary.create_file_writer(logdir) if logdir else None
        self.bar = progress_bar(budget, progress, initial=int(np.sum(logged.batches > 0)))
        self._known = problem.values_known
        self._stack = ExitStack()

    def __enter__(self) -> CampaignMonitor:
        if self.writer is not None:
            self._stack.enter_context(logging.tensorboard_writer(self.writer))
        return self

    def __exit__(self, *args: object) -> None:
        self._stack.close()
        self.bar.close()

    def evaluated(
        self, jobs: Sequence[Job], evaluations: Sequence[Evaluation], in_flight: int
    ) -> None:
        """Count finished ``evaluations`` of ``jobs`` in; write the scalars if due."""
        for job, e in zip(jobs, evaluations):
            self.ids.append(job.index)
            self.batches.append(job.batch)
            self.busy += e.finished - e.started
            if e.value is None:
                self.failures += 1
            else:
                self.told_ids.append(job.index)
                self.best = min(self.best, self.sign * self.score(job.index, e.value))
        self.bar.update(sum(job.batch > 0 for job in jobs))
        self.bar.set_postfix(best=f"{self.best_value:.4g}", in_flight=in_flight)
        if in_flight == 0 or time.time() - self.logged_at >= LOG_EVERY_SECONDS:
            latency = [e.finished - e.started for e in evaluations]
            self.write_scalars(in_flight, float(np.mean(latency)) if latency else None)

    @property
    def best_value(self) -> float:
        """The best of the value column so far (NaN before any)."""
        return self.sign * self.best if np.isfinite(self.best) else np.nan

    def asked(self, acquisition: Acquisition) -> None:
        """Write one acquisition's figures."""
        if self.writer is None:
            return
        with self.writer.as_default(step=len(self.ids)):
            logging.scalar("campaign/batch_size", acquisition.size)
            logging.scalar("campaign/distinct_points_in_batch", acquisition.distinct)
            logging.scalar("campaign/model_size", acquisition.model_size)
            logging.scalar("campaign/batch_seconds", acquisition.seconds)

    def write_scalars(self, in_flight: int, latency: Optional[float] = None) -> None:
        """The campaign's scalars now (module docstring)."""
        self.logged_at = time.time()
        step = len(self.ids)
        logging.set_step_number(step)  # the rules' statistics, logged at their next proposal
        if self.writer is None:
            return
        elapsed = max(time.time() - self.start, 1e-9)
        with self.writer.as_default(step=step):
            logging.scalar("campaign/evaluations", step)
            logging.scalar("campaign/best_value", self.best_value)
            logging.scalar("campaign/failures", self.failures)
            logging.scalar("workers/utilisation", self.busy / (self.num_workers * elapsed))
            logging.scalar("workers/in_flight", in_flight)
            if latency is not None:
                logging.scalar("workers/latency_seconds", latency)
            if self._known:
                after = np.asarray(self.ids, dtype=np.int64)[np.asarray(self.batches) > 0]
                regret = self.problem.values[after] - self.problem.minimum
                logging.scalar("campaign/cumulative_regret", float(regret.sum()))
            told = np.asarray(self.told_ids, dtype=np.int64)
            for name, value in self.problem.metrics(told).items():
                logging.scalar(f"campaign/{name}", value)
        self.writer.flush()


def progress_bar(total: int, enabled: bool, initial: int = 0) -> Any:
    """A tqdm bar of evaluations (disabled with ``--quiet``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="eval", dynamic_ncols=True)
