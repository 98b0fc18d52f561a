"""A prospective campaign: the lab in the loop. Its scores come from outside (a wet lab, a
docking run on someone else's cluster), days later, as files. ``trieste-scalable propose``
writes the next batch to fill in, ``trieste-scalable tell LOGDIR FILE`` reads it back; from
Python the same directory is a :class:`ProspectiveCampaign`::

    from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign

    campaign = ProspectiveCampaign.start(library="library.smi", batch_size=20, initial=20,
                                         budget=200, logdir="runs/lab")
    batch = campaign.propose()          # batch.path: the CSV to fill in; batch.smiles
    ...                                 # the lab fills in the score column
    campaign.tell(batch.path)           # or a DataFrame / rows with smiles and score
    ProspectiveCampaign.open("runs/lab").propose()   # days later: the next batch

The directory is a ``screen`` campaign's (``evaluations.csv`` through the same crash-safe log,
``in_flight.json`` holding the molecules proposed and not told) plus the
files of :mod:`~.prospective.files`. The model is rebuilt as ``screen`` built it
(:mod:`~.prospective.model`): told the lab's scores, a seed picks what ``screen`` picks with
those scores as its oracle.

- ``propose`` asked again before any molecule of its latest batch is told returns that batch
  (idempotent); after a partial tell it proposes a new batch and the molecules not told stay
  pending (the rule never proposes them again; a later tell may still give their scores).
- ``tell`` checks the whole file before logging anything (:meth:`ProspectiveCampaign.tell`),
  then logs it all or nothing (:class:`~.prospective.files.TellJournal`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ...acquisition.candidates import CandidatesExhausted
from ...errors import CampaignError, UsageError
from ...stores.cache import for_library, library_label
from ..candidates.factory import Candidates, candidates
from ..candidates.memory_estimate import check_memory
from ..directory.checks import check_same_campaign
from ..directory.lock import CampaignLock, write_atomically
from ..directory.records import Job
from ..migrations import with_absolute_library
from ..spec.defaults import resolved
from ..spec.library import ProposeSpec
from ..spec.record import read_record, record, resolved_paths
from .batch_file import write_batch
from .files import ProspectiveRecords, batch_path, rule_state_path
from .report import report_prospective
from .tell import (
    Filled,
    Told,
    apply_tell,
    checked_corrections,
    checked_tell,
    filled_rows,
    same_tell,
)

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProposedBatch:
    """A batch to fill in.

    :ivar path: Its file (``batch_NNN.csv`` in the campaign directory).
    :ivar batch: Its number (0: the initial design).
    :ivar smiles: Its molecules, in the rule's order.
    :ivar new: Whether this call proposed it (``False``: proposed before and not told yet).
    """

    path: Path
    batch: int
    smiles: list[str]
    new: bool


class ProspectiveCampaign:
    """A prospective campaign's directory (module docstring); use :meth:`start` or
    :meth:`open`."""

    def __init__(self, spec: ProposeSpec, found: Candidates):
        self.spec, self.logdir = spec, Path(spec.logdir)
        self.problem, self._models = found.problem, found.models
        self.records = ProspectiveRecords.of(self.logdir, self.problem)
        self.log, self.journal = self.records.log, self.records.journal
        self._live: Optional[Any] = None  # the optimizer of this object's last batch

    @classmethod
    def start(cls, spec: Optional[ProposeSpec] = None, **settings: Any) -> ProspectiveCampaign:
        """The campaign of ``spec`` (or of ``settings``, ``propose``'s options with
        underscores) in its ``logdir``: created, or the one there continued.

        A ``batch_size`` or ``budget`` other than the directory's is kept in its
        ``run.json`` for the next batches (said on stderr). A library given as a relative path
        is kept as an absolute one, so ``tell`` works from any directory.

        :raise UsageError: On a bad setting, or settings other than those the directory's
            campaign started with (naming them).
        :raise CampaignError: If the library changed since the campaign started.
        """
        spec = _absolute_library(resolved(spec or ProposeSpec.of(**settings)))
        logdir = Path(spec.logdir)
        if logdir.exists() and not logdir.is_dir():
            raise UsageError(f"--logdir {logdir} is a file, not a directory")
        found = _candidates(spec)
        problem = found.problem
        spec.check_counts(len(problem.points))
        check_memory(spec, found.forecast_size)
        campaign = cls(spec, found)
        logdir.mkdir(parents=True, exist_ok=True)
        saved = logdir / "run.json"
        with CampaignLock(logdir):
            if saved.is_file():
                needs = f"{logdir} holds a prospective campaign: propose needs"
                _absolute_saved_library(saved, spec)
                check_same_campaign(saved, spec, problem.content_hash(), needs=needs)
                _keep_changed_sizes(saved, spec, problem.content_hash())
            elif campaign.log.path.exists():
                raise UsageError(f"{logdir} holds a log but no run.json: choose another --logdir")
            else:
                write_atomically(saved, record(spec, problem.content_hash()))
                campaign.log.start()
        return campaign

    @classmethod
    def open(cls, logdir: Union[str, Path]) -> ProspectiveCampaign:
        """The prospective campaign in ``logdir``, with its own settings.

        :raise UsageError: If ``logdir`` holds no campaign, or one of another command.
        :raise CampaignError: If its records are damaged or its library changed.
        """
        saved = Path(logdir) / "run.json"
        if not saved.is_file():
            raise UsageError(
                f"{logdir} holds no campaign (no run.json): start one with trieste-scalable "
                f"propose --logdir {logdir}"
            )
        spec = read_record(saved).spec
        if not isinstance(spec, ProposeSpec):
            raise UsageError(
                f"{logdir} holds a campaign of {spec.command}, not a prospective one (propose)"
            )
        spec = replace(spec, logdir=str(logdir))  # the directory may have moved
        found = _candidates(spec)
        check_same_campaign(saved, spec, found.problem.content_hash())
        return cls(spec, found)

    def propose(self) -> ProposedBatch:
        """Write the next batch to fill in (module docstring) and return it.

        :raise UsageError: If the campaign reached its budget, or the end of its candidates.
        :raise CampaignError: If no evaluation told before the first acquisition succeeded, or
            on damaged records.
        """
        with CampaignLock(self.logdir):
            self._finish_tell()
            read = self.log.read()  # once: the repair and the model read the same rows
            self.records.repair_jobs(read)
            logged, (jobs, next_job) = self.records.logged(read), self.journal.read()
            told = set(logged.jobs.tolist())
            pending = [job for job in jobs if job.job not in told]
            latest = max([job.batch for job in pending], default=-1)
            if pending and not np.any(logged.batches == latest):
                return self._again(latest, pending)
            batch = max([-1, *logged.batches.tolist(), *(job.batch for job in jobs)]) + 1
            after = int(np.sum(logged.batches > 0)) + sum(job.batch > 0 for job in pending)
            if batch > 0 and after >= self.spec.budget:
                raise UsageError(
                    f"the campaign reached its budget ({self.spec.budget} evaluations after the "
                    "initial design): raise --budget to propose more"
                )
            if batch == 0:
                rng = np.random.default_rng(self.spec.seed)  # as screen draws it
                ids = self.problem.initial_ids(rng, self.spec.initial)
                predictions = [("", "")] * len(ids)
            else:
                ids, predictions = self._asked(logged, jobs, batch, after)
            new = [Job(next_job + n, batch, int(i)) for n, i in enumerate(ids)]
            self.journal.write(pending + new, next_job + len(new))  # proposed: the commit
            for older in range(batch):  # the next batch restores this one's state
                rule_state_path(self.logdir, older).unlink(missing_ok=True)
            labels = [self.problem.labels[job.index] for job in new]
            rows = [
                [label, job.job, batch, rank, *predicted, ""]
                for rank, (label, job, predicted) in enumerate(zip(labels, new, predictions), 1)
            ]
            self._write_batch(batch_path(self.logdir, batch), rows, new)
        return ProposedBatch(batch_path(self.logdir, batch), batch, labels, True)

    def _write_batch(self, path: Path, rows: list[list[Any]], jobs: list[Job]) -> None:
        """The batch file, with a make-on-demand product's name and reagents."""
        named = self.problem.identity_columns()[1:]
        names = [self.problem.identity(job.index)[1:] for job in jobs] if named else []
        write_batch(path, rows, named, names)

    def tell(self, filled: Filled, extra: bool = False, correct: bool = False) -> Told:
        """Log a filled-in batch and tell it to the model at the next :meth:`propose`.

        Rows are matched to the molecules proposed by canonical SMILES. An empty or
        non-numeric score (a word, ``n/a``) or a non-finite one is a failed evaluation (its
        reason logged); a partial batch is allowed (the rest stay pending). What a lab file may
        hold: :mod:`.batch_file`.

        :param extra: Log molecules the campaign did not propose (e.g. analogues the chemist
            made outside the library) as extra molecules, told to the model, instead of
            refusing them.
        :param correct: Give molecules logged before their score instead (a failed evaluation
            measured later, a typo fixed): each row a molecule of the log and its score, kept
            in ``corrections.csv``; the next :meth:`propose` rebuilds the model on them.
        :raise UsageError: Naming the row, with nothing logged: a file without ``smiles`` and
            ``score`` columns, a SMILES that does not parse, a molecule twice in the file or
            told before, one not proposed (without ``extra``), an extra molecule without a
            score, a score that holds digits but is no number a spreadsheet writes or is
            beyond the model's range.
        :raise TypeError: On rows from Python whose score is neither a number nor text.
        :raise CampaignError: If another process is telling or proposing in the directory.
        """
        if extra and not self.problem.takes_extra_molecules:
            raise UsageError(
                "a make-on-demand campaign's model sees reagent tuples: molecules it did not "
                "propose cannot be told to it (--extra)"
            )
        rows, where = filled_rows(filled)
        with CampaignLock(self.logdir):
            interrupted = self._finish_tell()
            self.records.repair_jobs(self.log.read())
            if correct:
                corrections = checked_corrections(self.records, rows, where)
                self.records.corrections.append(corrections)  # one atomic write: all or none
                self._live = None  # the model is rebuilt on the corrected scores
                tell: dict[str, Any] = dict(rows=[], extras=[])
            elif interrupted is not None and same_tell(self.records, rows, interrupted):
                _log.warning(f"this tell of {where} had been interrupted; it is logged now")
                tell = interrupted
            else:
                tell = checked_tell(self.records, rows, where, extra)
                self.records.telling.write(tell)  # from here on it happens, even after a crash
                self._finish_tell()
        failed = sum(row[3] is None for row in tell["rows"])
        logged = set(self.log.read().jobs.tolist())
        pending = sum(job.job not in logged for job in self.journal.read()[0])
        scores = len(rows) if correct else len(tell["rows"]) - failed
        done = Told(scores, failed, len(tell["extras"]), pending, len(rows) if correct else 0)
        report_prospective(self.records, done, self.spec.library)
        return done

    def _again(self, batch: int, pending: list[Job]) -> ProposedBatch:
        """The batch proposed before and not told (its file written again if it was deleted,
        then without the model's predictions)."""
        jobs = [job for job in pending if job.batch == batch]
        labels = [self.problem.labels[job.index] for job in jobs]
        path = batch_path(self.logdir, batch)
        if not path.is_file():
            rows = [
                [s, job.job, batch, n, "", "", ""]
                for n, (s, job) in enumerate(zip(labels, jobs), 1)
            ]
            self._write_batch(path, rows, jobs)
        _log.info(f"batch {batch} was proposed before and is not told yet: {path}")
        return ProposedBatch(path, batch, labels, False)

    def _asked(
        self, logged: Any, jobs: list[Job], batch: int, after: int
    ) -> tuple[np.ndarray, list[tuple[str, str]]]:
        """:meth:`_ask`.

        :raise UsageError: If the rule has nothing left to propose (a make-on-demand space
            whose products were all evaluated), as where the budget is reached.
        """
        try:
            return self._ask(logged, jobs, batch, after)
        except CandidatesExhausted as error:
            raise UsageError(
                f"nothing is left to propose ({error}): the campaign is over, with what it "
                f"found in {len(logged.jobs)} evaluations (evaluations.csv)"
            ) from None

    def _ask(
        self, logged: Any, jobs: list[Job], batch: int, after: int
    ) -> tuple[np.ndarray, list[tuple[str, str]]]:
        """The rule's next batch (cut at the budget) and the model's prediction and standard
        deviation of each, in the user's units; the records of the acquisition written first."""
        from ...acquisition import rule_state
        from ...stores.extra_fingerprints import fingerprint_rows
        from .model import History, next_batch

        told = set(logged.jobs.tolist())
        extras = self.records.extras.read()
        initial = {j.job: j.index for j in jobs if j.batch == 0}
        initial |= {
            int(j): int(i) for j, b, i in zip(logged.jobs, logged.batches, logged.ids) if b == 0
        }
        history = History(
            logged,
            fingerprint_rows([e.smiles for e in extras], self.spec.fingerprint_settings),
            extra_jobs=np.array([e.job for e in extras], dtype=np.int64),
            extra_observed=np.array([e.observed for e in extras]),
            asks=self.records.asks.read(),
            initial_jobs=initial,
            pending=np.array([j.index for j in jobs if j.job not in told], dtype=int),
            corrections=len(self.records.corrections.read()),
        )
        with for_library(library_label(self.spec.library)):
            chosen, live = next_batch(
                self.problem,
                self._models,
                history=history,
                batch=batch,
                budget=self.spec.budget,
                rule_state=rule_state_path(self.logdir, batch - 1),
                rule_name=self.spec.rule,
                live=self._live,
            )
        keep = min(len(chosen.points), self.spec.budget - after)
        self.records.asks.write(batch, len(logged.jobs), len(extras))
        self._live = live
        write_atomically(
            rule_state_path(self.logdir, batch), rule_state.encode(chosen.state, batch)
        )
        ids = self.problem.indices(chosen.points[:keep])
        predictions = [
            (f"{self.problem.user_value(m):.6g}", f"{s:.3g}")
            for m, s in zip(chosen.mean[:keep], chosen.std[:keep])
        ]
        return ids, predictions

    def _finish_tell(self) -> Optional[dict[str, Any]]:
        """Apply the tell in ``telling.json`` (one a crash interrupted, or the one just
        checked): only the rows not logged yet; then remove it. Returns it, if any."""
        tell = self.records.telling.read()
        if tell is not None:
            apply_tell(self.records, tell)
            self.records.telling.done()
        return tell


