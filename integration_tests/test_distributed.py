"""Evaluations on a local Ray cluster: results as they finish, failures (raised, timed out, a
killed worker) recorded and never told, and asynchronous campaigns that keep every worker busy
and never propose a pending or evaluated candidate twice.

Ray's "A worker died or was killed while executing a task by an unexpected system error" and
"Task run_objective failed. There are 1 retries remaining" lines in this module's output are
:func:`~.objectives.flaky` killing its worker on purpose (``os._exit(1)``, a crashed docking run);
the raylet prints them late, so they may appear in a later test's output."""

from __future__ import annotations

import time
from collections import Counter
from typing import Iterator

import numpy as np
import pytest
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace

ray = pytest.importorskip("ray")

from tests.util import se_kernel  # noqa: E402
from trieste_scalable.acquisition import BBKB, BatchThompsonSampling, ConfidenceWidth  # noqa: E402
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.campaigns.engine.loop import EngineCallbacks, run_asynchronous  # noqa: E402
from trieste_scalable.cluster.evaluators import RayEvaluator, WithLatency  # noqa: E402
from trieste_scalable.evaluation.evaluators import Evaluation  # noqa: E402
from trieste_scalable.models import AdaptiveSVGP, NystromGPR  # noqa: E402

from .objectives import bowl, flaky  # noqa: E402


class _Counts(EngineCallbacks):
    """Records the size of each group of finished evaluations."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes

    def on_results(self, finished: list[Evaluation]) -> None:
        self.sizes.append(len(finished))


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    ray.init("local", num_cpus=8, include_dashboard=False, log_to_driver=False)  # its own
    yield
    ray.shutdown()


def test_results_come_back_as_they_finish_and_failures_are_recorded(local_cluster: None) -> None:
    evaluator = RayEvaluator(flaky, 4, timeout=5.0, max_retries=1)
    points = np.array([[0.5, 0.5], [0.1, 0.5], [0.5, 0.1], [0.1, 0.1], [0.9, 0.9]])
    keys = [evaluator.submit(p) for p in points]
    assert keys == [0, 1, 2, 3, 4] and evaluator.in_flight == 5
    results = {}
    while evaluator.in_flight:
        for evaluation in evaluator.collect():
            results[evaluation.key] = evaluation
    assert results[0].value == pytest.approx(0.08), results[0].error
    assert results[4].value == pytest.approx(0.72)
    assert results[0].worker and results[0].finished >= results[0].started
    assert "docking failed" in results[1].error and results[1].failed
    assert "timed out after 5 s of running" in results[2].error
    assert results[3].failed and results[3].error  # the worker died (twice: one retry)
    np.testing.assert_array_equal(results[2].point, points[2])


def test_a_timeout_counts_from_the_start_on_the_worker_not_from_submission(
    local_cluster: None,
) -> None:
    """Each task takes every CPU of the cluster, so the quick evaluation waits in Ray's queue
    behind the hanging one for the whole timeout: it must still run (it used to fail, "timed
    out", without having started)."""
    cpus = ray.cluster_resources()["CPU"]
    evaluator = RayEvaluator(flaky, 1, num_cpus=cpus, timeout=3.0)
    hanging, quick = evaluator.submit(np.array([0.5, 0.1])), evaluator.submit(np.array([0.5, 0.5]))
    results = {}
    while evaluator.in_flight:
        for evaluation in evaluator.collect():
            results[evaluation.key] = evaluation
    assert "timed out after 3 s of running" in results[hanging].error
    assert results[quick].value == pytest.approx(0.08), results[quick].error
    assert results[quick].started >= results[hanging].finished - 1.0  # it ran after, not queued


def test_latency_wrapper_keeps_the_values_and_delays_them() -> None:
    slow = WithLatency(bowl, mean=0.05, sigma=0.5, seed=1)
    start = time.perf_counter()
    values = [slow(np.array([0.1 * i, 0.2])) for i in range(10)]
    assert values == [bowl(np.array([0.1 * i, 0.2])) for i in range(10)]
    assert 0.1 < time.perf_counter() - start < 5.0


def problem(seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(400, 2))))
    x = tf.gather(space.points, rng.choice(400, 10, replace=False))
    y = tf.constant([[bowl(p)] for p in x.numpy()], dtype=tf.float64)
    return space, Dataset(x, y)


