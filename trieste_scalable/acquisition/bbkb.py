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

from typing import Literal

from typing_extensions import Unpack

from .hallucinated import BatchOptions, BatchUCBState, HallucinatedBatchRule, SequentialOptions
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
    :param local_switch: GlobalLocal's switch point, ``"immediate"`` or ``"after_next"``.
    :param options: The width, batch cap, candidate pool and the rest of
        :class:`~.HallucinatedBatchRule` (:class:`~.hallucinated.BatchOptions`).
    """

    _name = "bbkb"

    def __init__(
        self,
        stopping: Literal["global", "global_local"] = "global",
        ratio_threshold: float = 2.0,
        local_switch: Literal["immediate", "after_next"] = "immediate",
        **options: Unpack[BatchOptions],
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
        super().__init__(rule, **options)


class BKB(BBKB):
    """BKB (Calandriello et al., COLT 2019): sequential GP-UCB over a Nystrom GP whose dictionary
    is resampled every step. Implemented as BBKB with :math:`\\tilde C = 1`,
    which returns batches of one point and uses BBKB's improved width."""

    _name = "bkb"

    def __init__(self, **options: Unpack[SequentialOptions]):
        super().__init__("global", 1.0, **options)


class GPBUCB(HallucinatedBatchRule):
    """GP-BUCB / GP-AUCB (Desautels et al., 2014): exact GP, batches grown by hallucination until
    :math:`\\prod_s (1 + \\sigma^2_{s-1}(x_s)) > C`. Needs an exact GP (a model with
    ``ExactDictionary()``), except with ``fixed_batch_size``: every batch then has
    ``max_batch_size`` points and the stopping rule, whose guarantee is the exact GP's, is only
    logged, so the batches may be grown over a Nyström posterior (a
    :class:`~trieste_scalable.models.PivotedCholeskyDictionary`; its in-batch variances are the
    DTC ones, BBKB's).

    :param ratio_threshold: :math:`C \\ge 1` (default 2).
    :param options: As :class:`~.BBKB`'s (:class:`~.hallucinated.BatchOptions`).
    """

    _name = "gp_bucb"

    def __init__(self, ratio_threshold: float = 2.0, **options: Unpack[BatchOptions]):
        super().__init__(ProductStopping(ratio_threshold), **options)

    def _check_posterior(self, posterior: InBatchPosteriorLike) -> None:
        if not (posterior.guaranteed_exact or self._fixed):
            raise ValueError(
                "GPBUCB's stopping rule needs an exact GP: build NystromGPR with "
                "dictionary=ExactDictionary(), or fix the batches (fixed_batch_size=True); a "
                "ridge-leverage dictionary is exact only when a draw happens to keep every point"
            )
