"""A prospective campaign's tell, checked whole (:func:`checked_tell`) and then applied
(:func:`apply_tell`) through ``telling.json`` (:class:`~.prospective_files.TellJournal`), for
:meth:`~.prospective.ProspectiveCampaign.tell`.

A tell is a JSON object: ``told`` (Unix time), ``rows`` (``[job, batch, candidate, observed or
null, error]`` of the molecules proposed), ``extras`` (``[job, batch, smiles, score,
observed]``) and ``next_job``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Union

import numpy as np

from ..errors import UsageError
from .batch_file import FilledRow, parse_score, read_filled
from .evaluators import Evaluation
from .prospective_files import ExtraMolecule, ProspectiveRecords
from .records import Job

Filled = Union[str, Path, Iterable[Any]]
"""A filled-in batch: its file, a DataFrame, or rows (dicts, or (smiles, score) pairs)."""


@dataclass(frozen=True)
class Told:
    """What a tell logged: scores told, failed evaluations (with their reasons in the log),
    extra molecules, and the proposed molecules still pending."""

    scores: int
    failed: int
    extra: int
    pending: int


def filled_rows(filled: Filled) -> tuple[list[FilledRow], str]:
    """The rows of a filled-in batch and how errors name it: a file
    (:func:`~.batch_file.read_filled`), a DataFrame (``to_dict("records")``), or rows (dicts
    with ``smiles`` and ``score``, or ``(smiles, score)`` pairs).

    :raise UsageError: On a row without a SMILES and a score.
    """
    if isinstance(filled, (str, Path)):
        return read_filled(Path(filled)), str(filled)
    records: Iterable[Any] = filled.to_dict("records") if hasattr(filled, "to_dict") else filled
    rows = []
    for number, record in enumerate(records, start=1):
        if isinstance(record, dict):
            record = {str(k).strip().lower(): v for k, v in record.items()}
            if "smiles" not in record or "score" not in record:
                raise UsageError(f"row {number} has no smiles or score: {sorted(record)}")
            smiles, score = record["smiles"], record["score"]
        elif isinstance(record, (tuple, list)) and len(record) == 2:
            smiles, score = record
        else:
            raise UsageError(f"row {number} is not a (smiles, score) pair nor a dict: {record!r}")
        score = "" if score is None else score
        rows.append(FilledRow(number, str(smiles).strip(), str(score).strip()))
    if not rows:
        raise UsageError("no rows to tell")
    return rows, "the rows given"


def checked_tell(
    campaign: ProspectiveRecords, rows: list[FilledRow], where: str, extra: bool
) -> dict[str, Any]:
    """The tell of ``rows`` (module docstring), every row checked first.

    :raise UsageError: Naming the first bad row (see
        :meth:`~.prospective.ProspectiveCampaign.tell`).
    """
    from ..problems.score_table import canonical_smiles

    problem = campaign.problem
    logged, (jobs, next_job) = campaign.log.read(), campaign.journal.read()
    extras = campaign.extras.read()
    told_jobs = set(logged.jobs.tolist())
    pending = [job for job in jobs if job.job not in told_jobs]
    names = canonical_smiles([r.smiles for r in rows])
    where_line = "line" if where != "the rows given" else "row"
    first: dict[str, int] = {}
    for row, name in zip(rows, names):
        at = f"{where}, {where_line} {row.line}"
        if not name:
            raise UsageError(f"{at}: SMILES {row.smiles!r} does not parse; nothing was logged")
        if name in first:
            raise UsageError(
                f"{at} repeats the molecule of {where_line} {first[name]} ({row.smiles}); "
                "nothing was logged"
            )
        first[name] = row.line
    labels = problem.labels
    waiting = dict(zip(canonical_smiles([labels[job.index] for job in pending]), pending))
    before = dict(zip(canonical_smiles([labels[int(i)] for i in logged.ids]), logged.batches))
    before |= dict(zip(canonical_smiles([e.smiles for e in extras]), [e.batch for e in extras]))
    batch = max([0, *logged.batches.tolist(), *(job.batch for job in jobs)])
    told: list[list[Any]] = []
    new: list[list[Any]] = []
    for row, name in zip(rows, names):
        at = f"{where}, {where_line} {row.line}"
        value, reason = parse_score(row.score)
        if name in waiting:
            job = waiting[name]
            observed = None if value is None else problem.user_value(value)
            told.append([job.job, job.batch, job.index, observed, reason])
        elif name in before:
            raise UsageError(
                f"{at}: {row.smiles} was told already (batch {int(before[name])}): a molecule "
                "is told once; nothing was logged"
            )
        elif not extra:
            raise UsageError(
                f"{at}: {row.smiles} was not proposed by this campaign (or is not pending); if "
                "the chemist made it, tell it with --extra (extra=True); nothing was logged"
            )
        elif value is None:
            raise UsageError(
                f"{at}: an extra molecule needs a score ({reason}); nothing was logged"
            )
        else:
            job_number = next_job + len(new)
            new.append([job_number, batch, row.smiles, value, problem.user_value(value)])
    return dict(told=time.time(), rows=told, extras=new, next_job=next_job + len(new))


def apply_tell(campaign: ProspectiveRecords, tell: dict[str, Any]) -> None:
    """Log the rows of ``tell`` the log does not hold yet, its extra molecules likewise, and
    take its molecules off ``in_flight.json`` (idempotent: a crash may have applied part)."""
    logged = set(campaign.log.read().jobs.tolist())
    at = float(tell["told"])
    rows = [row for row in tell["rows"] if int(row[0]) not in logged]
    if rows:
        campaign.log.append(
            [Job(int(job), int(batch), int(index)) for job, batch, index, _, _ in rows],
            [
                Evaluation(int(job), np.zeros(0), observed, error, at, at, "", at)
                for job, _, _, observed, error in rows
            ],
        )
    extras = [
        ExtraMolecule(int(j), int(b), s, float(v), float(y)) for j, b, s, v, y in tell["extras"]
    ]
    campaign.extras.append(extras, at)
    jobs, next_job = campaign.journal.read()
    done = {int(row[0]) for row in tell["rows"]}
    campaign.journal.write([j for j in jobs if j.job not in done], max(next_job, tell["next_job"]))
