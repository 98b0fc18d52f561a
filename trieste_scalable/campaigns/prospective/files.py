"""What a prospective campaign's directory holds beside a screen's (``run.json``,
``evaluations.csv``, ``in_flight.json``, ``rule_state.json``:
:mod:`~trieste_scalable.campaigns.run.session`), for :mod:`.prospective`:

- ``batch_NNN.csv``: each batch to fill in (:mod:`.batch_file`);
- ``rule_state_NNN.json``: the rule's state after it proposed batch NNN (the next batch
  restores it; one a batch, so an acquisition interrupted before its batch was recorded
  leaves the one it started from);
- ``asks.json``: for each batch the rule proposed, how many rows the log and the extra
  molecules held when it was asked (:class:`Asks`). A ``propose`` rebuilds the model as
  ``screen`` built it: on what was told before the first acquisition, then told each later
  group of results in the order they came (:mod:`~.prospective.model`), so the same scores
  give the same picks;
- ``extra_molecules.csv``: molecules the campaign did not propose, told with ``--extra``
  (:class:`ExtraMolecules`);
- ``corrections.csv``: scores given with ``tell --correct`` to molecules logged before (a failed
  evaluation's late measurement, a typo fixed: :class:`Corrections`). ``evaluations.csv`` is
  never rewritten: :meth:`ProspectiveRecords.logged` reads it with the latest correction of each
  job in place of its logged value, and the next ``propose`` rebuilds the model on that;
- ``telling.json``: a tell being written (:class:`TellJournal`). A tell is checked whole, then
  written here at once (atomically), then applied to the log, ``in_flight.json`` and the extra
  molecules, then removed; whoever opens the directory next finishes a tell a crash left
  here. Applying is idempotent (rows are keyed by their job number), so after a SIGKILL at any
  point either every row of a tell is logged or none.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import numpy as np

from ...errors import CampaignError, UsageError
from ...problems.campaign_problem import MoleculeProblem
from ..directory.lock import write_atomically
from ..directory.records import IN_FLIGHT, EvaluationLog, InFlight, Job, LoggedEvaluations
from .batch_file import read_proposed

_log = logging.getLogger(__name__)

ASKS, EXTRAS, TELLING = "asks.json", "extra_molecules.csv", "telling.json"
CORRECTIONS = "corrections.csv"
EXTRA_COLUMNS = ["job", "batch", "smiles", "score", "observed", "told"]
CORRECTION_COLUMNS = ["job", "smiles", "score", "observed", "told"]
T = TypeVar("T")


def batch_path(logdir: Path, batch: int) -> Path:
    """The file batch ``batch`` is written to (``batch_000.csv`` the initial design)."""
    return Path(logdir) / f"batch_{batch:03d}.csv"


def rule_state_path(logdir: Path, batch: int) -> Path:
    """Where the rule's state after batch ``batch`` is kept."""
    return Path(logdir) / f"rule_state_{batch:03d}.json"


class Asks:
    """``asks.json``: batch number -> (log rows, extra molecules) when the rule proposed it."""

    def __init__(self, logdir: Path):
        self.path = Path(logdir) / ASKS

    def read(self) -> dict[int, tuple[int, int]]:
        """:raise CampaignError: If the file is damaged."""
        if not self.path.is_file():
            return {}
        try:
            saved = json.loads(self.path.read_text())
            return {int(k): (int(v[0]), int(v[1])) for k, v in saved.items()}
        except (OSError, ValueError, TypeError, IndexError, AttributeError) as error:
            raise CampaignError(
                f"{self.path} is damaged ({error}): it records what each batch was asked on"
            ) from None

    def write(self, batch: int, logged: int, extras: int) -> None:
        asks = self.read()
        asks[batch] = (logged, extras)
        write_atomically(self.path, json.dumps({str(k): list(v) for k, v in sorted(asks.items())}))


