"""What the rules and models write to TensorBoard through trieste.logging."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.util import event_pb2
from trieste import logging
from trieste.bayesian_optimizer import BayesianOptimizer

from trieste_scalable.acquisition import BBKB, ConfidenceWidth, MiniGPUCB
from trieste_scalable.acquisition.random_search import RandomRule
from trieste_scalable.campaigns.run.runner import run_campaign
from trieste_scalable.models import NystromGPR, ReplicatedGPR
from trieste_scalable.problems import DiscreteProblem, get_problem

from ...util import se_kernel


def logged_tags(logdir: Path) -> dict[str, list[float]]:
    tags: dict[str, list[float]] = {}
    for path in logdir.rglob("events.out.tfevents.*"):
        for record in tf.data.TFRecordDataset(str(path)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                array = tf.make_ndarray(value.tensor)
                if array.dtype.kind in "fiu" and array.size == 1:  # scalars only
                    tags.setdefault(value.tag, []).append(float(array))
    return tags


def run_logged(tmp_path: Path, model, rule) -> dict[str, list[float]]:  # type: ignore[no-untyped-def]
    problem = get_problem("rkhs3", num_points=500)
    initial = problem.initial_data(15, seed=0)
    writer = tf.summary.create_file_writer(str(tmp_path))
    with logging.tensorboard_writer(writer):
        BayesianOptimizer(problem.observer(0), problem.search_space).optimize(
            4, initial, model, rule, track_state=False
        )
    writer.flush()
    return logged_tags(tmp_path)


def test_bbkb_and_nystrom_log_their_summaries(tmp_path: Path) -> None:
    model = NystromGPR(se_kernel(), 0.5, fit_hyperparameters=False)
    tags = run_logged(tmp_path, model, BBKB(width=ConfidenceWidth("constant")))
    for tag in [
        "batch_size",
        "distinct_points",
        "stopping_statistic",
        "alpha",
        "beta",
        "dictionary_size",
        "batch_seconds",
    ]:
        assert len(tags[f"bbkb/{tag}"]) == 4, tag
    assert all(v >= 1 for v in tags["bbkb/batch_size"])
    for tag in ["dictionary_size", "effective_dimension", "resparsification_seconds"]:
        assert len(tags[f"OBJECTIVE.model/nystrom/{tag}"]) == 5, tag  # initial fit + 4 steps


def test_mini_meta_logs_epochs_switches_unique_and_repeats(tmp_path: Path) -> None:
    model = ReplicatedGPR(se_kernel(), 0.01, fit_hyperparameters=False)
    tags = run_logged(tmp_path, model, MiniGPUCB(width="constant"))
    np.testing.assert_array_equal(tags["mini_gp_ucb/epochs"], [1, 2, 3, 4])
    for tag in ["switches", "unique_candidates", "repeats", "beta"]:
        assert len(tags[f"mini_gp_ucb/{tag}"]) == 4, tag
    assert "OBJECTIVE.model/replicated/unique_points" in tags


def _all_tags(logdir: Path) -> set[str]:
    return {
        value.tag
        for path in logdir.rglob("events.out.tfevents.*")
        for record in tf.data.TFRecordDataset(str(path))
        for value in event_pb2.Event.FromString(record.numpy()).summary.value
    }


@pytest.mark.parametrize("input_dim, per_dimension", [(3, True), (40, False)])
def test_per_dimension_histograms_only_for_low_dimensional_inputs(
    tmp_path: Path, input_dim: int, per_dimension: bool
) -> None:
    rng = np.random.default_rng(0)
    points = rng.uniform(size=(300, input_dim))
    problem = DiscreteProblem("toy", points, -points.sum(axis=1), 0.1)
    model = ReplicatedGPR(se_kernel(), 0.01, fit_hyperparameters=False)
    before = logging._SUMMARY_FILTER
    initial = problem.initial_data(10, 0)
    run_campaign(problem, model, RandomRule(5), initial, 10, logdir=str(tmp_path), progress=False)
    tags = _all_tags(tmp_path)
    assert "query_points/euclidean_distances" in tags  # Trieste's other summaries stay
    assert ("query_points/[0]" in tags) == per_dimension
    assert logging._SUMMARY_FILTER is before  # the user's filter is restored
