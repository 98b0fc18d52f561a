"""BBKB, BKB and GP-BUCB as Trieste acquisition rules over :class:`~.NystromGPR`.

All three build a batch greedily by the lower confidence bound (Trieste minimises; the papers'
UCB of ``-y``) with hallucinated, feedback-free variance updates, and stop by their own rule:

- :class:`~.BBKB` (Calandriello et al., ICML 2020, Algorithm 1): Global or GlobalLocal ratio rule,
  batch size adapts and grows as the model gets confident; the dictionary is resampled only
  between batches (by the model's ``update``).
- :class:`~.BKB` (COLT 2019): BBKB with :math:`\\tilde C = 1`, a batch of one, resparsified every
  step, with BBKB's improved width.
- :class:`~.GPBUCB` (Desautels et al. 2014, GP-AUCB): exact dictionary, product rule.

All three are :class:`~trieste_scalable.acquisition.hallucinated.HallucinatedBatchRule` with
their own stopping rule; their state between steps is a
:class:`~trieste_scalable.acquisition.hallucinated.BatchUCBState`.
"""

from __future__ import annotations

from typing import Literal, Optional

from ..models.in_batch import RemoteMarginals
from .confidence import ConfidenceWidth, WidthMode
from .hallucinated import BatchUCBState, HallucinatedBatchRule, Regulariser
from .protocols import InBatchPosteriorLike
from .stopping import GlobalLocalStopping, GlobalStopping, ProductStopping, StoppingRule

__all__ = ["BBKB", "BKB", "GPBUCB", "BatchUCBState"]


class BBKB(HallucinatedBatchRule):
    """Batch-BKB (Calandriello et al., ICML 2020): adaptive batches over a Nystrom GP.

    The batch grows while the ratio statistic stays below ``ratio_threshold`` (:math:`\\tilde C`),
    so its size grows as the posterior variances shrink; the dictionary is frozen within a batch
    and resampled by the model between batches.

    :param stopping: ``"global"`` (Lemma 1) or ``"global_local"`` (Lemma 3 hybrid).
    :param ratio_threshold: :math:`\\tilde C \\ge 1` (default 2, as in the authors' code).
    :param width: Confidence width: a mode name or a :class:`~.ConfidenceWidth`.
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
    :param fixed_batch_size: Batches of ``max_batch_size`` (see :class:`~.HallucinatedBatchRule`).
    :param regulariser: The papers' :math:`\\lambda` (see :class:`~.HallucinatedBatchRule`).
    :param max_refine_iterations: L-BFGS-B iterations refining each pick on a ``Box``.
    :param remote_marginals: Where the batch-start marginals of a ``DiscreteSearchSpace`` are
        computed (see :class:`~.HallucinatedBatchRule`).
    """

    _name = "bbkb"

    def __init__(
        self,
        stopping: Literal["global", "global_local"] = "global",
        ratio_threshold: float = 2.0,
        width: WidthMode | ConfidenceWidth = "constant",
        max_batch_size: Optional[int] = None,
        pool_size: int = 10_000,
        local_switch: Literal["immediate", "after_next"] = "immediate",
        seed: int = 0,
        allow_repeats: bool = True,
        exclude_evaluated: bool = False,
        fixed_batch_size: bool = False,
        regulariser: Regulariser = "kernel_variance",
        max_refine_iterations: int = 100,
        remote_marginals: Optional[RemoteMarginals] = None,
    ):
        rule: StoppingRule
        if stopping == "global":
            rule = GlobalStopping(ratio_threshold)
        elif stopping == "global_local":
            rule = GlobalLocalStopping(ratio_threshold, local_switch)
        else:
            raise ValueError(f"stopping must be 'global' or 'global_local', got {stopping!r}")
        self.stopping = stopping
        self._repr_extra = f"stopping={stopping!r}, "
        super().__init__(
            rule,
            width,
            max_batch_size,
            pool_size=pool_size,
            seed=seed,
            allow_repeats=allow_repeats,
            exclude_evaluated=exclude_evaluated,
            fixed_batch_size=fixed_batch_size,
            regulariser=regulariser,
            max_refine_iterations=max_refine_iterations,
            remote_marginals=remote_marginals,
        )


