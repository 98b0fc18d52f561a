"""Exact inner products of 0/1 rows in bfloat16 or float32 (numerics/binary_products.py),
against NumPy's integer products."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.numerics import binary_products
from trieste_scalable.numerics.binary_products import (
    BFLOAT16_EXACT_COUNT,
    binary_inner_products,
    binary_products_dtype,
)


@pytest.fixture(params=["bfloat16", "float32"])
def products(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each dtype of the products, forced through the environment."""
    monkeypatch.setenv("TRIESTE_SCALABLE_BINARY_PRODUCTS", request.param)
    binary_products_dtype.cache_clear()
    yield request.param
    binary_products_dtype.cache_clear()


def _rows(num: int, width: int, on: int, seed: int) -> np.ndarray:
    """``num`` 0/1 rows of ``width`` bits with ``on`` random on-bits each."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((num, width), np.int64)
    for row in rows:
        row[rng.choice(width, on, replace=False)] = 1
    return rows


def test_the_environment_chooses_the_dtype(products: str) -> None:
    assert binary_products_dtype() == tf.as_dtype(products)


def test_an_unknown_choice_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_BINARY_PRODUCTS", "float16")
    binary_products_dtype.cache_clear()
    try:
        with pytest.raises(ValueError, match="auto, bfloat16 or float32"):
            binary_products_dtype()
    finally:
        binary_products_dtype.cache_clear()


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_counts_up_to_256_are_exact(products: str, dtype: tf.DType) -> None:
    x = _rows(300, 1024, 60, seed=0)
    x2 = _rows(200, 1024, BFLOAT16_EXACT_COUNT, seed=1)
    x[:5] = 1  # every bit on: counts of exactly 256 against x2
    inner = binary_inner_products(tf.constant(x, dtype), tf.constant(x2, dtype), dtype)
    assert inner.dtype == dtype
    np.testing.assert_array_equal(inner.numpy(), x @ x2.T)
    assert inner.numpy().max() == BFLOAT16_EXACT_COUNT


def test_rows_with_more_on_bits_fall_back_to_exact_float32(products: str) -> None:
    x = _rows(64, 2048, 900, seed=2)
    x2 = _rows(32, 2048, 800, seed=3)  # counts of ~350: bfloat16 would round the odd ones
    expected = x @ x2.T
    rounded = tf.matmul(tf.constant(x, tf.bfloat16), tf.constant(x2.T, tf.bfloat16))
    assert np.any(tf.cast(rounded, tf.float64).numpy() != expected)  # the guard is needed
    a, b = tf.constant(x, tf.float64), tf.constant(x2, tf.float64)
    inner = binary_inner_products(a, b, tf.float64)
    np.testing.assert_array_equal(inner.numpy(), expected)


def test_batches_of_sets_and_compiled_calls(products: str) -> None:
    x = _rows(2 * 40, 512, 30, seed=4).reshape(2, 40, 512)
    x2 = _rows(2 * 25, 512, 50, seed=5).reshape(2, 25, 512)
    compiled = tf.function(lambda a, b: binary_inner_products(a, b, tf.float64))
    inner = compiled(tf.constant(x, tf.float64), tf.constant(x2, tf.float64))
    np.testing.assert_array_equal(inner.numpy(), np.einsum("bnd,bmd->bnm", x, x2))


def test_auto_never_picks_bfloat16_when_onednn_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("the choice on a GPU follows its compute capability")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    assert not binary_products._native_bfloat16()
