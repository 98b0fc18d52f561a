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
import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.utilities import positive

from .numerics.binary_products import (
    OnBits,
    binary_products,
    float32_products,
    on_bits,
    on_bits_products,
)


class Tanimoto(gpflow.kernels.Kernel):
    """Tanimoto kernel on non-negative vectors, computed with one matrix product per call.

    :param variance: Signal variance :math:`\\sigma^2`.
    :param binary_inputs: Whether every input is a 0/1 vector (bit fingerprints, or counts in
        unary encoding): the inner products, the kernel's main cost on large candidate sets,
        are then formed exactly in float32, or in bfloat16 where the hardware has it
        (:func:`~trieste_scalable.numerics.binary_products.binary_inner_products`).
        Other inputs would be rounded, so it is off by default.
    """

    def __init__(
        self,
        variance: float = 1.0,
        active_dims: Optional[slice] = None,
        binary_inputs: bool = False,
    ):
        super().__init__(active_dims=active_dims)
        self.variance = gpflow.Parameter(variance, transform=positive())
        self.binary_inputs = binary_inputs

    @inherit_check_shapes
    def K(self, X: tf.Tensor, X2: Optional[tf.Tensor] = None) -> tf.Tensor:
        X2 = X if X2 is None else X2
        if self.binary_inputs:
            return self.from_counts(*binary_products(X, X2, X.dtype))
        return self.from_inner(tf.matmul(X, X2, transpose_b=True), X, X2)

    def from_inner(self, inner: tf.Tensor, X: tf.Tensor, X2: tf.Tensor) -> tf.Tensor:
        """The kernel [..., N, N2] given the inner products ``inner`` [..., N, N2] of ``X``
        [..., N, D] and ``X2`` [..., N2, D] (however they were formed), in ``inner``'s dtype.
        Leading dimensions are batch dimensions shared by ``X`` and ``X2`` (GPflow's ``K(X)`` of
        a batch of sets is the batch of their Gram matrices)."""
        dtype = inner.dtype
        return self.from_counts(
            inner, self._squared_norms(X, dtype), self._squared_norms(X2, dtype)
        )

    def from_counts(self, inner: tf.Tensor, norms: tf.Tensor, norms2: tf.Tensor) -> tf.Tensor:
        """The kernel [..., N, N2] given the inner products ``inner`` [..., N, N2] and the
        squared norms of both sides, [..., N] and [..., N2] (of 0/1 rows: their on-bit counts,
        :func:`~trieste_scalable.numerics.binary_products.binary_products`)."""
        dtype = inner.dtype
        norms = norms[..., :, None] + norms2[..., None, :]
        # on non-negative vectors the denominator is at least half the norms, so it is zero
        # only for two all-zero rows, whose inner product is zero too: their ratio 0 / tiny is 0
        tiny = tf.constant(np.finfo(dtype.as_numpy_dtype).tiny, dtype)
        ratio = inner / tf.maximum(norms - inner, tiny)
        return tf.cast(self.variance, dtype) * ratio

    def prepare(self, X2: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``X2`` [M, D] (0/1 rows: ``binary_inputs`` only) made once into what
        :meth:`K_prepared` reads on every call: its rows in float32 (exact) and their on-bit
        counts in ``X2``'s dtype. A batch rule asks for the kernel rows of a few candidates
        against the same dictionary after every pick: made each call, the float32 copy and the
        counts were most of the call (measured: ``benchmarks/results/design_measurements.md``)."""
        if not self.binary_inputs:
            raise ValueError("only a Tanimoto kernel with binary_inputs=True prepares its rows")
        _, X2 = self.slice(X2, X2)
        return tf.cast(X2, tf.float32), tf.reduce_sum(X2, axis=-1)

    def K_prepared(self, X: tf.Tensor, prepared: tuple[tf.Tensor, tf.Tensor]) -> tf.Tensor:
        """``K(X, X2)`` [N, M] for ``prepared = prepare(X2)``: the same values (the inner products
        are the same whole counts, formed in float32)."""
        rows, counts2 = prepared
        X, _ = self.slice(X, None)
        inner = float32_products(X, rows)
        counts = tf.reduce_sum(X, axis=-1)
        return self.from_counts(tf.cast(inner, X.dtype), counts, tf.cast(counts2, X.dtype))

    def on_bits(self, X: tf.Tensor) -> OnBits:
        """The on-bits of ``X`` [N, D] (0/1 rows: ``binary_inputs`` only), for
        :meth:`K_on_bits` against many second sides (the pivots of a dictionary's draw)."""
        if not self.binary_inputs:
            raise ValueError("only a Tanimoto kernel with binary_inputs=True reads on-bits")
        X, _ = self.slice(X, None)
        return on_bits(X)

    def K_on_bits(self, on: OnBits, X2: tf.Tensor) -> tf.Tensor:
        """``K(X, X2)`` [N, M] for ``on = on_bits(X)``: the same values (the inner products are
        the same whole counts, formed from the on-bits in float32)."""
        X2, _ = self.slice(X2, None)
        dtype = X2.dtype
        inner = tf.cast(on_bits_products(on.rows, X2), dtype)
        return self.from_counts(inner, tf.cast(on.counts, dtype), tf.reduce_sum(X2, axis=-1))

    def _squared_norms(self, X: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
        """:math:`\\|x\\|^2` of each row [...] of ``X`` [..., D] in ``dtype``: of 0/1 rows their
        sum, the same integers without the [..., D] temporary of the squares (a kernel over
        24,000 evaluated rows of 6,144 bits would otherwise make a 1.2 GB one a call)."""
        if self.binary_inputs:
            return tf.cast(tf.reduce_sum(X, axis=-1), dtype)
        return tf.reduce_sum(tf.cast(X, dtype) ** 2, axis=-1)

    @inherit_check_shapes
    def K_diag(self, X: tf.Tensor) -> tf.Tensor:
        if self.binary_inputs:  # non-negative rows: nonzero where their largest entry is
            nonzero = tf.reduce_max(X, axis=-1) > 0
        else:
            nonzero = tf.reduce_sum(X**2, axis=-1) > 0
        return self.variance * tf.cast(nonzero, X.dtype)
