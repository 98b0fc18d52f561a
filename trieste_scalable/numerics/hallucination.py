r"""Points hallucinated into a batch-start DTC posterior, in Woodbury form (BBKB Algorithm 1,
lines 5-9: the in-batch variance :math:`\tilde\sigma^2_{t,i}` after the points selected so far).

A hallucinated point is an evaluation whose observation is never used, so it changes only the
variances. Conditioning the batch-start posterior (:mod:`.dtc`, eq. 2, ridge-leverage units) on
the points :math:`B` (``t`` rows) with unit noise in those units gives

.. math::
    \tilde\sigma^2_t(x) = \tilde\sigma^2_0(x) - c(x, B)\,(I_t + C(B, B))^{-1} c(B, x)
    = \tilde\sigma^2_0(x) - \|L_W^{-1} c(B, x)\|^2, \qquad L_W L_W^T = I_t + C(B, B),

where :math:`c` is the batch-start covariance the points are observed through:

- over a fixed dictionary (BKB/BBKB) only the dictionary's coordinates are observed, so
  :math:`c(x, x') = p(x)^T p(x')` with :math:`p(x) = L_V^{-1} z(x)`: this is Woodbury's identity
  for :math:`V_t = V + Z_B^T Z_B`, the rank-``t`` update the papers write;
- over an exact dictionary (GP-BUCB) the batch-start posterior is the exact GP posterior, and
  :math:`c` is its whole covariance (eq. 2), residual included: the exact GP conditioned on
  :math:`B` (the same as letting each point join the dictionary).

This replaces a rank-one update of :math:`L_V` per point, whose O(M^2) memory traffic
dominated a batch: here a point costs O(M t), a refreshed candidate O(M t)
more than its batch-start variance, and :math:`I + C(B, B) \succeq I`, so its Cholesky factor
needs no jitter. Once ``t`` reaches ``M`` (a batch of thousands over a dictionary of
hundreds), :func:`fold` makes the points part of :math:`V` in one O(M^2 (M + t)) step and the
count starts again, so a point never costs more than O(M^2).
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .dtc_posterior import DTCPosterior
from .embedding import Kernel
from .linalg import solve_lower


class HallucinatedPoints(NamedTuple):
    """The points hallucinated so far in a batch (all tensors share one dtype; ``t`` may be 0).

    :ivar points: :math:`B` [t, D].
    :ivar embedding: :math:`z(B)` [t, M].
    :ivar projections: :math:`L_V^{-1} z(B)^T` [M, t].
    :ivar chol_gram: :math:`L_W` [t, t].
    """

    points: tf.Tensor
    embedding: tf.Tensor
    projections: tf.Tensor
    chol_gram: tf.Tensor

    @classmethod
    def none(cls, posterior: DTCPosterior) -> HallucinatedPoints:
        """No point hallucinated yet, for ``posterior``'s dictionary."""
        dim, capacity = posterior.inducing.shape[1], posterior.inducing.shape[0]
        dtype = posterior.inducing.dtype
        return cls(
            tf.zeros([0, dim], dtype),
            tf.zeros([0, capacity], dtype),
            tf.zeros([capacity, 0], dtype),
            tf.zeros([0, 0], dtype),
        )


class RowFeatures(NamedTuple):
    """What the in-batch quantities of rows ``x`` need from the batch-start posterior, fixed
    within a batch (so a caller may keep them for rows it asks about again).

    :ivar embedding: :math:`z(x)` [N, M].
    :ivar projections: :math:`p(x)^T = (L_V^{-1} z(x)^T)^T` [N, M].
    :ivar residual: The residual prior variance :math:`k(x, x) - \\|z(x)\\|^2`, clamped at 0 [N].
    """

    embedding: tf.Tensor
    projections: tf.Tensor
    residual: tf.Tensor


@check_shapes("x: [N, D]")
def row_features(kernel: Kernel, posterior: DTCPosterior, x: tf.Tensor) -> RowFeatures:
    """The :class:`RowFeatures` of the rows of ``x``: two triangular solves against [M, M]
    factors, the cost of every in-batch quantity (memory-bound for a few rows)."""
    return _features(kernel, posterior, x, kernel(x, posterior.inducing))


@check_shapes("rows: [M, E]", "counts: [M]", "x: [N, D]")
def row_features_prepared(
    kernel: Kernel, posterior: DTCPosterior, rows: tf.Tensor, counts: tf.Tensor, x: tf.Tensor
) -> RowFeatures:
    """:func:`row_features` with the kernel rows formed against the dictionary as ``kernel``
    prepared it once (``rows, counts = kernel.prepare(posterior.inducing)``: its active columns
    [M, E] and their counts, :meth:`~trieste_scalable.kernels.Tanimoto.prepare`): the same
    features."""
    return _features(kernel, posterior, x, kernel.K_prepared(x, (rows, counts)))


