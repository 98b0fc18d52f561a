r"""Exact GP over unique inputs with replication counts (MINI-META).

With unique inputs :math:`U` (q rows), counts :math:`n_i`, averaged observations
:math:`\bar y_i` and constant prior mean :math:`c`, the exact posterior on all evaluations is the
heteroscedastic GP with one pseudo-observation per unique input and noise :math:`\lambda/n_i`:

.. math::
    M = K_U + \lambda\,\mathrm{diag}(1/n) = L L^T, \qquad \alpha = M^{-1}(\bar y - c)

    \mu(x) = c + k(x, U)\alpha, \qquad \sigma^2(x) = k(x, x) - \|L^{-1} k(U, x)\|^2

An epoch of B more evaluations at one input changes :math:`M` by a rank-one downdate of one
diagonal entry (a repeated input) or appends one row (a new input): O(q^2) either way.

The log marginal likelihood of all t evaluations (not only of the group means, whose
maximisation drives the noise variance to its floor), with
:math:`B = I + W^{1/2} K_U W^{1/2}/\lambda = L_B L_B^T` (eigenvalues >= 1, stable),
:math:`c_B = L_B^{-1} W^{1/2}(\bar y - c)` and the within-replicate sum of squares SSW:

.. math::
    \log p(y) = -\frac{\mathrm{SSW} + c_B^T c_B}{2\lambda} - \sum_i \log L_{B,ii}
        - \frac t2 \log(2\pi\lambda)
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .compile import CompiledFunctions, compiler, sets_spec, specs
from .embedding import Kernel, per_set, rows_of
from .linalg import cholesky_rank_one_update, solve_lower


class ReplicatedPosterior(NamedTuple):
    """Factorised exact posterior over unique inputs.

    :ivar inputs: Unique inputs [q, D].
    :ivar chol: Cholesky factor of :math:`M = K_U + \\lambda\\,\\mathrm{diag}(1/n)` [q, q].
    :ivar alpha: :math:`M^{-1}(\\bar y - c)` [q].
    :ivar mean: Constant prior mean :math:`c` [].
    """

    inputs: tf.Tensor
    chol: tf.Tensor
    alpha: tf.Tensor
    mean: tf.Tensor


@check_shapes("inputs: [q, D]", "counts: [q]", "return: [q, q]")
def noisy_gram(kernel: Kernel, inputs: tf.Tensor, counts: tf.Tensor, noise: tf.Tensor) -> tf.Tensor:
    """:math:`M = K_U + \\lambda\\,\\mathrm{diag}(1/n)`."""
    return kernel(inputs, inputs) + tf.linalg.diag(noise / counts)


@check_shapes("chol: [q, q]", "means: [q]", "return: [q]")
def weights(chol: tf.Tensor, means: tf.Tensor, mean: tf.Tensor) -> tf.Tensor:
    """:math:`\\alpha = M^{-1}(\\bar y - c)`."""
    return tf.linalg.cholesky_solve(chol, (means - mean)[:, None])[:, 0]


@check_shapes("x: [N, D]", "return[0]: [N]", "return[1]: [N]")
def marginals(
    kernel: Kernel, posterior: ReplicatedPosterior, x: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """Posterior mean and latent variance at each row of ``x``."""
    kux = kernel(posterior.inputs, x)  # [q, N]
    projected = solve_lower(posterior.chol, kux)  # [q, N]
    variance = kernel(x, full_cov=False) - tf.reduce_sum(projected**2, axis=0)
    mean = posterior.mean + tf.linalg.matvec(kux, posterior.alpha, transpose_a=True)
    return mean, tf.maximum(variance, 0.0)


@check_shapes("x: [N, D]", "return: [N, N]")
def covariance(kernel: Kernel, posterior: ReplicatedPosterior, x: tf.Tensor) -> tf.Tensor:
    """Joint posterior covariance of the rows of ``x``."""
    return set_covariance(kernel, posterior, x[None])[0]


@check_shapes("sets: [S, B, D]", "return: [S, B, B]")
def set_covariance(kernel: Kernel, posterior: ReplicatedPosterior, sets: tf.Tensor) -> tf.Tensor:
    """The joint posterior covariance of each set of rows, all sets solved at once."""
    kux = kernel(posterior.inputs, rows_of(sets))  # [q, SB]
    projected = solve_lower(posterior.chol, kux)
    projected = per_set(tf.transpose(projected), sets)  # [S, B, q]
    return kernel(sets) - tf.matmul(projected, projected, transpose_b=True)


@check_shapes("x: [N, D]", "x2: [P, D]", "return: [N, P]")
def cross_covariance(
    kernel: Kernel, posterior: ReplicatedPosterior, x: tf.Tensor, x2: tf.Tensor
) -> tf.Tensor:
    """Posterior covariance between the rows of ``x`` and of ``x2``."""
    solve = partial(solve_lower, posterior.chol)
    projected = solve(kernel(posterior.inputs, x))  # [q, N]
    projected2 = solve(kernel(posterior.inputs, x2))  # [q, P]
    return kernel(x, x2) - tf.matmul(projected, projected2, transpose_a=True)


@check_shapes("return[0]: [q]", "return[1]: [q, q]")
def at_inputs(kernel: Kernel, posterior: ReplicatedPosterior) -> tuple[tf.Tensor, tf.Tensor]:
    """Posterior mean net of :math:`c` and covariance of f at the unique inputs:
    :math:`K_U \\alpha` and :math:`K_U - K_U M^{-1} K_U` (the inducing-variable view: the data
    are observed only there, so f elsewhere given f(U) is the prior's conditional, exactly)."""
    gram = kernel(posterior.inputs, posterior.inputs)
    projected = tf.linalg.triangular_solve(posterior.chol, gram, lower=True)
    covariance = gram - tf.matmul(projected, projected, transpose_a=True)
    return tf.linalg.matvec(gram, posterior.alpha), 0.5 * (covariance + tf.transpose(covariance))


@check_shapes("inputs: [q, D]", "x: [1, D]", "chol: [q, q]", "return: [q1, q1]")
def append_input(
    kernel: Kernel,
    inputs: tf.Tensor,
    chol: tf.Tensor,
    x: tf.Tensor,
    noise_over_count: tf.Tensor,
) -> tf.Tensor:
    """Cholesky factor of :math:`M` with a new input ``x`` observed with noise ``noise/count``
    (O(q^2)): the new row is :math:`[L^{-1}k(U, x);\\ \\sqrt{k(x,x) + \\lambda/n - \\|l\\|^2}]`."""
    row = tf.linalg.triangular_solve(chol, kernel(inputs, x), lower=True)[:, 0]  # [q]
    corner = tf.sqrt(kernel(x, full_cov=False)[0] + noise_over_count - tf.reduce_sum(row**2))
    q = tf.shape(chol)[0]
    top = tf.concat([chol, tf.zeros([q, 1], dtype=chol.dtype)], axis=1)
    bottom = tf.concat([row, corner[None]], axis=0)[None, :]
    return tf.concat([top, bottom], axis=0)


@check_shapes(
    "inputs: [q, D]",
    "counts: [q]",
    "means: [q]",
    "return: []",
)
def log_marginal_likelihood(
    kernel: Kernel,
    inputs: tf.Tensor,
    counts: tf.Tensor,
    means: tf.Tensor,
    within_ss: tf.Tensor,
    noise: tf.Tensor,
    mean: tf.Tensor,
) -> tf.Tensor:
    """Exact log likelihood of every evaluation from sufficient statistics.

    :param within_ss: Within-replicate sum of squares :math:`\\sum_i\\sum_j (y_{ij} - \\bar
        y_i)^2` [].
    """
    root = tf.sqrt(counts)
    b = tf.eye(tf.shape(inputs)[0], dtype=inputs.dtype) + (
        root[:, None] * kernel(inputs, inputs) * root[None, :] / noise
    )
    chol = tf.linalg.cholesky(b)
    c = tf.linalg.triangular_solve(chol, (root * (means - mean))[:, None], lower=True)[:, 0]
    total = tf.reduce_sum(counts)
    return (
        -(within_ss + tf.reduce_sum(c**2)) / (2.0 * noise)
        - tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)))
        - 0.5 * total * tf.math.log(2.0 * math.pi * noise)
    )


