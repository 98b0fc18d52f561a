"""What a campaign writes as it goes, for every campaign alike: ``evaluations.csv``, one row per
finished or failed evaluation, and ``in_flight.json``, the evaluations submitted and not logged.

``evaluations.csv`` columns: ``batch`` (0 the initial design, then the acquisition that proposed
the point), ``index`` (the candidate), the problem's identity columns (``smiles``, or ``x0, x1,
...``), ``observed`` (what the model is told) and ``score`` (screening: the oracle's own value) or
``true`` (the noise-free value), then ``job`` (a serial number per submission, unique across
resumes), ``submitted``, ``started``, ``finished`` (Unix times of the driver's clock alone:
:class:`~.evaluators.Evaluation`), ``worker`` (``host:pid``) and ``error``. A failed evaluation
has empty ``observed`` and value and says why in ``error``; it is never told to the model.

Nothing is lost, repeated or mislabelled: rows are appended as evaluations finish, one write per
group, ``fsync``-ed before the model is told them (observations with ``repr``); a partial last
line (a crash mid-write) is reported and cut off, a row repeating a job read once; each row's
candidate identity is checked against the problem (an edited library is an error). Older logs
resume: one without the timing columns is rewritten with them, blank; NaN or infinite logged
values read as failures.

``in_flight.json`` is rewritten atomically *before* points are submitted and after each group of
results is logged, so after a crash it lists a superset of what was in flight: a resumed campaign
submits again those of its jobs the log does not hold, and no others.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf
from trieste.data import Dataset

from ...errors import CampaignError
from ...evaluation.evaluators import Evaluation
from ..migrations import with_timing_columns
from .lock import write_atomically

_log = logging.getLogger(__name__)

TIMING_COLUMNS = ["job", "submitted", "started", "finished", "worker", "error"]
IN_FLIGHT = "in_flight.json"
"""The name of a campaign directory's :class:`InFlight` file."""


@dataclass(frozen=True)
class Job:
    """One submission: its serial number, batch and candidate index."""

    job: int
    batch: int
    index: int


@dataclass(frozen=True)
class LoggedEvaluations:
    """The rows of a log, as arrays [N] in file order (``observed`` NaN where failed)."""

    jobs: np.ndarray
    batches: np.ndarray
    ids: np.ndarray
    observed: np.ndarray

    @property
    def failed(self) -> np.ndarray:
        return np.isnan(self.observed)

    @classmethod
    def empty(cls) -> LoggedEvaluations:
        return cls(*(np.zeros(0, dtype=np.int64),) * 3, np.zeros(0))

    def told(self, points: Any) -> Dataset:
        """The evaluations that did not fail, as the model's data (``points``: the candidates)."""
        x = tf.constant(points[self.ids[~self.failed]])
        return Dataset(x, tf.constant(self.observed[~self.failed][:, None], dtype=x.dtype))


