"""Bit-packed rows (pure TensorFlow): 0/1 matrices stored one bit per entry, most significant
bit first (NumPy's ``packbits`` order), and unpacked one chunk at a time."""

from __future__ import annotations

import tensorflow as tf

_SHIFTS = tf.constant([7, 6, 5, 4, 3, 2, 1, 0], tf.uint8)


def unpack_bits(bits: tf.Tensor, width: int | tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    """The 0/1 rows [N, width] in ``dtype`` of packed rows ``bits`` [N, ceil(width / 8)] (uint8)."""
    unpacked = tf.bitwise.bitwise_and(tf.bitwise.right_shift(bits[:, :, None], _SHIFTS), 1)
    flat = tf.reshape(unpacked, [tf.shape(bits)[0], -1])[:, :width]
    return tf.cast(flat, dtype)


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