def test_asynchronous_thompson_sampling_screens_without_replacement(local_cluster: None) -> None:
    space, data = problem(1)
    model = AdaptiveSVGP(se_kernel(0.3), 1e-3, data, inducing=50, fit_hyperparameters=False)
    rule = BatchThompsonSampling(2, num_features=200, exclude_evaluated=True)
    evaluator = RayEvaluator(WithLatency(flaky, mean=0.05, seed=2), 6, timeout=2.0)
    result = run_asynchronous(space, model, rule, data, evaluator, budget=60)
    points = [tuple(e.point) for e in result.evaluations]
    assert len(points) == 60 and max(Counter(points).values()) == 1  # never proposed twice
    evaluated = Counter(map(tuple, result.dataset.query_points.numpy()))
    assert max(evaluated.values()) == 1  # nor an initial point
    assert all(
        not (e.point[0] < 0.25 or e.point[1] < 0.25) for e in result.evaluations if not e.failed
    )
    assert result.dataset.query_points.shape[0] == 10 + 60 - len(result.failures)
    assert 0.0 < result.utilisation <= 1.0


def test_asynchronous_bbkb_hallucinates_what_is_in_flight(local_cluster: None) -> None:
    space, data = problem(2)
    model = NystromGPR(se_kernel(0.3), 0.05, data, fit_hyperparameters=False)
    rule = BBKB(width=ConfidenceWidth("constant", beta=2.0), max_batch_size=4, allow_repeats=False)
    evaluator = RayEvaluator(WithLatency(bowl, mean=0.05, seed=3), 4)
    result = run_asynchronous(space, model, rule, data, evaluator, budget=30)
    assert len(result.evaluations) == 30 and not result.failures
    best = float(tf.reduce_min(result.dataset.observations))
    assert best < 0.01  # the bowl's minimum, 0 at (0.3, 0.3), found among 400 candidates


def test_the_asynchronous_default_gp_bucb_never_proposes_a_pending_point_and_finds_the_minimum(
    local_cluster: None,
) -> None:
    """``screen``'s asynchronous default: GP-BUCB with fixed batches (8 points an acquisition for
    4 workers here) over a GP that turns from exact to a 30-point Nystrom dictionary
    mid-campaign. Every acquisition
    hallucinates the points in flight and proposes a full batch of others: nothing is evaluated
    twice; the evaluations' mean is below 0.6x random search's (measured 0.078, whole batches
    0.061; random 0.25) and the bowl's minimum region is found (best < 0.01; measured 0.0013).
    The kernel's variance is of the values' order, as ``screen`` sets it (with 1.0, four times
    the bowl's spread, the width explores, asynchronously and in whole batches alike: 0.29 and
    0.34)."""
    space, data = problem(6)
    model, rule = build(
        "gp-bucb",
        data,
        kernel=se_kernel(0.3, variance=0.1),
        noise_variance=1e-3,
        width=ConfidenceWidth("constant", beta=2.0),
        batch_size=8,
        max_batch_size=8,
        fit_hyperparameters=False,
        seed=0,
        screening=True,
        fixed_batches=True,
        dictionary_size=30,
    )
    evaluator = RayEvaluator(WithLatency(bowl, mean=0.05, seed=6), 4)
    result = run_asynchronous(space, model, rule, data, evaluator, budget=60)
    evaluated = Counter(map(tuple, result.dataset.query_points.numpy()))
    assert len(result.evaluations) == 60 and max(evaluated.values()) == 1
    assert all((r.size, r.distinct) == (8, 8) for r in result.acquisitions)
    assert result.model_sizes[0] < 30 == result.model_sizes[-1]  # exact, then the dictionary
    random_regret = float(np.mean([bowl(p) for p in space.points.numpy()]))
    assert np.mean([e.value for e in result.evaluations]) < 0.6 * random_regret
    assert min(e.value for e in result.evaluations) < 0.01


