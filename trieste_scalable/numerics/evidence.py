r"""The SGPR (Titsias) evidence lower bound with the dictionary as inducing points, computed from
sufficient statistics of replicated data, so its cost depends on the number of unique inputs.

With :math:`z`, :math:`V` and :math:`b` of :mod:`.embedding`, :math:`Q = Z Z^T` over all
:math:`N` evaluations (repeats included) and centred observations :math:`y`:

.. math::
    \log|Q + \lambda I_N| = (N - M)\log\lambda + \log|V|, \qquad
    y^T (Q + \lambda I)^{-1} y = (y^T y - b^T V^{-1} b) / \lambda, \quad b = Z^T y

    \mathcal{L} = -\tfrac{N}{2}\log 2\pi - \tfrac12 \log|Q + \lambda I|
        - \tfrac12 y^T (Q + \lambda I)^{-1} y - \tfrac{1}{2\lambda} \mathrm{tr}(K - Q)

and :math:`Z^T Z`, :math:`Z^T y`, :math:`y^T y` and :math:`\mathrm{tr}(K - Q)` only need the counts,
sums and the total sum of squares per unique input. This equals GPflow's ``SGPR.elbo`` on the
duplicated data (tested).
"""

from __future__ import annotations

import math

import tensorflow as tf
from check_shapes import check_shapes

from . import replicated
from .compile import CompiledFunctions, compiler, specs
from .embedding import Kernel, factor_data, masked_gram
from .linalg import cholesky_with_jitter


@check_shapes(
    "inducing: [M, D]",
    "mask: [M]",
    "unique_inputs: [n, D]",
    "counts: [n]",
    "sums: [n]",
    "return: []",
)
def sgpr_evidence(
    kernel: Kernel,
    inducing: tf.Tensor,
    mask: tf.Tensor,
    unique_inputs: tf.Tensor,
    counts: tf.Tensor,
    sums: tf.Tensor,
    sum_squares: tf.Tensor,
    noise: tf.Tensor,
    mean: tf.Tensor,
    jitter: tf.Tensor,
) -> tf.Tensor:
    """Titsias' collapsed bound on the log marginal likelihood of all evaluations.

    :param sum_squares: Sum over every evaluation of the squared (uncentred) observation [].
    :param jitter: Absolute jitter added to the diagonal of :math:`K_S` [].
    :return: The bound [].
    """
    capacity = tf.cast(tf.shape(inducing)[0], inducing.dtype)
    total = tf.reduce_sum(counts)
    chol_kss = cholesky_with_jitter(masked_gram(kernel, inducing, mask), jitter)
    factor = factor_data(
        kernel,
        unique_inputs,
        counts=counts,
        sums=sums,
        inducing=inducing,
        mask=mask,
        chol_kss=chol_kss,
        noise=noise,
        mean=mean,
    )
    centred_squares = sum_squares - 2.0 * mean * tf.reduce_sum(sums) + total * mean**2
    c = tf.linalg.triangular_solve(factor.chol_v, factor.projected[:, None], lower=True)[:, 0]
    log_det = (total - capacity) * tf.math.log(noise) + 2.0 * tf.reduce_sum(
        tf.math.log(tf.linalg.diag_part(factor.chol_v))
    )
    quadratic = (centred_squares - tf.reduce_sum(c**2)) / noise
    residual = kernel(unique_inputs, full_cov=False) - tf.reduce_sum(factor.embedding**2, axis=-1)
    trace = tf.reduce_sum(counts * residual) / noise
    return -0.5 * (total * math.log(2.0 * math.pi) + log_det + quadratic + trace)


class CompiledEvidence(CompiledFunctions):
    """What every inducing-point model compiles (each traced once: :mod:`.compile`): the masked
    :math:`K_S`, the SGPR bound and the exact log likelihood of its fits.

    :param kernel: A GPflow-style kernel.
    :param dtype: The dtype of every tensor argument.
    """

    def __init__(self, kernel: Kernel, dtype: tf.DType):
        matrix, vector, scalar = specs(dtype)
        self.kernel = kernel
        compile_ = compiler(kernel)
        self.masked_gram = compile_(masked_gram, matrix, vector)
        self.evidence = compile_(
            sgpr_evidence, matrix, vector, matrix, vector, vector, scalar, scalar, scalar, scalar
        )
        self.exact_evidence = compile_(
            replicated.log_marginal_likelihood, matrix, vector, vector, scalar, scalar, scalar
        )