class EvaluationLog:
    """``evaluations.csv`` of one campaign over ``problem`` (module docstring).

    :param score: Maps a candidate index and its observation to the value column (by default the
        noise-free value in the user's units and direction, ``problem.user_value``).
    """

    def __init__(
        self, path: Path, problem: Any, score: Optional[Callable[[int, float], float]] = None
    ):
        self.path, self.problem = Path(path), problem
        self.screening = problem.identity_columns()[:1] == ["smiles"]
        self.score = score or self._noise_free
        self.dropped_partial_line = ""
        """The partial last line that :meth:`read` cut off, if any."""

    @property
    def header(self) -> list[str]:
        return [*self._legacy_header, *TIMING_COLUMNS]

    @property
    def _legacy_header(self) -> list[str]:  # a log of synchronous campaigns before one engine
        value = "score" if self.screening else "true"
        return ["batch", "index", *self.problem.identity_columns(), "observed", value]

    def _noise_free(self, index: int, observed: float) -> float:
        return float(self.problem.user_value(self.problem.values[index]))

    def start(self) -> None:
        """Create the file with its header (atomically)."""
        write_atomically(self.path, _csv([self.header]))

    def append(self, jobs: Sequence[Job], evaluations: Sequence[Evaluation]) -> None:
        """Append the finished ``evaluations`` of ``jobs`` in one write, fsync-ed."""
        rows = []
        for job, e in zip(jobs, evaluations):
            value = e.value
            values = (
                ["", ""] if value is None else [repr(value), f"{self.score(job.index, value):.6g}"]
            )
            times = [f"{t:.3f}" for t in (e.submitted, e.started, e.finished)]
            identity = self.problem.identity(job.index)
            rows.append(
                [job.batch, job.index, *identity, *values, job.job, *times, e.worker, e.error]
            )
        with open(self.path, "a", newline="") as handle:
            handle.write(_csv(rows))
            handle.flush()
            os.fsync(handle.fileno())

    def read(self) -> LoggedEvaluations:
        """Every logged evaluation (module docstring: partial lines, repeats, older logs).

        :raise CampaignError: On a missing file, another header, or a malformed row (file and
            line in the message).
        """
        rows = self._rows_read()
        column = {name: n for n, name in enumerate(self.header)}
        records = np.zeros((len(rows), 4))
        for n, row in enumerate(rows):
            where = f"{self.path}, line {n + 2}"
            if len(row) != len(self.header):
                raise CampaignError(
                    f"{where}: expected {len(self.header)} fields, found {len(row)}"
                )
            raw, error = row[column["observed"]], row[column["error"]]
            if bool(raw) == bool(error):
                which = "not both" if raw else "found neither"
                raise CampaignError(f"{where}: an evaluation needs a value or an error, {which}")
            try:
                observed = float(raw or "nan")
                records[n] = [int(row[column[c]]) for c in ("job", "batch", "index")] + [observed]
            except ValueError:
                raise CampaignError(
                    f"{where}: job, batch, index or observed is not a number"
                ) from None
            if records[n, 1] < 0 or not 0 <= records[n, 2] < len(self.problem.points):
                raise CampaignError(
                    f"{where}: batch {int(records[n, 1])} / candidate {int(records[n, 2])} is "
                    f"outside this campaign (candidates 0..{len(self.problem.points) - 1})"
                )
            records[n, 3] = observed if np.isfinite(observed) else np.nan  # never data
        ids = records[:, 2].astype(np.int64)
        self._check_identities(ids, rows)
        jobs, batches = records[:, 0].astype(np.int64), records[:, 1].astype(np.int64)
        _, first = np.unique(jobs, return_index=True)
        if len(first) < len(jobs):  # a row written twice (e.g. copied by hand): told once
            again = sorted(set(range(len(jobs))) - set(first.tolist()))
            _log.info(
                f"{self.path.name}: line {again[0] + 2} repeats job {jobs[again[0]]} "
                f"({len(again)} repeated rows): each job is read once"
            )
            keep = np.sort(first)
            jobs, batches, ids, records = jobs[keep], batches[keep], ids[keep], records[keep]
        return LoggedEvaluations(jobs, batches, ids, records[:, 3])

    def _rows_read(self) -> list[list[str]]:
        """The rows after the header (a partial last line cut off first; an older log without
        the timing columns rewritten with them).

        :raise CampaignError: If the file is missing, unreadable or has another header.
        """
        if not self.path.is_file():
            raise CampaignError(f"nothing to resume: {self.path} does not exist")
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            self._drop_partial_line(raw)
            raw = raw[: raw.rfind(b"\n") + 1]
        try:
            lines = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
        except (UnicodeDecodeError, csv.Error) as error:
            raise CampaignError(f"{self.path} is not a readable CSV file ({error})") from None
        if lines and lines[0] == self._legacy_header:  # a log from before one engine
            rows = with_timing_columns(lines[1:], len(self._legacy_header), str(self.path))
            lines = [self.header] + rows
            write_atomically(self.path, _csv(lines))
        if not lines or lines[0] != self.header:
            found = lines[0] if lines else "nothing"
            raise CampaignError(
                f"{self.path}: header {found} is not that of this campaign ({self.header})"
            )
        return lines[1:]

    def _check_identities(self, ids: np.ndarray, rows: list[list[str]]) -> None:
        width = len(self.problem.identity_columns())
        logged = [row[2 : 2 + width] for row in rows]
        wrong = np.flatnonzero(~self.problem.identity_matches(ids, logged))
        if wrong.size:
            n = int(wrong[0])
            raise CampaignError(
                f"{self.path}, line {n + 2}: logged candidate {logged[n]} is not candidate "
                f"{ids[n]} of this library ({self.problem.identity(int(ids[n]))}); "
                f"{wrong.size} rows disagree: the library changed since the campaign ran"
            )

    def _drop_partial_line(self, raw: bytes) -> None:
        cut = raw.rfind(b"\n") + 1
        self.dropped_partial_line = raw[cut:].decode("utf-8", errors="replace")
        with open(self.path, "r+b") as handle:
            handle.truncate(cut)
            handle.flush()
            os.fsync(handle.fileno())
        _log.warning(
            f"{self.path}: dropped a partial last line written during a crash "
            f"({self.dropped_partial_line!r}); its evaluation will be redone"
        )


def _csv(rows: Sequence[Sequence[Any]]) -> str:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue()


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
    listed: list[Job],
    records: LoggedEvaluations,
    num_candidates: int,
    path: Path,
    once_per_candidate: bool = True,
) -> list[Job]:
    """The jobs of ``in_flight.json`` to submit again: those not logged, and with
    ``once_per_candidate`` (screening) each candidate once and none the log holds already.

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
        if job.job not in logged and not (once_per_candidate and job.index in evaluated):
            evaluated.add(job.index)
            still.append(job)
    dropped = sum(job.job not in logged for job in listed) - len(still)
    if dropped:
        _log.info(
            f"{path.name}: {dropped} listed candidates are logged already or listed twice; "
            "they are not evaluated again"
        )
    return still