def _absolute_library(spec: ProposeSpec) -> ProposeSpec:
    """``spec`` with its library (or reagent and synthon files) as absolute paths where they
    name files or directories (:func:`~..spec.record.resolved_paths`)."""
    if not spec.make_on_demand:
        return replace(spec, library=resolved_paths(spec.library))
    reagents = None if spec.reagents is None else resolved_paths(spec.reagents)
    space = None if spec.space is None else resolved_paths(spec.space)
    return replace(spec, reagents=reagents, space=space)


def _absolute_saved_library(saved: Path, spec: ProposeSpec) -> None:
    """Rewrite ``run.json`` of a campaign started before libraries were kept absolute
    (:func:`~trieste_scalable.campaigns.migrations.with_absolute_library`)."""
    read_record(saved)  # a damaged record is named
    settings = json.loads(saved.read_text(encoding="utf-8-sig"))
    if (updated := with_absolute_library(settings, spec.library)) is not None:
        write_atomically(saved, json.dumps(updated))


def _keep_changed_sizes(saved: Path, spec: ProposeSpec, library_hash: str) -> None:
    """Keep a new batch size or budget in ``run.json`` (said on stderr)."""
    kept = read_record(saved).spec
    changed = [
        f"{name.replace('_', ' ')} {getattr(kept, name)} -> {getattr(spec, name)}"
        for name in ("batch_size", "budget")
        if getattr(kept, name) != getattr(spec, name)
    ]
    if changed:
        write_atomically(
            saved,
            record(replace(kept, batch_size=spec.batch_size, budget=spec.budget), library_hash),
        )
        _log.warning(f"{', '.join(changed)}: kept for the next batches ({saved})")


def _candidates(spec: ProposeSpec) -> Candidates:
    """The candidates of ``spec`` (resolved), featurised (cached), scores unknown."""
    try:
        import rdkit  # noqa: F401
    except ImportError:
        raise CampaignError(
            "prospective campaigns need RDKit: pip install 'trieste-scalable[molecules]'"
        ) from None
    with for_library(library_label(spec.library)):
        return candidates(spec, progress=not spec.quiet)
