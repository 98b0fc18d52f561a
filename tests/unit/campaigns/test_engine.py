"""The campaign engine without Ray: the in-process evaluator, and both modes of
:func:`run_asynchronous` over it (each evaluation handed on as it arrives; a crash inside a batch
loses none that finished)."""

from __future__ import annotations

import math
import time
from typing import Any, Optional

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition.random_search import RandomRule, RandomState
from trieste_scalable.campaigns.engine.loop import (
    CampaignResult,
    EngineCallbacks,
    run_asynchronous,
)
from trieste_scalable.evaluation.evaluators import Evaluation, InProcessEvaluator
from trieste_scalable.models.no_model import NoModel

POINTS = np.arange(40, dtype=np.float64).reshape(20, 2) / 40.0
SPACE = DiscreteSearchSpace(tf.constant(POINTS))


def _objective(x: np.ndarray) -> float:
    return float(np.sum((np.asarray(x) - 0.3) ** 2))


def test_in_process_evaluations_come_back_in_order_with_failures_and_driver_times() -> None:
    def objective(x: np.ndarray) -> float:
        if x[0] > 0.5:
            raise RuntimeError("docking failed\nno pose found")
        return math.nan if x[0] == 0.0 else _objective(x)

    evaluator = InProcessEvaluator(objective, num_workers=3)
    keys = [evaluator.submit(POINTS[i]) for i in (1, 0, 19)]
    assert keys == [0, 1, 2] and evaluator.in_flight == 3
    results: list[Evaluation] = []
    while evaluator.in_flight:
        (evaluation,) = evaluator.collect()
        results.append(evaluation)
    assert [e.key for e in results] == [0, 1, 2] and evaluator.collect() == []
    assert results[0].value == pytest.approx(_objective(POINTS[1])) and results[0].error == ""
    assert results[1].failed and "returned nan" in results[1].error
    assert results[2].failed and results[2].error == "RuntimeError: no pose found"
    for e in results:  # all three times are this process's own clock
        assert e.submitted <= e.started <= e.finished
    with pytest.raises(ValueError, match="num_workers"):
        InProcessEvaluator(_objective, num_workers=0)


def _initial() -> Dataset:
    x = POINTS[:3]
    return Dataset(tf.constant(x), tf.constant([[_objective(p)] for p in x], tf.float64))


class _Results(EngineCallbacks):
    """Hands each group of finished evaluations to ``record``; the other hooks are no-ops."""

    def __init__(self, record: Any):
        self.record = record

    def on_results(self, finished: list[Evaluation]) -> None:
        self.record(finished)


def _random_search(
    budget: int, whole_batches: bool, callbacks: Optional[EngineCallbacks] = None
) -> CampaignResult:
    """Random search without repeats, 4 points an acquisition, in this process with 4 workers,
    from the 3 initial points."""
    return run_asynchronous(
        SPACE,
        NoModel(),
        RandomRule(4, seed=1, exclude_evaluated=True),
        _initial(),
        InProcessEvaluator(_objective, num_workers=4),
        budget,
        whole_batches=whole_batches,
        callbacks=callbacks,
    )


@pytest.mark.parametrize("whole_batches", [True, False])
def test_the_engine_runs_without_ray_and_hands_on_each_evaluation_as_it_arrives(
    whole_batches: bool,
) -> None:
    groups: list[list[Evaluation]] = []
    result = _random_search(12, whole_batches, _Results(groups.append))
    assert [len(group) for group in groups] == [1] * 12  # one at a time, never a whole batch
    evaluated = np.stack([e.point for group in groups for e in group])
    assert len({tuple(p) for p in evaluated} | {tuple(p) for p in POINTS[:3]}) == 15
    assert result.dataset.query_points.shape[0] == 15 and not result.failures


