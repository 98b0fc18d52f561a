"""A prospective campaign's next batch from its model, rebuilt as ``screen`` built it so that the
same scores give the same picks (:mod:`~.prospective.files`): the model is built on what was told
before the first acquisition, each later group of results is told in the order ``screen`` tells
them (by job), the rule's state saved at the last acquisition is restored, and the rule asked.

The replay costs a model update per batch so far and the rule state's decoding (on Enamine10k's
fingerprints, 6,144 wide, about a second each); what it buys is that a campaign told by hand is
the campaign ``screen`` would have run with the lab as its oracle. A campaign object that asked
the previous batch itself keeps its optimizer (:class:`Live`) and only tells it what came since,
as ``screen`` does: no replay, no decoding, no retracing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset

from ...acquisition.pending import KeepsPendingPoints, PendingState, initial_state
from ...errors import CampaignError
from ...evaluation.evaluators import Evaluation
from ...numerics.outcome_transforms import data_units
from ...problems.campaign_problem import MoleculeProblem
from ..directory.checks import saved_rule_state
from ..directory.records import LoggedEvaluations
from ..engine.ask_tell import CampaignAskTell, set_rule_state
from ..engine.proposer import tell
from ..run.runner import Build

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class History:
    """What a prospective campaign was told, in the order it was told.

    :ivar logged: The log's rows, in file order.
    :ivar extra_points: The extra molecules' fingerprints [E, D], in file order.
    :ivar extra_jobs: Their job numbers [E].
    :ivar extra_observed: What the model is told of them [E].
    :ivar asks: Batch -> (log rows, extra molecules) when the rule proposed it.
    :ivar initial_jobs: The initial design's job numbers -> candidate indices.
    :ivar pending: The candidates proposed and not told yet [P].
    :ivar corrections: How many scores ``tell --correct`` gave (``logged`` holds them).
    """

    logged: LoggedEvaluations
    extra_points: np.ndarray
    extra_jobs: np.ndarray
    extra_observed: np.ndarray
    asks: dict[int, tuple[int, int]]
    initial_jobs: dict[int, int]
    pending: np.ndarray
    corrections: int


@dataclass(frozen=True)
class Live:
    """The optimizer that asked batch ``batch`` in this process, its model, the (log rows,
    extra molecules) it had been told then, and the corrections made by then."""

    ask_tell: CampaignAskTell
    model: Any
    batch: int
    counts: tuple[int, int]
    corrections: int

    def asked_before(self, batch: int, history: History) -> bool:
        """Whether this optimizer asked the batch before ``batch`` and the records say so
        (``asks.json``), with no score corrected since."""
        asked = history.asks.get(self.batch) == self.counts
        return self.batch == batch - 1 and asked and self.corrections == history.corrections


@dataclass(frozen=True)
class NextBatch:
    """The rule's batch: its points [B, D], the rule's state after it, and the model's
    prediction there in the observations' units [B]: its mean and standard deviation, or, with an
    outcome transform, its median and the half-width of its 68 % interval (Trieste's direction:
    minimised)."""

    points: np.ndarray
    state: Any
    mean: np.ndarray
    std: np.ndarray


def next_batch(
    problem: MoleculeProblem,
    build: Build,
    history: History,
    batch: int,
    budget: int,
    rule_state: Path,
    rule_name: str,
    live: Optional[Live] = None,
) -> tuple[NextBatch, Live]:
    """Ask the rule for batch ``batch`` (1 the first after the initial design; module docstring)
    and return it with the optimizer that asked it.

    A rule state that is gone (``rule_state_NNN.json`` deleted by hand) is rebuilt from the
    records: a fresh state of the rule, with the molecules pending and those that failed.

    :param budget: Evaluations after the initial design (what ``screen`` passes its rules).
    :param live: The optimizer that asked the previous batch in this process, if any; used if
        the records say it did (``asks.json``) and no score was corrected since, else the model
        is rebuilt.

    :raise CampaignError: If ``asks.json`` lacks an earlier batch, or no evaluation before the
        first acquisition succeeded.
    """
    missing = [j for j in range(1, batch) if j not in history.asks]
    if missing:
        raise CampaignError(f"asks.json has no record of batch {missing[0]}: it is damaged")
    counts = [history.asks[j] for j in range(1, batch)]
    counts.append((len(history.logged.jobs), len(history.extra_jobs)))
    now = counts[-1]
    if live is not None and live.asked_before(batch, history):
        tell(live.ask_tell, _group(problem, history, live.counts, now))
        return _asked(live.ask_tell, live.model, batch, now, history.corrections)
    groups, start = [], (0, 0)
    for end in counts:
        groups.append(_group(problem, history, start, end))
        start = end
    first = [e for e in groups[0] if not e.failed]
    if not first:
        extra = "a molecule whose score you know (a known active) with --extra, or "
        raise CampaignError(
            "no evaluation told before the first acquisition succeeded: the model has nothing "
            f"to start from; tell {extra if problem.takes_extra_molecules else ''}a late "
            "measurement with trieste-scalable tell LOGDIR FILE --correct"
        )
    data = _dataset(first)
    after_initial = int(np.sum(history.logged.batches[: counts[0][0]] > 0))
    model, rule = build(data, budget - after_initial)
    state = _first_state(problem, rule, groups[0], history, counts[0][0], len(first))
    ask_tell = CampaignAskTell(problem.search_space, data, model, rule, acquisition_state=state)
    for group in groups[1:-1]:
        tell(ask_tell, group)  # the states between are restored, not replayed
    if batch > 1:
        gone = not rule_state.is_file()
        set_rule_state(ask_tell, saved_rule_state(rule_state, batch - 1, rule, rule_name))
        tell(ask_tell, groups[-1])
        if gone and isinstance(rule, KeepsPendingPoints):
            rows = int(ask_tell.dataset.query_points.shape[0])
            set_rule_state(ask_tell, _rebuilt_state(problem, rule, history, rows))
    return _asked(ask_tell, model, batch, now, history.corrections)


def _asked(
    ask_tell: CampaignAskTell, model: Any, batch: int, counts: tuple[int, int], corrections: int
) -> tuple[NextBatch, Live]:
    """The rule's batch, the model's predictions there, and the optimizer kept."""
    points = ask_tell.ask().numpy()
    # in the observations' units: a transformed model's median and 68 % half-width
    transform = getattr(model, "outcome_transform", None)
    mean, std = data_units(transform, *model.predict(tf.constant(points)))
    chosen = NextBatch(points, ask_tell.acquisition_state, mean.numpy()[:, 0], std.numpy()[:, 0])
    return chosen, Live(ask_tell, model, batch, counts, corrections)


def _group(
    problem: MoleculeProblem, history: History, start: tuple[int, int], end: tuple[int, int]
) -> list[Evaluation]:
    """The evaluations told between two acquisitions, by job (the order ``screen`` tells)."""
    logged, rows = history.logged, slice(start[0], end[0])
    points = np.asarray(problem.points[logged.ids[rows]]) if end[0] > start[0] else np.zeros(0)
    group = [
        Evaluation.replayed(int(job), point, None if np.isnan(y) else float(y))
        for job, point, y in zip(logged.jobs[rows], points, logged.observed[rows])
    ]
    extra = slice(start[1], end[1])
    group += [
        Evaluation.replayed(int(job), point, float(y))
        for job, point, y in zip(
            history.extra_jobs[extra], history.extra_points[extra], history.extra_observed[extra]
        )
    ]
    return sorted(group, key=lambda e: e.key)


def _dataset(evaluations: list[Evaluation]) -> Dataset:
    x = tf.constant(np.stack([e.point for e in evaluations]), dtype=tf.float64)
    return Dataset(x, tf.constant([[e.value] for e in evaluations], dtype=tf.float64))


def _first_state(
    problem: MoleculeProblem,
    rule: Any,
    group: list[Evaluation],
    history: History,
    logged_rows: int,
    told: int,
) -> Optional[PendingState]:
    """The rule's state before its first acquisition, as ``screen`` starts it
    (:func:`~trieste_scalable.acquisition.pending.initial_state`): with the failed initial
    molecules and those not told yet (pending)."""
    told_jobs = set(history.logged.jobs[:logged_rows].tolist())
    waiting = [i for job, i in history.initial_jobs.items() if job not in told_jobs]
    width = problem.points.shape[1]
    failed = np.reshape([e.point for e in group if e.failed], (-1, width))
    pending = np.asarray(problem.points[waiting]) if waiting else np.zeros((0, width))
    return initial_state(rule, pending=pending, failed=failed, seen=told)


def _rebuilt_state(
    problem: MoleculeProblem, rule: KeepsPendingPoints, history: History, rows: int
) -> PendingState:
    """A fresh state of ``rule`` that has seen ``rows`` dataset rows, with the campaign's
    pending molecules and every failed one (a rule state deleted by hand)."""
    _log.info("the rule's pending and failed molecules are rebuilt from the campaign's records")
    failed = history.logged.ids[history.logged.failed]
    width = problem.points.shape[1]
    pending, lost = (
        np.asarray(problem.points[np.sort(ids)]) if len(ids) else np.zeros((0, width))
        for ids in (history.pending, failed)
    )
    return rule.state_type().restarted(pending=pending, failed=lost, seen=rows)