def test_whole_batches_are_told_together(local_cluster: None) -> None:
    """Whole-batch mode tells the model a batch at once, though it logs each evaluation as it
    arrives."""
    space, data = problem(3)
    model = AdaptiveSVGP(se_kernel(0.3), 1e-3, data, inducing=50, fit_hyperparameters=False)
    sizes: list[int] = []
    update = model.update

    def recording_update(dataset: Dataset) -> None:
        sizes.append(int(dataset.query_points.shape[0]))
        update(dataset)

    model.update = recording_update  # type: ignore[method-assign]
    rule = BatchThompsonSampling(4, num_features=200, exclude_evaluated=True)
    evaluator = RayEvaluator(WithLatency(bowl, mean=0.05, seed=4), 4)
    logged: list[int] = []
    result = run_asynchronous(
        space,
        model,
        rule,
        data,
        evaluator,
        12,
        whole_batches=True,
        callbacks=_Counts(logged),
    )
    assert sum(logged) == 12 and len(result.evaluations) == 12
    told = [size for size in sizes if size > len(data)]
    assert told == [len(data) + 4, len(data) + 8, len(data) + 12]


class SlowRule(AcquisitionRule):  # type: ignore[type-arg]
    """``rule`` taking ``seconds`` longer to acquire."""

    def __init__(self, rule: AcquisitionRule, seconds: float):  # type: ignore[type-arg]
        self.rule, self.seconds = rule, seconds

    def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
        time.sleep(self.seconds)
        return self.rule.acquire(search_space, models, datasets)


@pytest.mark.parametrize("whole", [False, True])
def test_time_running_out_during_an_acquisition_ends_the_campaign_quietly(
    local_cluster: None, whole: bool
) -> None:
    space, data = problem(5)
    model = AdaptiveSVGP(se_kernel(0.3), 1e-3, data, inducing=20, fit_hyperparameters=False)
    rule = SlowRule(BatchThompsonSampling(4, num_features=100, exclude_evaluated=True), 0.5)
    evaluator = RayEvaluator(bowl, 4)
    result = run_asynchronous(
        space, model, rule, data, evaluator, 20, whole_batches=whole, max_seconds=0.2
    )
    assert result.evaluations == []  # nothing submitted after the time, and no error


def _mean_regret(
    space: DiscreteSearchSpace, data: Dataset, whole: bool, seed: int, latency: float = 0.05
) -> float:
    """The mean regret of 60 evaluations by Thompson sampling on 6 Ray workers whose
    evaluations take ``latency`` s on average (log-normal, drawn with ``seed``): asynchronous (4
    points asked at a time) or in whole batches of 6."""
    model = AdaptiveSVGP(se_kernel(0.3), 1e-3, data, inducing=50, fit_hyperparameters=False)
    rule = BatchThompsonSampling(6 if whole else 4, num_features=200, exclude_evaluated=True)
    evaluator = RayEvaluator(WithLatency(bowl, mean=latency, seed=seed), 6)
    result = run_asynchronous(space, model, rule, data, evaluator, 60, whole_batches=whole)
    return float(np.mean([e.value for e in result.evaluations]))


def test_asynchronous_and_synchronous_thompson_sampling_find_as_good_points(
    local_cluster: None,
) -> None:
    """Same rule, model, problem and number of evaluations: asynchronous (each result told as
    it comes) and whole batches of 6 reach similar mean regret, well below random search's (the
    bowl's mean over the candidates, 0.264). Tolerance: whole batches below 0.6x random's; the
    asynchronous mean regret, averaged over 3 arrival orders, within 1.5x (+0.005) of the
    synchronous one and below 0.65x random's.

    The asynchronous result depends on the order results arrive in, so on the machine's load;
    the bounds hold over the orders measured (``benchmarks/results/arrival_orders.txt``, after
    a first campaign that traces the functions): 24 orders (8 latency seeds x mean latencies
    0.005, 0.05 and 0.5 s, i.e. acquisitions 10x slower than evaluations, as under load, to 10x
    faster) gave 0.109-0.175, means of 0.114-0.143 a latency, at most 0.159 for the worst 3;
    whole batches 0.108 each time (told in submission order). A first campaign, tracing as it
    asks, gave 0.19-0.23 (and 0.172 on a 2-core machine at load 6-8): it runs first, not
    counted."""
    space, data = problem(4)
    _mean_regret(space, data, whole=False, seed=0)  # traces: its slow first asks are its own
    random_regret = float(np.mean([bowl(p) for p in space.points.numpy()]))
    asynchronous = float(np.mean([_mean_regret(space, data, False, seed) for seed in (5, 6, 7)]))
    whole = _mean_regret(space, data, whole=True, seed=5)
    assert whole < 0.6 * random_regret and asynchronous < 0.65 * random_regret
    assert asynchronous <= 1.5 * whole + 0.005, (asynchronous, whole)
