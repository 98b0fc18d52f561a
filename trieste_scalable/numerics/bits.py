"""Bit-packed rows (pure TensorFlow): 0/1 matrices stored one bit per entry, most significant
bit first (NumPy's ``packbits`` order), held in :class:`PackedRows` and unpacked one chunk at a
time by :func:`unpack_bits`, the package's one unpack (fingerprint libraries, candidate sets and
cached sign features all use it). A library of N fingerprints of D bits takes N D / 8 bytes
packed, against 8 N D as float64 (1.9 M MOSES molecules at 1,024 bits: 243 MB against 15.6 GB).
The packed arrays are shared with TensorFlow, not copied (:func:`shared_tensor`)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from .host_tensors import host_tensor, row_slice
from .rows import ALIGNMENT, aligned_empty

DENSE_LIMIT_BYTES = 2**30
_BITS_OF_BYTE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1)  # [256, 8]


def unpack_bits(
    bits: tf.Tensor, width: int | tf.Tensor, dtype: tf.DType, off: float = 0.0
) -> tf.Tensor:
    """The rows [N, width] in ``dtype`` of packed rows ``bits`` [N, ceil(width / 8)] (uint8):
    1 for a set bit, ``off`` for a clear one. One gather from a table of the 256 bytes' values
    (half the time of shifting and masking each bit on CPU)."""
    unpacked = tf.gather(_byte_values(dtype, off), tf.cast(bits, tf.int32))  # [N, W, 8]
    return tf.reshape(unpacked, [tf.shape(bits)[0], -1])[:, :width]


@functools.lru_cache(maxsize=None)
def _byte_values(dtype: tf.DType, off: float) -> tf.Tensor:
    """The 256 bytes' values [256, 8] (1 for a set bit, ``off`` for a clear one), made once,
    outside any graph being traced (each eager unpack made it again, a host conversion that
    TensorFlow leaks: :mod:`.host_tensors`)."""
    with tf.init_scope():
        return host_tensor(np.where(_BITS_OF_BYTE == 1, 1.0, off), dtype)


def on_bits(rows: np.ndarray, packed: bool) -> np.ndarray:
    """The on-bits of each row [N] of packed rows [N, ceil(D / 8)] (uint8) or 0/1 rows [N, D]."""
    if packed:
        return _BITS_OF_BYTE.sum(axis=1, dtype=np.uint8)[rows].sum(axis=1, dtype=np.int32)
    return np.count_nonzero(rows, axis=1)


def dense_rows(
    points: tf.Tensor,
    start: int | tf.Tensor,
    size: int | tf.Tensor,
    width: int | tf.Tensor,
    dtype: tf.DType,
) -> tf.Tensor:
    """Rows ``start .. start + size`` of ``points`` [N, D] in ``dtype``: unpacked to ``width``
    columns where ``points`` holds packed bits (uint8), cast otherwise."""
    rows = slice_rows(points, start, size)
    if points.dtype == tf.uint8:
        return unpack_bits(rows, width, dtype)
    return tf.cast(rows, dtype)


def slice_rows(points: tf.Tensor, start: int | tf.Tensor, size: int | tf.Tensor) -> tf.Tensor:
    """Rows ``start .. start + size`` of ``points`` [N, W], any dtype.

    Packed bytes (uint8) are sliced through an int8 view (``tf.bitcast`` shares the buffer):
    TensorFlow registers no GPU ``Slice`` kernel for uint8, so slicing a library held on a GPU
    ran on the host and copied the whole library there for every chunk: scoring time grew as
    N^2 (an H200 scored 3x10^6 rows in 4.8 times the time of 10^6)."""
    if points.dtype != tf.uint8:
        return tf.slice(points, [start, 0], [size, tf.shape(points)[1]])
    signed = tf.slice(tf.bitcast(points, tf.int8), [start, 0], [size, tf.shape(points)[1]])
    return tf.bitcast(signed, tf.uint8)


class PackedRows:
    """Rows [N, width] of 0/1 values in ``dtype``, stored as packed bits [N, ceil(width / 8)].

    Tensor-like where this package's code needs it: ``shape``, ``dtype``, ``len``, and indexing
    with a slice, an integer or integer indices (returns the dense rows; one index: one row
    [width]); :meth:`gather` for indices.
    """

    def __init__(self, bits: tf.Tensor, width: int, dtype: tf.DType):
        if bits.dtype != tf.uint8 or len(bits.shape) != 2:
            found = f"{bits.dtype.name} {bits.shape}"
            raise ValueError(f"packed rows must be uint8 [N, W], got {found}")
        if not 0 < width <= 8 * int(bits.shape[1]) < width + 8:
            raise ValueError(f"{int(bits.shape[1])} bytes a row cannot hold {width} bits")
        self.bits, self.width, self.dtype = bits, width, dtype

    @property
    def shape(self) -> tf.TensorShape:
        return tf.TensorShape([int(self.bits.shape[0]), self.width])

    def __len__(self) -> int:
        return int(self.bits.shape[0])

    def __getitem__(self, index: slice | int | Sequence[int] | np.ndarray) -> tf.Tensor:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return unpack_bits(self.bits[index], self.width, self.dtype)
            rows = row_slice(self.bits, start, max(start, stop))  # a slice of Python numbers leaks
            return _compiled_unpack(self.width, self.dtype)(rows)
        if np.ndim(index) == 0:
            if not -len(self) <= int(index) < len(self):  # type: ignore[arg-type]
                raise IndexError(f"row {index} of {len(self)}")
            return self.gather([int(index) % len(self)])[0]  # type: ignore[arg-type]
        return self.gather(np.asarray(index, dtype=np.int64))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Every row as NumPy (:meth:`dense`, which may raise)."""
        dense = self.dense().numpy()
        return dense if dtype is None else dense.astype(dtype)

    def gather(self, index: tf.Tensor | np.ndarray | Sequence[int]) -> tf.Tensor:
        """The dense rows [K, width] at ``index`` [K] (one compiled call: a batch rule gathers
        a few rows after every point it selects, and as eager ops this cost more than the rest
        of the call)."""
        return _compiled_gather(self.width, self.dtype)(self.bits, host_tensor(index, tf.int64))

    def dense(self) -> tf.Tensor:
        """Every row, unpacked [N, width].

        :raise MemoryError: If that takes more than ``DENSE_LIMIT_BYTES``.
        """
        size = len(self) * self.width * self.dtype.size
        if size > DENSE_LIMIT_BYTES:
            raise MemoryError(
                f"unpacking {len(self)} candidates of {self.width} bits as {self.dtype.name} "
                f"takes {size / 2**30:.1f} GiB; use a rule of trieste_scalable (they read packed "
                "candidates a chunk at a time) or a smaller library"
            )
        return self[:]


