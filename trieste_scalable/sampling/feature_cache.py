"""Random sign features of a fixed candidate set, computed once and kept bit-packed.

For a feature map whose features are an amplitude times signs that do not depend on the kernel's
hyperparameters (``FeatureMap.signs_only``: the Tanimoto MinHash features), the signs of every
candidate under fixed draws are computed once, in chunks, and stored one bit each ([N, F / 8]
uint8, 125 bytes a candidate at F = 1,000, plus a flag for all-zero rows). Scoring then unpacks
one chunk at a time: a batch of Thompson samples costs one pass of matrix products over the
library instead of re-hashing every candidate (:class:`~.scoring.ChunkedSampleScorer`). The
unpacked features are exactly the ones :meth:`~.features.TanimotoFeatures.signs` computes.
Pure TensorFlow.
"""

from __future__ import annotations

import hashlib
import tempfile
import weakref
from typing import Any, Callable, NamedTuple, Optional, cast

import numpy as np
import tensorflow as tf

from ..numerics.bits import (
    PackedRows,
    Rows,
    dense_rows,
    on_bits,
    shared_tensor,
    slice_rows,
    stored_rows,
    unpack_bits,
)
from ..numerics.rows import aligned_empty
from .features import Draws, FeatureMap

_BIT_VALUES = tf.constant([128, 64, 32, 16, 8, 4, 2, 1], tf.int32)
_BLOCK_CHUNKS = 64
"""Chunks of contiguous rows whose rows are ordered by their on-bits together: a chunk's
MinHash loop runs to its largest on-bit count, so chunks of rows with similar counts do less
work (20,000 MOSES molecules, 8 repeats: 0.90-1.04 s against 0.97-1.16 s in stored order), and
a block of contiguous rows keeps reads of a memory-mapped library sequential."""


SignStore = Callable[[str, tuple[int, ...], Callable[[], np.ndarray]], np.ndarray]
"""Keeps packed signs across processes: ``store(key, shape, compute)`` returns the uint8 array
of ``shape`` kept under ``key``, or ``compute()``'s, which it keeps (e.g. a file in the
screening cache directory: :class:`~trieste_scalable.stores.sign_store.LibrarySignStore`)."""

STORE_VERSION = 1
"""Part of every stored entry's key: bump it when the signs computed for a key change."""


class PackedSigns(NamedTuple):
    """Sign features of N rows.

    :ivar bits: Bit j of row n (most significant first) set where sign j is +1 [N, ceil(F / 8)].
    :ivar nonzero: 1 where the row's features are signs, 0 where they are all zero [N] (int8 in
        a :class:`SignCache`: a byte a row, not a float).
    """

    bits: tf.Tensor
    nonzero: tf.Tensor

    def signs(self, num_features: int, dtype: Optional[tf.DType] = None) -> tf.Tensor:
        """The sign features [N, F] in ``dtype`` (default: that of ``nonzero``)."""
        dtype = dtype or self.nonzero.dtype
        signs = unpack_bits(self.bits, num_features, dtype, off=-1.0)
        return signs * tf.cast(self.nonzero, dtype)[:, None]


def pack(signs: tf.Tensor) -> PackedSigns:
    """Pack sign features [N, F] (rows in {-1, +1}^F or all zero)."""
    num_features = tf.shape(signs)[1]
    positive = tf.cast(signs > 0, tf.int32)
    padded = tf.pad(positive, [[0, 0], [0, -num_features % 8]])
    octets = tf.reshape(padded, [tf.shape(signs)[0], -1, 8])
    bits = tf.cast(tf.reduce_sum(octets * _BIT_VALUES, axis=-1), tf.uint8)
    return PackedSigns(bits, tf.cast(tf.reduce_any(signs != 0, axis=-1), signs.dtype))


_PACKING: weakref.WeakKeyDictionary[FeatureMap, Any] = weakref.WeakKeyDictionary()


def _packing(features: FeatureMap) -> Any:
    """The compiled ``pack(features.signs(draws, x))``, one per feature map: a scoring actor keeps
    a cache a shard, and a trace each grew its memory with its shards."""
    if features not in _PACKING:
        live = weakref.ref(features)  # the function must not keep its key alive

        def packed(draws: Draws, x: tf.Tensor) -> PackedSigns:
            return pack(cast(FeatureMap, live()).signs(draws, x))  # alive while it is called

        # no AutoGraph: no Python control flow to convert
        _PACKING[features] = tf.function(packed, autograph=False)
    return _PACKING[features]


