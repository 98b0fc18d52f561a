"""Exact inner products of 0/1 rows in bfloat16, float32 or from their on-bits
(numerics/binary_products.py), against NumPy's integer products."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.kernels import Tanimoto
from trieste_scalable.numerics import binary_products
from trieste_scalable.numerics.binary_products import (
    BFLOAT16_EXACT_COUNT,
    SPARSE_MIN_ROWS,
    binary_inner_products,
    binary_products_route,
)


@pytest.fixture(params=["bfloat16", "float32", "sparse"])
def products(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each route of the products, forced through the environment."""
    monkeypatch.setenv("TRIESTE_SCALABLE_BINARY_PRODUCTS", request.param)
    binary_products_route.cache_clear()
    yield request.param
    binary_products_route.cache_clear()


def _rows(num: int, width: int, on: int, seed: int) -> np.ndarray:
    """``num`` 0/1 rows of ``width`` bits with ``on`` random on-bits each."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((num, width), np.int64)
    for row in rows:
        row[rng.choice(width, on, replace=False)] = 1
    return rows


def test_the_environment_chooses_the_route(products: str) -> None:
    assert binary_products_route() == products


def test_an_unknown_choice_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_BINARY_PRODUCTS", "float16")
    binary_products_route.cache_clear()
    try:
        with pytest.raises(ValueError, match="auto, bfloat16, float32, sparse"):
            binary_products_route()
    finally:
        binary_products_route.cache_clear()


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


def _concentrated(num: int, width: int, on: int, span: int, seed: int) -> np.ndarray:
    """``num`` 0/1 rows with ``on`` random on-bits each, all among the first ``span`` columns."""
    rows = np.zeros((num, width), np.int64)
    rows[:, :span] = _rows(num, span, on, seed)
    return rows


@pytest.mark.parametrize(
    "x2_rows",
    [
        lambda: _rows(40, 6144, 420, seed=6),  # ~210 a half: two blocks
        lambda: _concentrated(40, 6001, 420, 3000, seed=7),  # ~420 in one half: float32
        lambda: _rows(40, 6001, 440, seed=8),  # uneven width, ~220 a half: two blocks
    ],
    ids=["two-blocks", "no-blocks", "two-uneven-blocks"],
)
def test_rows_of_many_on_bits_are_exact_in_blocks_or_float32(products: str, x2_rows) -> None:  # type: ignore[no-untyped-def]
    x2 = x2_rows()
    x = _rows(300, x2.shape[1], int(0.8 * x2.shape[1]), seed=9)  # enough rows for blocks
    assert (x @ x2.T).max() > BFLOAT16_EXACT_COUNT  # one bfloat16 product would round
    inner, counts, counts2 = binary_products.binary_products(
        tf.constant(x, tf.float64), tf.constant(x2, tf.float64), tf.float64
    )
    np.testing.assert_array_equal(inner.numpy(), x @ x2.T)
    np.testing.assert_array_equal(counts.numpy(), x.sum(axis=1))
    np.testing.assert_array_equal(counts2.numpy(), x2.sum(axis=1))
    few = binary_inner_products(
        tf.constant(x[:3], tf.float64), tf.constant(x2, tf.float64), tf.float64
    )
    np.testing.assert_array_equal(few.numpy(), x[:3] @ x2.T)  # a pick's row: float32


def test_blocks_cover_every_column_once() -> None:
    for width, blocks in [(6144, 2), (6001, 4), (7, 8), (1001, 8)]:
        bounds = [
            (int(a), int(b)) for a, b in binary_products._block_bounds(tf.constant(width), blocks)
        ]
        assert bounds[0][0] == 0 and bounds[-1][1] == width
        assert all(b0 == a1 for (_, b0), (a1, _) in zip(bounds, bounds[1:]))
    x2 = _concentrated(5, 4096, 300, 300, seed=10)
    most = binary_products._most_bits_in_a_block(tf.constant(x2, tf.float32), 8)
    assert int(most) == 300


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_sparse_chunks_give_the_same_counts(products: str, dtype: tf.DType) -> None:
    x = _rows(SPARSE_MIN_ROWS + 44, 6144, 250, seed=11)  # 4 % on, as atom-pair counts
    x[7] = 0  # a product without a fingerprint bit
    x2 = _rows(120, 6144, 300, seed=12)
    a, b = tf.constant(x, dtype), tf.constant(x2, dtype)
    expected = x @ x2.T
    np.testing.assert_array_equal(binary_inner_products(a, b, dtype).numpy(), expected)
    compiled = tf.function(lambda p, q: binary_inner_products(p, q, dtype))
    np.testing.assert_array_equal(compiled(a, b).numpy(), expected)
    direct = binary_products._sparse_products(a, tf.cast(b, tf.float32))
    np.testing.assert_array_equal(direct.numpy(), expected)


def test_only_large_sparse_chunks_take_the_sparse_products() -> None:
    def sparse(num: int, on: int) -> bool:
        rows = tf.constant(_rows(num, 1000, on, seed=13), tf.float64)
        return bool(binary_products._sparse_enough(rows))

    assert sparse(SPARSE_MIN_ROWS, 100)  # 10 % on
    assert not sparse(SPARSE_MIN_ROWS, 101)
    assert not sparse(SPARSE_MIN_ROWS - 1, 40)  # a few rows: one dense product


def test_the_tanimoto_kernel_from_on_bits_and_its_refusal() -> None:
    x, x2 = _rows(50, 300, 12, seed=14), _rows(7, 300, 20, seed=15)
    kernel = Tanimoto(variance=1.7, binary_inputs=True)
    a, b = tf.constant(x, tf.float64), tf.constant(x2, tf.float64)
    np.testing.assert_array_equal(kernel.K_on_bits(kernel.on_bits(a), b), kernel(a, b))
    with pytest.raises(ValueError, match="binary_inputs=True"):
        Tanimoto().on_bits(a)
