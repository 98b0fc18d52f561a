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

import gpflow
import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.acquisition.rule import AcquisitionRule
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.models.interfaces import TrainableProbabilisticModel
from trieste.space import SearchSpace
from trieste.types import State, TensorType

from ..acquisition import (
    BBKB,
    BKB,
    GPBUCB,
    BatchThompsonSampling,
    ConfidenceWidth,
    MiniGPEI,
    MiniGPUCB,
)
from ..acquisition.candidates import EvaluatedCandidates, candidate_rows, num_candidates
from ..acquisition.pending import Points, outstanding, proposed, rows_seen
from ..acquisition.rule_state import saved_state
from ..models import AdaptiveSVGP, ExactDictionary, NystromGPR, ReplicatedGPR, RidgeLeverageSampler
from ..numerics.bits import take_rows
from ..problems import DiscreteProblem

ALGORITHMS = ("bbkb", "bbkb-local", "bkb", "gp-bucb", "ts", "mini-ucb", "mini-ei", "random")


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


@saved_state
@dataclass(frozen=True)
class RandomState:
    """Batches drawn so far by :class:`RandomRule` (it seeds the next batch) and the points
    proposed and not told yet (:mod:`~trieste_scalable.acquisition.pending`)."""

    num_batches: int = 0
    pending: Points = ()
    seen: int = 0


class RandomRule(AcquisitionRule[State[Optional[RandomState], TensorType], SearchSpace, Any]):
    """Uniform random candidates, distinct within a batch and from the pending ones (the
    baseline); with ``exclude_evaluated``, never an evaluated candidate (screening without
    replacement). Batch ``k`` is drawn with the seed ``(seed, k)``, so a restored run draws
    what it would have."""

    def __init__(self, batch_size: int, seed: int = 0, exclude_evaluated: bool = False):
        self._batch_size = batch_size
        self._seed = seed
        self._exclude = exclude_evaluated
        self._evaluated = EvaluatedCandidates()

    def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
        dataset = next(iter(datasets.values())) if datasets else None
        evaluated = np.zeros(num_candidates(search_space), dtype=bool)
        if self._exclude:
            evaluated = self._evaluated(search_space, dataset)

        def state_func(state: Optional[RandomState]) -> tuple[RandomState, TensorType]:
            state = state or RandomState()
            pending = outstanding(state.pending, state.seen, dataset)
            allowed = np.flatnonzero(~(evaluated | self._evaluated.among(search_space, pending)))
            size = min(self._batch_size, allowed.size)  # the last batch shrinks to what is left
            rng = np.random.default_rng([self._seed, state.num_batches])
            index = rng.choice(allowed, size=size, replace=False)
            batch = take_rows(candidate_rows(search_space), index)
            seen = rows_seen(dataset)
            return RandomState(state.num_batches + 1, proposed(pending, batch), seen), batch

        return state_func

    def __repr__(self) -> str:
        return f"RandomRule({self._batch_size}, exclude_evaluated={self._exclude})"


class NoModel(TrainableProbabilisticModel):
    """The "model" of random search: it keeps nothing and predicts nothing, so the ask/tell loop
    costs random search no GP updates."""

    def predict(self, query_points: TensorType) -> tuple[TensorType, TensorType]:
        raise NotImplementedError("random search has no model to predict with")

    def sample(self, query_points: TensorType, num_samples: int) -> TensorType:
        raise NotImplementedError("random search has no model to sample from")

    def update(self, dataset: Dataset) -> None:
        return None

    def optimize(self, dataset: Dataset) -> None:
        return None

    def log(self, dataset: Optional[Dataset] = None) -> None:
        return None


