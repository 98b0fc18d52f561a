"""``host_tensor`` against ``tf.constant`` and ``row_slice`` against slicing: the same values, a
copy, and nothing retained."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.numerics.bits import PackedRows, pack_rows
from trieste_scalable.numerics.host_tensors import host_tensor, row_slice

from ...util import retained_bytes

VALUES = {
    "float64 matrix": (np.random.default_rng(0).normal(size=(5, 7)), None),
    "float32 from float64": (np.random.default_rng(1).normal(size=(4, 3)), tf.float32),
    "int64 index": (np.arange(9), tf.int64),
    "int32 from a list": ([3, 1, 2], tf.int32),
    "uint8 bits": (np.random.default_rng(2).integers(0, 256, (6, 16)).astype(np.uint8), None),
    "bool mask": (np.random.default_rng(3).random(11) < 0.5, None),
    "python float": (0.125, tf.float64),
    "zero-d": (np.array(3.5), None),
    "empty rows": (np.zeros((0, 4)), tf.float64),
    "strided view": (np.arange(40.0).reshape(5, 8)[1:, ::3], None),
    "odd offset": (np.arange(17.0)[1:], None),  # a buffer 8 bytes past an aligned one
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_host_tensor_equals_tf_constant(name: str) -> None:
    value, dtype = VALUES[name]
    made = host_tensor(value, dtype)
    expected = tf.constant(np.asarray(value, None if dtype is None else dtype.as_numpy_dtype))
    assert made.dtype == expected.dtype and made.shape == expected.shape
    np.testing.assert_array_equal(made.numpy(), expected.numpy())
    # usable by kernels that read aligned buffers (a misaligned DLPack buffer aborts them)
    np.testing.assert_array_equal(tf.reshape(made, [-1]).numpy(), np.ravel(expected.numpy()))


def test_host_tensor_is_a_copy_of_the_value_at_the_call() -> None:
    array = np.arange(8.0)
    made = host_tensor(array)
    array[:] = -1.0
    np.testing.assert_array_equal(made.numpy(), np.arange(8.0))


def test_host_tensor_passes_tensors_through_and_casts_them() -> None:
    tensor = tf.constant([1.0, 2.0], tf.float64)
    assert host_tensor(tensor) is tensor
    assert host_tensor(tensor, tf.float32).dtype == tf.float32


def test_values_dlpack_cannot_carry_go_through_tensorflow() -> None:
    made = host_tensor(np.array(["a", "bc"]))
    assert made.dtype == tf.string and made.numpy().tolist() == [b"a", b"bc"]


def test_host_tensor_retains_nothing_where_tf_constant_leaks() -> None:
    # TensorFlow 2.16 on Python 3.11 keeps 336 bytes of every tensor made from a host value
    # (tracemalloc; see host_tensors' docstring); 3,000 conversions here kept about 1 MB. The
    # bound allows 16 bytes a call, for allocator noise, and fails on any leak of that size.
    array = np.random.default_rng(4).normal(size=(3, 10))
    assert retained_bytes(lambda: host_tensor(array, tf.float64), 3000) < 16 * 3000
    assert retained_bytes(lambda: host_tensor(0.25, tf.float64), 3000) < 16 * 3000


def test_host_tensor_in_a_graph_is_a_constant_of_the_value() -> None:
    compiled = tf.function(lambda x: x + host_tensor([1.0, 2.0], tf.float64))
    np.testing.assert_array_equal(compiled(tf.zeros(2, tf.float64)).numpy(), [1.0, 2.0])


@pytest.mark.parametrize("shape", [(9,), (9, 4), (9, 2, 3)])
@pytest.mark.parametrize("bounds", [(0, 9), (2, 5), (8, 9), (4, 4)])
def test_row_slice_equals_slicing(shape: tuple[int, ...], bounds: tuple[int, int]) -> None:
    rows = tf.reshape(tf.range(int(np.prod(shape)), dtype=tf.float64), shape)
    start, stop = bounds
    np.testing.assert_array_equal(row_slice(rows, start, stop).numpy(), rows[start:stop].numpy())


def test_row_slice_of_packed_rows_and_of_a_tensor_retains_nothing() -> None:
    dense = np.random.default_rng(5).integers(0, 2, (40, 13))
    packed = PackedRows(tf.constant(pack_rows(dense)), 13, tf.float64)
    np.testing.assert_array_equal(row_slice(packed, 5, 17).numpy(), dense[5:17])
    rows = tf.constant(dense, tf.float64)
    # an eager slice of Python numbers keeps about 1 KB (three conversions); 16 bytes a call
    assert retained_bytes(lambda: row_slice(rows, 5, 17), 2000) < 16 * 2000
    assert retained_bytes(lambda: packed[5:17], 2000) < 16 * 2000
