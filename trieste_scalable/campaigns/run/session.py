"""One command-line campaign in its output directory, evaluated in this process or on Ray
workers (``--workers N [--asynchronous]``): start, resume, lock, settings, cleanup, report.

The directory holds ``run.json`` (the settings and the library's content hash),
``evaluations.csv`` and ``in_flight.json`` (:mod:`~trieste_scalable.campaigns.directory.records`),
``rule_state.json`` (the rule's ``State`` when points were last submitted,
:mod:`trieste_scalable.acquisition.rule_state`), TensorBoard event files, ``summary.png`` and
``.lock`` (:mod:`~.directory.lock`). The run itself is :class:`~.runner.CampaignRun`.

``--resume`` (after a crash of the driver, SIGKILL included) takes the lock, checks the settings
and the library are the same, reloads the log, submits again the jobs of ``in_flight.json`` the
log does not hold, rebuilds the model from the log and restores the rule's state with those and
the failed evaluations as its pending points: nothing logged is evaluated again or lost, no
batch's random seeds are replayed.

Failure behaviour: a new campaign that fails before it logged any evaluation (e.g. Ray did not
start) removes ``run.json``, the log, ``in_flight.json`` and ``rule_state.json``, so a corrected
rerun is not blocked; one that logged evaluations keeps every one of them (``--resume``
continues from them), and one whose every initial evaluation failed keeps its log, the record
of why.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ...errors import CampaignError, UsageError
from ...evaluation.evaluators import Evaluator, InProcessEvaluator
from ...evaluation.oracles import Oriented
from ...problems.campaign_problem import CampaignProblem, KnowsValues
from ..directory.checks import RULE_STATE, check_same_campaign, refuse_overwrite, saved_rule_state
from ..directory.lock import CampaignLock, write_atomically
from ..directory.records import (
    IN_FLIGHT,
    EvaluationLog,
    InFlight,
    Job,
    LoggedEvaluations,
    jobs_to_resubmit,
)
from ..engine.loop import CampaignResult
from ..reporting.monitor import CampaignMonitor
from ..reporting.report import report
from ..spec.campaign import CampaignSpec
from ..spec.record import record
from .runner import (
    GROUP_SECONDS,
    Build,
    CampaignFiles,
    CampaignRun,
    InitialDesignFailed,
    noise_free_score,
)

_log = logging.getLogger(__name__)

Workers = Callable[[Any], Evaluator]
"""Makes the evaluator that runs an oracle's evaluations on workers (the ``screen`` command's
Ray workers, :mod:`trieste_scalable.cluster.evaluators`: chosen by the command, not here)."""


def run_session(
    problem: CampaignProblem,
    spec: CampaignSpec,
    build: Build,
    oracle: Optional[Oriented] = None,
    workers: Optional[Workers] = None,
) -> CampaignResult:
    """Start or resume the campaign of ``spec`` (resolved:
    :func:`~.spec.defaults.resolved`); with an ``oracle`` and ``workers`` its evaluations
    run on the evaluator ``workers`` makes of the oracle, else in this process.

    :raise UsageError: On a directory holding another campaign, nothing to resume, or changed
        settings.
    :raise CampaignError: If another process holds the directory, on damaged records or a
        changed library, or if every initial evaluation failed.
    """
    logdir = Path(spec.logdir)
    if logdir.exists() and not logdir.is_dir():
        raise UsageError(f"--logdir {logdir} is a file, not a directory")
    lock = CampaignLock(logdir)
    existed = logdir.is_dir()
    if existed:
        lock.acquire()  # before reading anything: names the holder if the directory is in use
    try:
        return _run(problem, spec, build, oracle, workers, lock=lock, existed=existed)
    finally:
        lock.release()


def _run(
    problem: CampaignProblem,
    spec: CampaignSpec,
    build: Build,
    oracle: Optional[Oriented],
    workers: Optional[Workers],
    *,
    lock: CampaignLock,
    existed: bool,
) -> CampaignResult:
    logdir = Path(spec.logdir)
    score = noise_free_score(problem) if oracle is None else lambda i, y: oracle.score(y)
    files = CampaignFiles(
        EvaluationLog(logdir / "evaluations.csv", problem, score),
        InFlight(logdir / IN_FLIGHT),
        logdir / RULE_STATE,
    )
    saved, start = logdir / "run.json", time.perf_counter()
    if spec.resume:
        logged, still, next_job = _resumed(problem, spec, files, saved)
    else:
        logged, still, next_job = _started(problem, spec, files, lock, existed)
    evaluator: Optional[Evaluator] = None
    run: Optional[CampaignRun] = None
    try:
        evaluator = _evaluator(problem, spec, oracle, workers, len(logged.ids))
        run = _campaign_run(problem, spec, oracle, evaluator, files, logged, next_job=next_job)
        with run.monitor:
            result = _proceed(run, spec, build, still, files)
    except Exception as error:
        # an evaluation on record is never erased: the campaign resumes from it
        new = not spec.resume and (run is None or not run.ids)
        if new and not isinstance(error, InitialDesignFailed):
            for path in (saved, files.log.path, files.journal.path, files.rule_state):
                path.unlink(missing_ok=True)  # nothing to block a corrected rerun
        raise
    finally:
        if evaluator is not None:
            evaluator.shutdown()
    title = f"{spec.algorithm} on {problem.name}"
    report(files.log, problem, result, title, time.perf_counter() - start, workers is not None)
    return result


def _campaign_run(
    problem: CampaignProblem,
    spec: CampaignSpec,
    oracle: Optional[Oriented],
    evaluator: Evaluator,
    files: CampaignFiles,
    logged: LoggedEvaluations,
    *,
    next_job: int,
) -> CampaignRun:
    """The run of a campaign with its monitor (progress, TensorBoard) and what an evaluation
    is sent (the candidate's index, or a molecule's SMILES for an oracle)."""
    higher = oracle.higher_is_better if oracle else problem.higher_is_better
    monitor = CampaignMonitor(
        problem,
        str(spec.logdir),
        spec.budget,
        not spec.quiet,
        logged=logged,
        score=files.log.score,
        higher_is_better=higher,
        num_workers=evaluator.num_workers,
    )
    labels: Any = getattr(problem, "labels", None)  # an oracle scores a molecule's SMILES
    payload = list if oracle is None else (lambda ids: [str(labels[i]) for i in ids])
    return CampaignRun(
        problem,
        evaluator,
        monitor=monitor,
        payload=payload,
        files=files,
        logged=logged,
        next_job=next_job,
    )


def _started(
    problem: CampaignProblem,
    spec: CampaignSpec,
    files: CampaignFiles,
    lock: CampaignLock,
    existed: bool,
) -> tuple[LoggedEvaluations, list[Job], int]:
    """A new campaign's ``run.json`` and empty log written (the directory made and locked if
    it did not exist), and its random initial design: nothing logged, the jobs to submit, the
    next job number.

    :raise UsageError: If the directory holds a campaign already.
    """
    saved, logdir = files.log.path.parent / "run.json", files.log.path.parent
    refuse_overwrite(saved, files.log)
    if not existed:
        logdir.mkdir(parents=True, exist_ok=True)
        lock.acquire()
        refuse_overwrite(saved, files.log)  # another campaign may have started meanwhile
    write_atomically(saved, record(spec, problem.content_hash()))
    files.log.start()
    rng = np.random.default_rng(spec.seed)
    ids = problem.initial_ids(rng, spec.initial)
    still = [Job(-1, 0, int(i)) for i in ids]  # numbered when submitted
    return LoggedEvaluations.empty(), still, 0


def _resumed(
    problem: CampaignProblem, spec: CampaignSpec, files: CampaignFiles, saved: Path
) -> tuple[LoggedEvaluations, list[Job], int]:
    """What a resumed campaign logged, the jobs to submit again, and the next job number."""
    if not saved.is_file():
        raise UsageError(f"nothing to resume: {saved} does not exist")
    check_same_campaign(
        saved, spec, problem.content_hash(), lambda: problem.content_hash(legacy=True)
    )
    logged = files.log.read()
    listed, next_job = files.journal.read()
    once = files.log.screening  # a screening campaign evaluates each molecule once
    still = jobs_to_resubmit(listed, logged, len(problem.points), files.journal.path, once)
    next_job = max([next_job, *(logged.jobs + 1).tolist()])
    _log.info(f"resuming: {len(logged.jobs)} evaluations logged, {len(still)} were in flight")
    return logged, still, next_job


def _evaluator(
    problem: CampaignProblem,
    spec: CampaignSpec,
    oracle: Optional[Oriented],
    workers: Optional[Workers],
    logged: int,
) -> Evaluator:
    """The ``workers``' evaluator for an oracle; else this process, a whole batch in flight:
    the oracle, or the problem's known values with noise that a resumed campaign draws afresh
    (its seed includes the evaluations logged)."""
    budget = spec.budget + spec.initial
    if oracle is None:
        if not isinstance(problem, KnowsValues):
            raise CampaignError(f"{problem.name}: no value is known up front, give an oracle")
        observe = problem.objective(spec.seed + 1 + 7919 * logged)
        return InProcessEvaluator(lambda i: observe(int(i)), budget, GROUP_SECONDS)
    if workers is None:  # here, on each SMILES
        return InProcessEvaluator(oracle, budget, GROUP_SECONDS)
    return workers(oracle)


def _proceed(
    run: CampaignRun, spec: CampaignSpec, build: Build, still: list[Job], files: CampaignFiles
) -> CampaignResult:
    """The initial design (what is left of it), then the engine to the budget."""
    run.round = max([run.round, *(job.batch for job in still)])
    run.initial_design([job for job in still if job.batch == 0])
    later = [job for job in still if job.batch > 0]
    left = spec.budget - sum(b > 0 for b in run.batches)
    data = run.told()
    if left <= 0:
        _log.info("the campaign had already reached its budget")
        return CampaignResult(data, int(np.sum(np.asarray(run.batches) == 0)))
    model, rule = build(data, left)
    state = None
    if spec.resume:
        state = saved_rule_state(files.rule_state, run.round, rule, spec.rule)
    whole = not spec.runs_asynchronously
    return run.proceed(model, rule, state, later[:left], left, whole_batches=whole)