@dataclass(frozen=True)
class ExtraMolecule:
    """A molecule told with ``--extra``: its job number, the batch being filled when it was
    told, its SMILES as given, its score (the user's units) and what the model is told."""

    job: int
    batch: int
    smiles: str
    score: float
    observed: float


class _SmallTable:
    """A CSV file of a few rows with a fixed header, rewritten whole (atomically) as rows are
    appended: all of an append's rows or none."""

    def __init__(self, path: Path, columns: list[str]):
        self.path, self.columns = path, columns

    def _read(self, parse: Callable[[list[str]], T]) -> list[T]:
        """Each row after the header, parsed.

        :raise CampaignError: If the file is damaged (naming the line).
        """
        if not self.path.is_file():
            return []
        rows = list(csv.reader(io.StringIO(self.path.read_text())))
        if not rows or rows[0] != self.columns:
            raise CampaignError(f"{self.path}: expected the header {self.columns}")
        parsed = []
        for number, row in enumerate(rows[1:], start=2):
            try:
                parsed.append(parse(row))
            except ValueError:
                raise CampaignError(f"{self.path}, line {number} is damaged: {row}") from None
        return parsed

    def _append(self, rows: list[list[Any]]) -> None:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        if not self.path.is_file():
            writer.writerow(self.columns)
        writer.writerows(rows)
        held_text = self.path.read_text() if self.path.is_file() else ""
        write_atomically(self.path, held_text + text.getvalue())


class ExtraMolecules(_SmallTable):
    """``extra_molecules.csv`` (``EXTRA_COLUMNS``): each tell's extra molecules, a
    handful, where the log's rows are many."""

    def __init__(self, logdir: Path):
        super().__init__(Path(logdir) / EXTRAS, EXTRA_COLUMNS)

    def read(self) -> list[ExtraMolecule]:
        """:raise CampaignError: If the file is damaged (naming the line)."""

        def parse(row: list[str]) -> ExtraMolecule:
            job, batch, smiles, score, observed, _ = row
            return ExtraMolecule(int(job), int(batch), smiles, float(score), float(observed))

        return self._read(parse)

    def append(self, extras: list[ExtraMolecule], told: float) -> None:
        """Append those of ``extras`` the file does not hold yet (by job)."""
        held = {extra.job for extra in self.read()}
        new = [e for e in extras if e.job not in held]
        if new:
            self._append(
                [[e.job, e.batch, e.smiles, f"{e.score:.6g}", repr(e.observed), told] for e in new]
            )


@dataclass(frozen=True)
class Correction:
    """A score given with ``tell --correct``: the job it corrects, the SMILES as given, the
    score (the user's units), what the model is told, and when (Unix time)."""

    job: int
    smiles: str
    score: float
    observed: float
    told: float


class Corrections(_SmallTable):
    """``corrections.csv`` (``CORRECTION_COLUMNS``): the scores of ``tell --correct``, in
    the order given."""

    def __init__(self, logdir: Path):
        super().__init__(Path(logdir) / CORRECTIONS, CORRECTION_COLUMNS)

    def read(self) -> list[Correction]:
        """:raise CampaignError: If the file is damaged (naming the line)."""

        def parse(row: list[str]) -> Correction:
            job, smiles, score, observed, told = row
            return Correction(int(job), smiles, float(score), float(observed), float(told))

        return self._read(parse)

    def append(self, corrections: list[Correction]) -> None:
        self._append(
            [[c.job, c.smiles, f"{c.score:.6g}", repr(c.observed), c.told] for c in corrections]
        )


