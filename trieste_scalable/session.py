"""One command-line campaign in its output directory: settings, the evaluation log, resuming.

The directory holds ``run.json`` (the settings), ``evaluations.csv`` (appended after every batch),
TensorBoard event files and ``summary.png``. ``--resume`` reloads the log, checks the settings are
the same, rebuilds the model from the logged evaluations and continues to the budget: nothing is
evaluated twice.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .campaign import CampaignResult, run_campaign
from .problems import DiscreteProblem
from .report import EvaluationLog, plot_summary

# Settings that may change when resuming (everything else must match the original run).
RESUMABLE = {"budget", "quiet", "resume", "logdir", "command"}


def run_session(
    problem: DiscreteProblem,
    settings: dict[str, Any],
    build: Callable[[Any], tuple[Any, Any]],
) -> CampaignResult:
    """Start or resume the campaign described by ``settings`` (the parsed command line).

    :param build: Maps the data so far to the (model, rule) pair.
    :raise ValueError: On an output directory holding another campaign, or a bad log.
    """
    logdir = Path(settings["logdir"])
    logdir.mkdir(parents=True, exist_ok=True)
    log = EvaluationLog(logdir / "evaluations.csv", problem)
    saved = logdir / "run.json"
    previous = None
    if settings["resume"]:
        _check_same_campaign(saved, settings)
        data, batches = log.read()
        previous = CampaignResult(data, num_initial=int(np.sum(batches == 0)))
        steps = batches[batches > 0]
        for step in np.unique(steps):
            previous.batch_sizes.append(int(np.sum(steps == step)))
            previous.distinct_per_batch.append(previous.batch_sizes[-1])
            previous.model_sizes.append(0)
            previous.batch_seconds.append(0.0)
        print(f"resuming: {previous.num_evaluations} evaluations after the initial design found")
    else:
        if log.path.exists():
            raise ValueError(
                f"{logdir} already holds a campaign: pass --resume to continue it, or choose "
                "another --logdir"
            )
        data = problem.initial_data(settings["initial"], settings["seed"])
        log.start(data)
        saved.write_text(json.dumps(settings, indent=2, sort_keys=True))
    model, rule = build(data)
    if previous is not None and previous.num_evaluations >= settings["budget"]:
        print("the campaign had already reached its budget")
        return previous
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
        on_batch=log.append,
    )
    title = f"{settings['algorithm']} on {problem.name}"
    plot_summary(logdir / "summary.png", problem, result, title)
    print(f"done in {time.perf_counter() - start:.1f}s: {result.num_evaluations} evaluations")
    return result


def _check_same_campaign(saved: Path, settings: dict[str, Any]) -> None:
    if not saved.is_file():
        raise ValueError(f"nothing to resume: {saved} does not exist")
    original = json.loads(saved.read_text())
    changed = sorted(
        key
        for key in set(original) | set(settings)
        if key not in RESUMABLE and original.get(key) != settings.get(key)
    )
    if changed:
        details = ", ".join(f"{k}: {original.get(k)!r} -> {settings.get(k)!r}" for k in changed)
        raise ValueError(f"--resume needs the original settings (changed: {details})")
