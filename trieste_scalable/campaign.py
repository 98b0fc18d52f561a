"""Run an optimisation campaign with a budget of evaluations: the engine of the command line.

A campaign is an ask/tell loop (Trieste's ``AskTellOptimizer``) so that adaptive batches can be
cut at the budget; it reports progress with tqdm and TensorBoard (through ``trieste.logging``,
with the step number set each batch, which ask/tell does not do by itself).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

import gpflow
import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.acquisition.rule import AcquisitionRule
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.space import SearchSpace

from .acquisition import BBKB, BKB, GPBUCB, ConfidenceWidth
from .models import ExactDictionary, NystromGPR, RidgeLeverageSampler
from .problems import DiscreteProblem

ALGORITHMS = ("bbkb", "bbkb-local", "bkb", "gp-bucb", "mini-ucb", "mini-ei", "random")


@dataclass
class CampaignResult:
    """What a campaign did, batch by batch."""

    dataset: Dataset
    batch_sizes: list[int] = field(default_factory=list)
    distinct_per_batch: list[int] = field(default_factory=list)
    dictionary_sizes: list[int] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    num_initial: int = 0

    @property
    def num_evaluations(self) -> int:
        return int(self.dataset.query_points.shape[0]) - self.num_initial


class RandomRule(AcquisitionRule[tf.Tensor, SearchSpace, Any]):
    """Uniform random candidates without replacement within a batch (the baseline)."""

    def __init__(self, batch_size: int, seed: int = 0):
        self._batch_size = batch_size
        self._rng = np.random.default_rng(seed)

    def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
        points = search_space.points
        ids = self._rng.choice(points.shape[0], size=self._batch_size, replace=False)
        return tf.gather(points, ids)

    def __repr__(self) -> str:
        return f"RandomRule({self._batch_size})"


def build(
    algorithm: str,
    data: Dataset,
    *,
    lengthscale: float,
    kernel_variance: float,
    noise_variance: float,
    width: ConfidenceWidth,
    batch_size: int,
    max_batch_size: Optional[int],
    fit_hyperparameters: bool,
    seed: int,
    allow_repeats: bool = True,
) -> tuple[Any, AcquisitionRule]:
    """The model and rule for ``algorithm`` (one of :data:`ALGORITHMS`)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}: choose from {', '.join(ALGORITHMS)}")
    kernel = gpflow.kernels.SquaredExponential(variance=kernel_variance, lengthscales=lengthscale)
    dictionary = (
        ExactDictionary() if algorithm == "gp-bucb" else RidgeLeverageSampler(2.0, seed=seed)
    )
    model = NystromGPR(
        kernel, noise_variance, data, dictionary=dictionary, fit_hyperparameters=fit_hyperparameters
    )
    rule: AcquisitionRule
    if algorithm == "bbkb":
        rule = BBKB("global", 2.0, width, max_batch_size, seed=seed, allow_repeats=allow_repeats)
    elif algorithm == "bbkb-local":
        rule = BBKB(
            "global_local", 2.0, width, max_batch_size, seed=seed, allow_repeats=allow_repeats
        )
    elif algorithm == "bkb":
        rule = BKB(width=width, seed=seed)
    elif algorithm == "gp-bucb":
        rule = GPBUCB(
            width=width, max_batch_size=max_batch_size, seed=seed, allow_repeats=allow_repeats
        )
    else:
        rule = RandomRule(batch_size, seed)
    return model, rule


def run_campaign(
    problem: DiscreteProblem,
    model: Any,
    rule: AcquisitionRule,
    initial: Dataset,
    budget: int,
    seed: int = 0,
    logdir: Optional[str] = None,
    progress: bool = True,
) -> CampaignResult:
    """Evaluate ``budget`` points with ``rule`` (batches cut at the budget)."""
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    observer = problem.observer(seed + 1000)
    writer = tf.summary.create_file_writer(logdir) if logdir else None
    result = CampaignResult(initial, num_initial=int(initial.query_points.shape[0]))
    bar = _progress_bar(budget, progress)
    with logging.tensorboard_writer(writer) if writer else _nullcontext():
        ask_tell = AskTellOptimizer(problem.search_space, initial, model, rule)
        step = 0
        while result.num_evaluations < budget:
            step += 1
            logging.set_step_number(step)
            start = time.perf_counter()
            batch = ask_tell.ask()[: budget - result.num_evaluations]
            seconds = time.perf_counter() - start
            new_data = observer(batch)
            start = time.perf_counter()
            ask_tell.tell(new_data)
            seconds += time.perf_counter() - start
            result.dataset = ask_tell.dataset
            _record(result, model, batch, seconds)
            _log_batch(writer, problem, result, new_data, step)
            bar.update(int(batch.shape[0]))
            bar.set_postfix(best=f"{_best_value(problem, result):.4f}", batch=int(batch.shape[0]))
    bar.close()
    return result


def _record(result: CampaignResult, model: Any, batch: tf.Tensor, seconds: float) -> None:
    result.batch_sizes.append(int(batch.shape[0]))
    result.distinct_per_batch.append(int(np.unique(batch.numpy(), axis=0).shape[0]))
    result.dictionary_sizes.append(int(getattr(model, "dictionary", tf.zeros([0])).shape[0]))
    result.batch_seconds.append(seconds)


def _best_value(problem: DiscreteProblem, result: CampaignResult) -> float:
    """Noise-free value of the best evaluated candidate (what a user would recommend)."""
    evaluated = result.dataset.query_points[result.num_initial :]
    return float(problem.minimum + problem.regret(evaluated).min()) if len(evaluated) else np.nan


def _log_batch(
    writer: Any, problem: DiscreteProblem, result: CampaignResult, new: Dataset, step: int
) -> None:
    if writer is None:
        return
    evaluated = result.dataset.query_points[result.num_initial :]
    regret = problem.regret(evaluated)
    with writer.as_default(step=step):
        logging.scalar("campaign/evaluations", result.num_evaluations)
        logging.scalar("campaign/best_value", _best_value(problem, result))
        logging.scalar("campaign/cumulative_regret", float(regret.sum()))
        logging.scalar("campaign/batch_size", result.batch_sizes[-1])
        logging.scalar("campaign/distinct_points_in_batch", result.distinct_per_batch[-1])
        logging.scalar("campaign/dictionary_size", result.dictionary_sizes[-1])
        logging.scalar("campaign/batch_seconds", result.batch_seconds[-1])
    writer.flush()


def _progress_bar(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, unit="eval", dynamic_ncols=True)


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None
