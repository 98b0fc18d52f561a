"""Bit-packed rows (pure TensorFlow): 0/1 matrices stored one bit per entry, most significant
bit first (NumPy's ``packbits`` order), and unpacked one chunk at a time."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

_BITS_OF_BYTE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1)  # [256, 8]


def unpack_bits(
    bits: tf.Tensor, width: int | tf.Tensor, dtype: tf.DType, off: float = 0.0
) -> tf.Tensor:
    """The rows [N, width] in ``dtype`` of packed rows ``bits`` [N, ceil(width / 8)] (uint8):
    1 for a set bit, ``off`` for a clear one. One gather from a table of the 256 bytes' values
    (half the time of shifting and masking each bit on CPU)."""
    table = tf.constant(np.where(_BITS_OF_BYTE == 1, 1.0, off), dtype)
    unpacked = tf.gather(table, tf.cast(bits, tf.int32))  # [N, W, 8]
    return tf.reshape(unpacked, [tf.shape(bits)[0], -1])[:, :width]


def dense_rows(
    points: tf.Tensor,
    start: int | tf.Tensor,
    size: int | tf.Tensor,
    width: int | tf.Tensor,
    dtype: tf.DType,
) -> tf.Tensor:
    """Rows ``start .. start + size`` of ``points`` [N, D] in ``dtype``: unpacked to ``width``
    columns where ``points`` holds packed bits (uint8), cast otherwise."""
    rows = tf.slice(points, [start, 0], [size, tf.shape(points)[1]])
    if points.dtype == tf.uint8:
        return unpack_bits(rows, width, dtype)
    return tf.cast(rows, dtype)
