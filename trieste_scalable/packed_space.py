"""A discrete search space of 0/1 rows (molecular fingerprints) held bit-packed.

A library of N fingerprints of D bits takes N D / 8 bytes packed, against 8 N D as the float64
``points`` of Trieste's :class:`~trieste.space.DiscreteSearchSpace` (1.9 M MOSES molecules at
1,024 bits: 243 MB against 15.6 GB). :class:`PackedSearchSpace` is a ``DiscreteSearchSpace``
whose candidates stay packed: this package's rules read them through :class:`PackedRows`, which
unpacks one chunk (or the gathered rows) at a time, so a step's memory is that of a chunk, not of
the library. ``points`` still works for code that needs the dense matrix (Trieste's own rules),
while it fits in :data:`DENSE_LIMIT_BYTES`; beyond that it raises instead of exhausting memory.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import tensorflow as tf
from trieste.space import DiscreteSearchSpace
from trieste.types import TensorType

from .numerics.bits import unpack_bits
from .numerics.rows import RowIndex

DENSE_LIMIT_BYTES = 2**30
_ALIGNMENT = 64  # bytes: Eigen's largest (AVX-512) alignment, which TensorFlow's CPU kernels use


class PackedRows:
    """Rows [N, width] of 0/1 values in ``dtype``, stored as packed bits [N, ceil(width / 8)].

    Tensor-like where this package's chunked code needs it: ``shape``, ``dtype``, ``len`` and
    slicing with a step-1 ``slice`` (returns the dense rows); :meth:`gather` for any indices.
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

    def __getitem__(self, rows: slice) -> tf.Tensor:
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("packed rows are sliced with start:stop; use gather() for indices")
        return unpack_bits(self.bits[rows], self.width, self.dtype)

    def gather(self, index: TensorType) -> tf.Tensor:
        """The dense rows [K, width] at ``index`` [K]."""
        return unpack_bits(tf.gather(self.bits, index), self.width, self.dtype)

    def dense(self) -> tf.Tensor:
        """Every row, unpacked [N, width].

        :raise MemoryError: If that takes more than :data:`DENSE_LIMIT_BYTES`.
        """
        size = len(self) * self.width * self.dtype.size
        if size > DENSE_LIMIT_BYTES:
            raise MemoryError(
                f"unpacking {len(self)} candidates of {self.width} bits as {self.dtype.name} "
                f"takes {size / 2**30:.1f} GiB; use a rule of trieste_scalable (they read packed "
                "candidates a chunk at a time) or a smaller library"
            )
        return self[:]


Rows = Union[tf.Tensor, PackedRows]
"""Candidates as the rules read them: a dense tensor [N, D] or :class:`PackedRows`."""


def stored_rows(rows: Rows) -> tuple[tf.Tensor, int]:
    """The tensor that holds ``rows`` (packed bits [N, ceil(D / 8)], or the dense rows [N, D])
    and D, as :func:`~.numerics.bits.dense_rows` reads them in compiled code."""
    if isinstance(rows, PackedRows):
        return rows.bits, rows.width
    return tf.convert_to_tensor(rows), int(rows.shape[1])


def take_rows(rows: Rows, index: TensorType) -> tf.Tensor:
    """The dense rows [K, D] of ``rows`` at ``index`` [K]."""
    return rows.gather(index) if isinstance(rows, PackedRows) else tf.gather(rows, index)


def prepend_rows(head: np.ndarray, rows: Rows) -> Rows:
    """``head`` [K, D] followed by ``rows`` [N, D] (packed if ``rows`` is)."""
    if isinstance(rows, PackedRows):
        bits = tf.concat([tf.constant(pack_rows(head), tf.uint8), rows.bits], axis=0)
        return PackedRows(bits, rows.width, rows.dtype)
    return tf.concat([tf.constant(head, rows.dtype), rows], axis=0)


def pack_rows(rows: np.ndarray) -> np.ndarray:
    """The packed bits [N, ceil(D / 8)] (uint8) of 0/1 rows [N, D].

    :raise ValueError: If a value is neither 0 nor 1.
    """
    rows = np.asarray(rows)
    if rows.size and not np.all((rows == 0) | (rows == 1)):
        raise ValueError("a packed search space holds 0/1 rows only; got other values")
    return np.packbits(rows.astype(np.uint8), axis=-1)


