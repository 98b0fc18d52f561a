"""Exact inner products of 0/1 rows in the fastest dtype that keeps them exact (pure TensorFlow).

The inner product of two binary rows counts their shared on-bits: an integer, so any dtype whose
significand holds it gives the exact count, whatever the dtype of the sum's terms. float32 holds
every count below 2^24. bfloat16 holds every count up to 2^8 = 256, and its products accumulate in
float32 on every kernel TensorFlow runs them with (oneDNN on CPU, cuBLAS on GPU), so a count is
exact in bfloat16 whenever one side's rows have at most 256 on-bits each (a count is at most either
row's on-bits): molecular fingerprints have 20-100. Where the hardware multiplies bfloat16 natively
(CPUs with AMX or AVX-512 BF16, GPUs of compute capability 8.0 and up) the product runs about four
times faster than in float32 (measured: ``benchmarks/results/design_measurements.md``); elsewhere
bfloat16 is emulated, and slower.

Rows with more on-bits (atom-pair counts in unary encoding: up to 310 of 6,144 bits on the first 10⁶
MOSES molecules, 7 % of them above 256) are split into two column blocks: a block's count is at most
the second row's on-bits inside it, so where every row of the second side has at most 256 on-bits in
each half (all but 3 of those 10⁶ rows), the two block products in bfloat16 are exact and their
float32 sum is the exact count (checked in the graph; float32 where it does not hold), and several
times faster than one float32 product. Blocks are used where the first side has at least
:data:`BLOCKED_MIN_ROWS` rows (a chunk of candidates): for a few rows, the kernel row of a pick, one
float32 product reads less. More blocks (4, 8) were tried: their branches made the first call of
every compiled kernel user slower, for rows no library here has.

Where bfloat16 is not native and no GPU is used (``auto`` on most CPUs), a large chunk of sparse
rows (at least :data:`SPARSE_MIN_ROWS` rows, at most :data:`SPARSE_MAX_DENSITY` of their bits on)
is multiplied from its on-bits alone: a sparse-dense product (``tf.sparse.sparse_dense_matmul``)
whose work is the on-bits times the second side's rows, not every bit. Its sums are the same whole
counts in float32, so the same values; atom-pair counts in unary encoding have about 5 % of 6,144
bits on, and 2,048 products' rows against a dictionary of 1,000 took 0.4 times the dense float32
product's time on 2 cores (``benchmarks/binary_products.py``; rows with their on-bits spread
uniformly at random were no faster: ``benchmarks/results/design_measurements.md``). On a GPU the
dense product stays: its tensor cores are what sparse rows would give up.

``TRIESTE_SCALABLE_BINARY_PRODUCTS`` (``auto``, ``bfloat16``, ``float32`` or ``sparse``) overrides
the choice; it is read once per process. ``float32`` is the dense float32 product for every chunk,
``sparse`` the sparse product where a chunk is sparse enough and dense float32 otherwise.
"""

from __future__ import annotations

import functools
import os
from typing import Callable, NamedTuple

import tensorflow as tf

BFLOAT16_EXACT_COUNT = 256
"""The largest count every bfloat16 product of 0/1 rows holds exactly (2^8)."""

BLOCK_COUNTS = (2,)
"""The numbers of column blocks tried, in order, where rows have more than 256 on-bits (module
docstring)."""

BLOCKED_MIN_ROWS = 256
"""The fewest rows of the first side for which blocked bfloat16 products are tried."""

SPARSE_MIN_ROWS = 256
"""The fewest rows of the first side whose products are formed from their on-bits (a pick's
few kernel rows read the dictionary once either way)."""

SPARSE_MAX_DENSITY = 0.1
"""The largest share of on-bits of the first side's rows whose products are formed from their
on-bits: twice the share of products' fingerprints, whose sparse products took 0.4-0.46 times
the dense float32 ones; the sparse product's work grows with the on-bits, the dense one's not."""

_CPU_FLAGS = ("amx_bf16", "avx512_bf16")

_CHOICES = ("auto", "bfloat16", "float32", "sparse")


@functools.lru_cache(maxsize=None)
def binary_products_route() -> str:
    """How the products of 0/1 rows are formed: ``bfloat16`` where the hardware multiplies it
    natively, else ``sparse`` on a CPU (sparse chunks from their on-bits, others in float32)
    and ``float32`` on a GPU; or what the environment asks for (module docstring)."""
    choice = os.environ.get("TRIESTE_SCALABLE_BINARY_PRODUCTS", "auto")
    if choice not in _CHOICES:
        raise ValueError(
            f"TRIESTE_SCALABLE_BINARY_PRODUCTS must be one of {', '.join(_CHOICES)}, "
            f"got {choice!r}"
        )
    if choice != "auto":
        return choice
    if _native_bfloat16():
        return "bfloat16"
    return "float32" if tf.config.list_physical_devices("GPU") else "sparse"


