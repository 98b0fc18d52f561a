"""MINI-GP-UCB and MINI-GP-EI (Calandriello et al., ICML 2022) as Trieste rules.

Each ``acquire`` is one epoch: it picks one candidate by the lower confidence bound or by expected
improvement with an inflated width (Trieste minimises), and returns it repeated

.. math:: B_h = \\max(1, \\lfloor (C^2 - 1)\\,\\lambda / \\sigma^2(x) \\rfloor)

times, with :math:`\\sigma^2` the latent posterior variance (spec minimeta.md errata 3): the
evaluations that shrink that candidate's posterior standard deviation by a factor :math:`C`. The
repeats do not depend on their outcomes, so a user can run them in parallel. Pair the rules with
:class:`~trieste_scalable.models.ReplicatedGPR`, whose cost depends on unique candidates; they
also work over :class:`~trieste_scalable.models.NystromGPR`, any model with ``predict`` and
``get_observation_noise`` (``"theory"`` widths also need ``information_gain()``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal, Mapping, Optional

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from trieste.acquisition.optimizer import generate_continuous_optimizer
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.space import Box, DiscreteSearchSpace, SearchSpace
from trieste.types import State, Tag, TensorType

from .candidates import EvaluatedCandidates, objective_of
from .summaries import write_scalars


@dataclass(frozen=True)
class MiniMetaState:
    """Carried between epochs.

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


