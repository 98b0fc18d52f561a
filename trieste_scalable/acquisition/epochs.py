"""The MINI-META epoch rule (Calandriello et al., ICML 2022): the public base of MINI-GP-UCB and
MINI-GP-EI, the repeats of an epoch and the state carried between epochs.

Each ``acquire`` is one epoch: it picks one candidate and returns it repeated

.. math:: B_h = \\max(1, \\lfloor (C^2 - 1)\\,\\lambda / \\sigma^2(x) \\rfloor)

times, with :math:`\\sigma^2` the latent posterior variance: the evaluations that shrink that
candidate's posterior standard deviation by a factor :math:`C` (the paper's Algorithm 2 and
Corollary A.2, clamped to at least one; :math:`\\sigma^2` is the latent variance, not the
predictive one). The repeats do not depend on their outcomes, so a user can run them in
parallel.

**Asynchronous use** (:mod:`.pending`): an epoch's repeats are handed out together and spread over
whichever workers are free; the next epoch starts once every evaluation of the current one has
been told (asked earlier, the rule proposes nothing), since the next candidate and its repeats
depend on the posterior after the epoch (the paper's Algorithm 2). With ``exclude_evaluated``
an epoch is one evaluation of a new candidate, so epochs run concurrently and never pick a
pending candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, TypedDict

import numpy as np
import tensorflow as tf
from trieste.acquisition.optimizer import generate_continuous_optimizer
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.models.interfaces import ProbabilisticModel, SupportsGetObservationNoise
from trieste.space import Box, DiscreteSearchSpace, SearchSpace
from trieste.types import State, Tag, TensorType

from ..numerics.bits import take_rows
from ..numerics.linalg import chunked_map
from .candidates import EvaluatedCandidates, candidate_rows, check_search_space, objective_of
from .confidence import ConfidenceWidth
from .pending import PendingState, no_points, proposed
from .rule_state import saved_state
from .summaries import LogsStatistics

_CHUNK = 4096  # candidates per prediction: memory stays bounded on large libraries


@saved_state
@dataclass(frozen=True)
class MiniMetaState(PendingState):
    """Carried between epochs, with the pending and failed points
    (:class:`~.pending.PendingState`).

    :ivar epochs: Epochs (acquisitions) so far, :math:`h`.
    :ivar switches: Epochs whose candidate differed from the previous epoch's.
    :ivar evaluations: Evaluations requested by this rule so far.
    :ivar last_point: The previous epoch's candidate (a tuple), if any.
    :ivar beta: The previous epoch's width.
    :ivar incumbent: The previous epoch's incumbent :math:`\\eta` (MINI-GP-EI), if any.
    """

    epochs: int = 0
    switches: int = 0
    evaluations: int = 0
    last_point: Optional[tuple[float, ...]] = None
    beta: Optional[float] = None
    incumbent: Optional[float] = None


MAX_REPEATS = 10_000
"""Hard cap on one epoch's repeats: at a (numerically) zero posterior variance the formula asks
for unboundedly many (any number keeps the ratio below C)."""


def repeats(ratio_threshold: float, noise: float, variance: float, cap: int = MAX_REPEATS) -> int:
    """:math:`B_h = \\max(1, \\lfloor (C^2 - 1)\\lambda/\\sigma^2 \\rfloor)`, at most ``cap``
    (never 0; ``cap`` also at zero variance).

    :raise ValueError: If the variance is NaN (a broken posterior must not pick a batch size).
    """
    if math.isnan(variance):
        raise ValueError("the posterior variance is NaN: cannot size the epoch")
    if cap < 1:
        raise ValueError(f"the repeat cap must be positive, got {cap}")
    if variance <= 0:
        return cap
    count = (ratio_threshold**2 - 1.0) * noise / variance  # a float: no integer overflow
    return int(min(max(1.0, math.floor(count) if math.isfinite(count) else cap), cap))


class EpochOptions(TypedDict, total=False):
    """The keyword options of :class:`EpochRule` (typed ``**options`` of the MINI-META rules)."""

    max_batch_size: Optional[int]
    budget: Optional[int]
    num_initial_samples: int
    exclude_evaluated: bool


class EpochRule(
    LogsStatistics,
    AcquisitionRule[State[Optional[MiniMetaState], TensorType], SearchSpace, ProbabilisticModel],
):
    """One candidate per epoch, repeated :math:`B_h` times (:func:`repeats`): the public base of
    :class:`~trieste_scalable.acquisition.MiniGPUCB` and
    :class:`~trieste_scalable.acquisition.MiniGPEI`. A subclass says how candidates are scored
    (``_scores``, minimised), the width of an epoch (``_beta``) and, if it needs one,
    the incumbent fixed for the epoch (``_incumbent``).

    Works over any Trieste ``ProbabilisticModel`` that is also ``SupportsGetObservationNoise``
    (the repeats depend on the noise); on a ``DiscreteSearchSpace`` every candidate is scored,
    on a ``Box`` Trieste's continuous optimizer maximises the negated score.

    :param ratio_threshold: :math:`C > 1`: an epoch shrinks its candidate's standard deviation
        by the factor :math:`C`.
    :param max_batch_size: Cap on :math:`B_h` (e.g. workers available); never more than
        :data:`MAX_REPEATS`.
    :param budget: Total evaluations the rule may request; the last epoch is cut to it.
    :param num_initial_samples: Initial samples of the optimizer on a ``Box``.
    :param exclude_evaluated: Never pick an evaluated candidate of a ``DiscreteSearchSpace``,
        and evaluate each pick once (no repeats): for noise-free oracles, where a repeat teaches
        nothing. Leave it off under noise, where the repeats are the point of MINI-META.
    """

    _name = "mini"
    width: ConfidenceWidth

    state_type = MiniMetaState
    """The ``State`` value this rule keeps (a fresh one is ``MiniMetaState()``)."""

    def __init__(
        self,
        ratio_threshold: float = 2.0,
        *,
        max_batch_size: Optional[int] = None,
        budget: Optional[int] = None,
        num_initial_samples: int = 1000,
        exclude_evaluated: bool = False,
    ):
        if not ratio_threshold > 1.0:
            raise ValueError(f"the ratio threshold C must be > 1, got {ratio_threshold}")
        for name, value in (("max_batch_size", max_batch_size), ("budget", budget)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {value}")
        self.ratio_threshold = float(ratio_threshold)
        self._max_batch_size = max_batch_size
        self._budget = budget
        self._num_initial_samples = num_initial_samples
        self._exclude_evaluated = exclude_evaluated
        self._evaluated = EvaluatedCandidates()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(C={self.ratio_threshold}, width={self.width.mode!r})"

    def _scores(
        self, mean: tf.Tensor, variance: tf.Tensor, beta: float, incumbent: Optional[float]
    ) -> tf.Tensor:
        """Scores [N] to minimise from the posterior mean and latent variance [N]."""
        raise NotImplementedError

    def _beta(self, model: Any, num_candidates: int, evaluations: int) -> float:
        """The width at the epoch start."""
        raise NotImplementedError

    def _incumbent(
        self, model: Any, dataset: Optional[Dataset], candidate_mean: Optional[tf.Tensor]
    ) -> Optional[float]:
        """The incumbent fixed for the epoch (EI's; ``None`` for UCB); ``candidate_mean`` [N]
        is the posterior mean over a discrete candidate set, already computed for the scores."""
        return None

    def acquire(
        self,
        search_space: SearchSpace,
        models: Mapping[Tag, Any],
        datasets: Optional[Mapping[Tag, Dataset]] = None,
    ) -> State[Optional[MiniMetaState], TensorType]:
        check_search_space(search_space)
        model, dataset = objective_of(models, datasets, search_space)
        for protocol in (ProbabilisticModel, SupportsGetObservationNoise):
            if not isinstance(model, protocol):
                raise ValueError(
                    f"{type(self).__name__} needs a model with predict() and "
                    f"get_observation_noise(), got {type(model).__name__}"
                )
        evaluated = 0 if dataset is None else int(dataset.query_points.shape[0])

        def state_func(state: Optional[MiniMetaState]) -> tuple[MiniMetaState, TensorType]:
            state = MiniMetaState.continued(state, self)
            if self._budget is not None and state.evaluations >= self._budget:
                raise ValueError(f"the budget of {self._budget} evaluations is spent")
            nothing = no_points(search_space)
            pending = state.outstanding(dataset)
            state = state.proposing(pending, nothing, dataset)
            if pending.size and not self._exclude_evaluated:
                return state, nothing  # the epoch is still being evaluated
            failed = state.failures(dataset)
            best = self._best_point(search_space, model, dataset, evaluated, pending, failed)
            if best is None:
                return state, nothing  # every candidate left is pending
            point, beta, incumbent = best
            _, variance = model.predict(point)
            noise = float(tf.convert_to_tensor(model.get_observation_noise()))
            cap = min(self._max_batch_size or MAX_REPEATS, MAX_REPEATS)
            cap = 1 if self._exclude_evaluated else cap
            if self._budget is not None:
                cap = min(cap, self._budget - state.evaluations)
            count = repeats(self.ratio_threshold, noise, float(variance[0, 0]), cap)
            key = tuple(float(v) for v in point.numpy()[0])
            new_state = replace(
                state,
                epochs=state.epochs + 1,
                switches=state.switches + int(key != state.last_point),
                evaluations=state.evaluations + count,
                last_point=key,
                beta=beta,
                incumbent=incumbent,
            )
            batch = tf.repeat(point, count, axis=0)
            self._log_epoch(new_state, count, dataset)
            return replace(new_state, pending=proposed(pending, batch)), batch

        return state_func

    def _best_point(
        self,
        search_space: SearchSpace,
        model: Any,
        dataset: Optional[Dataset],
        evaluated: int,
        pending: np.ndarray,
        failed: np.ndarray,
    ) -> Optional[tuple[tf.Tensor, float, Optional[float]]]:
        """The epoch's candidate [1, D], its width and its incumbent (``None`` if every
        candidate left is pending)."""
        if isinstance(search_space, DiscreteSearchSpace):
            rows = candidate_rows(search_space)
            beta = self._beta(model, len(rows), evaluated)
            mean, variance = chunked_map(model.predict, rows, _CHUNK)  # once per epoch
            incumbent = self._incumbent(model, dataset, mean[:, 0])
            scores = self._scores(mean[:, 0], variance[:, 0], beta, incumbent).numpy()
            scores[self._evaluated.among(search_space, failed)] = np.inf
            if not np.isfinite(scores).any():
                return None
            if self._exclude_evaluated:
                scores[self._evaluated(search_space, dataset)] = np.inf
                scores[self._evaluated.among(search_space, pending)] = np.inf
                if not np.isfinite(scores).any():
                    return None
            return take_rows(rows, [int(np.argmin(scores))]), beta, incumbent
        assert isinstance(search_space, Box)  # heuristic: the paper assumes finite candidates
        beta = self._beta(model, 0, evaluated)
        incumbent = self._incumbent(model, dataset, None)
        optimizer = generate_continuous_optimizer(self._num_initial_samples)

        def acquisition(x: tf.Tensor) -> tf.Tensor:  # [N, 1, D] -> [N, 1], maximised
            mean, variance = model.predict(x[:, 0, :])
            return -self._scores(mean[:, 0], variance[:, 0], beta, incumbent)[:, None]

        return optimizer(search_space, acquisition), beta, incumbent

    def _log_epoch(self, state: MiniMetaState, count: int, dataset: Optional[Dataset]) -> None:
        unique = 0 if dataset is None else int(np.unique(dataset.query_points, axis=0).shape[0])
        stats = dict(epochs=state.epochs, switches=state.switches, unique_candidates=unique)
        self._log(dict(stats, repeats=count, beta=float(state.beta or 0.0)))
