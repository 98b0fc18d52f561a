"""BBKB, BKB and GP-BUCB as Trieste acquisition rules over :class:`NystromGPR`.

All three build a batch greedily by the lower confidence bound (Trieste minimises; the papers'
UCB of ``-y``) with hallucinated, feedback-free variance updates, and stop by their own rule:

- :class:`BBKB` (Calandriello et al., ICML 2020, Algorithm 1): Global or GlobalLocal ratio rule,
  batch size adapts and grows as the model gets confident; the dictionary is resampled only
  between batches (by the model's ``update``).
- :class:`BKB` (COLT 2019): BBKB with :math:`\\tilde C = 1`, a batch of one, resparsified every
  step, with BBKB's improved width.
- :class:`GPBUCB` (Desautels et al. 2014, GP-AUCB): exact dictionary, product rule.

The rules are stateful: :meth:`acquire` returns a Trieste ``State`` whose value is a frozen
:class:`BatchUCBState` (the accumulated information term of the width), so ``BayesianOptimizer``
and ``AskTellOptimizer`` (including ``to_state``/``from_state``) carry it between steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal, Mapping, Optional

import numpy as np
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace, SearchSpace
from trieste.types import State, Tag, TensorType

from ..models.nystrom import NystromGPR
from .candidates import EvaluatedCandidates, LazyArgmin, candidate_points, objective_of
from .confidence import ConfidenceWidth, WidthMode
from .stopping import GlobalLocalStopping, GlobalStopping, ProductStopping, StoppingRule
from .summaries import write_scalars


@dataclass(frozen=True)
class BatchUCBState:
    """What a UCB-family rule carries between steps.

    :ivar information: Accumulated :math:`L` of the confidence width (see ``confidence.py``).
    :ivar num_batches: Batches acquired so far.
    :ivar last_batch_size: Size of the last batch.
    """

    information: float
    num_batches: int = 0
    last_batch_size: int = 0


class _HallucinatedUCBRule(
    AcquisitionRule[State[Optional[BatchUCBState], TensorType], SearchSpace, NystromGPR]
):
    """Shared batch construction: lazy LCB argmin + hallucination + a stopping rule."""

    _name = "ucb"

    def __init__(
        self,
        stopping: StoppingRule,
        width: WidthMode | ConfidenceWidth,
        max_batch_size: Optional[int],
        pool_size: int,
        seed: int,
        allow_repeats: bool = True,
        exclude_evaluated: bool = False,
    ):
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1 or None, got {max_batch_size}")
        if pool_size < 1:
            raise ValueError(f"pool_size must be positive, got {pool_size}")
        self._stopping = stopping
        self._width = width if isinstance(width, ConfidenceWidth) else ConfidenceWidth(width)
        self._max_batch_size = max_batch_size
        self._pool_size = pool_size
        self._seed = seed
        self._allow_repeats = allow_repeats and not exclude_evaluated
        self._exclude_evaluated = exclude_evaluated
        self._evaluated = EvaluatedCandidates()

    @property
    def width(self) -> ConfidenceWidth:
        return self._width

    def _check_model(self, model: NystromGPR) -> None:
        if not isinstance(model, NystromGPR):
            raise ValueError(
                f"{type(self).__name__} needs a trieste_scalable NystromGPR model, got "
                f"{type(model).__name__}"
            )

    def acquire(
        self,
        search_space: SearchSpace,
        models: Mapping[Tag, NystromGPR],
        datasets: Optional[Mapping[Tag, Dataset]] = None,
    ) -> State[Optional[BatchUCBState], TensorType]:
        model, dataset = objective_of(models, datasets, search_space)
        self._check_model(model)

        def state_func(state: Optional[BatchUCBState]) -> tuple[BatchUCBState, TensorType]:
            if state is None:
                state = BatchUCBState(information=model.information_gain())
            seed = int(np.random.default_rng([self._seed, state.num_batches]).integers(2**31))
            candidates = candidate_points(search_space, dataset, self._pool_size, seed)
            excluded = None
            if self._exclude_evaluated and isinstance(search_space, DiscreteSearchSpace):
                excluded = self._evaluated(search_space, dataset)
                if excluded.all():
                    raise ValueError("every candidate has been evaluated: nothing is left to pick")
            batch, information, stats = self._build_batch(
                model, candidates, state.information, excluded
            )
            new_state = replace(
                state,
                information=information,
                num_batches=state.num_batches + 1,
                last_batch_size=int(batch.shape[0]),
            )
            self._log(stats)
            return new_state, batch

        return state_func

    def _build_batch(
        self,
        model: NystromGPR,
        candidates: tf.Tensor,
        information: float,
        excluded: Optional[np.ndarray] = None,
    ) -> tuple[tf.Tensor, float, dict[str, float]]:
        start = time.perf_counter()
        posterior = model.batch_posterior()
        exact = model.dictionary_policy.exact
        mean, s2_0 = (t.numpy() for t in posterior.batch_start_marginals(candidates))
        noise = posterior.noise
        threshold = self._stopping.ratio_threshold
        alpha = self._width.alpha(information, noise, threshold, exact)
        scoring_seconds = time.perf_counter() - start

        lazy = LazyArgmin(
            mean, s2_0, alpha, lambda idx: posterior.variance(tf.gather(candidates, idx)).numpy()
        )
        if excluded is not None:
            lazy.exclude(np.flatnonzero(excluded))
        selectable = lazy.num_selectable
        self._stopping.start(posterior, candidates, s2_0)
        chosen: list[int] = []
        while True:
            index, variance = lazy.argmin()
            chosen.append(index)
            information += self._width.information_term(variance if exact else s2_0[index], exact)
            stop = self._stopping.add(index, variance)
            full = len(chosen) >= (self._max_batch_size or np.inf)
            if stop or full or (not self._allow_repeats and len(chosen) == selectable):
                break
            posterior.add(tf.gather(candidates, [index]))
            lazy.invalidate()
            if not self._allow_repeats:
                lazy.exclude(index)
        stats = {
            "batch_size": len(chosen),
            "distinct_points": len(set(chosen)),
            "stopping_statistic": self._stopping.statistic,
            "alpha": alpha,
            "beta": self._width.beta_value(information, noise, exact),
            "dictionary_size": posterior.dictionary_size,
            "candidates": int(candidates.shape[0]),
            "refreshed_candidates": lazy.refreshed,
            "scoring_seconds": scoring_seconds,
            "batch_seconds": time.perf_counter() - start,
        }
        return tf.gather(candidates, chosen), information, stats

    def _log(self, stats: dict[str, float]) -> None:
        self.last_statistics = stats
        write_scalars(self._name, stats)


class BBKB(_HallucinatedUCBRule):
    """Batch-BKB (Calandriello et al., ICML 2020): adaptive batches over a Nystrom GP.

    The batch grows while the ratio statistic stays below ``ratio_threshold`` (:math:`\\tilde C`),
    so its size grows as the posterior variances shrink; the dictionary is frozen within a batch
    and resampled by the model between batches.

    :param stopping: ``"global"`` (Lemma 1) or ``"global_local"`` (Lemma 3 hybrid).
    :param ratio_threshold: :math:`\\tilde C \\ge 1` (default 2, as in the authors' code).
    :param width: Confidence width: a mode name or a :class:`ConfidenceWidth`.
    :param max_batch_size: Optional cap on the batch size (e.g. workers available).
    :param pool_size: Candidate pool size on a ``Box`` (fresh pool each batch; a heuristic).
    :param local_switch: GlobalLocal's switch point, ``"immediate"`` or ``"after_next"``.
    :param seed: Seed for the candidate pools.
    :param allow_repeats: Whether a batch may select a candidate again. Repeats are what the
        algorithm does when a point's bound stays best after hallucination (under noise that is
        deliberate); ``False`` gives batches of distinct points (the next-best point instead).
    :param exclude_evaluated: Never select a candidate of a ``DiscreteSearchSpace`` that has
        been evaluated (nor one twice in a batch): screening a noise-free oracle, where a repeat
        teaches nothing. The batch then ends early if the unevaluated candidates run out.
    """

    _name = "bbkb"

    def __init__(
        self,
        stopping: Literal["global", "global_local"] = "global",
        ratio_threshold: float = 2.0,
        width: WidthMode | ConfidenceWidth = "theory",
        max_batch_size: Optional[int] = None,
        pool_size: int = 10_000,
        local_switch: Literal["immediate", "after_next"] = "immediate",
        seed: int = 0,
        allow_repeats: bool = True,
        exclude_evaluated: bool = False,
    ):
        rule: StoppingRule
        if stopping == "global":
            rule = GlobalStopping(ratio_threshold)
        elif stopping == "global_local":
            rule = GlobalLocalStopping(ratio_threshold, local_switch)
        else:
            raise ValueError(f"stopping must be 'global' or 'global_local', got {stopping!r}")
        self.stopping = stopping
        super().__init__(
            rule, width, max_batch_size, pool_size, seed, allow_repeats, exclude_evaluated
        )

    def __repr__(self) -> str:
        return (
            f"BBKB(stopping={self.stopping!r}, ratio_threshold={self._stopping.ratio_threshold}, "
            f"width={self._width!r}, max_batch_size={self._max_batch_size})"
        )


class BKB(BBKB):
    """BKB (Calandriello et al., COLT 2019): sequential GP-UCB over a Nystrom GP whose dictionary
    is resampled every step. Implemented as BBKB with :math:`\\tilde C = 1` (spec bbkb.md §1.4),
    which returns batches of one point and uses BBKB's improved width."""

    _name = "bkb"

    def __init__(
        self,
        width: WidthMode | ConfidenceWidth = "theory",
        pool_size: int = 10_000,
        seed: int = 0,
        exclude_evaluated: bool = False,
    ):
        super().__init__(
            "global", 1.0, width, None, pool_size, seed=seed, exclude_evaluated=exclude_evaluated
        )

    def __repr__(self) -> str:
        return f"BKB(width={self._width!r})"


