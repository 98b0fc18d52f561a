"""The records of a campaign evaluated on workers: ``evaluations.csv`` with timings and
failures, and ``in_flight.json``, the evaluations submitted and not finished.

``evaluations.csv`` has the columns of :class:`~.evaluation_log.EvaluationLog`
(``batch`` is the submission round: 0 the initial design, then each group of points handed to
free workers, a whole batch in synchronous mode) and ``job`` (a serial number per submission,
unique across resumes), ``submitted``, ``started``, ``finished`` (Unix times in seconds, all on
the driver's clock: :class:`~trieste_scalable.campaigns.evaluators.Evaluation`), ``worker``
(``host:pid``) and ``error``. A failed evaluation has empty ``observed`` and ``score`` and says
why in ``error``; it is never told to the model. Rows come in the order the evaluations
finished, appended (one write, fsync-ed) before the model is told them.

``in_flight.json`` is rewritten atomically *before* points are submitted and after each group
of results is logged, so after a crash it lists a superset of what was in flight: a resumed
campaign submits again those of its jobs the log does not hold, and no others.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import CampaignError
from .evaluation_log import EvaluationLog
from .evaluators import Evaluation
from .logdir import write_atomically

TIMING_COLUMNS = ["job", "submitted", "started", "finished", "worker", "error"]


@dataclass(frozen=True)
class Job:
    """One submission: its serial number, submission round and candidate index."""

    job: int
    batch: int
    index: int


@dataclass(frozen=True)
class WorkerRecords:
    """The rows of a worker log, as arrays [N] in file order (``observed`` NaN where failed)."""

    jobs: np.ndarray
    batches: np.ndarray
    ids: np.ndarray
    observed: np.ndarray

    @property
    def failed(self) -> np.ndarray:
        return np.isnan(self.observed)


class WorkerLog(EvaluationLog):
    """``evaluations.csv`` of a campaign on workers (module docstring).

    :param score: Maps an observation to the oracle's own value (the ``score`` column).
    """

    def __init__(self, path: Path, problem: Any, score: Any = None):
        super().__init__(path, problem)
        self.score = score or (lambda observed: observed)

    @property
    def header(self) -> list[str]:
        return [*super().header, *TIMING_COLUMNS]

    def start_empty(self) -> None:
        """Create the file with its header only (the initial design is evaluated on workers)."""
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow(self.header)
        write_atomically(self.path, header.getvalue())

    def append_evaluations(self, jobs: Sequence[Job], evaluations: Sequence[Evaluation]) -> None:
        """Append the finished ``evaluations`` of ``jobs`` in one write, fsync-ed."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        for job, e in zip(jobs, evaluations):
            values = ["", ""] if e.failed else [repr(e.value), f"{self.score(e.value):.6g}"]
            times = [f"{t:.3f}" for t in (e.submitted, e.started, e.finished)]
            identity = self.problem.identity(job.index)
            row = [job.batch, job.index, *identity, *values, job.job, *times, e.worker, e.error]
            writer.writerow(row)
        with open(self.path, "a", newline="") as handle:
            handle.write(text.getvalue())
            handle.flush()
            os.fsync(handle.fileno())

    def read_records(self) -> WorkerRecords:
        """Every logged evaluation (a partial last line is cut off, as :meth:`read` does; a row
        repeating a job is read once, with a message).

        :raise CampaignError: On a missing file, another header, or a malformed row.
        """
        rows = self._rows_read()
        column = {name: n for n, name in enumerate(self.header)}
        records = np.zeros((len(rows), 4))
        for n, row in enumerate(rows):
            where = f"{self.path}, line {n + 2}"
            if len(row) != len(self.header):
                raise CampaignError(f"{where}: expected {len(self.header)} fields, got {len(row)}")
            raw, error = row[column["observed"]], row[column["error"]]
            if bool(raw) == bool(error):
                which = "not both" if raw else "found neither"
                raise CampaignError(f"{where}: an evaluation needs a value or an error, {which}")
            try:
                observed = float(raw or "nan")
                records[n] = [int(row[column[c]]) for c in ("job", "batch", "index")] + [observed]
            except ValueError:
                raise CampaignError(
                    f"{where}: job, batch, index or observed not a number"
                ) from None
            if not 0 <= records[n, 2] < len(self.problem.points):
                raise CampaignError(f"{where}: candidate outside this campaign")
            # a NaN or infinite value (logged as a value before workers failed such evaluations)
            # is read as a failed evaluation: it was never data
            records[n, 3] = observed if np.isfinite(observed) else np.nan
        ids = records[:, 2].astype(np.int64)
        self._check_identities(ids, rows)
        jobs, batches = records[:, 0].astype(np.int64), records[:, 1].astype(np.int64)
        _, first = np.unique(jobs, return_index=True)
        if len(first) < len(jobs):  # a row written twice (e.g. copied by hand): told once
            again = sorted(set(range(len(jobs))) - set(first.tolist()))
            print(
                f"{self.path.name}: line {again[0] + 2} repeats job {jobs[again[0]]} "
                f"({len(again)} repeated rows): each job is read once"
            )
            keep = np.sort(first)
            jobs, batches, ids, records = jobs[keep], batches[keep], ids[keep], records[keep]
        return WorkerRecords(jobs, batches, ids, records[:, 3])


class InFlight:
    """``in_flight.json``: the jobs submitted and not logged, and the next job number."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def write(self, jobs: Sequence[Job], next_job: int) -> None:
        entries = [[j.job, j.batch, j.index] for j in jobs]
        write_atomically(self.path, json.dumps({"next_job": next_job, "in_flight": entries}))

    def read(self) -> tuple[list[Job], int]:
        """The jobs listed and the next job number (none and 0 if there is no file).

        :raise CampaignError: If the file is damaged.
        """
        if not self.path.is_file():
            return [], 0
        try:
            saved = json.loads(self.path.read_text())
            jobs = [Job(int(a), int(b), int(c)) for a, b, c in saved["in_flight"]]
            return jobs, int(saved["next_job"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise CampaignError(
                f"{self.path} is damaged ({error}): it lists the evaluations that were in flight"
            ) from None


def jobs_to_resubmit(
    listed: list[Job], records: WorkerRecords, num_candidates: int, path: Path
) -> list[Job]:
    """The jobs of ``in_flight.json`` to submit again: those not logged, each candidate once and
    none the log holds already (a candidate is never evaluated twice).

    :raise CampaignError: If a job names a candidate outside the library.
    """
    outside = [job.index for job in listed if not 0 <= job.index < num_candidates]
    if outside:
        raise CampaignError(
            f"{path} names candidate {outside[0]}, outside the library's 0..{num_candidates - 1}: "
            "it is not this campaign's; delete it to resume without the evaluations in flight"
        )
    logged, evaluated, still = set(records.jobs.tolist()), set(records.ids.tolist()), []
    for job in listed:
        if job.job not in logged and job.index not in evaluated:
            evaluated.add(job.index)
            still.append(job)
    dropped = sum(job.job not in logged for job in listed) - len(still)
    if dropped:
        print(
            f"{path.name}: {dropped} listed candidates are logged already or listed twice; "
            "they are not evaluated again"
        )
    return still