class _MiniMetaRule(AcquisitionRule[State[Optional[MiniMetaState], TensorType], SearchSpace, Any]):
    """One candidate per epoch, repeated :math:`B_h` times."""

    _name = "mini"

    def __init__(
        self,
        ratio_threshold: float,
        max_batch_size: Optional[int],
        budget: Optional[int],
        num_initial_samples: int,
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
        model, dataset = objective_of(models, datasets, search_space)
        for method in ("predict", "get_observation_noise"):
            if not hasattr(model, method):
                raise ValueError(f"{type(self).__name__} needs a model with {method}()")
        evaluated = 0 if dataset is None else int(dataset.query_points.shape[0])

        def state_func(state: Optional[MiniMetaState]) -> tuple[MiniMetaState, TensorType]:
            state = state or MiniMetaState()
            if self._budget is not None and state.evaluations >= self._budget:
                raise ValueError(f"the budget of {self._budget} evaluations is spent")
            point, beta, incumbent = self._best_point(search_space, model, dataset, evaluated)
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
            self._log(new_state, count, dataset)
            return new_state, tf.repeat(point, count, axis=0)

        return state_func

    def _best_point(
        self, search_space: SearchSpace, model: Any, dataset: Optional[Dataset], evaluated: int
    ) -> tuple[tf.Tensor, float, Optional[float]]:
        """The epoch's candidate [1, D], its width and its incumbent."""
        if isinstance(search_space, DiscreteSearchSpace):
            beta = self._beta(model, int(search_space.points.shape[0]), evaluated)
            mean, variance = model.predict(search_space.points)  # one prediction per epoch
            incumbent = self._incumbent(model, dataset, mean[:, 0])
            scores = self._scores(mean[:, 0], variance[:, 0], beta, incumbent).numpy()
            if self._exclude_evaluated:
                done = self._evaluated(search_space, dataset)
                if done.all():
                    raise ValueError("every candidate has been evaluated: nothing is left to pick")
                scores[done] = np.inf
            return tf.gather(search_space.points, [int(np.argmin(scores))]), beta, incumbent
        if isinstance(search_space, Box):
            # heuristic: no guarantee on continuous spaces (spec minimeta.md §2, limitations)
            beta = self._beta(model, 0, evaluated)
            incumbent = self._incumbent(model, dataset, None)
            optimizer = generate_continuous_optimizer(self._num_initial_samples)

            def acquisition(x: tf.Tensor) -> tf.Tensor:  # [N, 1, D] -> [N, 1], maximised
                mean, variance = model.predict(x[:, 0, :])
                return -self._scores(mean[:, 0], variance[:, 0], beta, incumbent)[:, None]

            return optimizer(search_space, acquisition), beta, incumbent
        raise ValueError(
            f"{type(self).__name__} supports DiscreteSearchSpace and Box, got "
            f"{type(search_space).__name__}"
        )

    def _log(self, state: MiniMetaState, count: int, dataset: Optional[Dataset]) -> None:
        unique = 0 if dataset is None else int(np.unique(dataset.query_points, axis=0).shape[0])
        self.last_statistics = {
            "epochs": state.epochs,
            "switches": state.switches,
            "unique_candidates": unique,
            "repeats": count,
            "beta": float(state.beta or 0.0),
        }
        write_scalars(self._name, self.last_statistics)


def _information(model: Any) -> float:
    if not hasattr(model, "information_gain"):
        raise ValueError(
            "the 'theory' width needs a model with information_gain() (ReplicatedGPR or "
            "NystromGPR); use width='constant' with other models"
        )
    return float(model.information_gain())


class MiniGPUCB(_MiniMetaRule):
    """MINI-GP-UCB: the lower confidence bound :math:`\\mu - \\beta\\sigma` picks the candidate.

    :param ratio_threshold: :math:`C > 1` (default 2; the paper's experiments use 1.1-1.2).
    :param width: ``"theory"`` (Thm. 4.4 with :math:`\\lambda = \\xi^2`:
        :math:`\\beta = F + \\sqrt{\\log\\det(I + K_t/\\lambda) + \\log(1/\\delta)}`),
        ``"bayesian"`` (Thm. 4.5: :math:`\\sqrt{2\\log(|A| (t+1)^2 \\pi^2/(6\\delta))}`) or
        ``"constant"`` (``beta``, Trieste's ``NegativeLowerConfidenceBound`` convention).
    :param max_batch_size: Cap on :math:`B_h` (e.g. workers available); never more than
        :data:`MAX_REPEATS`.
    :param budget: Total evaluations this rule may request; the last epoch is cut to it.
    :param exclude_evaluated: Never pick an evaluated candidate of a ``DiscreteSearchSpace``,
        and evaluate each pick once (no repeats): for noise-free oracles, where a repeat teaches
        nothing. Leave it off under noise, where the repeats are the point of MINI-META.
    """

    _name = "mini_gp_ucb"

    def __init__(
        self,
        ratio_threshold: float = 2.0,
        width: Literal["theory", "bayesian", "constant"] = "theory",
        beta: float = 2.0,
        rkhs_norm: float = 1.0,
        delta: float = 0.5,
        max_batch_size: Optional[int] = None,
        budget: Optional[int] = None,
        num_initial_samples: int = 1000,
        exclude_evaluated: bool = False,
    ):
        super().__init__(
            ratio_threshold, max_batch_size, budget, num_initial_samples, exclude_evaluated
        )
        if width not in ("theory", "bayesian", "constant"):
            raise ValueError(f"width must be 'theory', 'bayesian' or 'constant', got {width!r}")
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.width, self.beta, self.rkhs_norm, self.delta = width, beta, rkhs_norm, delta

    def _beta(self, model: Any, num_candidates: int, evaluations: int) -> float:
        if self.width == "constant":
            return self.beta
        if self.width == "bayesian":
            size = max(num_candidates, 1)
            t = evaluations + 1  # spec errata 4
            return math.sqrt(2 * math.log(size * t**2 * math.pi**2 / (6 * self.delta)))
        return self.rkhs_norm + math.sqrt(_information(model) + math.log(1 / self.delta))

    def _scores(
        self, mean: tf.Tensor, variance: tf.Tensor, beta: float, incumbent: Optional[float]
    ) -> tf.Tensor:
        return mean - beta * tf.sqrt(variance)

    def __repr__(self) -> str:
        return f"MiniGPUCB(C={self.ratio_threshold}, width={self.width!r})"


class MiniGPEI(_MiniMetaRule):
    """MINI-GP-EI: expected improvement below the smallest posterior mean with the standard
    deviation inflated by :math:`\\nu` (spec minimeta.md §1.4, in Trieste's minimisation form):

    .. math:: \\nu\\sigma\\,\\tau\\left(\\frac{\\eta - \\mu}{\\nu\\sigma}\\right), \\quad
        \\tau(a) = a\\Phi(a) + \\phi(a), \\quad \\eta = \\min_{x' \\in A} \\mu(x')

    :param width: ``"theory"`` (Wang and de Freitas' :math:`\\nu_t = \\sqrt{L} + \\sqrt{L l + l}`
        with :math:`L = \\log\\det(I + K_t/\\lambda)`, :math:`l = \\log(t/\\delta)`) or
        ``"constant"`` (``beta``; 1 is plain EI).
    :param incumbent: ``"candidates"`` (the paper: min of the mean over the candidate set) or
        ``"evaluated"`` (Wang and de Freitas: over evaluated points).
    :param max_batch_size: As for :class:`MiniGPUCB`.
    :param budget: As for :class:`MiniGPUCB`.
    :param exclude_evaluated: As for :class:`MiniGPUCB`.
    """

    _name = "mini_gp_ei"

    def __init__(
        self,
        ratio_threshold: float = 2.0,
        width: Literal["theory", "constant"] = "theory",
        beta: float = 1.0,
        delta: float = 0.5,
        incumbent: Literal["candidates", "evaluated"] = "candidates",
        max_batch_size: Optional[int] = None,
        budget: Optional[int] = None,
        num_initial_samples: int = 1000,
        exclude_evaluated: bool = False,
    ):
        super().__init__(
            ratio_threshold, max_batch_size, budget, num_initial_samples, exclude_evaluated
        )
        if width not in ("theory", "constant"):
            raise ValueError(f"width must be 'theory' or 'constant', got {width!r}")
        if incumbent not in ("candidates", "evaluated"):
            raise ValueError(f"incumbent must be 'candidates' or 'evaluated', got {incumbent!r}")
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.width, self.beta, self.delta, self.incumbent = width, beta, delta, incumbent

    def _incumbent(
        self, model: Any, dataset: Optional[Dataset], candidate_mean: Optional[tf.Tensor]
    ) -> Optional[float]:
        on_candidates = self.incumbent == "candidates" or dataset is None
        if on_candidates and candidate_mean is not None:
            return float(tf.reduce_min(candidate_mean))
        if dataset is not None:  # Box (or asked for): the evaluated points
            return float(tf.reduce_min(model.predict(dataset.query_points)[0]))
        raise ValueError("MiniGPEI on a Box needs the dataset for its incumbent")

    def _beta(self, model: Any, num_candidates: int, evaluations: int) -> float:
        if self.width == "constant":
            return self.beta
        info = _information(model)
        log_t = math.log(max(evaluations, 1) / self.delta)
        return math.sqrt(info) + math.sqrt(info * log_t + log_t)

    def _scores(
        self, mean: tf.Tensor, variance: tf.Tensor, beta: float, incumbent: Optional[float]
    ) -> tf.Tensor:
        scale = beta * tf.sqrt(tf.maximum(variance, 1e-300))
        assert incumbent is not None
        a = (incumbent - mean) / scale
        normal = tfp.distributions.Normal(tf.zeros_like(a), tf.ones_like(a))
        improvement = scale * (a * normal.cdf(a) + normal.prob(a))
        return -improvement

    def __repr__(self) -> str:
        return f"MiniGPEI(C={self.ratio_threshold}, width={self.width!r})"
