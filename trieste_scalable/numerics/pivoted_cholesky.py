r"""Block randomly pivoted Cholesky (Chen, Epperly, Tropp & Webber 2023, "Randomly pivoted
Cholesky", Algorithm 2): a Nyström dictionary of a fixed size m chosen among n points at the cost
of m kernel columns.

After :math:`j` pivots :math:`S`, the rows :math:`F` [j, n] satisfy
:math:`F^T F = K_{XS} K_{SS}^{-1} K_{SX}` and the residual is
:math:`r = \mathrm{diag}(K_{XX} - F^T F)`, each point's prior variance left unexplained by the
pivots (its DTC conditional variance). A block draws ``b`` new pivots without replacement with
probabilities proportional to :math:`r` (Gumbel top-k), and with :math:`G = K_{XB} - F^T F_B`
[n, b] and :math:`L L^T = G_B` adds the rows :math:`L^{-1} G^T`. Each block costs one kernel
product of n rows by b, so the whole selection is n m kernel entries and O(n m^2) arithmetic,
as products; the sequential greedy selection (:func:`~.svgp.greedy_variance_selection`) reads
all n rows once per pivot.
"""

from __future__ import annotations

import tensorflow as tf
from check_shapes import check_shapes

from .embedding import Kernel

PICKED = -1.0
"""The residual of a point already a pivot (never drawn again)."""

RELATIVE_JITTER = 1e-8
"""Added to the block's residual covariance, times its largest diagonal entry (pivots whose
residual is tiny are near-duplicates of earlier ones)."""


@check_shapes(
    "points: [n, D]",
    "rows: [m, n]",
    "residual: [n]",
    "seed: [2]",
    "return[0]: [m, n]",
    "return[1]: [n]",
    "return[2]: [b]",
)
def pivot_block(
    kernel: Kernel,
    points: tf.Tensor,
    rows: tf.Tensor,
    residual: tf.Tensor,
    start: tf.Tensor,
    size: tf.Tensor,
    seed: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Draw ``size`` more pivots and fill rows ``start .. start + size`` of ``rows``
    (:func:`draw_pivots`, then :func:`add_pivots` with the pivots' kernel columns).

    :param points: The points to choose among [n, D].
    :param rows: :math:`F`, filled up to ``start`` (zeros after) [m, n].
    :param residual: The residual variances, :data:`PICKED` for pivots [n].
    :param start: Pivots drawn so far [].
    :param size: Pivots to draw, at most the points not yet pivots [].
    :param seed: The draw's stateless seed [2].
    :return: The updated rows and residual, and the new pivots' indices [size].
    """
    picked = draw_pivots(residual, size, seed)
    columns = kernel(points, tf.gather(points, picked))  # [n, b]
    rows, residual = add_pivots(columns, rows, residual, start, picked)
    return rows, residual, picked


@check_shapes("residual: [n]", "seed: [2]", "return: [b]")
def draw_pivots(residual: tf.Tensor, size: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """``size`` new pivots [size], drawn without replacement with probabilities proportional
    to ``residual`` (Gumbel top-k; :data:`PICKED` points are never drawn)."""
    gumbel = -tf.math.log(-tf.math.log(tf.random.stateless_uniform(tf.shape(residual), seed)))
    tiny = tf.constant(1e-300, residual.dtype)
    scores = tf.where(
        residual < 0.0,
        tf.constant(-float("inf"), residual.dtype),
        tf.math.log(tf.maximum(residual, tiny)) + tf.cast(gumbel, residual.dtype),
    )
    return tf.math.top_k(scores, size).indices


@check_shapes(
    "columns: [n, b]",
    "rows: [m, n]",
    "residual: [n]",
    "picked: [b]",
    "return[0]: [m, n]",
    "return[1]: [n]",
)
def add_pivots(
    columns: tf.Tensor, rows: tf.Tensor, residual: tf.Tensor, start: tf.Tensor, picked: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """The rows and residual (as :func:`pivot_block` returns them) after the pivots ``picked``,
    given their kernel columns :math:`K_{XB}` [n, b] (which a caller may compute a chunk of
    points at a time)."""
    size = tf.shape(picked)[0]
    explained = tf.matmul(rows, tf.gather(rows, picked, axis=1), transpose_a=True)  # [n, b]
    block = columns - explained
    covariance = tf.gather(block, picked)  # [b, b]
    covariance = 0.5 * (covariance + tf.transpose(covariance))
    scale = tf.reduce_max(tf.linalg.diag_part(covariance))
    eye = tf.eye(size, dtype=covariance.dtype)
    chol = tf.linalg.cholesky(covariance + RELATIVE_JITTER * scale * eye)
    new = tf.linalg.triangular_solve(chol, tf.transpose(block), lower=True)  # [b, n]
    where = tf.range(start, start + size)[:, None]
    rows = tf.tensor_scatter_nd_update(rows, where, new)
    left = tf.maximum(residual - tf.reduce_sum(new**2, axis=0), 0.0)
    residual = tf.where(residual < 0.0, residual, left)  # earlier pivots stay PICKED
    residual = tf.tensor_scatter_nd_update(
        residual, picked[:, None], tf.fill([size], tf.constant(PICKED, residual.dtype))
    )
    return rows, residual
