"""What a model's fits maximise: the exact log likelihood of every evaluation from the
sufficient statistics of unique inputs, or a sparse model's SGPR bound (Titsias 2009), each
compiled for the model's kernel and reading the noise and the prior mean live, so a fit's
closure sees every step's values."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Callable

import tensorflow as tf

from .data import ReplicatedData


class FitObjectives:
    """The objectives of :class:`~.base.ReplicatedGPBase`'s fits (a mixin over its data)."""

    _dtype: tf.DType
    _exact_fit_limit: int

    @property
    @abstractmethod
    def compiled(self) -> Any:
        """The model's compiled numerics (``exact_evidence``, ``evidence``)."""

    @abstractmethod
    def _require_data(self) -> ReplicatedData:
        """The data (raises before the first update)."""

    @abstractmethod
    def get_observation_noise(self) -> tf.Tensor:
        """The noise variance, read live."""

    @abstractmethod
    def _prior_mean(self) -> tf.Tensor:
        """The constant prior mean relative to the centre, read live."""

    def _objective(self) -> Callable[[], tf.Tensor]:
        """A closure returning the quantity :meth:`optimize` maximises: the exact log likelihood
        up to ``exact_fit_limit`` unique inputs, else the model's sparse bound."""
        if self._require_data().counts.size <= self._exact_fit_limit:
            return self._exact_objective()
        return self._sparse_objective()

    def _sparse_objective(self) -> Callable[[], tf.Tensor]:
        """The sparse model's bound (sparse models override this)."""
        raise NotImplementedError

    def _exact_objective(self) -> Callable[[], tf.Tensor]:
        """The exact log likelihood of every evaluation (``replicated.log_marginal_likelihood``
        compiled for this model's kernel), reading the noise and the mean live."""
        data = self._require_data()
        args = (*self._data_tensors()[:2], tf.constant(data.means))
        ssw = tf.constant(data.within_sum_squares, dtype=self._dtype)
        return lambda: self.compiled.exact_evidence(
            *args, ssw, self.get_observation_noise(), self._prior_mean()
        )

    def _sgpr_objective(
        self, inducing: tf.Tensor, mask: tf.Tensor, jitter: float
    ) -> Callable[[], tf.Tensor]:
        """Titsias' bound with the padded ``inducing`` points [M, D] and ``mask`` [M]
        (``evidence.sgpr_evidence`` compiled for this model's kernel; absolute ``jitter`` on
        :math:`K_S`), reading the noise and the mean live."""
        args = (inducing, mask, *self._data_tensors())
        jitter_tensor = tf.constant(jitter, dtype=self._dtype)
        return lambda: self.compiled.evidence(
            *args, self.get_observation_noise(), self._prior_mean(), jitter_tensor
        )

    def _data_tensors(self) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """Unique inputs [n, D], counts [n], sums [n] and the total sum of squares []."""
        data = self._require_data()
        return (
            tf.constant(data.inputs),
            tf.constant(data.counts),
            tf.constant(data.sums),
            tf.constant(data.sum_squares, dtype=self._dtype),
        )
