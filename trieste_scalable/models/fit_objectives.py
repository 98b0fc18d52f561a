"""What a model's fits maximise: the exact log likelihood of every evaluation from the
sufficient statistics of unique inputs, or a sparse model's SGPR bound (Titsias 2009), each
compiled for the model's kernel and reading the noise and the prior mean live, so a fit's
closure sees every step's values."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Callable, NamedTuple

import tensorflow as tf

from .data import ReplicatedData


class Objective(NamedTuple):
    """A fit's objective: ``function(*arguments)``. ``function`` is the same callable at every
    fit of a model (a bound method reading the hyperparameters live) and the data are its
    ``arguments``, so the fitter compiles its loss once per model rather than once per fit
    (:class:`~.fitter.HyperparameterFitter`)."""

    function: Callable[..., tf.Tensor]
    arguments: tuple[tf.Tensor, ...]

    def __call__(self) -> tf.Tensor:
        """The objective's value on its data []."""
        return self.function(*self.arguments)


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

    def _objective(self) -> Objective:
        """The quantity :meth:`optimize` maximises: the exact log likelihood up to
        ``exact_fit_limit`` unique inputs, else the model's sparse bound."""
        if self._require_data().counts.size <= self._exact_fit_limit:
            return self._exact_objective()
        return self._sparse_objective()

    def _sparse_objective(self) -> Objective:
        """The sparse model's bound (sparse models override this)."""
        raise NotImplementedError

    def _exact_objective(self) -> Objective:
        """The exact log likelihood of every evaluation (:meth:`_exact_evidence`) on the data."""
        data = self._require_data()
        ssw = tf.constant(data.within_sum_squares, dtype=self._dtype)
        arguments = (*self._data_tensors()[:2], tf.constant(data.means), ssw)
        return Objective(self._exact_evidence, arguments)

    def _exact_evidence(self, *arguments: tf.Tensor) -> tf.Tensor:
        """``replicated.log_marginal_likelihood`` compiled for this model's kernel, on unique
        inputs [n, D], counts [n], means [n] and the within sum of squares [], reading the noise
        and the mean live."""
        return self.compiled.exact_evidence(
            *arguments, self.get_observation_noise(), self._prior_mean()
        )

    def _sgpr_objective(self, inducing: tf.Tensor, mask: tf.Tensor, jitter: float) -> Objective:
        """Titsias' bound (:meth:`_sgpr_evidence`) with the padded ``inducing`` points [M, D]
        and ``mask`` [M] and absolute ``jitter`` on :math:`K_S`."""
        jitter_tensor = tf.constant(jitter, dtype=self._dtype)
        return Objective(
            self._sgpr_evidence, (inducing, mask, *self._data_tensors(), jitter_tensor)
        )

    def _sgpr_evidence(self, *arguments: tf.Tensor) -> tf.Tensor:
        """``evidence.sgpr_evidence`` compiled for this model's kernel, on inducing points, mask,
        the data of :meth:`_data_tensors` and the jitter, reading the noise and the mean live."""
        *data, jitter = arguments
        return self.compiled.evidence(
            *data, self.get_observation_noise(), self._prior_mean(), jitter
        )

    def _data_tensors(self) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """Unique inputs [n, D], counts [n], sums [n] and the total sum of squares []."""
        data = self._require_data()
        return (
            data.input_tensor,
            tf.constant(data.counts),
            tf.constant(data.sums),
            tf.constant(data.sum_squares, dtype=self._dtype),
        )
