"""The hallucinating batch rule: the public base of BBKB, BKB and GP-BUCB (and of new batch
rules, see ``docs/extending.md``), with the state it carries between steps.

The rules are stateful: :meth:`~.HallucinatedBatchRule.acquire` returns a Trieste ``State`` whose
value is a frozen :class:`BatchUCBState` (the accumulated information term of the width and the
pending points), so ``BayesianOptimizer`` and ``AskTellOptimizer`` (including
``to_state``/``from_state``) carry it between steps.

**Asynchronous use** (an ``AskTellOptimizer`` asked whenever workers are free and told each
result as it comes, :mod:`.pending`): the points still being evaluated are hallucinated into the
in-batch posterior first, and counted by the stopping rule, before any new point is chosen; the
new points are those the stopping rule still allows, possibly none. So the points in flight and
the new ones together always form one batch that satisfies the rule's variance-ratio condition
with respect to the current posterior (which has seen every told result): the condition behind
the confidence width of BBKB (its Lemma 1 and Theorem 2, feedback delayed by at most the ratio
threshold) holds at every acquisition, as in the synchronous algorithm. What is lost is the
batch structure of the analysis' count of batches: the dictionary is resampled at every tell.
Each pick is announced as it is made (:mod:`.pick_stream`), so the campaign's free workers need
not wait for the rest of the batch.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal, Mapping, Optional, TypedDict, Union

import numpy as np
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.models.interfaces import ProbabilisticModel
from trieste.space import Box, DiscreteSearchSpace, SearchSpace
from trieste.types import State, Tag, TensorType

from ..models.in_batch import RemoteMarginals
from ..numerics.bits import Rows, prepend_rows, take_rows
from .candidates import EvaluatedCandidates, candidate_points, objective_of
from .confidence import ConfidenceWidth, WidthMode, width_of
from .lazy_argmin import LazyArgmin
from .pending import PendingState
from .pick_stream import announce
from .protocols import InBatchPosteriorLike, SupportsHallucination
from .rule_state import saved_state
from .stopping import StoppingRule
from .summaries import LogsStatistics
from .ucb_refinement import refine_pick

Regulariser = Union[float, Literal["kernel_variance", "noise"]]
"""The papers' :math:`\\lambda`: a number, ``"kernel_variance"`` (the larger of the noise variance
and the kernel's prior variance :math:`\\kappa^2`) or ``"noise"`` (the model's noise variance)."""


@saved_state
@dataclass(frozen=True)
class BatchUCBState(PendingState):
    """What a UCB-family rule carries between steps, with the pending and failed points
    (:class:`~.pending.PendingState`).

    :ivar information: Accumulated :math:`L` of the confidence width (see ``confidence.py``);
        ``None`` (a fresh state) starts it at the model's information gain.
    :ivar num_batches: Batches acquired so far.
    :ivar last_batch_size: Size of the last batch.
    """

    information: Optional[float] = field(default=None, metadata={"non_negative": True})
    num_batches: int = 0
    last_batch_size: int = 0


class SequentialOptions(TypedDict, total=False):
    """The keyword options of :class:`HallucinatedBatchRule` that a rule of batches of one
    (:class:`~.BKB`) takes too (typed ``**options``)."""

    width: WidthMode | ConfidenceWidth
    pool_size: int
    seed: int
    exclude_evaluated: bool
    regulariser: Regulariser
    max_refine_iterations: int
    remote_marginals: Optional[RemoteMarginals]


class BatchOptions(SequentialOptions, total=False):
    """The keyword options of :class:`HallucinatedBatchRule` (typed ``**options`` of
    :class:`~.BBKB` and :class:`~.GPBUCB`)."""

    max_batch_size: Optional[int]
    allow_repeats: bool
    fixed_batch_size: bool


class HallucinatedBatchRule(
    LogsStatistics,
    AcquisitionRule[State[Optional[BatchUCBState], TensorType], SearchSpace, ProbabilisticModel],
):
    r"""A batch grown greedily by the lower confidence bound with hallucinated, feedback-free
    variance updates until a :class:`~trieste_scalable.acquisition.StoppingRule` ends it: the
    base of :class:`~.BBKB`, :class:`~.BKB` and :class:`~.GPBUCB`, and the extension point for new
    batch rules (``docs/extending.md``).

    Each step: the batch-start mean :math:`\mu` and variance :math:`\tilde\sigma^2_0` of every
    candidate; then repeatedly the candidate minimising :math:`\mu - \tilde\alpha\tilde
    \sigma` under the in-batch variance (evaluated lazily: a variance only shrinks within a
    batch, so a bound computed with a stale variance is a lower bound), hallucinated into the
    posterior, until the stopping rule says stop or ``max_batch_size`` is reached.

    :param stopping: When the batch ends.
    :param width: The confidence width :math:`\tilde\alpha` (a mode name or a
        :class:`~trieste_scalable.acquisition.ConfidenceWidth`).
    :param max_batch_size: Optional cap on the batch size.
    :param pool_size: Candidate pool on a ``Box`` (fresh each batch).
    :param seed: Seed of the candidate pools.
    :param allow_repeats: Whether a batch may select a candidate again.
    :param exclude_evaluated: Never select an evaluated candidate of a ``DiscreteSearchSpace``.
    :param fixed_batch_size: Every batch has ``max_batch_size`` points (fewer only where fewer
        candidates are left): the stopping rule is watched and logged but never ends a batch, as
        in GP-BUCB with a fixed batch size (Desautels et al. 2014) or a screening protocol with a
        set batch schedule. The regulariser is then the noise (nothing is built for a rule that
        ends no batch), and the points pending are hallucinated in one call, not counted by the
        logged statistic (asynchronous GP-BUCB on 20,000 molecules, 32 workers: 64 sequential
        updates an acquisition kept the workers waiting).
    :param regulariser: The papers' :math:`\\lambda`, separate from the observation noise
        :math:`\\xi^2`: the stopping rule's statistics and the width are those of their
        estimator (BBKB eqs. 1-3) with this :math:`\\lambda`, hallucinating the batch too; the
        width is applied to the Bayesian standard deviation, and the points are picked by the
        model's posterior at its noise (so :math:`\\lambda` decides how many points a batch
        has, never which come first). ``"kernel_variance"`` (default) is :math:`\\max(\\xi^2,
        \\kappa^2)`: the theorems' :math:`\\lambda \\ge \\kappa^2`, so that the ratio
        statistics stay of order one and batches grow when the noise is tiny or fitted to near
        zero (with :math:`\\lambda = \\xi^2 \\ll \\kappa^2` every batch has one point).
        ``"noise"`` is the papers' algorithm with :math:`\\lambda = \\xi^2`.
    :param max_refine_iterations: On a ``Box``, L-BFGS-B iterations refining each pick from its
        pool point (:mod:`.ucb_refinement`); 0 keeps the pool's points.
    :param remote_marginals: Computes the batch-start marginals of a ``DiscreteSearchSpace``'s
        points elsewhere (e.g. a library store's shards on Ray actors,
        :class:`~trieste_scalable.cluster.scoring_actors.ScoringActors`), the same values as in
        this process, so the same picks; the in-batch refreshes of the few best candidates stay
        here.
    """

    _name = "ucb"
    _repr_extra = ""

    state_type = BatchUCBState
    """The ``State`` value this rule keeps (a fresh one is ``BatchUCBState()``)."""

    def __init__(
        self,
        stopping: StoppingRule,
        width: WidthMode | ConfidenceWidth = "constant",
        max_batch_size: Optional[int] = None,
        *,
        pool_size: int = 10_000,
        seed: int = 0,
        allow_repeats: bool = True,
        exclude_evaluated: bool = False,
        fixed_batch_size: bool = False,
        regulariser: Regulariser = "kernel_variance",
        max_refine_iterations: int = 100,
        remote_marginals: Optional[RemoteMarginals] = None,
    ):
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1 or None, got {max_batch_size}")
        if fixed_batch_size and max_batch_size is None:
            raise ValueError("fixed_batch_size needs max_batch_size, the size of every batch")
        self._fixed = fixed_batch_size
        if pool_size < 1:
            raise ValueError(f"pool_size must be positive, got {pool_size}")
        if isinstance(regulariser, str):
            if regulariser not in ("kernel_variance", "noise"):
                choices = "a number, 'kernel_variance' or 'noise'"
                raise ValueError(f"regulariser must be {choices}, got {regulariser!r}")
        elif not (np.isfinite(regulariser) and regulariser > 0):
            raise ValueError(f"regulariser must be finite and > 0, got {regulariser}")
        if max_refine_iterations < 0:
            raise ValueError(f"max_refine_iterations must be >= 0, got {max_refine_iterations}")
        self._regulariser = regulariser
        self._refine_iterations = max_refine_iterations
        self._stopping = stopping
        self._width = width_of(width, ("theory", "reference_code", "constant"))
        self._max_batch_size = max_batch_size
        self._pool_size = pool_size
        self._seed = seed
        self._allow_repeats = allow_repeats and not exclude_evaluated
        self._exclude_evaluated = exclude_evaluated
        self._evaluated = EvaluatedCandidates()
        self._remote = remote_marginals

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._repr_extra}ratio_threshold="
            f"{self._stopping.ratio_threshold}, width={self._width!r}, "
            f"max_batch_size={self._max_batch_size}, regulariser={self._regulariser!r})"
        )

    @property
    def width(self) -> ConfidenceWidth:
        return self._width

    def _checked(self, model: ProbabilisticModel) -> SupportsHallucination:
        """``model``, if the rule can build batches over it (checked by Protocol)."""
        if not isinstance(model, SupportsHallucination):
            raise ValueError(
                f"{type(self).__name__} needs a model with batch_posterior() and "
                f"information_gain() (e.g. NystromGPR), got {type(model).__name__}"
            )
        return model

    def regulariser_for(self, model: SupportsHallucination) -> Optional[float]:
        """:math:`\\lambda` for ``model`` now (``None``: the model's noise variance)."""
        if self._regulariser == "noise":
            return None
        if self._regulariser == "kernel_variance":
            noise = float(model.get_observation_noise())
            return max(noise, model.prior_variance())
        return float(self._regulariser)

    def _check_posterior(self, posterior: InBatchPosteriorLike) -> None:
        """Raise if the rule cannot build batches with ``posterior`` (e.g. GP-BUCB's exactness)."""

    def acquire(
        self,
        search_space: SearchSpace,
        models: Mapping[Tag, ProbabilisticModel],
        datasets: Optional[Mapping[Tag, Dataset]] = None,
    ) -> State[Optional[BatchUCBState], TensorType]:
        objective, dataset = objective_of(models, datasets, search_space)
        model = self._checked(objective)

        def state_func(state: Optional[BatchUCBState]) -> tuple[BatchUCBState, TensorType]:
            state = BatchUCBState.continued(state, self)
            regulariser = None if self._fixed else self.regulariser_for(model)
            information = state.information
            if information is None:
                information = model.information_gain(regulariser)
            seed = int(np.random.default_rng([self._seed, state.num_batches]).integers(2**31))
            candidates = candidate_points(search_space, dataset, self._pool_size, seed)
            pending = state.outstanding(dataset)
            excluded = None
            if isinstance(search_space, DiscreteSearchSpace):
                failed = state.failures(dataset)
                excluded = self._evaluated.among(search_space, failed)
                if self._exclude_evaluated:
                    excluded |= self._evaluated(search_space, dataset)
                if not self._allow_repeats:
                    excluded |= self._evaluated.among(search_space, pending)
            elif self._remote is not None:
                raise ValueError("remote marginals score a DiscreteSearchSpace's points only")
            refine_in = search_space if isinstance(search_space, Box) else None
            batch, information, stats = self._build_batch(
                model,
                candidates,
                information=information,
                excluded=excluded,
                pending=pending,
                regulariser=regulariser,
                refine_in=refine_in,
            )
            new_state = state.proposing(
                pending,
                batch,
                dataset,
                information=information,
                num_batches=state.num_batches + 1,
                last_batch_size=int(batch.shape[0]),
            )
            self._log(stats)
            return new_state, batch

        return state_func

    def _build_batch(
        self,
        model: SupportsHallucination,
        candidates: Rows,
        information: float,
        excluded: Optional[np.ndarray] = None,
        pending: Optional[np.ndarray] = None,
        regulariser: Optional[float] = None,
        refine_in: Optional[Box] = None,
    ) -> tuple[tf.Tensor, float, dict[str, float]]:
        """The new points [B, D] (B may be 0), the information after them and the statistics.

        :param excluded: Candidates [N] never to select.
        :param pending: Points still being evaluated [P, D]: hallucinated and counted by the
            stopping rule before any new point (their information was counted when proposed).
        :param regulariser: :math:`\\lambda` (``None``: the model's noise variance).
        :param refine_in: The ``Box`` each pick is refined in (``None``: not refined).
        """
        start = time.perf_counter()
        both = self._posteriors(model, regulariser)
        num_pending = 0 if pending is None else len(pending)
        library = candidates
        if pending is not None and num_pending:  # they lead the candidates, never selected
            candidates = prepend_rows(pending, candidates)
        scores = self._scores(both, candidates, library, num_pending, information)
        posterior = both.picking

        def variance(i: np.ndarray) -> np.ndarray:
            return posterior.variance(take_rows(candidates, i), i).numpy()

        lazy = LazyArgmin(scores.mean, scores.s2_0, scores.alpha, variance)
        lazy.exclude(np.arange(num_pending))
        if excluded is not None:
            lazy.exclude(np.flatnonzero(excluded) + num_pending)
        stopping = self._stopping.start(both.statistics, candidates, scores.s2_stat)
        picks = _Picks(information, lazy, stopping, lazy.num_selectable)
        stop = self._add_pending(both, stopping, candidates, num_pending)
        if num_pending:
            lazy.invalidate()
        if not stop:
            self._pick(both, candidates, scores, refine_in, picks)
        stats = {
            "batch_size": len(picks.chosen),
            "distinct_points": len(set(picks.chosen)),
            "pending_points": num_pending,
            "stopping_statistic": stopping.statistic,
            "alpha": scores.alpha,
            "beta": self._width.beta_value(picks.information, scores.regularised, scores.exact)
            * scores.to_selection,
            "regulariser": scores.regularised,
            "dictionary_size": posterior.dictionary_size,
            "candidates": int(candidates.shape[0]) - num_pending,
            "refreshed_candidates": lazy.refreshed,
            "scoring_seconds": scores.seconds - start,
            "batch_seconds": time.perf_counter() - start,
        }
        if refine_in is not None and picks.points:
            return tf.concat(picks.points, axis=0), picks.information, stats
        chosen = take_rows(candidates, np.asarray(picks.chosen, np.int64))
        return chosen, picks.information, stats

    def _posteriors(
        self, model: SupportsHallucination, regulariser: Optional[float]
    ) -> _Posteriors:
        """The model's in-batch posterior that picks, and the stopping rule's: the papers'
        estimator with their lambda (the same object where ``regulariser`` is the noise)."""
        posterior = model.batch_posterior()
        self._check_posterior(posterior)
        statistics = posterior
        if not (regulariser is None or regulariser == posterior.noise):
            statistics = model.batch_posterior(regulariser)
        return _Posteriors(posterior, statistics)

    def _scores(
        self,
        both: _Posteriors,
        candidates: Rows,
        library: Rows,
        num_pending: int,
        information: float,
    ) -> _Scores:
        """The candidates' batch-start scores and the batch's width (:class:`_Scores`)."""
        posterior, statistics = both.picking, both.statistics
        mean, s2_0 = self._batch_start(posterior, candidates, library, num_pending)
        s2_stat = s2_0
        if both.separate:
            s2_stat = self._batch_start(statistics, candidates, library, num_pending)[1]
        regularised, exact = statistics.noise, posterior.exact
        threshold = self._stopping.ratio_threshold
        # the width in the papers' lambda-units, applied to the Bayesian standard deviation
        to_selection = math.sqrt(posterior.noise / regularised)
        alpha = self._width.alpha(information, regularised, threshold, exact) * to_selection
        return _Scores(
            mean,
            s2_0,
            s2_stat=s2_stat,
            alpha=alpha,
            to_selection=to_selection,
            regularised=regularised,
            exact=exact,
        )

    def _add_pending(
        self, both: _Posteriors, stopping: StoppingRule, candidates: Rows, num_pending: int
    ) -> bool:
        """Hallucinate the ``num_pending`` pending points leading ``candidates``; return
        whether the stopping rule ends the batch with them. Fixed batches have no batch to end:
        the points are added at once, not counted."""
        if not num_pending:
            return False
        if self._fixed:
            both.picking.add(candidates[:num_pending], range(num_pending))
            return False
        stop = _hallucinate_pending(both.statistics, stopping, candidates, num_pending)
        if both.separate:
            both.picking.add(candidates[:num_pending])
        return stop

    def _pick(
        self,
        both: _Posteriors,
        candidates: Rows,
        scores: _Scores,
        refine_in: Optional[Box],
        picks: _Picks,
    ) -> None:
        """Pick greedily into ``picks`` until the stopping rule ends the batch, it is full or
        nothing is left to pick; each pick hallucinated before the next."""
        posterior, statistics, exact = both.picking, both.statistics, scores.exact
        lazy, stopping, selectable = picks.lazy, picks.stopping, picks.selectable
        while selectable:
            index, variance = lazy.argmin()
            picks.chosen.append(index)
            point = take_rows(candidates, [index])
            if refine_in is not None:
                iterations = self._refine_iterations
                point = refine_pick(posterior, point, scores.alpha, refine_in, iterations)
            picks.points.append(point)
            announce(point)  # an asynchronous campaign may hand it out now (pick_stream)
            if both.separate:
                in_batch = exact or stopping.uses_in_batch_variance
                variance = float(statistics.variance(point)[0]) if in_batch else np.nan
            picks.information += self._width.information_term(
                variance if exact else scores.s2_stat[index], exact
            )
            stop = stopping.add(index, variance) and not self._fixed
            full = len(picks.chosen) >= (self._max_batch_size or np.inf)
            if stop or full or (not self._allow_repeats and len(picks.chosen) == selectable):
                return
            key = None if refine_in is not None else [index]  # a refined point is not the row
            both.add(point, key)
            lazy.invalidate()
            if not self._allow_repeats:
                lazy.exclude(index)

    def _batch_start(
        self, posterior: InBatchPosteriorLike, candidates: Rows, library: Rows, num_pending: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The batch-start mean and variance [P + N] of the candidates: the ``num_pending``
        pending points followed by the ``library`` [N, D]; the library's computed remotely
        where the rule has a remote, the pending points' here."""
        if self._remote is None:
            mean, variance = posterior.batch_start_marginals(candidates)
            return mean.numpy(), variance.numpy()
        parts = [posterior.batch_start_marginals(library, self._remote)]
        if num_pending:
            head = take_rows(candidates, np.arange(num_pending))
            parts.insert(0, posterior.batch_start_marginals(head))
        mean, variance = (tf.concat(part, 0).numpy() for part in zip(*parts))
        return mean, variance


def _hallucinate_pending(
    posterior: InBatchPosteriorLike, stopping: StoppingRule, candidates: Rows, num: int
) -> bool:
    """Count the first ``num`` candidates (the pending points) with the stopping rule and add
    them to the in-batch posterior; return whether the rule ends the batch with them. A rule
    that needs no in-batch variances (BBKB's Global and GlobalLocal) gets the points added in
    one call rather than ``num`` (the same posterior: a hallucinated point's update does not
    depend on the order)."""
    sequential = stopping.uses_in_batch_variance
    for index in range(num):
        point = candidates[index : index + 1]
        variance = float(posterior.variance(point)[0]) if sequential else np.nan
        if stopping.add(index, variance):
            return True
        if sequential:
            posterior.add(point)
    if num and not sequential:
        posterior.add(candidates[:num])
    return False


@dataclass(frozen=True)
class _Posteriors:
    """The in-batch posterior that picks and the stopping rule's (the same object unless the
    rule's regulariser differs from the model's noise)."""

    picking: InBatchPosteriorLike
    statistics: InBatchPosteriorLike

    @property
    def separate(self) -> bool:
        return self.statistics is not self.picking

    def add(self, points: Rows, key: Optional[list[int]]) -> None:
        """Hallucinate ``points`` in both."""
        self.picking.add(points, key)
        if self.separate:
            self.statistics.add(points, key)


@dataclass(frozen=True)
class _Scores:
    """The candidates' batch-start means and variances [P + N] (the picking posterior's and the
    stopping rule's), the width alpha in the picking posterior's units, the factor from the
    papers' lambda-units to them, lambda, whether the posterior is exact, and when scoring
    ended (``time.perf_counter()``)."""

    mean: np.ndarray
    s2_0: np.ndarray
    s2_stat: np.ndarray
    alpha: float
    to_selection: float
    regularised: float
    exact: bool
    seconds: float = field(default_factory=time.perf_counter)


@dataclass
class _Picks:
    """A batch as it grows: the information so far, the lazy argmin and the stopping rule it
    picks with, how many candidates it may pick from, the candidates picked and their
    points."""

    information: float
    lazy: LazyArgmin
    stopping: StoppingRule
    selectable: int
    chosen: list[int] = field(default_factory=list)
    points: list[tf.Tensor] = field(default_factory=list)
