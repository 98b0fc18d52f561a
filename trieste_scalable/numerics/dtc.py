r"""The DTC (Nystrom) posterior of BKB/BBKB over a padded dictionary.

Notation follows the BBKB paper and the shared core of :mod:`.embedding`
(:math:`z`, :math:`V`, :math:`w` over the dictionary :math:`S`; any factor of :math:`K_S` with the
same Gram matrix is valid):

.. math::
    \tilde\mu(x) = c + z(x)^T w                                                    \quad (1)

    \tilde k(x, x') = (k(x, x') - z(x)^T z(x')) / \lambda + z(x)^T V^{-1} z(x')    \quad (2)

    \tilde\sigma^2(x) = (k(x, x) - \|z(x)\|^2) / \lambda + z(x)^T V^{-1} z(x)     \quad (3)

Variances here are in the papers' ridge-leverage-score units (divided by :math:`\lambda`); the
Bayesian (Trieste) latent variance is :math:`\lambda \tilde\sigma^2`.
"""

from __future__ import annotations

from functools import partial
from typing import Optional

import tensorflow as tf
from check_shapes import check_shapes

from .binary_products import OnBits
from .bits import Rows
from .compile import Compiled, compiler, sets_spec, specs
from .dtc_posterior import DTCPosterior
from .dtc_terms import DataTerms, factor_terms, sum_terms
from .embedding import Kernel, data_terms, embed, per_set, prepares_rows, rows_of
from .evidence import CompiledEvidence
from .hallucination import (
    HallucinatedPoints,
    RowFeatures,
    fold,
    hallucinate,
    hallucinated_variance,
    row_features,
    row_features_prepared,
)
from .linalg import cholesky_rank_one_update, jittered_cholesky, pad_rows, solve_lower
from .pivoted_cholesky import add_pivots, draw_pivots, pivot_block
from .sizes import CHUNK_SIZE