def build(
    algorithm: str,
    data: Dataset,
    *,
    lengthscale: float = 0.3,
    kernel_variance: float = 0.1,
    noise_variance: float,
    width: ConfidenceWidth,
    batch_size: int,
    max_batch_size: Optional[int],
    fit_hyperparameters: bool,
    seed: int,
    allow_repeats: bool = True,
    kernel: Optional[gpflow.kernels.Kernel] = None,
    screening: bool = False,
    num_inducing: Optional[int] = None,
    selector: str = "kmeans",
    budget: Optional[int] = None,
    redraw_features_every: Optional[int] = None,
    ratio_threshold: Optional[float] = None,
) -> tuple[Any, AcquisitionRule]:
    """The model and rule for ``algorithm`` (one of :data:`ALGORITHMS`).

    :param kernel: The GP kernel; default squared exponential with ``lengthscale`` and
        ``kernel_variance``.
    :param screening: Never propose an evaluated candidate, nor one twice in a batch (every
        rule): screening evaluates each molecule once.
    :param num_inducing: Inducing points of ``ts``'s SVGP; ``selector`` picks them. Default
        1,000 when screening (measured at 10⁵ molecules and 5,000 evaluations, recall of the top
        1 % over three seeds: 0.396 with 500, 0.465 with 1,000, 0.492 with 2,000, at 1.7, 1.9 and
        3.2 s a batch of 100; over all of MOSES each 1,000 more costs ~10-20 s a batch of 500),
        else 500.
    :param budget: Evaluations left; bounds the MINI rules' epochs.
    :param redraw_features_every: ``ts``'s cached sign features are redrawn every this many
        batches (see :class:`~.acquisition.BatchThompsonSampling`).
    :param ratio_threshold: The stopping threshold of the batch rules and the MINI rules'
        epochs (default the rules' 2; ignored by ``bkb``, ``ts`` and ``random``).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}: choose from {', '.join(ALGORITHMS)}")
    if kernel is None:
        kernel = gpflow.kernels.SquaredExponential(
            variance=kernel_variance, lengthscales=lengthscale
        )
    fit: dict[str, Any] = dict(fit_hyperparameters=fit_hyperparameters)
    threshold = ratio_threshold or 2.0
    if algorithm == "random":
        return NoModel(), RandomRule(batch_size, seed, exclude_evaluated=screening)
    if algorithm == "ts":
        model = AdaptiveSVGP(
            kernel,
            noise_variance,
            data,
            inducing=num_inducing or (1000 if screening else 500),
            selector=selector,
            seed=seed,
            **fit,
        )
        # screening scores whole libraries: float32 products (see BatchThompsonSampling)
        scoring = tf.float32 if screening else None
        thompson = BatchThompsonSampling(
            batch_size,
            exclude_evaluated=screening,
            seed=seed,
            scoring_dtype=scoring,
            redraw_features_every=redraw_features_every,
        )
        return model, thompson
    if algorithm in ("mini-ucb", "mini-ei"):
        epochs: dict[str, Any] = dict(
            max_batch_size=max_batch_size, budget=budget, exclude_evaluated=screening
        )
        rule: AcquisitionRule = (
            MiniGPUCB(threshold, width if width.mode == "constant" else "theory", **epochs)
            if algorithm == "mini-ucb"
            else MiniGPEI(threshold, **epochs)
        )
        return ReplicatedGPR(kernel, noise_variance, data, **fit), rule
    ucb: dict[str, Any] = dict(width=width, seed=seed, exclude_evaluated=screening)
    batches = dict(
        ucb,
        max_batch_size=max_batch_size,
        allow_repeats=allow_repeats and not screening,
        ratio_threshold=threshold,
    )
    dictionary: Any = RidgeLeverageSampler(2.0, seed=seed)
    if algorithm == "gp-bucb":
        dictionary, rule = ExactDictionary(), GPBUCB(**batches)
    elif algorithm == "bkb":
        rule = BKB(**ucb)
    else:
        rule = BBKB("global" if algorithm == "bbkb" else "global_local", **batches)
    return NystromGPR(kernel, noise_variance, data, dictionary=dictionary, **fit), rule


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