def _native_bfloat16() -> bool:
    """Whether the device TensorFlow places products on multiplies bfloat16 natively."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capability = tf.config.experimental.get_device_details(gpus[0]).get(
            "compute_capability", (0, 0)
        )
        return tuple(capability) >= (8, 0)
    if os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") == "0":  # Eigen's bfloat16 is emulated
        return False
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = set(cpuinfo.read().split())
    except OSError:  # not Linux: assume no native bfloat16
        return False
    return any(flag in flags for flag in _CPU_FLAGS)


def binary_inner_products(x: tf.Tensor, x2: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    """Exact inner products [N, N2] of binary rows ``x`` [N, D] and ``x2`` [N2, D], in ``dtype``:
    on the bfloat16 route (:func:`binary_products_route`) in bfloat16 where every row of ``x2``
    has at most 256 on-bits (checked in the graph), else in float32 (exact below 2^24 bits, and
    in the TF32 of GPU tensor cores, whose inputs here are 0 or 1), from the on-bits of ``x``
    on the sparse route where it is sparse enough."""
    return binary_products(x, x2, dtype)[0]


def binary_products(
    x: tf.Tensor, x2: tf.Tensor, dtype: tf.DType
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The exact inner products [..., N, N2] of binary rows ``x`` [..., N, D] and ``x2``
    [..., N2, D] (as :func:`binary_inner_products`) and each side's on-bit counts [..., N] and
    [..., N2], all in ``dtype``.

    ``x2`` is the side a kernel compares every row with (a dictionary, inducing points, feature
    centres), so it is read once: cast to float32 (exact for 0/1), its counts summed and its product
    operand cast from that copy. Read once for the guard, once per product dtype and once more for
    the counts, a dictionary cost several times its product a call: the cost of each kernel row a
    batch rule asks for after a pick. ``x`` is cast straight to the product's dtype (a large ``x``,
    a chunk of candidates, gets no float32 copy) and counted in its own dtype (exact too)."""
    x2_single = tf.cast(x2, tf.float32)
    counts2 = tf.reduce_sum(x2_single, axis=-1)
    counts = tf.reduce_sum(x, axis=-1)
    if binary_products_route() != "bfloat16":
        inner = float32_products(x, x2_single)
    elif tf.TensorShape(x.shape).rank is None:
        inner = _mixed_products(x, x2_single)
    else:
        rank = int(tf.TensorShape(x.shape).rank)
        inner = _compiled_apart(_mixed_products, tf.as_dtype(x.dtype), rank)(x, x2_single)
    return tf.cast(inner, dtype), tf.cast(counts, dtype), tf.cast(counts2, dtype)


