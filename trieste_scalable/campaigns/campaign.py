"""Run an optimisation campaign with a budget of evaluations: the engine of the command line.

A campaign is an ask/tell loop (Trieste's ``AskTellOptimizer``) so that adaptive batches can be
cut at the budget; it reports progress with tqdm and TensorBoard (through ``trieste.logging``,
with the step number set each batch, which ask/tell does not do by itself).
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.acquisition.rule import AcquisitionRule
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset

from ..problems import DiscreteProblem


@dataclass
class CampaignResult:
    """What a campaign did, batch by batch."""

    dataset: Dataset
    batch_sizes: list[int] = field(default_factory=list)
    distinct_per_batch: list[int] = field(default_factory=list)
    model_sizes: list[int] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    num_initial: int = 0

    @property
    def num_evaluations(self) -> int:
        return int(self.dataset.query_points.shape[0]) - self.num_initial


def run_campaign(
    problem: DiscreteProblem,
    model: Any,
    rule: AcquisitionRule,
    initial: Dataset,
    budget: int,
    seed: int = 0,
    logdir: Optional[str] = None,
    progress: bool = True,
    *,
    previous: Optional[CampaignResult] = None,
    on_batch: Optional[Callable[[int, Dataset, Any], None]] = None,
    rule_state: Any = None,
) -> CampaignResult:
    """Evaluate ``budget`` points after the initial design with ``rule`` (batches cut at the
    budget).

    :param initial: All data so far: the initial design, or with ``previous`` everything a
        resumed campaign had evaluated.
    :param previous: The record of an interrupted campaign to continue (its batches count
        towards ``budget`` and nothing is re-evaluated).
    :param on_batch: Called with the batch number, the new observations and the rule's
        ``State`` value after each batch (e.g. to append them to a file, so an interruption
        loses nothing).
    :param rule_state: The rule's ``State`` value to continue from (a resumed campaign's).
    """
    if budget < 1:
        raise ValueError(f"budget must be positive, got {budget}")
    result = previous or CampaignResult(initial, num_initial=int(initial.query_points.shape[0]))
    result.dataset = initial
    # A resumed campaign draws fresh noise: the observer's seed includes the evaluations so far.
    observer = problem.observer(seed + 1000 + 7919 * result.num_evaluations)
    writer = tf.summary.create_file_writer(logdir) if logdir else None
    bar = progress_bar(budget, progress, initial=min(result.num_evaluations, budget))
    with (
        logging.tensorboard_writer(writer) if writer else nullcontext(),
        dimension_histograms_limited(int(initial.query_points.shape[-1])),
    ):
        ask_tell = AskTellOptimizer(
            problem.search_space, initial, model, rule, acquisition_state=rule_state
        )
        step = len(result.batch_sizes)
        while result.num_evaluations < budget:
            step += 1
            logging.set_step_number(step)
            start = time.perf_counter()
            batch = ask_tell.ask()[: budget - result.num_evaluations]
            seconds = time.perf_counter() - start
            new_data = observer(batch)
            if on_batch is not None:
                on_batch(step, new_data, ask_tell.acquisition_state)
            start = time.perf_counter()
            ask_tell.tell(new_data)
            seconds += time.perf_counter() - start
            result.dataset = ask_tell.dataset
            _record(result, model, batch, seconds)
            ids = problem.indices(result.dataset.query_points)  # one lookup per batch
            _log_batch(writer, problem, result, step, ids)
            bar.update(int(batch.shape[0]))
            best = _best_value(problem, result, ids)
            bar.set_postfix(best=f"{best:.4f}", batch=int(batch.shape[0]))
    bar.close()
    return result


MAX_DIMENSION_HISTOGRAMS = 16
"""Above this input dimension, Trieste's per-dimension query-point histograms are not written."""

_DIMENSION_HISTOGRAM = re.compile(r"(^|/)query_points/\[\d+\]$")


@contextmanager
def dimension_histograms_limited(input_dim: int) -> Iterator[None]:
    """Trieste's optimizers write one histogram per input dimension (``query_points/[i]``): on
    2,048-bit fingerprints that is 1,000+ tags and megabytes of events per few batches, which
    TensorBoard cannot show usefully. Above :data:`MAX_DIMENSION_HISTOGRAMS` dimensions they are
    filtered out with Trieste's ``set_summary_filter`` for the campaign, composed with (and then
    restoring) the filter in force."""
    if input_dim <= MAX_DIMENSION_HISTOGRAMS:
        yield
        return
    previous = logging._SUMMARY_FILTER  # Trieste offers a setter but no getter
    logging.set_summary_filter(
        lambda name: previous(name) and not _DIMENSION_HISTOGRAM.search(name)
    )
    try:
        yield
    finally:
        logging.set_summary_filter(previous)


def model_size(model: Any) -> int:
    """Dictionary size (Nystrom), inducing points (SVGP) or unique points (exact models)."""
    if hasattr(model, "num_inducing"):
        return int(model.num_inducing)
    if hasattr(model, "dictionary"):
        return int(model.dictionary.shape[0])
    return int(getattr(model, "num_unique_points", 0))


def _record(result: CampaignResult, model: Any, batch: tf.Tensor, seconds: float) -> None:
    result.batch_sizes.append(int(batch.shape[0]))
    result.distinct_per_batch.append(int(np.unique(batch.numpy(), axis=0).shape[0]))
    result.model_sizes.append(model_size(model))
    result.batch_seconds.append(seconds)


def _best_value(problem: DiscreteProblem, result: CampaignResult, ids: np.ndarray) -> float:
    """Noise-free value of the best candidate evaluated after the initial design (what a user
    would recommend); ``ids`` are the candidate indices of every evaluation."""
    evaluated = ids[result.num_initial :]
    return float(problem.values[evaluated].min()) if evaluated.size else np.nan


def _log_batch(
    writer: Any, problem: DiscreteProblem, result: CampaignResult, step: int, ids: np.ndarray
) -> None:
    if writer is None:
        return
    regret = problem.values[ids[result.num_initial :]] - problem.minimum
    with writer.as_default(step=step):
        logging.scalar("campaign/evaluations", result.num_evaluations)
        logging.scalar("campaign/best_value", _best_value(problem, result, ids))
        logging.scalar("campaign/cumulative_regret", float(regret.sum()))
        logging.scalar("campaign/batch_size", result.batch_sizes[-1])
        logging.scalar("campaign/distinct_points_in_batch", result.distinct_per_batch[-1])
        logging.scalar("campaign/model_size", result.model_sizes[-1])
        logging.scalar("campaign/batch_seconds", result.batch_seconds[-1])
        for name, value in problem.metrics(ids).items():
            logging.scalar(f"campaign/{name}", value)
    writer.flush()


def progress_bar(total: int, enabled: bool, initial: int = 0) -> Any:
    """A tqdm bar of evaluations (disabled with ``--quiet``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="eval", dynamic_ncols=True)
