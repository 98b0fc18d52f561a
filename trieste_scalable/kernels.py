r"""Kernels GPflow lacks: the Tanimoto (MinMax) kernel for molecular fingerprints.

.. math::
    k(x, x') = \sigma^2 \frac{\langle x, x'\rangle}{\|x\|^2 + \|x'\|^2 - \langle x, x'\rangle}

For binary fingerprints this is the Tanimoto (Jaccard) similarity of the sets of on-bits, and for
count fingerprints in unary encoding (one bit per "count >= j") it is the MinMax similarity of
the counts. It is positive semi-definite on non-negative vectors (Ralaivola et al., 2005). Two
all-zero fingerprints have similarity 0 here (the ratio is 0/0), so their prior variance is 0.
"""

from __future__ import annotations

from typing import Optional

import gpflow
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.utilities import positive


class Tanimoto(gpflow.kernels.Kernel):
    """Tanimoto kernel on non-negative vectors, computed with one matrix product per call.

    :param variance: Signal variance :math:`\\sigma^2`.
    """

    def __init__(self, variance: float = 1.0, active_dims: Optional[slice] = None):
        super().__init__(active_dims=active_dims)
        self.variance = gpflow.Parameter(variance, transform=positive())

    @inherit_check_shapes
    def K(self, X: tf.Tensor, X2: Optional[tf.Tensor] = None) -> tf.Tensor:
        X2 = X if X2 is None else X2
        return self.from_inner(tf.matmul(X, X2, transpose_b=True), X, X2)

    def from_inner(self, inner: tf.Tensor, X: tf.Tensor, X2: tf.Tensor) -> tf.Tensor:
        """The kernel [N, N2] given the inner products ``inner`` [N, N2] of ``X`` [N, D] and
        ``X2`` [N2, D] (however they were formed)."""
        norms = tf.reduce_sum(X**2, axis=-1)[:, None] + tf.reduce_sum(X2**2, axis=-1)[None, :]
        denominator = norms - inner
        positive_ = denominator > 0
        safe = tf.where(positive_, denominator, tf.ones_like(denominator))
        return self.variance * tf.where(positive_, inner / safe, tf.zeros_like(inner))

    @inherit_check_shapes
    def K_diag(self, X: tf.Tensor) -> tf.Tensor:
        nonzero = tf.reduce_sum(X**2, axis=-1) > 0
        return self.variance * tf.cast(nonzero, X.dtype)
