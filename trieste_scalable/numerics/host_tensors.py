"""Host values (NumPy arrays, Python numbers and sequences) made into tensors without TensorFlow's
per-conversion leak.

TensorFlow on Python 3.11 and later (measured: 2.16.2 on 3.11.7, and not on 3.10.13) never
frees two blocks of 168 bytes of every tensor its Python-side constructor makes from a host value
(``tf.constant``, ``tf.convert_to_tensor``, a NumPy or Python number argument of an eager op or of
a ``tf.function``), whatever the value's size: 336 bytes a conversion, measured with
``tracemalloc`` (tensorflow/tensorflow issues 62551 and 68196); the buffers themselves are freed.
A campaign converted about 25 host values an evaluation, so its memory grew by about 8 KB an
evaluation for as long as it ran. A tensor made from a DLPack capsule does not pass through that
constructor and frees everything.

TensorFlow's DLPack import wraps the buffer it is given without copying, and aborts the process
on a buffer less aligned than Eigen's (``rows.ALIGNMENT``). So :func:`host_tensor` copies
the value into a fresh aligned buffer (``rows.aligned_empty``), which nothing else holds:
the tensor is the value at the call, as ``tf.constant``'s copy is, however the caller's array
changes afterwards. (:func:`~.bits.shared_tensor` shares a library's aligned array instead, once.)
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import tensorflow as tf

from .rows import aligned_empty

_DLPACK_KINDS = frozenset("biuf")
"""NumPy kinds DLPack carries: bool, signed and unsigned integers, floats."""


def host_tensor(value: Any, dtype: Optional[tf.DType] = None) -> tf.Tensor:
    """``value`` as a tensor of ``dtype`` (default: NumPy's dtype of the value), equal to
    ``tf.constant(value, dtype)`` and on the host.

    :param value: A NumPy array, a Python number or a (nested) sequence of numbers, or a tensor
        (returned as it is, cast to ``dtype`` where that differs).
    :param dtype: The tensor's dtype; the value is cast to it as NumPy casts.
    :return: The tensor, of the value's shape.
    """
    if isinstance(value, tf.Tensor):
        return value if dtype is None or value.dtype == dtype else tf.cast(value, dtype)
    array = np.asarray(value, None if dtype is None else dtype.as_numpy_dtype)
    if not tf.executing_eagerly() or array.dtype.kind not in _DLPACK_KINDS or array.itemsize > 8:
        # a graph's constant leaks nothing; strings, objects, complex: TensorFlow's own path
        return tf.constant(array, dtype)
    copy = aligned_empty(array.shape, array.dtype)
    copy[...] = array
    return tf.experimental.dlpack.from_dlpack(copy.__dlpack__())


def row_slice(rows: Any, start: int, stop: int) -> tf.Tensor:
    """``rows[start:stop]`` (the leading axis) without converting the bounds: slicing an eager
    tensor with Python numbers makes three host tensors (its begin, end and strides), about 1 KB
    kept a slice. ``rows`` a tensor, or anything sliceable (e.g. packed rows), sliced as it is.
    """
    if not isinstance(rows, tf.Tensor):
        return rows[start:stop]
    rank = len(rows.shape)
    begin = host_tensor([start] + [0] * (rank - 1), tf.int64)
    size = host_tensor([stop - start] + [-1] * (rank - 1), tf.int64)
    return tf.slice(rows, begin, size)