class TellJournal:
    """``telling.json``: a checked tell, written whole before it is applied (module
    docstring)."""

    def __init__(self, logdir: Path):
        self.path = Path(logdir) / TELLING

    def write(self, tell: dict[str, Any]) -> None:
        write_atomically(self.path, json.dumps(tell))

    def read(self) -> Optional[dict[str, Any]]:
        """The tell a crash left unfinished, if any.

        :raise CampaignError: If the file is damaged (an atomic write never leaves it so).
        """
        if not self.path.is_file():
            return None
        try:
            tell = json.loads(self.path.read_text())
            if not isinstance(tell, dict) or not {"told", "rows", "extras"} <= set(tell):
                raise ValueError("not a tell")
            return tell
        except (OSError, ValueError) as error:
            raise CampaignError(f"{self.path} is damaged ({error})") from None

    def done(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class ProspectiveRecords:
    """Every record of a prospective campaign's directory, over its library ``problem``."""

    problem: MoleculeProblem
    logdir: Path
    log: EvaluationLog
    journal: InFlight
    asks: Asks
    extras: ExtraMolecules
    telling: TellJournal
    corrections: Corrections

    @classmethod
    def of(cls, logdir: Path, problem: MoleculeProblem) -> ProspectiveRecords:
        """The records of ``logdir``; the log's score column is the user's score."""
        logdir = Path(logdir)
        log = EvaluationLog(logdir / "evaluations.csv", problem, lambda i, y: problem.user_value(y))
        return cls(
            problem,
            logdir,
            log=log,
            journal=InFlight(logdir / IN_FLIGHT),
            asks=Asks(logdir),
            extras=ExtraMolecules(logdir),
            telling=TellJournal(logdir),
            corrections=Corrections(logdir),
        )

    def logged(self, read: Optional[LoggedEvaluations] = None) -> LoggedEvaluations:
        """The log's evaluations (``read``, if the caller read it already) with the latest
        correction of each job in place of its value (:class:`Corrections`)."""
        logged = self.log.read() if read is None else read
        corrections = {c.job: c.observed for c in self.corrections.read()}
        if not corrections:
            return logged
        observed = np.array(
            [corrections.get(int(job), y) for job, y in zip(logged.jobs, logged.observed)]
        )
        return replace(logged, observed=observed)

    def repair_jobs(self, logged: LoggedEvaluations) -> None:
        """Make ``in_flight.json`` list every job proposed and not logged, and a next job number
        beyond every job recorded, should it have lost them: deleted by hand, or a job's line of
        ``evaluations.csv`` cut after its tell finished. The batch files say what was proposed
        (:func:`~.batch_file.read_proposed`); a job of theirs that is neither logged nor listed
        is pending again (said on stderr), unless its molecule is logged or pending under
        another job (an ``id`` edited by hand)."""
        listed, next_job = self.journal.read()
        told = set(logged.jobs.tolist())
        known = told | {job.job for job in listed}
        recovered = self._unlisted_jobs(known, logged)
        numbers = [*known, *(job.job for job in recovered), *(e.job for e in self.extras.read())]
        beyond = max([next_job - 1, *numbers]) + 1
        if not recovered and beyond == next_job:
            return
        pending = [job for job in listed if job.job not in told] + recovered
        self.journal.write(sorted(pending, key=lambda job: job.job), beyond)
        if recovered:
            jobs = ", ".join(str(job.job) for job in recovered[:5])
            _log.warning(
                f"{self.journal.path.name} did not list {len(recovered)} proposed molecules that "
                f"were never logged (jobs {jobs}{', ...' if len(recovered) > 5 else ''}): they "
                "are pending again"
            )

    def _unlisted_jobs(self, known: set[int], logged: LoggedEvaluations) -> list[Job]:
        """The jobs of the batch files neither logged nor in ``in_flight.json``."""
        rows = []
        for path in sorted(self.logdir.glob("batch_[0-9][0-9][0-9]*.csv")):
            try:
                rows += [row for row in read_proposed(path) if row[0] not in known]
            except UsageError:
                continue  # a batch file saved over without its columns: nothing to read
        if not rows:
            return []
        rows.sort(key=lambda row: row[0])
        found = self.problem.proposed_index([cells for _, _, cells in rows])
        taken = set(logged.ids.tolist()) | {job.index for job in self.journal.read()[0]}
        recovered = []
        for (job, batch, _), index in zip(rows, found):
            if index is not None and index not in taken:
                recovered.append(Job(job, batch, index))
                taken.add(index)
        return recovered