class GPBUCB(_HallucinatedUCBRule):
    """GP-BUCB / GP-AUCB (Desautels et al., 2014): exact GP, batches grown by hallucination until
    :math:`\\prod_s (1 + \\sigma^2_{s-1}(x_s)) > C`. Needs a model with ``ExactDictionary()``.

    :param ratio_threshold: :math:`C \\ge 1` (default 2).
    :param allow_repeats: Whether a batch may select a candidate again (see :class:`BBKB`).
    :param exclude_evaluated: Never select an evaluated candidate (see :class:`BBKB`).
    """

    _name = "gp_bucb"

    def __init__(
        self,
        ratio_threshold: float = 2.0,
        width: WidthMode | ConfidenceWidth = "theory",
        max_batch_size: Optional[int] = None,
        pool_size: int = 10_000,
        seed: int = 0,
        allow_repeats: bool = True,
        exclude_evaluated: bool = False,
    ):
        stopping = ProductStopping(ratio_threshold)
        super().__init__(
            stopping, width, max_batch_size, pool_size, seed, allow_repeats, exclude_evaluated
        )

    def _check_model(self, model: NystromGPR) -> None:
        super()._check_model(model)
        if not model.dictionary_policy.exact:
            raise ValueError(
                "GPBUCB needs an exact GP: build NystromGPR with dictionary=ExactDictionary()"
            )

    def __repr__(self) -> str:
        return (
            f"GPBUCB(ratio_threshold={self._stopping.ratio_threshold}, width={self._width!r}, "
            f"max_batch_size={self._max_batch_size})"
        )
