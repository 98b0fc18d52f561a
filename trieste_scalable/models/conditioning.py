"""Trieste's ``FastUpdateModel`` by Gaussian conditioning of a model's posterior GP.

Given additional evaluations :math:`y_X` at points :math:`X` (K of them, each observed once with
the model's noise :math:`\\lambda`), the posterior process conditioned on them as well is, with
:math:`\\Sigma` the model's posterior covariance and :math:`\\mu` its mean,

.. math::
    \\mu'(x) = \\mu(x) + \\Sigma_{xX} (\\Sigma_{XX} + \\lambda I)^{-1} (y_X - \\mu(X))

    \\Sigma'_{xx'} = \\Sigma_{xx'} - \\Sigma_{xX} (\\Sigma_{XX} + \\lambda I)^{-1} \\Sigma_{Xx'}

For an exact GP (:class:`~trieste_scalable.models.ReplicatedGPR`) this *is* the posterior on the
extended data (tested against GPflow's ``GPR``); for a sparse variational posterior
(:class:`~trieste_scalable.models.AdaptiveSVGP`) it is that posterior updated as a GP with the
inducing points kept, the cheap fantasy Trieste's ``Fantasizer`` needs (O(K^3 + K M N) per
fantasy, no copy of the model). Graph-safe: Trieste calls these inside compiled functions.
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf
from trieste.data import Dataset
from trieste.models.interfaces import FastUpdateModel

from ..numerics.linalg import chunked_map
from .base import PosteriorT, ReplicatedGPBase


class FantasyPredictions(FastUpdateModel, ReplicatedGPBase[PosteriorT]):
    """Trieste's ``FastUpdateModel``: the samples and observation-space predictions every model
    derives from its own ``conditional_predict_f`` and ``conditional_predict_joint``."""

    def conditional_predict_f_sample(
        self, query_points: tf.Tensor, additional_data: Dataset, num_samples: int
    ) -> tf.Tensor:
        """Samples [..., S, M, 1] at ``query_points`` [M, D] given also ``additional_data``."""
        mean, cov = self.conditional_predict_joint(query_points, additional_data)
        return self._sample_joint(mean, cov, num_samples)

    def conditional_predict_y(
        self, query_points: tf.Tensor, additional_data: Dataset
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """As ``conditional_predict_f``, with the noise variance added."""
        mean, var = self.conditional_predict_f(query_points, additional_data)
        return mean, var + self.get_observation_noise()


class GaussianConditioning(FantasyPredictions[PosteriorT]):
    """A model whose ``conditional_predict_*`` condition its posterior GP (module docstring)."""

    def conditional_predict_f(
        self, query_points: tf.Tensor, additional_data: Dataset
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Latent mean and variance [..., M, 1] at ``query_points`` [M, D] given also
        ``additional_data`` ([..., K, D], [..., K, 1]; one posterior per leading index)."""
        x = self._flatten(query_points)
        mean, var = chunked_map(self._latent_marginals, x, self._chunk_size)

        def marginals(gain: tf.Tensor, cross: tf.Tensor, chol: tf.Tensor) -> tuple[tf.Tensor, ...]:
            solved = tf.linalg.triangular_solve(chol, tf.transpose(cross), lower=True)  # [K, M]
            return mean + tf.linalg.matvec(cross, gain), var - tf.reduce_sum(solved**2, axis=0)

        return self._conditioned(x, additional_data, marginals, vector_second=True)

    def conditional_predict_joint(
        self, query_points: tf.Tensor, additional_data: Dataset
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Latent mean [..., M, 1] and covariance [..., 1, M, M] at ``query_points`` [M, D] given
        also ``additional_data`` ([..., K, D], [..., K, 1])."""
        x = self._flatten(query_points)
        mean = self._latent_marginals(x)[0]
        cov = self._latent_covariance(x)

        def joint(gain: tf.Tensor, cross: tf.Tensor, chol: tf.Tensor) -> tuple[tf.Tensor, ...]:
            solved = tf.linalg.triangular_solve(chol, tf.transpose(cross), lower=True)  # [K, M]
            second = cov - tf.matmul(solved, solved, transpose_a=True)
            return mean + tf.linalg.matvec(cross, gain), second[None]

        return self._conditioned(x, additional_data, joint, vector_second=False)

    def _conditioned(
        self,
        x: tf.Tensor,
        additional: Dataset,
        predict: Callable[[tf.Tensor, tf.Tensor, tf.Tensor], tuple[tf.Tensor, ...]],
        vector_second: bool,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """``predict(gain, cross, chol)`` for each leading index of ``additional``, with
        ``chol`` the factor of :math:`\\Sigma_{XX} + \\lambda I` [K, K], ``gain`` its solve
        against the residuals [K] and ``cross`` :math:`\\Sigma_{xX}` [M, K]; the mean is
        returned uncentred, [..., M, 1]."""
        points = self._check_points(additional.query_points)
        y = tf.convert_to_tensor(additional.observations, dtype=self._dtype)
        tf.debugging.assert_all_finite(y, "additional observations must be finite")
        flat = tf.reshape(points, tf.concat([[-1], tf.shape(points)[-2:]], axis=0))  # [F, K, D]
        targets = tf.reshape(y, [tf.shape(flat)[0], -1]) - self._centre_tensor()  # [F, K]
        noise = self.get_observation_noise()

        def one(args: tuple[tf.Tensor, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
            fantasy, observed = args
            fantasy_mean = self._latent_marginals(fantasy)[0]
            gram = self._latent_covariance(fantasy)
            eye = tf.eye(tf.shape(fantasy)[0], dtype=self._dtype)
            chol = tf.linalg.cholesky(gram + noise * eye)  # noise > 0: positive definite
            gain = tf.linalg.cholesky_solve(chol, (observed - fantasy_mean)[:, None])[:, 0]
            cross = self._latent_cross_covariance(x, fantasy)  # [M, K]
            mean, second = predict(gain, cross, chol)
            return mean + self._centre_tensor(), second

        spec = tf.TensorSpec(None, self._dtype)
        mean, second = tf.map_fn(one, (flat, targets), fn_output_signature=(spec, spec))
        leading = tf.shape(points)[:-2]
        mean = tf.reshape(mean, tf.concat([leading, tf.shape(mean)[1:]], axis=0))[..., None]
        second = tf.reshape(second, tf.concat([leading, tf.shape(second)[1:]], axis=0))
        return mean, second[..., None] if vector_second else second