def float32_products(x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
    """``x x2^T`` [..., N, N2] in float32 of 0/1 rows ``x`` [..., N, D] and float32 0/1 rows
    ``x2`` [..., N2, D], exact: from the on-bits of ``x`` on the ``sparse`` route where a chunk
    of rows is sparse enough (module docstring), else one dense float32 product."""
    rank = tf.TensorShape(x.shape).rank
    if binary_products_route() != "sparse" or rank != 2:
        return _products(x, x2, tf.float32)
    return _compiled_apart(_sparse_or_dense, tf.as_dtype(x.dtype), 2)(x, x2)


def _sparse_or_dense(x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
    """``x x2^T`` [N, N2] in float32: from the on-bits of ``x`` [N, D] where it has at least
    :data:`SPARSE_MIN_ROWS` rows and at most :data:`SPARSE_MAX_DENSITY` of its bits on, else
    dense."""
    return tf.cond(
        _sparse_enough(x),
        lambda: _sparse_products(x, x2),
        lambda: _products(x, x2, tf.float32),
    )


def _sparse_enough(x: tf.Tensor) -> tf.Tensor:
    """Whether ``x`` [N, D] has at least :data:`SPARSE_MIN_ROWS` rows and at most
    :data:`SPARSE_MAX_DENSITY` of its entries nonzero."""
    shape = tf.shape(x, out_type=tf.int64)
    on = tf.cast(tf.math.count_nonzero(x, dtype=tf.int64), tf.float64)
    size = tf.cast(shape[0] * shape[1], tf.float64)
    return tf.logical_and(shape[0] >= SPARSE_MIN_ROWS, on <= SPARSE_MAX_DENSITY * size)


def _sparse_products(x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
    """``x x2^T`` [N, N2] in float32 from the on-bits of 0/1 rows ``x`` [N, D]: each entry sums
    the columns of ``x2`` [N2, D] at a row's on-bits (whole counts, exact in float32)."""
    return on_bits_products(on_bits(x).rows, x2)


class OnBits(NamedTuple):
    """0/1 rows [N, D] held as their on-bits, for their products with other rows many times
    (the kernel columns of each block of pivots drawn among them): a product then reads the
    on-bits only, not the rows unpacked again.

    :ivar rows: The rows [N, D]: float32 ones at the on-bits.
    :ivar counts: The on-bits of each row [N], in the rows' dtype.
    """

    rows: tf.SparseTensor
    counts: tf.Tensor


def on_bits(x: tf.Tensor) -> OnBits:
    """The :class:`OnBits` of 0/1 rows ``x`` [N, D] (in any dtype)."""
    on = tf.where(tf.not_equal(x, 0))
    rows = tf.SparseTensor(on, tf.ones([tf.shape(on)[0]], tf.float32), tf.shape(x, tf.int64))
    return OnBits(rows, tf.reduce_sum(x, axis=-1))


def on_bits_products(rows: tf.SparseTensor, x2: tf.Tensor) -> tf.Tensor:
    """``x x2^T`` [N, N2] in float32 of the rows ``x`` [N, D] held as ``rows``
    (:attr:`OnBits.rows`) and float32 0/1 rows ``x2`` [N2, D], exact. ``x2`` is transposed
    first: the product read it in place about a third slower."""
    return tf.sparse.sparse_dense_matmul(rows, tf.transpose(tf.cast(x2, tf.float32)))


@functools.lru_cache(maxsize=None)
def _compiled_apart(
    products: Callable[[tf.Tensor, tf.Tensor], tf.Tensor], dtype: tf.DType, rank: int
) -> Callable[..., tf.Tensor]:
    """``products`` (:func:`_mixed_products`, :func:`_sparse_or_dense`) compiled once a process
    for ``x`` of ``dtype`` and ``rank``: a compiled caller calls it rather than tracing its
    branches again (traced into each caller, they made the first call of GP-BUCB's in-batch
    functions several times slower to trace)."""
    signature = [tf.TensorSpec([None] * rank, dtype), tf.TensorSpec([None] * rank, tf.float32)]
    return tf.function(
        products,
        input_signature=signature,
        autograph=False,
        experimental_attributes={"_noinline": True},
    )


def _mixed_products(x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
    """``x x2^T`` [..., N, N2] in float32 for ``x2`` in float32: in one bfloat16 product where
    every row of ``x2`` has at most 256 on-bits, else :func:`_blocked`."""
    return tf.cond(
        tf.reduce_max(tf.reduce_sum(x2, axis=-1)) <= BFLOAT16_EXACT_COUNT,
        lambda: _products(x, x2, tf.bfloat16),
        lambda: _blocked(x, x2),
    )


def _blocked(x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
    """``x x2^T`` [..., N, N2] in float32, for rows of ``x2`` (float32) with more than 256
    on-bits: from bfloat16 products of column blocks (module docstring) where ``x`` has at
    least :data:`BLOCKED_MIN_ROWS` rows and some count of blocks holds, else in float32."""

    def attempt(index: int) -> tf.Tensor:
        if index == len(BLOCK_COUNTS):
            return _products(x, x2, tf.float32)
        blocks = BLOCK_COUNTS[index]
        return tf.cond(
            _most_bits_in_a_block(x2, blocks) <= BFLOAT16_EXACT_COUNT,
            lambda: _block_products(x, x2, blocks),
            lambda: attempt(index + 1),
        )

    return tf.cond(
        tf.shape(x)[-2] >= BLOCKED_MIN_ROWS,
        lambda: attempt(0),
        lambda: _products(x, x2, tf.float32),
    )


def _block_bounds(width: tf.Tensor, blocks: int) -> list[tuple[tf.Tensor, tf.Tensor]]:
    """The column ranges of ``blocks`` blocks of ``width`` columns (the last may be shorter)."""
    size = -(-width // blocks)
    return [(tf.minimum(i * size, width), tf.minimum((i + 1) * size, width)) for i in range(blocks)]


def _most_bits_in_a_block(x2: tf.Tensor, blocks: int) -> tf.Tensor:
    """The most on-bits any row of ``x2`` [..., N2, D] has in one of ``blocks`` column blocks."""
    bounds = _block_bounds(tf.shape(x2)[-1], blocks)
    return tf.reduce_max(
        tf.stack([tf.reduce_max(tf.reduce_sum(x2[..., a:b], axis=-1)) for a, b in bounds])
    )


def _block_products(x: tf.Tensor, x2: tf.Tensor, blocks: int) -> tf.Tensor:
    """The float32 sum of the bfloat16 products of ``blocks`` column blocks of ``x`` and ``x2``
    (exact where every row of ``x2`` has at most 256 on-bits in each block)."""
    bounds = _block_bounds(tf.shape(x2)[-1], blocks)
    x, x2 = _as(x, tf.bfloat16), _as(x2, tf.bfloat16)
    parts = [tf.matmul(x[..., a:b], x2[..., a:b], transpose_b=True) for a, b in bounds]
    return tf.add_n([tf.cast(part, tf.float32) for part in parts])


def _products(x: tf.Tensor, x2: tf.Tensor, products: tf.DType) -> tf.Tensor:
    """``x x2^T`` [N, N2] formed in ``products``, returned in float32."""
    inner = tf.matmul(_as(x, products), _as(x2, products), transpose_b=True)
    return tf.cast(inner, tf.float32)


def _as(x: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    """0/1 rows ``x`` in ``dtype``; from float64 to bfloat16 through a comparison, the same
    values, in a third of ``tf.cast``'s time."""
    if x.dtype == tf.float64 and dtype == tf.bfloat16:
        return tf.cast(tf.not_equal(x, 0), dtype)
    return tf.cast(x, dtype)