class SignCache:
    """The packed signs of one candidate set under one draw, computed on first use (and again
    for new candidates or a new draw; one compiled function throughout).

    :param features: A map with ``signs_only``.
    :param chunk_size: Rows per chunk while computing.
    :param spill_dir: A directory to keep the packed signs in, memory-mapped from a file of
        their own (unlinked at once: nothing is left behind, even after a crash), instead of in
        memory: their pages are then the file's, written back and dropped under memory
        pressure, so the resident memory of a process scoring a library larger than memory
        follows the chunk being scored (a scoring actor's shards are memory-mapped the same
        way). ``None``: in memory.
    """

    def __init__(self, features: FeatureMap, chunk_size: int, spill_dir: Optional[str] = None):
        if not features.signs_only:
            raise ValueError(f"{type(features).__name__} features depend on hyperparameters")
        self.features, self.chunk_size, self.spill_dir = features, chunk_size, spill_dir
        self._key: Optional[tuple[Rows, int]] = None
        self._packed: Optional[PackedSigns] = None
        self._compiled = _packing(features)

    @property
    def tracing_count(self) -> int:
        """Traces of the packing function, which every cache of this feature map shares."""
        return int(self._compiled.experimental_get_tracing_count())

    def __call__(
        self,
        draws: Draws,
        candidates: Rows,
        dtype: tf.DType,
        draw: int = 0,
        store: Optional[SignStore] = None,
    ) -> PackedSigns:
        """The packed signs of ``candidates`` [N, D] under ``draws``, computed for the first call
        with these very candidates and this ``draw``.

        :param candidates: Dense rows, or :class:`~trieste_scalable.numerics.bits.PackedRows`
            (unpacked a chunk at a time).
        :param dtype: The features' dtype.
        :param draw: Which draw ``draws`` is: the caller changes it when the draws change.
        :param store: Where the signs are kept across processes, under a key made of the
            candidates' values, the draws' values, the feature map and ``dtype`` (so a stored
            entry is only ever read for the very features it holds): read from there if kept,
            else computed and kept. An entry is 126 bytes a candidate at F = 1,000.
        """
        key = self._key
        if self._packed is None or key is None or key[0] is not candidates or key[1] != draw:
            if store is None:
                self._packed = self._compute(draws, candidates, dtype)
            else:
                self._packed = self._stored(store, draws, candidates, dtype)
            self._key = (candidates, draw)
        return self._packed

    def _compute(self, draws: Draws, candidates: Rows, dtype: tf.DType) -> PackedSigns:
        """Hash every candidate, a chunk at a time (rows with similar on-bit counts together)."""
        points, width = stored_rows(candidates)
        num = int(points.shape[0])
        # written chunk by chunk into the final arrays: no second copy while building
        bits = self._empty((num, -(-self.features.num_features // 8)), np.uint8)
        nonzero = self._empty((num,), np.int8)  # int8: uint8 has no GPU slice kernel
        block = self.chunk_size * _BLOCK_CHUNKS
        # one trace for every chunk size (the last chunk of a block is shorter)
        compiled = self._compiled.get_concrete_function(
            tf.nest.map_structure(tf.TensorSpec.from_tensor, draws),
            tf.TensorSpec([None, width], dtype),
        )
        for first in range(0, num, block):
            # the block on the host, reordered there: TensorFlow's uint8 gather has no GPU
            # kernel, and on the host it would copy the whole block for every chunk
            rows = slice_rows(points, first, min(block, num - first)).numpy()
            order = np.argsort(on_bits(rows, isinstance(candidates, PackedRows)))
            for start in range(0, len(order), self.chunk_size):
                index = order[start : start + self.chunk_size]
                x = dense_rows(tf.constant(rows[index]), 0, len(index), width, dtype)
                part = compiled(draws, x)
                bits[first + index] = part.bits.numpy()
                nonzero[first + index] = part.nonzero.numpy()
        return PackedSigns(shared_tensor(bits), shared_tensor(nonzero))

    def _stored(
        self, store: SignStore, draws: Draws, candidates: Rows, dtype: tf.DType
    ) -> PackedSigns:
        """The signs from ``store`` as one uint8 table [N, F / 8 + 1] (the flags last)."""
        points, width = stored_rows(candidates)
        digest = hashlib.sha256(np.ascontiguousarray(points.numpy()).data)
        for tensor in tf.nest.flatten(draws):
            digest.update(np.ascontiguousarray(tensor.numpy()).data)
        features = f"{type(self.features).__name__}-{self.features.num_features}"
        key = f"{STORE_VERSION}|{features}|{dtype.name}|{width}|{points.shape}|{digest.hexdigest()}"
        num, octets = int(points.shape[0]), -(-self.features.num_features // 8)

        computed: list[PackedSigns] = []

        def compute() -> np.ndarray:
            computed.append(self._compute(draws, candidates, dtype))
            flags = computed[0].nonzero.numpy().view(np.uint8)[:, None]
            return np.concatenate([computed[0].bits.numpy(), flags], axis=1)

        table = store(key, (num, octets + 1), compute)
        if computed:  # just computed here: no second copy of what the store kept
            return computed[0]
        bits, nonzero = self._empty((num, octets), np.uint8), self._empty((num,), np.int8)
        bits[...], nonzero[...] = table[:, :octets], table[:, octets].view(np.int8)
        return PackedSigns(shared_tensor(bits), shared_tensor(nonzero))

    def _empty(self, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        """An array for packed signs [N, F / 8] or their flags [N], in memory or memory-mapped
        (see ``spill_dir``: the flags too, else a scoring actor's memory would grow by a float a
        row of its shards), that :func:`~..numerics.bits.shared_tensor` shares with
        TensorFlow."""
        if self.spill_dir is None or shape[0] == 0:
            return aligned_empty(shape, dtype)
        with tempfile.TemporaryFile(dir=self.spill_dir) as file:
            file.truncate(int(np.prod(shape)) * np.dtype(dtype).itemsize)
            return np.memmap(file, dtype=dtype, mode="r+", shape=shape)  # page-aligned