@functools.lru_cache(maxsize=None)
def _compiled_gather(width: int, dtype: tf.DType) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """``(bits [N, W], index [K]) -> rows [K, width]``, traced once for every shape."""
    num_bytes = -(-width // 8)
    return tf.function(
        lambda bits, index: unpack_bits(gather_rows(bits, index, num_bytes), width, dtype),
        input_signature=[tf.TensorSpec([None, None], tf.uint8), tf.TensorSpec([None], tf.int64)],
        autograph=False,
    )


@functools.lru_cache(maxsize=None)
def _compiled_unpack(width: int, dtype: tf.DType) -> Callable[[tf.Tensor], tf.Tensor]:
    """``bits [N, W] -> rows [N, width]``, traced once: eagerly, the unpack's reshape and slice
    made host tensors of Python numbers, which TensorFlow leaks (:mod:`.host_tensors`)."""
    return tf.function(
        lambda bits: unpack_bits(bits, width, dtype),
        input_signature=[tf.TensorSpec([None, None], tf.uint8)],
        autograph=False,
    )


def gather_rows(bits: tf.Tensor, index: tf.Tensor, num_bytes: int) -> tf.Tensor:
    """The packed rows [K, num_bytes] of ``bits`` [N, num_bytes] (uint8) at ``index`` [K].

    Rows of a whole number of 8-byte words are gathered as int64 words (a reshape and a bitcast
    share the buffer): TensorFlow registers no GPU gather for uint8, so a gather from a library
    held on a GPU ran on the host, after copying the whole library there."""
    if num_bytes % 8:
        return tf.gather(bits, index)
    words = tf.bitcast(tf.reshape(bits, [-1, num_bytes // 8, 8]), tf.int64)  # [N, W / 8]
    return tf.reshape(tf.bitcast(tf.gather(words, index), tf.uint8), [-1, num_bytes])


Rows = Union[tf.Tensor, PackedRows]
"""Candidates as the rules read them: a dense tensor [N, D] or :class:`PackedRows`."""


def stored_rows(rows: Rows) -> tuple[tf.Tensor, int]:
    """The tensor that holds ``rows`` (packed bits [N, ceil(D / 8)], or the dense rows [N, D])
    and D, as :func:`dense_rows` reads them in compiled code."""
    if isinstance(rows, PackedRows):
        return rows.bits, rows.width
    return tf.convert_to_tensor(rows), int(rows.shape[1])


def take_rows(rows: Rows, index: tf.Tensor | np.ndarray) -> tf.Tensor:
    """The dense rows [K, D] of ``rows`` at ``index`` [K]."""
    if isinstance(rows, PackedRows):
        return rows.gather(index)
    return tf.gather(rows, host_tensor(index, tf.int64))


def subset_rows(rows: Rows, index: np.ndarray) -> Rows:
    """The rows at ``index`` [K], kept packed where ``rows`` are (:func:`take_rows` unpacks)."""
    if isinstance(rows, PackedRows):
        index_tensor = host_tensor(index, tf.int64)
        bits = gather_rows(rows.bits, index_tensor, int(rows.bits.shape[1]))
        return PackedRows(bits, rows.width, rows.dtype)
    return tf.gather(rows, host_tensor(index, tf.int64))


def prepend_rows(head: np.ndarray, rows: Rows) -> Rows:
    """``head`` [K, D] followed by ``rows`` [N, D] (packed if ``rows`` is)."""
    if isinstance(rows, PackedRows):
        bits = tf.concat([host_tensor(pack_rows(head), tf.uint8), rows.bits], axis=0)
        return PackedRows(bits, rows.width, rows.dtype)
    return tf.concat([host_tensor(head, rows.dtype), rows], axis=0)


def pack_rows(rows: np.ndarray) -> np.ndarray:
    """The packed bits [N, ceil(D / 8)] (uint8) of 0/1 rows [N, D].

    :raise ValueError: If a value is neither 0 nor 1.
    """
    rows = np.asarray(rows)
    if rows.size and not np.all((rows == 0) | (rows == 1)):
        raise ValueError("a packed search space holds 0/1 rows only; got other values")
    return np.packbits(rows.astype(np.uint8), axis=-1)


def shared_tensor(array: np.ndarray) -> tf.Tensor:
    """A uint8 tensor of ``array``, sharing its memory (DLPack) where :func:`aligned_rows` made
    it (else a copy).

    ``tf.constant`` and ``tf.convert_to_tensor`` always copy a NumPy array (and measured with
    TensorFlow 2.16 hold about twice its size while doing so); for a library of millions of
    packed fingerprints one copy is hundreds of megabytes. TensorFlow's kernels assume
    ``ALIGNMENT``-byte aligned buffers (a misaligned shared buffer aborts the process), so only
    aligned, writable, C-contiguous arrays are shared. With a GPU the tensor is copied to it
    once instead (host memory then holds only the NumPy array), so compiled scoring does not
    copy the library to the device at every call.
    """
    if shareable(array) and not tf.config.list_logical_devices("GPU"):
        return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
    return tf.constant(array)


def shareable(array: np.ndarray) -> bool:
    """Whether :func:`shared_tensor` can share ``array``'s memory: C-contiguous, writable and
    aligned to ``ALIGNMENT`` bytes."""
    flags = array.flags
    return bool(flags.c_contiguous and flags.writeable and array.ctypes.data % ALIGNMENT == 0)


def aligned_rows(rows: np.ndarray, index: Optional[np.ndarray] = None) -> np.ndarray:
    """A copy of ``rows[index]`` (all of ``rows`` by default) that :func:`shared_tensor` can
    share with TensorFlow: C-contiguous and aligned to ``ALIGNMENT`` bytes."""
    shape = (len(rows) if index is None else len(index),) + tuple(rows.shape[1:])
    out = aligned_empty(shape, rows.dtype)
    if index is None:
        out[...] = rows
    else:
        np.take(rows, index, axis=0, out=out)
    return out
