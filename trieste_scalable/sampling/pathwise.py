r"""Decoupled (pathwise) posterior samples, S-GP-TS eq. (4) with :math:`\alpha_t = 1`
(Wilson et al. 2020, Matheron's rule):

.. math::
    \tilde f_b(x) = m(x) + \phi(x)^T w_b + k(x, Z)\, v_b, \qquad w_b \sim N(0, I_F)

- inducing-point update (SVGP): :math:`u_b \sim q(u)`, :math:`v_b = K_{ZZ}^{-1}(u_b - \Phi_Z w_b)`;
  a whitened :math:`q = N(m_w, S_w S_w^T)` is first mapped to :math:`u_b = L_{ZZ}(m_w + S_w
  \varepsilon_b)` with the same jittered :math:`K_{ZZ}` as the solve (a whitened q is
  converted to u before the solve; fed as unwhitened it is badly wrong);
- exact update (GPR, Z = the training inputs X): :math:`v_b = (K_{XX} + \sigma^2 I)^{-1}
  (y - m(X) - \Phi_X w_b - \varepsilon_b)`, :math:`\varepsilon_b \sim N(0, \sigma^2 I)`.

All B samples are drawn at once as weight matrices ``w`` [F, B] and ``v`` [M, B] from a
stateless seed, so scoring N candidates for every sample is two matrix products, and samples are
independent whatever the global TF seed is. Pure TensorFlow: no Trieste imports.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import tensorflow as tf
from check_shapes import check_shapes

from ..numerics.linalg import cholesky_with_jitter, lower_root_of_inverse
from .features import Draws, FeatureMap


class PathwiseWeights(NamedTuple):
    """B decoupled samples without their mean function.

    :ivar prior: Feature weights w [F, B].
    :ivar centres: Centres Z of the canonical basis k(., Z) [M, D].
    :ivar update: Canonical weights v [M, B].
    """

    prior: tf.Tensor
    centres: tf.Tensor
    update: tf.Tensor


@check_shapes(
    "inducing: [M, D]",
    "q_mu: [M]",
    "q_sqrt: [M, M]",
    "return.prior: [F, B]",
    "return.update: [M, B]",
)
def inducing_weights(
    features: FeatureMap,
    draws: Draws,
    inducing: tf.Tensor,
    q_mu: tf.Tensor,
    q_sqrt: tf.Tensor,
    whiten: bool,
    num_samples: int,
    seed: tf.Tensor,
    jitter: float = 1e-6,
) -> PathwiseWeights:
    """Weights of ``num_samples`` samples of an SVGP posterior (eq. 4).

    :param q_mu: Variational mean of u (whitened if ``whiten``), net of the mean function [M].
    :param q_sqrt: Lower-triangular square root of the variational covariance [M, M].
    :param seed: Stateless seed [2].
    """
    dtype = inducing.dtype
    seeds = tf.random.experimental.stateless_split(seed, 2)
    size = tf.shape(inducing)[0]
    prior = tf.random.stateless_normal([features.num_features, num_samples], seeds[0], dtype=dtype)
    noise = tf.random.stateless_normal([size, num_samples], seeds[1], dtype=dtype)
    chol = cholesky_with_jitter(features.kernel(inducing), jitter)
    u = q_mu[:, None] + tf.matmul(q_sqrt, noise)  # [M, B]
    if whiten:
        u = tf.matmul(chol, u)
    residual = u - tf.matmul(features(draws, inducing), prior)  # [M, B]
    return PathwiseWeights(prior, inducing, tf.linalg.cholesky_solve(chol, residual))


@check_shapes(
    "inducing: [M, D]",
    "q_sqrt: [M, M]",
    "pending: [P, D]",
    "return: [M, M]",
)
def believed_q_sqrt(
    kernel: Any,
    inducing: tf.Tensor,
    q_sqrt: tf.Tensor,
    whiten: bool,
    pending: tf.Tensor,
    noise: tf.Tensor,
    jitter: float = 1e-6,
) -> tf.Tensor:
    r"""The root of q's covariance once the ``pending`` points are observed at their posterior
    mean with noise ``noise`` (the kriging believer: the mean does not move, the covariance
    shrinks where the points are in flight):

    .. math:: \Sigma' = (\Sigma^{-1} + \Phi^T\Phi/\lambda)^{-1} = S (I + A^T A)^{-1} S^T,
        \qquad A = \Phi S / \sqrt\lambda

    with :math:`f(x_p) = \Phi_p u` (:math:`\Phi = k(X_p, Z) L^{-T}` whitened, else
    :math:`k(X_p, Z) K^{-1}`); the root :math:`S R`, :math:`R R^T = (I + A^T A)^{-1}` by
    :func:`~trieste_scalable.numerics.linalg.lower_root_of_inverse` (no explicit inverse).
    """
    chol = cholesky_with_jitter(kernel(inducing), jitter)
    phi_t = tf.linalg.triangular_solve(chol, kernel(inducing, pending), lower=True)  # [M, P]
    if not whiten:
        phi_t = tf.linalg.triangular_solve(chol, phi_t, lower=True, adjoint=True)
    a = tf.matmul(phi_t, q_sqrt, transpose_a=True) / tf.sqrt(tf.cast(noise, q_sqrt.dtype))
    inner = tf.eye(tf.shape(q_sqrt)[0], dtype=q_sqrt.dtype) + tf.matmul(a, a, transpose_a=True)
    return tf.matmul(q_sqrt, lower_root_of_inverse(inner))


@check_shapes(
    "inputs: [N, D]",
    "centred_observations: [N]",
    "return.prior: [F, B]",
    "return.update: [N, B]",
)
def exact_weights(
    features: FeatureMap,
    draws: Draws,
    inputs: tf.Tensor,
    centred_observations: tf.Tensor,
    noise_variance: tf.Tensor,
    num_samples: int,
    seed: tf.Tensor,
    jitter: float = 1e-6,
) -> PathwiseWeights:
    """Weights of ``num_samples`` samples of an exact GP posterior (Matheron's rule).

    :param centred_observations: y - m(X) [N].
    :param noise_variance: Gaussian likelihood variance [].
    """
    dtype = inputs.dtype
    seeds = tf.random.experimental.stateless_split(seed, 2)
    size = tf.shape(inputs)[0]
    prior = tf.random.stateless_normal([features.num_features, num_samples], seeds[0], dtype=dtype)
    epsilon = tf.random.stateless_normal([size, num_samples], seeds[1], dtype=dtype)
    gram = features.kernel(inputs) + noise_variance * tf.eye(size, dtype=dtype)
    chol = cholesky_with_jitter(gram, jitter)
    residual = (
        centred_observations[:, None]
        - tf.matmul(features(draws, inputs), prior)
        - tf.sqrt(noise_variance) * epsilon
    )
    return PathwiseWeights(prior, inputs, tf.linalg.cholesky_solve(chol, residual))


MeanFunction = Callable[[tf.Tensor], tf.Tensor]
"""Maps [N, D] to the prior mean [N, 1] (a GPflow mean function)."""


@check_shapes("x: [N, D]", "prior_features: [N, F] if prior_features is not None", "return: [N, B]")
def evaluate(
    features: FeatureMap,
    mean_function: MeanFunction,
    draws: Draws,
    weights: PathwiseWeights,
    x: tf.Tensor,
    prior_features: Optional[tf.Tensor] = None,
    products: Optional[tf.DType] = None,
) -> tf.Tensor:
    """All B samples at every point of ``x``: two matrix products, [N, B] (in the dtype of the
    products).

    :param x: Inputs, in the model's dtype or (with ``prior_features`` given) the products':
        the kernel rows are formed in the products' dtype, the mean in the model's.
    :param prior_features: ``features(draws, x)``, if already known (cached).
    :param products: The dtype of the two products and of the values (default ``x``'s): float32
        rounds each sample value to about 1e-7 of its scale and multiplies about four times
        faster on CPU.
    """
    products = products or x.dtype
    if prior_features is None:
        prior_features = features(draws, x)

    def product(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
        return tf.matmul(tf.cast(a, products), tf.cast(b, products))

    prior = product(prior_features, weights.prior)
    update = product(features.cross_covariance(x, weights.centres, products), weights.update)
    mean = mean_function(tf.cast(x, weights.prior.dtype))  # in the model's dtype
    return tf.cast(mean, products) + prior + update


@check_shapes("x: [B, D]", "return: [B]")
def evaluate_paired(
    features: FeatureMap,
    mean_function: MeanFunction,
    draws: Draws,
    weights: PathwiseWeights,
    x: tf.Tensor,
) -> tf.Tensor:
    """Sample b at its own point x_b (for optimising each sample in a continuous space), [B]."""
    prior = tf.reduce_sum(features(draws, x) * tf.transpose(weights.prior), axis=-1)
    canonical = features.cross_covariance(x, weights.centres)  # [B, M]
    update = tf.reduce_sum(canonical * tf.transpose(weights.update), axis=-1)
    return mean_function(x)[:, 0] + prior + update


def zero_mean(x: tf.Tensor) -> tf.Tensor:
    """The zero mean function [N, 1]."""
    return tf.zeros_like(x[:, :1])