def _features(kernel: Kernel, p: DTCPosterior, x: tf.Tensor, kxs: tf.Tensor) -> RowFeatures:
    """The features of ``x`` given its kernel rows ``kxs`` [N, M] against the dictionary."""
    z = tf.transpose(solve_lower(p.chol_kss, tf.transpose(kxs * p.mask[None, :])))
    projections = solve_lower(p.chol_v, tf.transpose(z))
    residual = tf.maximum(kernel(x, full_cov=False) - tf.reduce_sum(z**2, axis=-1), 0.0)
    return RowFeatures(z, tf.transpose(projections), residual)


def _covariance_with(
    kernel: Kernel,
    posterior: DTCPosterior,
    hallucinated: HallucinatedPoints,
    x: tf.Tensor,
    features: RowFeatures,
    exact: bool,
) -> tf.Tensor:
    """:math:`c(B, x)` [t, N] (module docstring) given ``x``'s features."""
    covariance = tf.matmul(
        hallucinated.projections, features.projections, transpose_a=True, transpose_b=True
    )
    if exact:
        nystrom = tf.matmul(hallucinated.embedding, features.embedding, transpose_b=True)
        covariance += (kernel(hallucinated.points, x) - nystrom) / posterior.noise
    return covariance


@check_shapes("x: [N, D]", "return: [N]")
def hallucinated_variance(
    kernel: Kernel,
    posterior: DTCPosterior,
    hallucinated: HallucinatedPoints,
    x: tf.Tensor,
    features: RowFeatures,
    exact: bool = False,
) -> tf.Tensor:
    r"""In-batch ridge-leverage variance :math:`\tilde\sigma^2_t` (module docstring) of the rows
    of ``x`` (with their ``features``), clamped at 0."""
    cross = _covariance_with(kernel, posterior, hallucinated, x, features, exact)
    explained = tf.linalg.triangular_solve(hallucinated.chol_gram, cross, lower=True)  # [t, N]
    start = features.residual / posterior.noise + tf.reduce_sum(features.projections**2, axis=1)
    return tf.maximum(start - tf.reduce_sum(explained**2, axis=0), 0.0)


@check_shapes("x: [K, D]")
def hallucinate(
    kernel: Kernel,
    posterior: DTCPosterior,
    hallucinated: HallucinatedPoints,
    x: tf.Tensor,
    features: RowFeatures,
    exact: bool = False,
) -> HallucinatedPoints:
    """``hallucinated`` with the rows of ``x`` appended: :math:`L_W` grows by a block row,
    :math:`[c^T, \\mathrm{chol}(I_K + C(x, x) - c^T c)]` with :math:`c = L_W^{-1} C(B, x)`."""
    z, projections = features.embedding, tf.transpose(features.projections)  # [K, M], [M, K]
    cross = _covariance_with(kernel, posterior, hallucinated, x, features, exact)
    solved = tf.linalg.triangular_solve(hallucinated.chol_gram, cross, lower=True)  # [t, K]
    own = tf.matmul(projections, projections, transpose_a=True)  # [K, K]
    if exact:
        own += (kernel(x, x) - tf.matmul(z, z, transpose_b=True)) / posterior.noise
    num = tf.shape(x)[0]
    schur = tf.eye(num, dtype=x.dtype) + own - tf.matmul(solved, solved, transpose_a=True)
    chol_gram = tf.concat(
        [
            tf.pad(hallucinated.chol_gram, [[0, 0], [0, num]]),
            tf.concat([tf.transpose(solved), tf.linalg.cholesky(schur)], axis=1),
        ],
        axis=0,
    )
    return HallucinatedPoints(
        tf.concat([hallucinated.points, x], axis=0),
        tf.concat([hallucinated.embedding, z], axis=0),
        tf.concat([hallucinated.projections, projections], axis=1),
        chol_gram,
    )


def fold(posterior: DTCPosterior, hallucinated: HallucinatedPoints) -> DTCPosterior:
    """``posterior`` with the points hallucinated over its fixed dictionary made part of it:
    :math:`V_t = V + Z_B^T Z_B` refactorised (module docstring), the mean left as it is (a
    hallucinated point has no observation), so :func:`hallucinated_variance` with no points over
    the result is ``hallucinated``'s over ``posterior``. Not for an exact dictionary, whose
    points would join the dictionary itself."""
    z = hallucinated.embedding  # [t, M], zero in the padding columns
    v = tf.matmul(posterior.chol_v, posterior.chol_v, transpose_b=True)
    return posterior._replace(chol_v=tf.linalg.cholesky(v + tf.matmul(z, z, transpose_a=True)))