class PackedSearchSpace(DiscreteSearchSpace):
    """A :class:`~trieste.space.DiscreteSearchSpace` of 0/1 rows held bit-packed.

    The rows are held once: a writable, C-contiguous uint8 NumPy array is shared with
    TensorFlow, not copied (anything else is copied once).

    :param bits: Packed candidates [N, ceil(width / 8)] (uint8; NumPy, memory-mapped or not).
    :param width: Bits a candidate (the search space's dimension D).
    :param dtype: The dtype of the (unpacked) points, the models and the datasets.
    :raise ValueError: On an empty or malformed set of candidates.
    """

    def __init__(self, bits: np.ndarray | tf.Tensor, width: int, dtype: tf.DType = tf.float64):
        if int(np.shape(bits)[0]) == 0:
            raise ValueError("a search space needs at least one candidate")
        bits = np.asarray(bits)
        if bits.dtype == np.uint8 and not _shareable(bits):
            bits = aligned_rows(bits)  # one copy, shared with TensorFlow from here on
        self._bits = bits
        self.rows = PackedRows(shared_tensor(bits), width, dtype)
        self._dimension = tf.constant(width)
        self._index: Optional[RowIndex] = None

    def __repr__(self) -> str:
        return f"PackedSearchSpace({len(self.rows)} candidates, {self.rows.width} bits)"

    @property
    def dtype(self) -> tf.DType:
        return self.rows.dtype

    @property
    def num_points(self) -> int:
        return len(self.rows)

    @property
    def points(self) -> TensorType:
        """The dense candidates [N, D] (see :meth:`PackedRows.dense`, which may raise)."""
        return self.rows.dense()

    @property
    def lower(self) -> TensorType:
        return tf.zeros([self.rows.width], self.dtype)

    @property
    def upper(self) -> TensorType:
        return tf.ones([self.rows.width], self.dtype)

    def index(self) -> RowIndex:
        """Finds packed rows among the candidates (built once, 8 bytes a candidate)."""
        if self._index is None:
            self._index = RowIndex(self._bits)
        return self._index

    def _contains(self, value: TensorType) -> TensorType:
        rows = np.reshape(np.asarray(value), [-1, self.rows.width])
        if not np.all((rows == 0) | (rows == 1)):
            found = np.zeros(len(rows), dtype=bool)
        else:
            found = self.index().find(pack_rows(rows))[1]
        return tf.constant(found.reshape(np.shape(value)[:-1]))

    def sample(self, num_samples: int, seed: Optional[int] = None) -> TensorType:
        """``num_samples`` candidates drawn uniformly with replacement [num_samples, D]."""
        index = np.random.default_rng(seed).integers(self.num_points, size=num_samples)
        return self.rows.gather(index)

    def product(self, other: DiscreteSearchSpace) -> PackedSearchSpace:
        raise NotImplementedError("products of packed search spaces are not supported")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PackedSearchSpace):
            return NotImplemented
        return (
            self.rows.width == other.rows.width
            and self.dtype == other.dtype
            and self.num_points == other.num_points
            and bool(self.index().mask(other._bits).all())
            and bool(other.index().mask(self._bits).all())
        )


def shared_tensor(array: np.ndarray) -> tf.Tensor:
    """A uint8 tensor of ``array``, sharing its memory (DLPack) where :func:`aligned_rows` made
    it (else a copy).

    ``tf.constant`` and ``tf.convert_to_tensor`` always copy a NumPy array (and measured with
    TensorFlow 2.16 hold about twice its size while doing so); for a library of millions of
    packed fingerprints one copy is hundreds of megabytes. TensorFlow's kernels assume
    ``_ALIGNMENT``-byte aligned buffers (a misaligned shared buffer aborts the process), so only
    aligned, writable, C-contiguous arrays are shared. With a GPU the tensor is copied to it
    once instead (host memory then holds only the NumPy array), so compiled scoring does not
    copy the library to the device at every call.
    """
    if _shareable(array) and not tf.config.list_logical_devices("GPU"):
        return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
    return tf.constant(array)


def _shareable(array: np.ndarray) -> bool:
    flags = array.flags
    return bool(flags.c_contiguous and flags.writeable and array.ctypes.data % _ALIGNMENT == 0)


def aligned_rows(rows: np.ndarray, index: Optional[np.ndarray] = None) -> np.ndarray:
    """A copy of ``rows[index]`` (all of ``rows`` by default) that :func:`shared_tensor` can
    share with TensorFlow: C-contiguous and aligned to ``_ALIGNMENT`` bytes."""
    shape = (len(rows) if index is None else len(index),) + tuple(rows.shape[1:])
    out = aligned_empty(shape, rows.dtype)
    if index is None:
        out[...] = rows
    else:
        np.take(rows, index, axis=0, out=out)
    return out


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised C-contiguous array aligned to ``_ALIGNMENT`` bytes (see
    :func:`shared_tensor`)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = np.empty(size + _ALIGNMENT, dtype=np.uint8)
    offset = -buffer.ctypes.data % _ALIGNMENT
    return buffer[offset : offset + size].view(dtype).reshape(shape)