class BKB(BBKB):
    """BKB (Calandriello et al., COLT 2019): sequential GP-UCB over a Nystrom GP whose dictionary
    is resampled every step. Implemented as BBKB with :math:`\\tilde C = 1`,
    which returns batches of one point and uses BBKB's improved width."""

    _name = "bkb"

    def __init__(
        self,
        width: WidthMode | ConfidenceWidth = "constant",
        pool_size: int = 10_000,
        seed: int = 0,
        exclude_evaluated: bool = False,
        regulariser: Regulariser = "kernel_variance",
        max_refine_iterations: int = 100,
        remote_marginals: Optional[RemoteMarginals] = None,
    ):
        super().__init__(
            "global",
            1.0,
            width,
            None,
            pool_size,
            seed=seed,
            exclude_evaluated=exclude_evaluated,
            regulariser=regulariser,
            max_refine_iterations=max_refine_iterations,
            remote_marginals=remote_marginals,
        )


class GPBUCB(HallucinatedBatchRule):
    """GP-BUCB / GP-AUCB (Desautels et al., 2014): exact GP, batches grown by hallucination until
    :math:`\\prod_s (1 + \\sigma^2_{s-1}(x_s)) > C`. Needs an exact GP (a model with
    ``ExactDictionary()``), except with ``fixed_batch_size``: every batch then has
    ``max_batch_size`` points and the stopping rule, whose guarantee is the exact GP's, is only
    logged, so the batches may be grown over a Nyström posterior (a
    :class:`~trieste_scalable.models.PivotedCholeskyDictionary`; its in-batch variances are the
    DTC ones, BBKB's).

    :param ratio_threshold: :math:`C \\ge 1` (default 2).
    :param allow_repeats: Whether a batch may select a candidate again (see :class:`~.BBKB`).
    :param exclude_evaluated: Never select an evaluated candidate (see :class:`~.BBKB`).
    :param regulariser: The papers' :math:`\\lambda` (see :class:`~.HallucinatedBatchRule`).
    :param remote_marginals: Where the batch-start marginals of a ``DiscreteSearchSpace`` are
        computed (see :class:`~.HallucinatedBatchRule`).
    """

    _name = "gp_bucb"

    def __init__(
        self,
        ratio_threshold: float = 2.0,
        width: WidthMode | ConfidenceWidth = "constant",
        max_batch_size: Optional[int] = None,
        pool_size: int = 10_000,
        seed: int = 0,
        allow_repeats: bool = True,
        exclude_evaluated: bool = False,
        fixed_batch_size: bool = False,
        regulariser: Regulariser = "kernel_variance",
        max_refine_iterations: int = 100,
        remote_marginals: Optional[RemoteMarginals] = None,
    ):
        stopping = ProductStopping(ratio_threshold)
        super().__init__(
            stopping,
            width,
            max_batch_size,
            pool_size=pool_size,
            seed=seed,
            allow_repeats=allow_repeats,
            exclude_evaluated=exclude_evaluated,
            fixed_batch_size=fixed_batch_size,
            regulariser=regulariser,
            max_refine_iterations=max_refine_iterations,
            remote_marginals=remote_marginals,
        )

    def _check_posterior(self, posterior: InBatchPosteriorLike) -> None:
        if not (posterior.guaranteed_exact or self._fixed):
            raise ValueError(
                "GPBUCB's stopping rule needs an exact GP: build NystromGPR with "
                "dictionary=ExactDictionary(), or fix the batches (fixed_batch_size=True); a "
                "ridge-leverage dictionary is exact only when a draw happens to keep every point"
            )