@check_shapes("x: [N, D]", "return[0]: [N]", "return[1]: [N]")
def marginals(kernel: Kernel, posterior: DTCPosterior, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Posterior mean (eq. 1) and ridge-leverage variance (eq. 3) at the rows of ``x``; the
    residual :math:`k(x, x) - \\|z(x)\\|^2` is clamped at 0. ``posterior`` may be an in-batch
    (hallucinated) one: its variances are then the in-batch ones."""
    p = posterior
    z = embed(kernel, x, p.inducing, p.mask, p.chol_kss)  # [N, M]
    residual = tf.maximum(kernel(x, full_cov=False) - tf.reduce_sum(z**2, axis=-1), 0.0)
    projected = solve_lower(p.chol_v, tf.transpose(z))  # [M, N]
    var = residual / p.noise + tf.reduce_sum(projected**2, axis=0)
    return p.mean + tf.linalg.matvec(z, p.weights), var


@check_shapes("x: [N, D]", "return: [N, N]")
def covariance(kernel: Kernel, posterior: DTCPosterior, x: tf.Tensor) -> tf.Tensor:
    """Joint ridge-leverage covariance :math:`\\tilde k(x_i, x_j)` (eq. 2) of the rows of ``x``."""
    return set_covariance(kernel, posterior, x[None])[0]


@check_shapes("sets: [S, B, D]", "return: [S, B, B]")
def set_covariance(kernel: Kernel, posterior: DTCPosterior, sets: tf.Tensor) -> tf.Tensor:
    """The covariance (eq. 2) of each set of rows, all sets embedded and solved at once (what
    Trieste's batch acquisition functions ask of ``predict_joint`` for thousands of sets)."""
    p = posterior
    z = embed(kernel, rows_of(sets), p.inducing, p.mask, p.chol_kss)  # [SB, M]
    projected = solve_lower(p.chol_v, tf.transpose(z))  # [M, SB]
    z, projected = per_set(z, sets), per_set(tf.transpose(projected), sets)  # [S, B, M]
    residual = kernel(sets) - tf.matmul(z, z, transpose_b=True)
    return residual / p.noise + tf.matmul(projected, projected, transpose_b=True)


@check_shapes("x: [N, D]", "x2: [P, D]", "return: [N, P]")
def cross_covariance(
    kernel: Kernel, posterior: DTCPosterior, x: tf.Tensor, x2: tf.Tensor
) -> tf.Tensor:
    """Ridge-leverage covariance :math:`\\tilde k(x_i, x2_j)` (eq. 2) between two sets of rows."""
    p = posterior
    z = embed(kernel, x, p.inducing, p.mask, p.chol_kss)  # [N, M]
    z2 = embed(kernel, x2, p.inducing, p.mask, p.chol_kss)  # [P, M]
    projected = solve_lower(p.chol_v, tf.transpose(z))  # [M, N]
    projected2 = solve_lower(p.chol_v, tf.transpose(z2))  # [M, P]
    residual = kernel(x, x2) - tf.matmul(z, z2, transpose_b=True)
    return residual / p.noise + tf.matmul(projected, projected2, transpose_a=True)


def factor_dictionary(
    ops: CompiledDTC, dictionary: tf.Tensor, capacity: int, jitter: float
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, float]:
    """The padded dictionary [M, D], its mask [M] and the Cholesky factor of the masked
    :math:`K_S` [M, M] (eager), with the relative jitter that made it factorise.

    :param dictionary: Real dictionary rows [m, D], ``m <= capacity``.
    :param capacity: Padded size M.
    :param jitter: Initial relative jitter for :math:`K_S`.
    """
    size = int(dictionary.shape[0])
    inducing = pad_rows(dictionary, capacity)
    mask = pad_rows(tf.ones([size], dtype=dictionary.dtype), capacity)
    chol_kss, used_jitter = jittered_cholesky(ops.masked_gram(inducing, mask), jitter)
    return inducing, mask, chol_kss, used_jitter


def posterior_of(
    inducing: tf.Tensor,
    mask: tf.Tensor,
    chol_kss: tf.Tensor,
    terms: DataTerms,
    noise: tf.Tensor,
    mean: tf.Tensor,
) -> DTCPosterior:
    r"""The posterior over a factorised dictionary (:func:`factor_dictionary`) given the data's
    ``terms`` over it (:mod:`.dtc_terms`), with :math:`\lambda` = ``noise`` and prior mean
    ``mean``."""
    chol_v, weights = factor_terms(terms, noise, mean)
    return DTCPosterior(
        inducing, mask, chol_kss, chol_v=chol_v, weights=weights, noise=noise, mean=mean
    )


def build_posterior(
    ops: CompiledDTC,
    dictionary: tf.Tensor,
    capacity: int,
    unique_inputs: Rows,
    counts: tf.Tensor,
    sums: tf.Tensor,
    noise: tf.Tensor,
    mean: tf.Tensor,
    jitter: float,
    chunk_size: int = CHUNK_SIZE,
) -> tuple[DTCPosterior, float]:
    r"""Factorise :math:`K_S` and :math:`V` for a dictionary and replicated data (eager).

    :param dictionary: Real dictionary rows [m, D], ``m <= capacity``.
    :param capacity: Padded size M.
    :param unique_inputs: Unique evaluated inputs [n, D], dense or packed, embedded
        ``chunk_size`` at a time (:func:`~.dtc_terms.sum_terms`).
    :param counts: Evaluations of each unique input [n].
    :param sums: Sum of the observations at each unique input [n].
    :param noise: :math:`\lambda` [].
    :param mean: Constant prior mean [].
    :param jitter: Initial relative jitter for :math:`K_S`.
    :return: The posterior and the relative jitter that made :math:`K_S` factorise.
    """
    inducing, mask, chol_kss, used_jitter = factor_dictionary(ops, dictionary, capacity, jitter)
    terms = sum_terms(
        ops.data_terms, unique_inputs, counts, sums, inducing, mask, chol_kss, chunk_size
    )
    return posterior_of(inducing, mask, chol_kss, terms, noise, mean), used_jitter


def with_regulariser(
    posterior: DTCPosterior, terms: DataTerms, regulariser: tf.Tensor
) -> DTCPosterior:
    r"""The papers' estimator with :math:`\lambda` = ``regulariser`` over the same dictionary
    and data (``terms``, :mod:`.dtc_terms`; eqs. 1-3: :math:`V = Z^T N Z + \lambda I`,
    :math:`w` and the variances' scale), reusing ``posterior``'s factor of :math:`K_S`. With
    ``regulariser`` equal to ``posterior.noise`` it is ``posterior`` again (eager)."""
    chol_v, weights = factor_terms(terms, regulariser, posterior.mean)
    return posterior._replace(chol_v=chol_v, weights=weights, noise=regulariser)


def condition(
    kernel: Kernel,
    posterior: DTCPosterior,
    x: tf.Tensor,
    residuals: tf.Tensor,
    extend: bool = False,
) -> DTCPosterior:
    """The posterior given more evaluations at ``x`` [K, D] (graph-safe, O(K M^2)), e.g.
    fantasized data (Trieste's ``Fantasizer``): :math:`V' = V + \\sum_k z_k z_k^T` by rank-one
    updates, :math:`b' = V w + \\sum_k z_k r_k` and :math:`w' = V'^{-1} b'` (eqs. 1-3 on the
    extended data), with ``residuals`` [K] the new observations less :math:`c`, centred as the
    model's data are. Batches hallucinate points, which need variances only, more cheaply
    (:mod:`.hallucination`).

    With ``extend`` each point also joins the dictionary, which keeps the posterior exact when
    the dictionary already holds every evaluated point (GP-BUCB): a new dictionary point adds a
    coordinate in which every earlier row is zero, so :math:`V` just gains a :math:`\\lambda`
    diagonal entry (the padding added for it) before its rank-one update. A point that adds no
    direction (a repeat, to rounding) leaves its slot as padding.
    """
    p = posterior
    old = tf.linalg.matvec(p.chol_v, tf.linalg.matvec(p.chol_v, p.weights, transpose_a=True))
    num = tf.shape(x)[0]
    if extend:  # a padding slot for every point (padding changes no value)
        extra = tf.concat([tf.zeros_like(p.mask), tf.ones([num], dtype=x.dtype)], axis=0)
        square = [[0, num], [0, num]]
        p = p._replace(
            inducing=tf.pad(p.inducing, [[0, num], [0, 0]]),
            mask=tf.pad(p.mask, [[0, num]]),
            chol_kss=tf.pad(p.chol_kss, square) + tf.linalg.diag(extra),
            chol_v=tf.pad(p.chol_v, square) + tf.sqrt(p.noise) * tf.linalg.diag(extra),
        )

    def add(k: tf.Tensor, q: DTCPosterior) -> tuple[tf.Tensor, DTCPosterior]:
        point = x[k : k + 1]
        if extend:
            q = _join(kernel, q, point)
        z = embed(kernel, point, q.inducing, q.mask, q.chol_kss)[0]
        return k + 1, q._replace(chol_v=cholesky_rank_one_update(q.chol_v, z))

    _, p = tf.while_loop(lambda k, _: k < num, add, [tf.constant(0), p])
    z = embed(kernel, x, p.inducing, p.mask, p.chol_kss)  # [K, M']
    old = tf.pad(old, [[0, tf.shape(z)[1] - tf.shape(old)[0]]])
    projected = old + tf.linalg.matvec(z, residuals, transpose_a=True)
    return p._replace(weights=tf.linalg.cholesky_solve(p.chol_v, projected[:, None])[:, 0])


def _join(kernel: Kernel, posterior: DTCPosterior, x: tf.Tensor) -> DTCPosterior:
    """The dictionary with ``x`` [1, D] in its first padding slot, if it adds a direction:
    the slot's row of :math:`L_S` becomes :math:`(z(x), \\sqrt{k(x, x) - \\|z(x)\\|^2})`."""
    p = posterior
    slot = tf.cast(tf.reduce_sum(p.mask), tf.int32)
    z = embed(kernel, x, p.inducing, p.mask, p.chol_kss)[0]  # [M]
    prior = kernel(x, full_cov=False)[0]
    schur = prior - tf.reduce_sum(z**2)
    row = z + tf.one_hot(slot, tf.shape(z)[0], dtype=z.dtype) * tf.sqrt(tf.maximum(schur, 0.0))
    joined = p._replace(
        chol_kss=tf.tensor_scatter_nd_update(p.chol_kss, [[slot]], row[None, :]),
        inducing=tf.tensor_scatter_nd_update(p.inducing, [[slot]], x),
        mask=tf.tensor_scatter_nd_update(p.mask, [[slot]], tf.ones([1], dtype=x.dtype)),
    )
    extends = schur > 1e-10 * prior
    return DTCPosterior(*(tf.where(extends, new, old) for new, old in zip(joined, p)))


@check_shapes("batch: [B, D]", "x: [N, D]", "return[0]: [N]", "return[1]: [N]")
def local_terms(
    kernel: Kernel, posterior: DTCPosterior, batch: tf.Tensor, x: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """Sums over the batch points :math:`x_j` of the squared batch-start covariances used by the
    local stopping statistic (BBKB Lemma 3, both the full and the projected terms):

    .. math::
        c_{ij} = z_i^T V_{fb}^{-1} z_j + (k(x_i, x_j) - z_i^T z_j)/\\lambda, \\qquad
        p_{ij} = z_i^T V_{fb}^{-1} z_j

    Uses :math:`z_i^T u = k_S(x_i)^T L_S^{-T} u`, so the cost is O(N M B), not O(N M^2).

    :return: :math:`\\sum_j c_{ij}^2` and :math:`\\sum_j p_{ij}^2` for each row of ``x``.
    """
    p = posterior
    z_batch = embed(kernel, batch, p.inducing, p.mask, p.chol_kss)  # [B, M]
    v_inv_z = tf.linalg.cholesky_solve(p.chol_v, tf.transpose(z_batch))  # [M, B]
    both = tf.concat([v_inv_z, tf.transpose(z_batch)], axis=1)  # [M, 2B]
    back = tf.linalg.triangular_solve(p.chol_kss, both, lower=True, adjoint=True)  # [M, 2B]
    kxs = kernel(x, p.inducing) * p.mask[None, :]  # [N, M]
    products = tf.matmul(kxs, back)  # [N, 2B]
    num_batch = tf.shape(batch)[0]
    projected, nystrom = products[:, :num_batch], products[:, num_batch:]
    full = projected + (kernel(x, batch) - nystrom) / p.noise  # [N, B]
    return tf.reduce_sum(full**2, axis=1), tf.reduce_sum(projected**2, axis=1)


class CompiledDTC(CompiledEvidence):
    """The DTC numerics compiled for one kernel (each traced once: :mod:`.compile`).

    :param kernel: A GPflow-style kernel.
    :param dtype: The dtype of every tensor argument.
    """

    def __init__(self, kernel: Kernel, dtype: tf.DType):
        matrix, vector, scalar = specs(dtype)
        posterior = DTCPosterior(
            matrix, vector, matrix, chol_v=matrix, weights=vector, noise=scalar, mean=scalar
        )
        super().__init__(kernel, dtype)
        compile_ = compiler(kernel)
        self.marginals = compile_(marginals, posterior, matrix)
        self.covariance = compile_(covariance, posterior, matrix)
        self.set_covariance = compile_(set_covariance, posterior, sets_spec(dtype))
        self.cross_covariance = compile_(cross_covariance, posterior, matrix, matrix)
        self.local_terms = compile_(local_terms, posterior, matrix, matrix)
        self.data_terms = compile_(data_terms, matrix, vector, vector, matrix, vector, matrix)
        self.condition = compile_(condition, posterior, matrix, vector)
        self.condition_extending = compile_(
            partial(condition, extend=True), posterior, matrix, vector
        )
        points = HallucinatedPoints(matrix, matrix, matrix, matrix)
        features = RowFeatures(matrix, matrix, vector)
        self.row_features = compile_(row_features, posterior, matrix)
        if prepares_rows(kernel):  # the dictionary made once a batch into what each row reads
            single = tf.TensorSpec([None, None], tf.float32)
            self.row_features_prepared: Optional[Compiled] = compile_(
                row_features_prepared, posterior, single, vector, matrix
            )
        else:
            self.row_features_prepared = None
        self.hallucinate = compile_(hallucinate, posterior, points, matrix, features)
        self.hallucinate_exact = compile_(
            partial(hallucinate, exact=True), posterior, points, matrix, features
        )
        self.hallucinated_variance = compile_(
            hallucinated_variance, posterior, points, matrix, features
        )
        self.hallucinated_variance_exact = compile_(
            partial(hallucinated_variance, exact=True), posterior, points, matrix, features
        )
        self.fold = Compiled(fold, [posterior, points])
        count, seed = tf.TensorSpec([], tf.int32), tf.TensorSpec([2], tf.int32)
        self.pivot_block = compile_(pivot_block, matrix, matrix, vector, count, count, seed)
        self.kernel_columns = compile_(lambda kernel, x, x2: kernel(x, x2), matrix, matrix)
        if prepares_rows(kernel):  # the inputs a dictionary is drawn among, held as on-bits
            on = OnBits(tf.SparseTensorSpec([None, None], tf.float32), vector)
            self.on_bits: Optional[Compiled] = compile_(lambda k, x: k.on_bits(x), matrix)
            self.on_bits_columns: Optional[Compiled] = compile_(
                lambda k, on, x2: k.K_on_bits(on, x2), on, matrix
            )
        else:
            self.on_bits = self.on_bits_columns = None
        self.draw_pivots = Compiled(draw_pivots, [vector, count, seed])
        self.add_pivots = Compiled(
            add_pivots, [matrix, matrix, vector, count, tf.TensorSpec([None], tf.int32)]
        )
