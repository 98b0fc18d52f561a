"""Batch Thompson sampling with decoupled posterior samples (S-GP-TS, Vakili et al. 2021)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import numpy as np
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.models import ProbabilisticModel
from trieste.space import Box, DiscreteSearchSpace, SearchSpace
from trieste.types import State, Tag, TensorType

from ..numerics.bits import take_rows
from ..numerics.rows import mask_of
from ..sampling.feature_cache import SignStore
from ..sampling.features import Draws, feature_map_for
from ..sampling.pathwise import PathwiseWeights
from ..sampling.scoring import ChunkedSampleScorer, RemoteSampleScoring
from .candidates import (
    EvaluatedCandidates,
    candidate_points,
    candidate_rows,
    check_search_space,
    distinct_picks,
    num_candidates,
    objective_of,
    space_dtype,
)
from .pathwise_source import PathwiseSource, pathwise_source
from .pending import PendingState, no_points
from .rule_state import saved_state
from .summaries import LogsStatistics
from .thompson_refinement import box_batch, paired_value_and_gradient
from .thompson_signs import SignFeatures

_FIRST_RANKS = 16  # candidates ranked per sample on the first try (see _discrete_batch)


@saved_state
@dataclass(frozen=True)
class ThompsonState(PendingState):
    """Number of batches drawn so far (it seeds the next batch, so a restored Ask/Tell run draws
    the samples it would have drawn), with the pending and failed points
    (:class:`~.pending.PendingState`)."""

    num_batches: int = 0


class BatchThompsonSampling(
    LogsStatistics,
    AcquisitionRule[State[Optional[ThompsonState], TensorType], SearchSpace, ProbabilisticModel],
):
    r"""Batch Thompson sampling: each of the B batch points minimises its own decoupled posterior
    sample :math:`\tilde f_b(x) = m(x) + \phi(x)^T w_b + k(x, Z) v_b` (S-GP-TS eq. 4, Trieste
    minimises).

    The B samples share one draw of random features per step and are drawn as one weight matrix
    from stateless seeds derived from ``seed`` and the step number, so they are independent
    whatever the global TF seed (unlike Trieste's ``ThompsonSamplerFromTrajectory``, which
    returns B copies of one sample after ``tf.random.set_seed``).

    - On a :class:`~trieste.space.DiscreteSearchSpace` every candidate is scored for all B
      samples in chunks (features once per chunk, one matrix product) and each sample's argmin
      is taken. ``exclude_evaluated`` screens without replacement; ``distinct`` replaces a point
      that an earlier sample of the batch already took by that sample's next best. With sign
      features (the Tanimoto kernel's MinHash features: :mod:`.thompson_signs`), the candidates'
      features are computed once per draw and kept bit-packed, so a batch costs one pass of
      matrix products, not a re-hash of the library; batches share the feature basis (redrawn
      every ``redraw_features_every`` batches), their sample weights are independent. Points
      still being evaluated (asynchronous use, :mod:`.pending`) are excluded from the
      candidates, and the samples are conditioned on them observed at their posterior mean
      (kriging believer, :mod:`.pathwise_source`), so a batch does not pile up around them.
    - On a :class:`~trieste.space.Box` each sample starts from the best of a shared uniform pool
      (``pool_size``, default 500 d as in the paper) and is refined by L-BFGS-B within the box.
      Trieste's continuous optimisers are not reused here: they evaluate every sample at every
      pool point as [N, B, D] and would materialise [N, B, F] features.

    Works with any model :func:`~trieste_scalable.acquisition.pathwise_source.pathwise_source`
    accepts: :class:`~trieste_scalable.models.AdaptiveSVGP`, Trieste's ``SparseVariational``,
    ``SparseGaussianProcessRegression`` and ``GaussianProcessRegression``.

    :param num_query_points: Batch size B.
    :param num_features: Random features F of each sample's prior part.
    :param chunk_size: Candidates per compiled scoring call (memory is O(chunk (F + M + B))).
    :param exclude_evaluated: Never propose an already evaluated candidate (discrete spaces).
    :param distinct: Make the batch's points distinct (discrete spaces).
    :param pool_size: Initial pool per step on a Box; default 500 * D.
    :param refine: Refine each sample's pool minimiser with L-BFGS-B (Box).
    :param max_refine_iterations: L-BFGS-B iterations per step (Box).
    :param seed: Seed of this rule's samples.
    :param scoring_dtype: The dtype of the scoring's matrix products (default: the model's).
        ``tf.float32`` rounds each sample value to about 1e-7 of its scale, so only candidates
        that tie to that precision can swap places, and multiplies about four times faster on
        CPU (the Tanimoto kernel's inner products of fingerprints are exact in float32 either
        way).
    :param redraw_features_every: With cached sign features (discrete spaces), draw new ones
        every this many batches (default: one draw per rule). Each redraw re-hashes every
        candidate (about as long as a few batches of scoring).
    :param sign_store: Keeps the candidates' sign features across processes (discrete spaces,
        the first draw: :class:`~.thompson_signs.SignFeatures`); by default nowhere.
    :param remote_scoring: Scores the samples over the discrete search space elsewhere (e.g.
        :class:`~trieste_scalable.cluster.scoring_actors.ScoringActors`: a library store on
        Ray actors) with the same picks; by default in this process.
    """

    _name = "thompson"

    state_type = ThompsonState
    """The ``State`` value this rule keeps (a fresh one is ``ThompsonState()``)."""

    def __init__(
        self,
        num_query_points: int = 1,
        *,
        num_features: int = 1000,
        chunk_size: int = 4096,
        exclude_evaluated: bool = False,
        distinct: bool = True,
        pool_size: Optional[int] = None,
        refine: bool = True,
        max_refine_iterations: int = 200,
        seed: int = 0,
        scoring_dtype: Optional[tf.DType] = None,
        redraw_features_every: Optional[int] = None,
        sign_store: Optional[SignStore] = None,
        remote_scoring: Optional[RemoteSampleScoring] = None,
    ):
        sizes = dict(num_query_points=num_query_points, num_features=num_features)
        if redraw_features_every is not None:
            sizes.update(redraw_features_every=redraw_features_every)
        for name, value in dict(sizes, chunk_size=chunk_size, pool_size=pool_size or 1).items():
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        self._num_query_points = num_query_points
        self._num_features = num_features
        self._chunk_size = chunk_size
        self._exclude_evaluated = exclude_evaluated
        self._distinct = distinct
        self._pool_size = pool_size
        self._refine_iterations = max_refine_iterations if refine else 0
        self._seed = seed
        self._scoring_dtype = scoring_dtype
        self._remote_scoring = remote_scoring
        self._scorers: dict[tuple[int, ...], tuple[ChunkedSampleScorer, Any]] = {}
        self._signs = SignFeatures(seed, redraw_features_every, sign_store)
        self._evaluated = EvaluatedCandidates()

    def __repr__(self) -> str:
        return (
            f"BatchThompsonSampling(num_query_points={self._num_query_points}, "
            f"num_features={self._num_features}, exclude_evaluated={self._exclude_evaluated}, "
            f"distinct={self._distinct})"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> BatchThompsonSampling:
        """Copies share nothing compiled (compiled functions cannot be copied)."""
        copy = object.__new__(type(self))
        memo[id(self)] = copy
        copy.__dict__.update(self.__dict__)
        copy._scorers = {}
        copy._signs = self._signs.fresh()
        copy._evaluated = EvaluatedCandidates()
        return copy

    def acquire(
        self,
        search_space: SearchSpace,
        models: Mapping[Tag, ProbabilisticModel],
        datasets: Optional[Mapping[Tag, Dataset]] = None,
    ) -> State[Optional[ThompsonState], TensorType]:
        check_search_space(search_space)
        model, dataset = objective_of(models, datasets, search_space)

        def state_func(state: Optional[ThompsonState]) -> tuple[ThompsonState, TensorType]:
            state = ThompsonState.continued(state, self)
            seeds = np.random.default_rng([self._seed, state.num_batches]).integers(2**31, size=4)
            pending, failed = state.outstanding(dataset), state.failures(dataset)
            batch = self._batch(
                search_space,
                model,
                dataset=dataset,
                seeds=seeds,
                pending=pending,
                num_batches=state.num_batches,
                failed=failed,
            )
            return state.proposing(
                pending, batch, dataset, num_batches=state.num_batches + 1
            ), batch

        return state_func

    # ----------------------------------------------------------------- one batch
    def _batch(
        self,
        space: SearchSpace,
        model: Any,
        dataset: Optional[Dataset],
        seeds: np.ndarray,
        pending: np.ndarray,
        num_batches: int,
        failed: Optional[np.ndarray] = None,
    ) -> tf.Tensor:
        start = time.perf_counter()
        dtype = space_dtype(space)
        source = pathwise_source(model, tf.constant(pending, dtype) if pending.size else None)
        scorer, paired = self._scorer(source)
        input_dim = int(space.dimension)
        cached = isinstance(space, DiscreteSearchSpace) and scorer.features.signs_only
        generation = self._signs.generation(num_batches)
        if cached:
            draws = self._signs.draws(scorer, generation, input_dim, dtype)
        else:
            draws = scorer.features.draw(tf.constant(seeds[:2]), input_dim, dtype)
        weights = source.sample_weights(
            scorer.features, draws, self._num_query_points, tf.constant(seeds[2:])
        )
        sampled = time.perf_counter()
        if isinstance(space, DiscreteSearchSpace):
            if failed is not None and len(failed):  # never proposed, never conditioned on
                pending = np.concatenate([pending.reshape(-1, failed.shape[1]), failed])
            batch = self._discrete_batch(
                space,
                scorer,
                draws=draws,
                weights=weights,
                dataset=dataset,
                pending=pending,
                generation=generation,
            )
        else:
            assert isinstance(space, Box)
            pool_size = self._pool_size or 500 * int(space.dimension)
            pool = candidate_points(space, None, pool_size, int(seeds[0]))
            batch = box_batch(
                space,
                pool,
                scorer=scorer,
                paired=paired,
                draws=draws,
                weights=weights,
                max_iterations=self._refine_iterations,
            )
        self._log(
            {
                "sampling_seconds": sampled - start,
                "scoring_seconds": time.perf_counter() - sampled,
                "batch_size": int(batch.shape[0]),
                "distinct_points": int(np.unique(batch.numpy(), axis=0).shape[0]),
                "inducing_points": source.num_centres,
            }
        )
        return batch

    def _discrete_batch(
        self,
        space: DiscreteSearchSpace,
        scorer: ChunkedSampleScorer,
        draws: Draws,
        weights: PathwiseWeights,
        dataset: Optional[Dataset],
        pending: np.ndarray,
        generation: int,
    ) -> tf.Tensor:
        candidates = candidate_rows(space)
        size = num_candidates(space)
        # the excluded candidates' positions, not an [N] mask: a scorer over a store of 10^8
        # rows gets a few thousand positions a batch, whatever N is
        excluded = self._evaluated.positions(space, pending)
        if self._exclude_evaluated:
            evaluated = self._evaluated.evaluated_positions(space, dataset)
            excluded = np.union1d(excluded, evaluated)
        allowed = size - len(excluded)
        if allowed == 0:  # every candidate left is pending: nothing new to propose yet
            return no_points(space)
        # fewer candidates left than the batch: the batch shrinks to them (the last batch)
        needed = min(self._num_query_points, allowed) if self._distinct else 1
        lowest = self._lowest(scorer, candidates, excluded, draws, weights, generation)
        # each sample's few best first: merging a running top-k costs as much as the products
        # at k = B = 500; a larger k only when some sample's best are all taken (rare)
        ranks = min(needed, _FIRST_RANKS)
        while True:
            index = lowest(ranks)
            if not self._distinct:
                return take_rows(candidates, index[:, 0])
            chosen = distinct_picks(index[:needed])
            if chosen is not None:
                return take_rows(candidates, chosen)
            assert ranks < needed, "with as many ranks as samples a free candidate always exists"
            ranks = min(needed, 4 * ranks)

    def _lowest(
        self,
        scorer: ChunkedSampleScorer,
        candidates: Any,
        excluded: np.ndarray,
        draws: Draws,
        weights: PathwiseWeights,
        generation: int,
    ) -> Callable[[int], np.ndarray]:
        """Maps k to each sample's k lowest candidates [B, k], ``excluded`` the positions [A] of
        the candidates none may pick: scored remotely, or here with the candidates' sign
        features computed once per draw (see _batch)."""
        remote = self._remote_scoring
        if remote is not None:
            sample = (scorer.features, scorer.mean_function, draws, weights)
            return lambda k: remote.lowest(*sample, k, excluded, generation)[1]
        signs = None
        if scorer.features.signs_only:
            signs = self._signs.of_candidates(
                scorer, draws, candidates, weights.prior.dtype, generation
            )
        mask = tf.constant(mask_of(excluded, int(candidates.shape[0])))
        return lambda k: scorer.lowest(candidates, mask, draws, weights, k, signs)[1].numpy()

    # ----------------------------------------------------------------- helpers
    def _scorer(self, source: PathwiseSource) -> tuple[ChunkedSampleScorer, Any]:
        """One compiled scorer (and paired evaluation) per kernel and mean function."""
        key = (id(source.kernel), id(source.mean_function))
        if key not in self._scorers:
            features = feature_map_for(source.kernel, self._num_features)
            scorer = ChunkedSampleScorer(
                features, source.mean_function, self._chunk_size, self._scoring_dtype
            )
            self._scorers[key] = (scorer, paired_value_and_gradient(features, source))
        return self._scorers[key]
