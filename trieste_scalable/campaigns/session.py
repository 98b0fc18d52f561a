"""One command-line campaign in its output directory: settings, the evaluation log, resuming.

The directory holds ``run.json`` (the settings and the library's content hash),
``evaluations.csv`` (see :mod:`trieste_scalable.campaigns.evaluation_log`), ``rule_state.json`` (the
rule's ``State`` after the last batch, :mod:`trieste_scalable.acquisition.rule_state`),
TensorBoard event files, ``summary.png`` and ``.lock`` (see :mod:`~.logdir`).
``--resume`` takes the lock, checks the settings and the library are the same, reloads the log,
rebuilds the model from it, restores the rule's state and continues to the budget: nothing is
evaluated twice, nothing logged is lost, and no batch's random seeds are replayed.

Failure behaviour: the model and rule are built (so every setting is validated) before anything
is written; a new campaign that fails before its first batch after the initial design is logged
removes its ``run.json`` and ``evaluations.csv``, so a corrected rerun is not blocked.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
from trieste.data import Dataset

from ..acquisition import rule_state
from ..errors import UsageError
from ..problems import DiscreteProblem
from .campaign import CampaignResult, run_campaign
from .campaign_directory import (
    LIBRARY_HASH,
    RULE_STATE,
    check_same_campaign,
    refuse_overwrite,
    saved_rule_state,
)
from .evaluation_log import EvaluationLog
from .logdir import CampaignLock, write_atomically
from .report import plot_summary
from .worker_session import run_on_workers

Build = Callable[[Dataset, int], tuple[Any, Any]]
"""Maps the data so far and the evaluations left to the (model, rule) pair."""


def run_session(
    problem: DiscreteProblem, settings: dict[str, Any], build: Build, oracle: Any = None
) -> Any:
    """Start or resume the campaign described by ``settings`` (the parsed command line): a
    :class:`CampaignResult`, or with an ``oracle`` (:class:`~.oracles.Oriented`)
    a campaign evaluated on Ray workers (:mod:`~trieste_scalable.campaigns.worker_session`).

    :raise UsageError: On a directory holding another campaign, nothing to resume, or changed
        settings.
    :raise CampaignError: If another process holds the directory, or on a damaged log or
        settings file, or a changed library.
    """
    logdir = Path(settings["logdir"])
    if logdir.exists() and not logdir.is_dir():
        raise UsageError(f"--logdir {logdir} is a file, not a directory")
    lock = CampaignLock(logdir)
    existed = logdir.is_dir()
    if existed:
        lock.acquire()  # before reading anything: names the holder if the directory is in use
    try:
        if oracle is not None:
            return run_on_workers(problem, settings, build, oracle, lock, existed)  # type: ignore[arg-type]
        if settings["resume"]:
            return _resume(problem, settings, build, logdir)
        return _start(problem, settings, build, logdir, lock, existed)
    finally:
        lock.release()


def _start(
    problem: DiscreteProblem,
    settings: dict[str, Any],
    build: Build,
    logdir: Path,
    lock: CampaignLock,
    existed: bool,
) -> CampaignResult:
    log = EvaluationLog(logdir / "evaluations.csv", problem)
    saved = logdir / "run.json"
    refuse_overwrite(saved, log)
    data = problem.initial_data(settings["initial"], settings["seed"])
    model, rule = build(data, settings["budget"])  # validates every setting: nothing written yet
    if not existed:
        logdir.mkdir(parents=True, exist_ok=True)
        lock.acquire()
        refuse_overwrite(saved, log)  # another campaign may have started meanwhile
    write_atomically(saved, json.dumps({**settings, LIBRARY_HASH: problem.content_hash()}))
    log.start(data)
    batches = [0]
    record = _recorder(log, logdir)

    def append(step: int, new_data: Dataset, state: Any) -> None:
        record(step, new_data, state)
        batches[0] += 1

    try:
        return _run(problem, settings, model, rule, data, logdir, None, append)
    except Exception:
        if batches[0] == 0:  # failed before any batch: leave nothing that blocks a rerun
            for path in (saved, log.path, logdir / RULE_STATE):
                path.unlink(missing_ok=True)
        raise


def _resume(
    problem: DiscreteProblem, settings: dict[str, Any], build: Build, logdir: Path
) -> CampaignResult:
    log = EvaluationLog(logdir / "evaluations.csv", problem)
    saved = logdir / "run.json"
    if not saved.is_file():
        raise UsageError(f"nothing to resume: {saved} does not exist")
    check_same_campaign(saved, settings, problem.content_hash())
    data, batches = log.read()
    previous = CampaignResult(data, num_initial=int(np.sum(batches == 0)))
    steps = batches[batches > 0]
    for step in np.unique(steps):
        previous.batch_sizes.append(int(np.sum(steps == step)))
        previous.distinct_per_batch.append(previous.batch_sizes[-1])
        previous.model_sizes.append(0)
        previous.batch_seconds.append(0.0)
    print(f"resuming: {previous.num_evaluations} evaluations after the initial design found")
    if previous.num_evaluations >= settings["budget"]:
        print("the campaign had already reached its budget")
        return previous
    model, rule = build(data, settings["budget"] - previous.num_evaluations)
    state = saved_rule_state(logdir / RULE_STATE, len(previous.batch_sizes))
    record = _recorder(log, logdir)
    return _run(problem, settings, model, rule, data, logdir, previous, record, state)


def _run(
    problem: DiscreteProblem,
    settings: dict[str, Any],
    model: Any,
    rule: Any,
    data: Dataset,
    logdir: Path,
    previous: Optional[CampaignResult],
    append: Callable[[int, Dataset, Any], None],
    state: Any = None,
) -> CampaignResult:
    start = time.perf_counter()
    result = run_campaign(
        problem,
        model,
        rule,
        data,
        settings["budget"],
        settings["seed"],
        str(logdir),
        not settings["quiet"],
        previous=previous,
        on_batch=append,
        rule_state=state,
    )
    title = f"{settings['algorithm']} on {problem.name}"
    summary = "summary.png"
    if not plot_summary(logdir / summary, problem, result, title):
        summary = "no summary.png: matplotlib is not installed (the [plots] extra)"
    print(
        f"done in {time.perf_counter() - start:.1f}s: {result.num_evaluations} evaluations; wrote "
        f"{logdir}/evaluations.csv and {summary}; watch with: tensorboard --logdir {logdir}"
    )
    return result


def _recorder(log: EvaluationLog, logdir: Path) -> Callable[[int, Dataset, Any], None]:
    """Saves the rule's state, then appends the batch to the log: after a crash the saved state
    is the log's or one batch ahead of it, never behind (a resumed run replays no seed). A
    synchronous campaign has nothing in flight after a restart, so no pending points are saved:
    a batch proposed but not logged is proposed again."""

    def record(step: int, new_data: Dataset, state: Any) -> None:
        settled = None if state is None else dataclasses.replace(state, pending=(), seen=0)
        write_atomically(logdir / RULE_STATE, rule_state.encode(settled, step))
        log.append(step, new_data)

    return record
