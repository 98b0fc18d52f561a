r"""Whitened SVGP posterior over a padded set of inducing points (S-GP-TS §3.2).

With inducing points Z (``M`` rows, ``mask == 1`` for real ones), :math:`L L^T = K_{ZZ}` (masked
as in :mod:`.dtc`: padding rows are identity rows), embedding :math:`z(x) = L^{-1} k_Z(x)` and a
whitened :math:`q(v) = N(m_w, S_w S_w^T)`, :math:`u = L v`, constant prior mean :math:`c`:

.. math::
    \mu(x) = c + z(x)^T m_w, \qquad
    k(x, x') = k(x, x') - z(x)^T z(x') + z(x)^T S_w S_w^T z(x')

Padding entries have :math:`m_w = 0` and identity rows of :math:`S_w`, so they contribute exactly
nothing. For a Gaussian likelihood the ELBO-optimal :math:`q` is closed form (Titsias 2009):
:math:`S_w S_w^T = \sigma^2 V^{-1}`, :math:`m_w = V^{-1} \sum_i z_i (\mathrm{ysum}_i - n_i c)`
with :math:`V = \sum_i n_i z_i z_i^T + \sigma^2 I` (one natural-gradient step of size one): the
mean is the DTC weight vector :math:`w` of :mod:`.embedding`, so with the optimal q this posterior
*is* the DTC posterior, and the ELBO at that optimum is the collapsed bound of :mod:`.evidence`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .compile import compiler, sets_spec, specs
from .embedding import Kernel, embed, factor_data, per_set, rows_of
from .evidence import CompiledEvidence
from .linalg import cholesky_with_jitter, lower_root_of_inverse


class WhitenedPosterior(NamedTuple):
    """A whitened SVGP posterior with its :math:`K_{ZZ}` factor precomputed.

    :ivar inducing: Padded inducing points [M, D].
    :ivar mask: 1.0 for real inducing points, 0.0 for padding [M].
    :ivar chol_kzz: Cholesky factor of the masked, jittered :math:`K_{ZZ}` [M, M].
    :ivar q_mu: Whitened variational mean [M].
    :ivar q_sqrt: Lower-triangular whitened variational square root [M, M].
    :ivar mean: Constant prior mean [].
    """

    inducing: tf.Tensor
    mask: tf.Tensor
    chol_kzz: tf.Tensor
    q_mu: tf.Tensor
    q_sqrt: tf.Tensor
    mean: tf.Tensor


@check_shapes(
    "inducing: [M, D]",
    "mask: [M]",
    "chol_kzz: [M, M]",
    "unique_inputs: [n, D]",
    "counts: [n]",
    "sums: [n]",
    "return[0]: [M]",
    "return[1]: [M, M]",
)
def optimal_q(
    kernel: Kernel,
    inducing: tf.Tensor,
    mask: tf.Tensor,
    chol_kzz: tf.Tensor,
    unique_inputs: tf.Tensor,
    counts: tf.Tensor,
    sums: tf.Tensor,
    noise: tf.Tensor,
    mean: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The ELBO-optimal whitened q (module docstring), from counts and sums of replicated data;
    the lower-triangular root of :math:`V^{-1}` by :func:`.linalg.lower_root_of_inverse`."""
    factor = factor_data(
        kernel,
        unique_inputs,
        counts=counts,
        sums=sums,
        inducing=inducing,
        mask=mask,
        chol_kss=chol_kzz,
        noise=noise,
        mean=mean,
    )
    return factor.weights, tf.sqrt(noise) * lower_root_of_inverse(factor.precision)


