"""Which posterior a decoupled sample is drawn from, read off a Trieste model's protocols.

- Inducing-point models (``SupportsGetInducingVariables``: our
  :class:`~trieste_scalable.models.AdaptiveSVGP`, Trieste's ``SparseVariational`` and
  ``SparseGaussianProcessRegression``): the SVGP update of S-GP-TS eq. (4).
- Exact GPs (``SupportsGetInternalData`` + kernel + noise: Trieste's ``GaussianProcessRegression``):
  Matheron's exact update, as Trieste's ``DecoupledTrajectorySampler`` does for them.

Points still being evaluated (``pending``) are believed observed at their posterior mean (the
kriging believer): the samples' mean does not move, their spread shrinks where points are in
flight, so an asynchronous batch does not pile up around them.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import gpflow
import tensorflow as tf
from trieste.models.interfaces import (
    SupportsGetInducingVariables,
    SupportsGetInternalData,
    SupportsGetKernel,
    SupportsGetMeanFunction,
    SupportsGetObservationNoise,
)

from ..sampling.features import Draws, FeatureMap
from ..sampling.pathwise import (
    MeanFunction,
    PathwiseWeights,
    believed_q_sqrt,
    exact_weights,
    inducing_weights,
    zero_mean,
)

WeightSampler = Callable[[FeatureMap, Draws, int, tf.Tensor], PathwiseWeights]
"""``(features, draws, num_samples, seed) -> weights`` of ``num_samples`` posterior samples."""


class PathwiseSource(NamedTuple):
    """What a rule needs to draw decoupled samples from one model.

    :ivar kernel: The model's kernel (features are built for it).
    :ivar mean_function: Its prior mean function.
    :ivar sample_weights: Draws the samples' weights.
    :ivar num_centres: Number M of canonical basis functions k(., z).
    """

    kernel: Any
    mean_function: MeanFunction
    sample_weights: WeightSampler
    num_centres: int


def pathwise_source(model: Any, pending: Optional[tf.Tensor] = None) -> PathwiseSource:
    """The decoupled-sampling view of ``model`` (see the module docstring), believing the
    ``pending`` points [P, D] observed at their posterior mean where the model reports its
    observation noise.

    :raise ValueError: If the model exposes neither inducing variables nor its data, kernel and
        noise, or has more than one latent GP, or a diagonal q.
    """
    if not isinstance(model, SupportsGetKernel):
        raise ValueError(
            f"decoupled Thompson sampling needs a model with get_kernel, got {model!r}"
        )
    kernel = model.get_kernel()
    mean = model.get_mean_function() if isinstance(model, SupportsGetMeanFunction) else zero_mean
    if isinstance(model, SupportsGetInducingVariables):
        return _inducing_source(model, kernel, mean, pending)
    if isinstance(model, SupportsGetInternalData) and isinstance(
        model, SupportsGetObservationNoise
    ):
        return _exact_source(model, kernel, mean, pending)
    raise ValueError(
        "decoupled Thompson sampling needs a model with inducing variables "
        "(SupportsGetInducingVariables) or with its data, kernel and noise "
        f"(SupportsGetInternalData, SupportsGetObservationNoise); got {type(model).__name__}"
    )


def _inducing_source(
    model: SupportsGetInducingVariables,
    kernel: gpflow.kernels.Kernel,
    mean: Callable[[tf.Tensor], tf.Tensor],
    pending: Optional[tf.Tensor],
) -> PathwiseSource:
    """The source of a model with inducing variables (an SVGP's ``q``), the ``pending`` points
    believed observed at their mean (:func:`~trieste_scalable.sampling.pathwise.believed_q_sqrt`).

    :raise ValueError: On more than one latent GP or a diagonal ``q``.
    """
    inducing, q_mu, q_sqrt, whiten = model.get_inducing_variables()
    inducing = tf.convert_to_tensor(inducing)
    q_mu, q_sqrt = tf.convert_to_tensor(q_mu), tf.convert_to_tensor(q_sqrt)
    if q_mu.shape[-1] != 1 or len(q_sqrt.shape) != 3 or q_sqrt.shape[0] != 1:
        raise ValueError(
            "decoupled Thompson sampling supports a single latent GP with a full-covariance "
            f"q (q_mu [M, 1], q_sqrt [1, M, M]); got {q_mu.shape} and {q_sqrt.shape}"
        )

    noise = noise_of(model)
    if pending is not None and pending.shape[0] and noise is not None:
        root = believed_q_sqrt(kernel, inducing, q_sqrt[0], bool(whiten), pending, noise)
        q_sqrt = root[None]

    def sample_inducing(
        features: FeatureMap, draws: Draws, num: int, seed: tf.Tensor
    ) -> PathwiseWeights:
        return inducing_weights(
            features,
            draws,
            inducing=inducing,
            q_mu=q_mu[:, 0],
            q_sqrt=q_sqrt[0],
            whiten=bool(whiten),
            num_samples=num,
            seed=seed,
        )

    return PathwiseSource(kernel, mean, sample_inducing, int(inducing.shape[0]))


def _exact_source(
    model: Any,
    kernel: gpflow.kernels.Kernel,
    mean: Callable[[tf.Tensor], tf.Tensor],
    pending: Optional[tf.Tensor],
) -> PathwiseSource:
    """The source of an exact GP (its data, kernel and noise), the ``pending`` points believed
    observed at the model's mean."""
    data = model.get_internal_data()
    inputs = tf.convert_to_tensor(data.query_points)
    observations = tf.convert_to_tensor(data.observations)
    if pending is not None and pending.shape[0]:  # believed: observed at the mean
        inputs = tf.concat([inputs, pending], axis=0)
        observations = tf.concat([observations, model.predict(pending)[0]], axis=0)
    centred = (observations - mean(inputs))[:, 0]
    noise = tf.convert_to_tensor(model.get_observation_noise(), dtype=inputs.dtype)

    def sample_exact(
        features: FeatureMap, draws: Draws, num: int, seed: tf.Tensor
    ) -> PathwiseWeights:
        return exact_weights(
            features,
            draws,
            inputs=inputs,
            centred_observations=centred,
            noise_variance=noise,
            num_samples=num,
            seed=seed,
        )

    return PathwiseSource(kernel, mean, sample_exact, int(inputs.shape[0]))


def noise_of(model: Any) -> Optional[tf.Tensor]:
    """The model's observation noise variance, if it reports one."""
    if isinstance(model, SupportsGetObservationNoise):
        return tf.convert_to_tensor(model.get_observation_noise())
    return None
