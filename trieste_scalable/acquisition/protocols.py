r"""What the rules need of a model, as Protocols: a rule checks these, not a concrete class, so
any model offering them works (ours, Trieste's, or a user's).

- :class:`SupportsHallucination`: an in-batch posterior whose variances can be updated for
  selected points without feedback (the hallucinated batches of BBKB, BKB and GP-BUCB).
- :class:`SupportsInformationGain`: :math:`\log\det(I + K_t/\lambda)` of the evaluations so
  far (the "theory" confidence widths).
- The MINI-META rules need Trieste's ``ProbabilisticModel`` (``predict``) and
  ``SupportsGetObservationNoise``; batch Thompson sampling needs what
  :func:`~trieste_scalable.acquisition.pathwise_source.pathwise_source` lists (Trieste's
  ``SupportsGetKernel`` plus inducing variables or internal data).
"""

from __future__ import annotations

from typing import Iterable, Optional, Protocol, runtime_checkable

import tensorflow as tf

from ..models.in_batch import RemoteMarginals
from ..numerics.linalg import SliceableRows


class InBatchPosteriorLike(Protocol):
    r"""The in-batch posterior a hallucinating rule builds a batch with (variances in the papers'
    ridge-leverage units, i.e. divided by the noise variance :math:`\lambda`)."""

    @property
    def noise(self) -> float:
        r""":math:`\lambda`."""

    @property
    def exact(self) -> bool:
        """Whether the posterior is exact (the batch's points then join its dictionary)."""

    @property
    def guaranteed_exact(self) -> bool:
        """Whether it is exact by the model's design, not by a random draw's chance (GP-BUCB's
        requirement)."""

    @property
    def dictionary_size(self) -> int:
        """Inducing points at the batch start (logged)."""

    def batch_start_marginals(
        self, candidates: SliceableRows, remote: Optional[RemoteMarginals] = None
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Batch-start mean and variance [N] of the candidates [N, D]; with ``remote``, computed
        there (the candidates are then ``remote``'s, in its order). A posterior that cannot hand
        itself to ``remote`` raises ``ValueError``."""

    def variance(self, candidates: tf.Tensor, keys: Optional[Iterable[int]] = None) -> tf.Tensor:
        """Variance [N] given the points selected so far; ``keys`` name the rows (e.g. their
        indices among a batch's candidates) for a cache of what the batch start fixes."""

    def marginals(self, points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Batch-start mean and variance given the points selected so far [N] of ``points``
        [N, D], differentiable in the points (the refinement of picks on a ``Box``)."""

    def add(self, points: tf.Tensor, keys: Optional[Iterable[int]] = None) -> None:
        """Hallucinate selected points [K, D] (``keys`` as for :meth:`variance`)."""

    def local_terms(
        self, batch: tf.Tensor, candidates: SliceableRows
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Summed squared batch-start covariances of ``batch`` with each candidate (GlobalLocal
        stopping only)."""


@runtime_checkable
class SupportsInformationGain(Protocol):
    """A model that reports the information gain of its evaluations."""

    def information_gain(self) -> float:
        r""":math:`\log\det(I + K_t/\lambda)` over every evaluation."""


@runtime_checkable
class SupportsHallucination(Protocol):
    r"""A model a hallucinating batch rule can build batches over
    (:class:`~trieste_scalable.models.NystromGPR` is one), with the papers' regulariser
    :math:`\lambda` chosen by the rule (``None``: the model's noise variance)."""

    def batch_posterior(self, regulariser: Optional[float] = None) -> InBatchPosteriorLike:
        """A fresh in-batch posterior at the current batch start, regularised by ``regulariser``."""

    def information_gain(self, regulariser: Optional[float] = None) -> float:
        r""":math:`\log\det(I + K_t/\lambda)` over every evaluation, :math:`\lambda` the
        ``regulariser``."""

    def prior_variance(self) -> float:
        r""":math:`\kappa^2`, the kernel's prior variance :math:`k(x, x)` over the evaluations."""

    def get_observation_noise(self) -> tf.Tensor:
        """The noise variance (Trieste's ``SupportsGetObservationNoise``)."""