@check_shapes("x: [N, D]", "return[0]: [N]", "return[1]: [N]")
def marginals(
    kernel: Kernel, posterior: WhitenedPosterior, x: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """Posterior mean and latent variance at each row of ``x``."""
    p = posterior
    z = embed(kernel, x, p.inducing, p.mask, p.chol_kzz)  # [N, M]
    mean = p.mean + tf.linalg.matvec(z, p.q_mu)
    spread = tf.matmul(z, p.q_sqrt)  # [N, M]
    variance = kernel(x, full_cov=False) - tf.reduce_sum(z**2, -1) + tf.reduce_sum(spread**2, -1)
    return mean, tf.maximum(variance, 0.0)


@check_shapes("x: [N, D]", "return: [N, N]")
def covariance(kernel: Kernel, posterior: WhitenedPosterior, x: tf.Tensor) -> tf.Tensor:
    """Posterior latent covariance over the rows of ``x`` (one embedding: the warm start's
    projection calls this at every inducing point)."""
    return set_covariance(kernel, posterior, x[None])[0]


@check_shapes("sets: [S, B, D]", "return: [S, B, B]")
def set_covariance(kernel: Kernel, posterior: WhitenedPosterior, sets: tf.Tensor) -> tf.Tensor:
    """The posterior latent covariance of each set of rows, all sets embedded at once."""
    p = posterior
    z = embed(kernel, rows_of(sets), p.inducing, p.mask, p.chol_kzz)  # [SB, M]
    spread = per_set(tf.matmul(z, p.q_sqrt), sets)  # [S, B, M]
    z = per_set(z, sets)
    nystrom = tf.matmul(z, z, transpose_b=True)
    return kernel(sets) - nystrom + tf.matmul(spread, spread, transpose_b=True)


@check_shapes("x: [N, D]", "x2: [P, D]", "return: [N, P]")
def cross_covariance(
    kernel: Kernel, posterior: WhitenedPosterior, x: tf.Tensor, x2: tf.Tensor
) -> tf.Tensor:
    """Posterior latent covariance between the rows of ``x`` and of ``x2``."""
    p = posterior
    z = embed(kernel, x, p.inducing, p.mask, p.chol_kzz)  # [N, M]
    z2 = embed(kernel, x2, p.inducing, p.mask, p.chol_kzz)  # [P, M]
    spread, spread2 = tf.matmul(z, p.q_sqrt), tf.matmul(z2, p.q_sqrt)
    return (
        kernel(x, x2)
        - tf.matmul(z, z2, transpose_b=True)
        + tf.matmul(spread, spread2, transpose_b=True)
    )


@check_shapes(
    "new_inducing: [P, D]",
    "new_mask: [P]",
    "new_chol_kzz: [P, P]",
    "return[0]: [P]",
    "return[1]: [P, P]",
)
def project(
    kernel: Kernel,
    posterior: WhitenedPosterior,
    new_inducing: tf.Tensor,
    new_mask: tf.Tensor,
    new_chol_kzz: tf.Tensor,
    jitter: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Warm start: the current posterior at new inducing points, as a whitened q there.

    The joint posterior :math:`N(\\mu', \\Sigma')` of f at the real new points is whitened with the
    new factor :math:`L'`: :math:`m_w = L'^{-1}(\\mu' - c)`, :math:`S_w = \\mathrm{chol}(L'^{-1}
    \\Sigma' L'^{-T} + \\text{jitter}\\,I)` (Trieste's ``_update_inducing_variables``). Padding
    rows come out as zero mean and identity rows.
    """
    joint_mean = marginals(kernel, posterior, new_inducing)[0] - posterior.mean
    joint_cov = covariance(kernel, posterior, new_inducing)
    outer = new_mask[:, None] * new_mask[None, :]
    joint_cov = joint_cov * outer + tf.linalg.diag(1.0 - new_mask)
    joint_mean = joint_mean * new_mask
    q_mu = tf.linalg.triangular_solve(new_chol_kzz, joint_mean[:, None], lower=True)[:, 0]
    half = tf.linalg.triangular_solve(new_chol_kzz, joint_cov, lower=True)  # L'^-1 S
    whitened = tf.linalg.triangular_solve(new_chol_kzz, tf.transpose(half), lower=True)
    whitened = 0.5 * (whitened + tf.transpose(whitened))
    return q_mu, cholesky_with_jitter(whitened, jitter)


@check_shapes("points: [n, D]", "return: [m]")
def greedy_variance_selection(kernel: Kernel, points: tf.Tensor, size: tf.Tensor) -> tf.Tensor:
    """Greedy conditional-variance selection (Burt et al. 2020): a partial
    pivoted Cholesky of :math:`K_{XX}` that picks, ``size`` times, the point of largest variance
    conditional on those picked so far. O(n m^2) time, O(n m) memory.

    :param points: Distinct candidate inducing points (the unique evaluated inputs) [n, D].
    :param size: Number m <= n of points to pick [].
    :return: Indices of the picked points, in order [m].
    """
    n = tf.shape(points)[0]
    residual = kernel(points, full_cov=False)  # [n]
    rows = tf.zeros([size, n], dtype=points.dtype)  # e_j(x) of the pivoted Cholesky, [m, n]
    picked = tf.zeros([size], dtype=tf.int32)

    def body(
        j: tf.Tensor, residual: tf.Tensor, rows: tf.Tensor, picked: tf.Tensor
    ) -> tuple[tf.Tensor, ...]:
        pivot = tf.argmax(residual, output_type=tf.int32)
        column = kernel(points, points[pivot : pivot + 1])[:, 0]  # [n]
        correction = tf.linalg.matvec(rows, rows[:, pivot], transpose_a=True)  # [n]
        row = (column - correction) / tf.sqrt(tf.maximum(residual[pivot], 1e-30))
        residual = tf.maximum(residual - row**2, 0.0)
        residual = tf.tensor_scatter_nd_update(residual, [[pivot]], tf.constant([-1.0], rows.dtype))
        rows = tf.tensor_scatter_nd_update(rows, [[j]], row[None])
        picked = tf.tensor_scatter_nd_update(picked, [[j]], [pivot])
        return j + 1, residual, rows, picked

    _, _, _, picked = tf.while_loop(
        lambda j, *_: j < size, body, [tf.constant(0), residual, rows, picked]
    )
    return picked


@check_shapes("unique_inputs: [n, D]", "counts: [n]", "sums: [n]", "return: []")
def elbo(
    kernel: Kernel,
    posterior: WhitenedPosterior,
    unique_inputs: tf.Tensor,
    counts: tf.Tensor,
    sums: tf.Tensor,
    sum_squares: tf.Tensor,
    noise: tf.Tensor,
) -> tf.Tensor:
    """The (uncollapsed) SVGP ELBO of all evaluations for the posterior's q (Hensman et al. 2013):
    :math:`\\sum_i \\mathbb{E}_q \\log N(y_i | f(x_i), \\sigma^2) - KL(q(v) \\| N(0, I))`, from
    counts, sums and the total sum of squares (repeats cost nothing extra)."""

    mean, variance = marginals(kernel, posterior, unique_inputs)
    total = tf.reduce_sum(counts)
    squared_error = sum_squares - 2.0 * tf.reduce_sum(sums * mean) + tf.reduce_sum(counts * mean**2)
    expected = -0.5 * (
        total * tf.math.log(2.0 * math.pi * noise)
        + (squared_error + tf.reduce_sum(counts * variance)) / noise
    )
    q_sqrt = posterior.q_sqrt
    kl = 0.5 * (
        tf.reduce_sum(q_sqrt**2)
        + tf.reduce_sum(posterior.q_mu**2)
        - tf.cast(tf.shape(q_sqrt)[0], q_sqrt.dtype)
        - 2.0 * tf.reduce_sum(tf.math.log(tf.abs(tf.linalg.diag_part(q_sqrt))))
    )
    return expected - kl


class CompiledSVGP(CompiledEvidence):
    """The whitened-SVGP numerics compiled for one kernel (each traced once: :mod:`.compile`)."""

    def __init__(self, kernel: Kernel, dtype: tf.DType):
        matrix, vector, scalar = specs(dtype)
        posterior = WhitenedPosterior(matrix, vector, matrix, vector, matrix, scalar)
        super().__init__(kernel, dtype)
        compile_ = compiler(kernel)
        self.optimal_q = compile_(
            optimal_q, matrix, vector, matrix, matrix, vector, vector, scalar, scalar
        )
        self.marginals = compile_(marginals, posterior, matrix)
        self.covariance = compile_(covariance, posterior, matrix)
        self.set_covariance = compile_(set_covariance, posterior, sets_spec(dtype))
        self.cross_covariance = compile_(cross_covariance, posterior, matrix, matrix)
        self.project = compile_(project, posterior, matrix, vector, matrix, scalar)
        self.elbo = compile_(elbo, posterior, matrix, vector, vector, scalar, scalar)
        self.greedy_selection = compile_(
            greedy_variance_selection, matrix, tf.TensorSpec([], tf.int32)
        )