@check_shapes("inputs: [q, D]", "counts: [q]", "return: []")
def information_gain(
    kernel: Kernel, inputs: tf.Tensor, counts: tf.Tensor, noise: tf.Tensor
) -> tf.Tensor:
    """:math:`\\log\\det(I + K_t/\\lambda) = \\log\\det(I + W^{1/2} K_U W^{1/2}/\\lambda)`."""
    root = tf.sqrt(counts)
    b = tf.eye(tf.shape(inputs)[0], dtype=inputs.dtype) + (
        root[:, None] * kernel(inputs, inputs) * root[None, :] / noise
    )
    return 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(tf.linalg.cholesky(b))))


class CompiledReplicated(CompiledFunctions):
    """The exact replicated-input GP compiled for one kernel (each traced once: :mod:`.compile`)."""

    def __init__(self, kernel: Kernel, dtype: tf.DType):
        matrix, vector, scalar = specs(dtype)
        posterior = ReplicatedPosterior(matrix, matrix, vector, scalar)
        self.kernel = kernel
        compile_ = compiler(kernel)
        self.noisy_gram = compile_(noisy_gram, matrix, vector, scalar)
        self.marginals = compile_(marginals, posterior, matrix)
        self.covariance = compile_(covariance, posterior, matrix)
        self.set_covariance = compile_(set_covariance, posterior, sets_spec(dtype))
        self.cross_covariance = compile_(cross_covariance, posterior, matrix, matrix)
        self.at_inputs = compile_(at_inputs, posterior)
        self.append_input = compile_(append_input, matrix, matrix, matrix, scalar)
        self.exact_evidence = compile_(
            log_marginal_likelihood, matrix, vector, vector, scalar, scalar, scalar
        )
        self.information_gain = compile_(information_gain, matrix, vector, scalar)
        self.weights = tf.function(
            weights, input_signature=[matrix, vector, scalar], autograph=False
        )
        self.downdate = tf.function(
            partial(cholesky_rank_one_update, downdate=True),
            input_signature=[matrix, vector],
            autograph=False,
        )
