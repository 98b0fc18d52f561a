"""The Trieste prediction surface of a single-output GP given its latent posterior: ``predict``,
``predict_y``, ``predict_joint``, ``covariance_between_points``, ``sample`` and the
reparametrisation sampler, shaped and chunked as Trieste's protocols ask, over four template
methods that compute one chunk of the latent posterior (as Trieste's ``GPflowPredictor`` sits on
GPflow's ``predict_f``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

import gpflow
import tensorflow as tf
from check_shapes import inherit_check_shapes
from trieste.models.gpflow.interface import SupportsCovarianceBetweenPoints
from trieste.models.gpflow.sampler import BatchReparametrizationSampler
from trieste.models.interfaces import (
    HasReparamSampler,
    ReparametrizationSampler,
    SupportsGetObservationNoise,
    SupportsPredictY,
)

from ..numerics.bits import unpack_bits
from ..numerics.linalg import cholesky_with_jitter, chunked_map, jittered_cholesky


class LatentPredictions(
    SupportsCovarianceBetweenPoints,
    HasReparamSampler,
    SupportsPredictY,
    SupportsGetObservationNoise,
    ABC,
):
    """Trieste's prediction protocols over a latent posterior whose mean is relative to a centre
    (``_centre_tensor``), evaluated ``_chunk_size`` query rows per compiled call."""

    _dtype: tf.DType
    _chunk_size: int
    _packed_width: Optional[int]

    # ----------------------------------------------------------------- template methods
    @abstractmethod
    def _latent_marginals(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Mean and latent variance [N] at the rows of one chunk ``x`` [N, D]."""

    @abstractmethod
    def _latent_set_covariance(self, sets: tf.Tensor) -> tf.Tensor:
        """Latent covariance [S, B, B] of each set of rows of ``sets`` [S, B, D]."""

    def _latent_covariance(self, x: tf.Tensor) -> tf.Tensor:
        """Latent covariance [N, N] of the rows of ``x`` [N, D]."""
        return self._latent_set_covariance(x[None])[0]

    @abstractmethod
    def _latent_cross_covariance(self, x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
        """Latent covariance [N, P] between the rows of ``x`` [N, D] and ``x2`` [P, D]."""

    @abstractmethod
    def _centre_tensor(self) -> tf.Tensor:
        """The offset [] added to latent means."""

    @abstractmethod
    def _input_dim(self) -> int:
        """Columns of the inputs; raises if the model cannot predict yet."""

    # ----------------------------------------------------------------- Trieste protocols
    @inherit_check_shapes
    def predict(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        flat = self._flatten(query_points)
        mean, var = chunked_map(self._latent_marginals, flat, self._chunk_size)
        shape = tf.concat([tf.shape(query_points)[:-1], [1]], axis=0)
        return tf.reshape(mean + self._centre_tensor(), shape), tf.reshape(var, shape)

    @inherit_check_shapes
    def predict_y(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, var = self.predict(query_points)
        return mean, var + self.get_observation_noise()

    @inherit_check_shapes
    def predict_joint(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = self._check_points(query_points)
        batch_shape = tf.shape(x)[:-2]
        sets = tf.reshape(x, tf.concat([[-1], tf.shape(x)[-2:]], axis=0))  # [S, B, D]
        # all sets at once, in chunks of about chunk_size rows (Trieste scores thousands of
        # candidate batches per call: a map over sets was 20x slower)
        sets_per_chunk = max(1, self._chunk_size // max(1, x.shape[-2] or 1))
        (cov,) = chunked_map(self._latent_set_covariance, sets, sets_per_chunk)
        (mean,) = chunked_map(
            lambda rows: self._latent_marginals(rows)[0],
            tf.reshape(x, [-1, x.shape[-1]]),
            self._chunk_size,
        )
        mean = mean + self._centre_tensor()
        num = tf.shape(x)[-2]
        mean = tf.reshape(mean, tf.concat([batch_shape, [num, 1]], axis=0))
        cov = tf.reshape(cov, tf.concat([batch_shape, [1, num, num]], axis=0))
        return mean, cov

    def covariance_between_points(
        self, query_points_1: tf.Tensor, query_points_2: tf.Tensor
    ) -> tf.Tensor:
        """Latent posterior covariance [..., 1, N, P] between ``query_points_1`` [..., N, D] and
        ``query_points_2`` [P, D] (what Trieste's GIBBON asks for)."""
        x = self._check_points(query_points_1)
        x2 = self._check_points(query_points_2)
        flat = tf.reshape(x, [-1, x.shape[-1]])
        (cov,) = chunked_map(
            lambda chunk: self._latent_cross_covariance(chunk, x2), flat, self._chunk_size
        )
        shape = tf.concat([tf.shape(x)[:-2], [1], tf.shape(x)[-2:-1], tf.shape(x2)[:1]], axis=0)
        return tf.reshape(cov, shape)

    def reparam_sampler(self, num_samples: int) -> ReparametrizationSampler[Any]:
        """Trieste's reparametrisation sampler over :meth:`predict_joint` (Monte-Carlo EI, batch
        Monte-Carlo EI, asynchronous optimisation)."""
        return BatchReparametrizationSampler(num_samples, self)

    @inherit_check_shapes
    def sample(self, query_points: tf.Tensor, num_samples: int) -> tf.Tensor:
        return self._sample_joint(*self.predict_joint(query_points), num_samples)

    def _sample_joint(self, mean: tf.Tensor, cov: tf.Tensor, num_samples: int) -> tf.Tensor:
        """Samples [..., S, N, 1] of the joint Gaussian ``mean`` [..., N, 1], ``cov``
        [..., 1, N, N]; graph-safe (inside a compiled function the jitter cannot escalate, and
        GPflow's default relative jitter is added)."""
        cov = cov[..., 0, :, :]
        if tf.executing_eagerly():
            chol, _ = jittered_cholesky(cov, 1e-12)
        else:
            scale = tf.reduce_mean(tf.abs(tf.linalg.diag_part(cov)), axis=-1)[..., None, None]
            chol = cholesky_with_jitter(cov, gpflow.config.default_jitter() * scale)
        draws = tf.random.normal(
            tf.concat([tf.shape(mean)[:-2], [num_samples, tf.shape(mean)[-2]]], axis=0),
            dtype=self._dtype,
        )  # [..., S, N]
        samples = mean[..., None, :, 0] + tf.linalg.matvec(chol[..., None, :, :], draws)
        return samples[..., None]

    # ----------------------------------------------------------------- helpers
    def _check_points(self, query_points: tf.Tensor) -> tf.Tensor:
        input_dim = self._input_dim()
        x = tf.convert_to_tensor(query_points)
        if self._packed_width is not None and x.dtype == tf.uint8:
            x = self._unpacked(x, self._packed_width)
        if x.dtype != self._dtype:
            raise TypeError(f"query_points must have dtype {self._dtype.name}, got {x.dtype}")
        if x.shape[-1] != input_dim:
            raise ValueError(f"query_points must have {input_dim} columns, got {x.shape[-1]}")
        return x

    def _unpacked(self, x: tf.Tensor, width: int) -> tf.Tensor:
        """Packed query points [..., ceil(width / 8)] (uint8, as the model's datasets hold them:
        e.g. a Trieste rule predicting at the evaluated points) as rows [..., width]."""
        if x.shape[-1] != -(-width // 8):
            raise ValueError(f"packed query points must have {-(-width // 8)} bytes a row")
        rows = unpack_bits(tf.reshape(x, [-1, x.shape[-1]]), width, self._dtype)
        return tf.reshape(rows, tf.concat([tf.shape(x)[:-1], [width]], axis=0))

    def _flatten(self, query_points: tf.Tensor) -> tf.Tensor:
        x = self._check_points(query_points)
        return tf.reshape(x, [-1, x.shape[-1]])