def test_a_crash_inside_a_batch_loses_none_of_its_finished_evaluations() -> None:
    """Whole-batch mode, batches of 4: the process dies (``KeyboardInterrupt``) at the sixth
    evaluation; the five before it, one batch and a part, were handed on already."""
    calls = []

    def dies_at_the_sixth(x: np.ndarray) -> float:
        calls.append(x)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return _objective(x)

    logged: list[Evaluation] = []
    with pytest.raises(KeyboardInterrupt):
        run_asynchronous(
            SPACE,
            NoModel(),
            RandomRule(4, seed=2, exclude_evaluated=True),
            _initial(),
            InProcessEvaluator(dies_at_the_sixth, num_workers=4),
            12,
            whole_batches=True,
            callbacks=_Results(logged.extend),
        )
    assert len(logged) == 5 and [e.key for e in logged] == [0, 1, 2, 3, 4]


def test_in_process_evaluations_are_grouped_up_to_a_run_time() -> None:
    """Cheap evaluations come back together (one log write per group); an evaluation that has
    used up the group's time ends the group, so the rest wait for the next ``collect``."""
    evaluator = InProcessEvaluator(_objective, num_workers=5, group_seconds=60.0)
    for point in POINTS[:5]:
        evaluator.submit(point)
    assert [e.key for e in evaluator.collect()] == [0, 1, 2, 3, 4]

    def slow(x: np.ndarray) -> float:
        time.sleep(0.05)
        return _objective(x)

    evaluator = InProcessEvaluator(slow, num_workers=3, group_seconds=0.01)
    for point in POINTS[:3]:
        evaluator.submit(point)
    assert [[e.key for e in evaluator.collect()] for _ in range(3)] == [[0], [1], [2]]


def test_the_private_attributes_of_trieste_the_adapter_uses_exist() -> None:
    """``engine/ask_tell.py`` is the one module touching ``AskTellOptimizer``'s private state: a
    Trieste release that renames any of it fails here, not in a campaign."""
    from trieste.ask_tell_optimization import AskTellOptimizer

    from trieste_scalable.campaigns.engine.ask_tell import PRIVATE_ATTRIBUTES, set_rule_state

    points = tf.constant([[0.0], [0.5], [1.0]], dtype=tf.float64)
    data = Dataset(points[:2], tf.constant([[0.1], [0.2]], dtype=tf.float64))
    ask_tell = AskTellOptimizer(DiscreteSearchSpace(points), data, NoModel(), RandomRule(1))
    assert all(hasattr(ask_tell, name) for name in PRIVATE_ATTRIBUTES)
    set_rule_state(ask_tell, RandomState(num_batches=7))
    assert ask_tell.acquisition_state == RandomState(num_batches=7)


def test_proposals_kept_ahead_follow_busy_workers_not_the_time_since_the_start() -> None:
    """2 s evaluations on 8 busy workers finish 4 a second: an acquisition of 8 s needs twice
    32 in hand, however long the campaign waited for its first acquisition."""
    from trieste_scalable.campaigns.engine.loop import _Submissions

    class Busy:  # an evaluator whose workers are all busy
        num_workers, in_flight = 8, 8

    loop = _Submissions(Busy(), 1000, None, lambda *args: None, None)  # type: ignore[arg-type]
    assert loop.ahead([], 8.0) == 0  # no run time known yet: only free workers get proposals
    loop.start -= 1000.0  # a long first acquisition, during which nothing ran
    finished = [Evaluation(i, POINTS[0], 1.0, "", 10.0, 12.0, "", 9.0) for i in range(3)]
    assert loop.ahead(finished, 8.0) == 64
    finished += [Evaluation(3, POINTS[0], 1.0, "", 10.0, 16.0, "", 9.0)]  # a slow one: 3 s mean
    assert loop.ahead(finished, 8.0) == math.ceil(2 * 8 / 3 * 8)
    loop.submitted = 990
    assert loop.ahead(finished, 8.0) == 10  # within the budget


@pytest.mark.parametrize("whole_batches", [True, False])
def test_a_rule_with_nothing_left_to_pick_ends_the_campaign_with_what_it_found(
    whole_batches: bool,
) -> None:
    """20 candidates, 3 evaluated, a budget of 30: random search without repeats picks the 17
    left, then has none; both modes end there (not an error), each candidate once."""
    result = _random_search(30, whole_batches)
    assert result.exhausted and result.num_evaluations == 17
    points = np.asarray(result.dataset.query_points)
    assert len(np.unique(points, axis=0)) == 20 == len(points)
