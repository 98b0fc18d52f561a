"""A prospective campaign's tell, checked whole (:func:`checked_tell`) and then applied
(:func:`apply_tell`) through ``telling.json`` (:class:`~.prospective.files.TellJournal`), for
:meth:`~.prospective.campaign.ProspectiveCampaign.tell`.

A tell is a JSON object: ``told`` (Unix time), ``rows`` (``[job, batch, candidate, observed or
null, error]`` of the molecules proposed), ``extras`` (``[job, batch, smiles, score,
observed]``) and ``next_job``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import numpy as np

from ...errors import UsageError
from ...evaluation.evaluators import Evaluation
from ...problems.campaign_problem import MoleculeProblem
from ...problems.score_table import canonical_smiles
from ..directory.records import Job
from .batch_file import FilledRow, parse_score, read_filled
from .files import Correction, ExtraMolecule, ProspectiveRecords

ROWS_GIVEN = "the rows given"
"""How errors name rows given from Python (a file is named by its path)."""
Filled = Union[str, Path, Iterable[Any]]
"""A filled-in batch: its file, a DataFrame, or rows (dicts, or (smiles, score) pairs)."""


@dataclass(frozen=True)
class Told:
    """What a tell logged: scores told, failed evaluations (with their reasons in the log),
    extra molecules, the proposed molecules still pending, and scores corrected (``tell
    --correct``: counted in ``scores`` too)."""

    scores: int
    failed: int
    extra: int
    pending: int
    corrected: int = 0


def filled_rows(filled: Filled) -> tuple[list[FilledRow], str]:
    """The rows of a filled-in batch and how errors name it: a file
    (:func:`~.batch_file.read_filled`), a DataFrame (``to_dict("records")``), or rows (dicts
    with ``smiles`` and ``score``, or ``(smiles, score)`` pairs).

    :raise UsageError: On a row without a SMILES and a score.
    :raise TypeError: On a SMILES that is no ``str`` or a score that is neither a number (a
        ``bool`` is none), text nor ``None`` (e.g. ``bytes``), naming the row.
    """
    if isinstance(filled, (str, Path)):
        return read_filled(Path(filled)), str(filled)
    records: Iterable[Any] = filled.to_dict("records") if hasattr(filled, "to_dict") else filled
    rows = []
    for number, record in enumerate(records, start=1):
        cells: dict[str, str] = {}
        if isinstance(record, dict):
            record = {str(k).strip().lower(): v for k, v in record.items()}
            if "smiles" not in record or "score" not in record:
                raise UsageError(f"row {number} has no smiles or score: {sorted(record)}")
            smiles, score = record["smiles"], record["score"]
            cells = {k: v.strip() for k, v in record.items() if isinstance(v, str)}
        elif isinstance(record, (tuple, list)) and len(record) == 2:
            smiles, score = record
        else:
            raise UsageError(f"row {number} is not a (smiles, score) pair nor a dict: {record!r}")
        text = _text(smiles, number, "SMILES")
        rows.append(FilledRow(number, text, _score_text(score, number), cells))
    if not rows:
        raise UsageError("no rows to tell")
    return rows, ROWS_GIVEN


def _text(value: Any, number: int, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"row {number}: the {what} {value!r} is a {type(value).__name__}, not text")
    return value.strip()


def _score_text(score: Any, number: int) -> str:
    """A score given from Python as the text a file would hold (``None``: no score)."""
    if score is None:
        return ""
    if isinstance(score, Real) and not isinstance(score, (bool, np.bool_)):
        return repr(float(score))
    if not isinstance(score, str):
        kind = type(score).__name__
        raise TypeError(f"row {number}: the score {score!r} is a {kind}, neither a number nor text")
    return score.strip()


def checked_tell(
    campaign: ProspectiveRecords, rows: list[FilledRow], where: str, extra: bool
) -> dict[str, Any]:
    """The tell of ``rows`` (module docstring), every row checked first.

    :raise UsageError: Naming the first bad row (see
        :meth:`~.prospective.campaign.ProspectiveCampaign.tell`).
    """
    problem = campaign.problem
    logged, (jobs, next_job) = campaign.logged(), campaign.journal.read()
    told_jobs = set(logged.jobs.tolist())
    pending = [job for job in jobs if job.job not in told_jobs]
    names, scores = _checked_rows(rows, where)
    labels = problem.labels
    waiting = dict(zip(canonical_smiles([labels[job.index] for job in pending]), pending))
    before = _told_before(campaign, logged)
    batch = max([0, *logged.batches.tolist(), *(job.batch for job in jobs)])
    told: list[list[Any]] = []
    new: list[list[Any]] = []
    for row, name, (value, reason) in zip(rows, names, scores):
        at = _at(where, row)
        if name in waiting:
            job = waiting[name]
            _check_identity(problem, job.index, row, at)
            observed = None if value is None else problem.user_value(value)
            told.append([job.job, job.batch, job.index, observed, reason])
        elif name in before:
            raise UsageError(
                f"{at}: {row.smiles} was told already (batch {before[name][0]}): a molecule "
                "is told once (a score to change: tell it with --correct); nothing was logged"
            )
        elif not extra:
            hint = (
                "if the chemist made it, tell it with --extra (extra=True)"
                if problem.takes_extra_molecules
                else "a make-on-demand campaign is told the products it proposed, as written in "
                "its batch file"
            )
            raise UsageError(
                f"{at}: {row.smiles} was not proposed by this campaign (or is not pending); "
                f"{hint}; nothing was logged"
            )
        elif value is None:
            raise UsageError(
                f"{at}: an extra molecule needs a score ({reason}); nothing was logged"
            )
        else:
            job_number = next_job + len(new)
            new.append([job_number, batch, row.smiles, value, problem.user_value(value)])
    return dict(told=time.time(), rows=told, extras=new, next_job=next_job + len(new))


def checked_corrections(
    campaign: ProspectiveRecords, rows: list[FilledRow], where: str
) -> list[Correction]:
    """The corrections of ``rows`` (``tell --correct``): a score for each molecule, every row
    checked first. Each row must name a molecule of the log (told before, failed or not) and
    give its score.

    :raise UsageError: Naming the first bad row, with nothing logged: a row
        :func:`checked_tell` refuses, a molecule not told yet or told as an extra molecule, a
        row without a score.
    """
    problem = campaign.problem
    logged = campaign.logged()
    names, scores = _checked_rows(rows, where)
    before = _told_before(campaign, logged)
    at_time, corrections = time.time(), []
    for row, name, (value, reason) in zip(rows, names, scores):
        at = _at(where, row)
        batch, job = before.get(name, (None, None))
        if job is None:
            what = "an extra molecule" if batch is not None else "not told yet"
            raise UsageError(
                f"{at}: {row.smiles} is {what}: --correct changes the score of a molecule the "
                "campaign proposed and logged; nothing was logged"
            )
        if value is None:
            raise UsageError(
                f"{at}: a correction needs a score ({reason}): it gives a molecule its "
                "measurement, it cannot withdraw one; nothing was logged"
            )
        corrections.append(Correction(job, row.smiles, value, problem.user_value(value), at_time))
    return corrections


def same_tell(campaign: ProspectiveRecords, rows: list[FilledRow], tell: dict[str, Any]) -> bool:
    """Whether ``rows`` are the molecules of ``tell`` (a tell a crash interrupted, applied by
    the command that read ``rows`` again: that command logged them)."""
    labels = campaign.problem.labels
    molecules = [labels[int(row[2])] for row in tell["rows"]]
    molecules += [str(extra[2]) for extra in tell["extras"]]
    told = canonical_smiles(molecules)
    names = canonical_smiles([row.smiles for row in rows])
    return all(told) and len(names) == len(told) and set(names) == set(told)


def _check_identity(problem: MoleculeProblem, index: int, row: FilledRow, at: str) -> None:
    """:raise UsageError: If ``row`` has a column identifying a candidate (a make-on-demand
    product's ``name`` and reagents) that names another than candidate ``index``, its SMILES'."""
    columns = problem.identity_columns()[1:]
    for column, expected in zip(columns, problem.identity(index)[1:]):
        given = row.cells.get(column.lower(), "")
        if given and given != expected:
            raise UsageError(
                f"{at}: its {column} {given!r} contradicts its SMILES {row.smiles}, proposed as "
                f"{expected!r}: correct one of them; nothing was logged"
            )


def _checked_rows(
    rows: list[FilledRow], where: str
) -> tuple[list[str], list[tuple[Optional[float], str]]]:
    """Each row's canonical SMILES and parsed score (:func:`~.batch_file.parse_score`).

    :raise UsageError: Naming the first row whose SMILES does not parse or holds a space, that
        repeats a molecule, or whose score is refused; nothing was logged.
    """
    names = canonical_smiles([r.smiles for r in rows])
    first: dict[str, int] = {}
    scores = []
    for row, name in zip(rows, names):
        at = _at(where, row)
        if not name:
            raise UsageError(f"{at}: SMILES {row.smiles!r} does not parse; nothing was logged")
        if any(character.isspace() for character in row.smiles):
            raise UsageError(
                f"{at}: SMILES {row.smiles!r} holds a space (RDKit would read only what is "
                "before it): one SMILES a cell; nothing was logged"
            )
        if name in first:
            line = "row" if where == ROWS_GIVEN else "line"
            raise UsageError(
                f"{at} repeats the molecule of {line} {first[name]} ({row.smiles}); "
                "nothing was logged"
            )
        first[name] = row.line
        try:
            scores.append(parse_score(row.score))
        except ValueError as error:
            raise UsageError(f"{at}: {error}; nothing was logged") from None
    return names, scores


def _told_before(campaign: ProspectiveRecords, logged: Any) -> dict[str, tuple[int, Optional[int]]]:
    """Canonical SMILES -> (batch, job) of each molecule logged (job ``None``: an extra one)."""
    labels = campaign.problem.labels
    extras = campaign.extras.read()
    names = canonical_smiles([labels[int(i)] for i in logged.ids])
    before: dict[str, tuple[int, Optional[int]]] = {
        name: (int(batch), int(job)) for name, batch, job in zip(names, logged.batches, logged.jobs)
    }
    before |= {
        name: (extra.batch, None)
        for name, extra in zip(canonical_smiles([e.smiles for e in extras]), extras)
    }
    return before


def _at(where: str, row: FilledRow) -> str:
    return f"{where}, {'row' if where == ROWS_GIVEN else 'line'} {row.line}"


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
                Evaluation(
                    int(job),
                    np.zeros(0),
                    value=observed,
                    error=error,
                    started=at,
                    finished=at,
                    worker="",
                    submitted=at,
                )
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
