"""Bit-packed candidates: the packed search space reads the same rows as the dense one (chunk
boundaries, widths that are not a multiple of 8), refuses to unpack a library too large for
memory, and every rule proposes exactly the same batches on it as on Trieste's dense
``DiscreteSearchSpace``."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition import BBKB, BatchThompsonSampling, MiniGPUCB
from trieste_scalable.acquisition.candidates import EvaluatedCandidates, candidate_points
from trieste_scalable.acquisition.random_search import RandomRule
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.models import AdaptiveSVGP, NystromGPR, ReplicatedGPR, RidgeLeverageSampler
from trieste_scalable.numerics import bits as packed_bits
from trieste_scalable.numerics import rows as rows_module
from trieste_scalable.numerics.bits import (
    PackedRows,
    aligned_rows,
    gather_rows,
    pack_rows,
    slice_rows,
)
from trieste_scalable.numerics.linalg import chunked_map
from trieste_scalable.numerics.rows import (
    RowIndex,
    first_occurrences,
    index_keys,
    row_hashes,
)
from trieste_scalable.packed_space import PackedSearchSpace

from ..util import se_kernel

WIDTH = 13  # not a whole number of bytes: the last byte is partly padding


def _rows(num: int = 300, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).integers(0, 2, size=(num, WIDTH)).astype(np.float64)
    return np.unique(rows, axis=0)  # distinct candidates (at most 2^13)


def _spaces(rows: np.ndarray) -> tuple[DiscreteSearchSpace, PackedSearchSpace]:
    return DiscreteSearchSpace(tf.constant(rows)), PackedSearchSpace(pack_rows(rows), WIDTH)


def test_packed_rows_slice_gather_and_chunk_like_the_dense_rows() -> None:
    rows = _rows()
    packed = PackedRows(tf.constant(pack_rows(rows)), WIDTH, tf.float64)
    assert packed.shape == rows.shape and len(packed) == len(rows)
    np.testing.assert_array_equal(packed[:], rows)
    np.testing.assert_array_equal(packed[17:90], rows[17:90])
    index = [5, 0, 5, len(rows) - 1]
    np.testing.assert_array_equal(packed.gather(index), rows[index])
    for chunk in (1, 7, 64, 1000):  # chunks that do and do not divide the rows
        (summed,) = chunked_map(lambda x: tf.reduce_sum(x, axis=1), packed, chunk)
        np.testing.assert_array_equal(summed, rows.sum(axis=1))
    np.testing.assert_array_equal(packed[::2], rows[::2])
    np.testing.assert_array_equal(packed[index], rows[index])  # indices read as gather does
    np.testing.assert_array_equal(packed[np.array(index)], rows[index])
    np.testing.assert_array_equal(packed[7], rows[7])  # one row [D]
    assert packed[[]].shape == (0, WIDTH)
    np.testing.assert_array_equal(packed[-1], rows[-1])
    with pytest.raises(IndexError):
        packed[len(rows)]
    np.testing.assert_array_equal(np.asarray(packed), rows)  # NumPy reads it whole


def test_slice_rows_reads_every_byte_value_eager_and_compiled() -> None:
    """uint8 rows are sliced through an int8 view (no GPU Slice kernel for uint8): bytes of
    128 and above, read as negative there, come back unchanged."""
    table = np.arange(256 * 3, dtype=np.uint8).reshape(-1, 3)  # every byte value
    compiled = tf.function(slice_rows, autograph=False)
    for points in (tf.constant(table), tf.constant(table.astype(np.float32))):
        for start, size in ((0, 256), (100, 57), (255, 1)):
            for sliced in (slice_rows(points, start, size), compiled(points, start, size)):
                assert sliced.dtype == points.dtype
                np.testing.assert_array_equal(sliced, table[start : start + size])


@pytest.mark.parametrize("num_bytes", [2, 16, 24])  # uint8 gather, and as int64 words
def test_gather_rows_returns_the_packed_rows_at_the_indices(num_bytes: int) -> None:
    table = np.random.default_rng(3).integers(0, 256, size=(40, num_bytes), dtype=np.uint8)
    index = np.array([39, 0, 7, 7, 12])
    compiled = tf.function(gather_rows, autograph=False)
    for gathered in (gather_rows(tf.constant(table), index, num_bytes),
                     compiled(tf.constant(table), tf.constant(index), num_bytes)):  # fmt: skip
        assert gathered.dtype == tf.uint8
        np.testing.assert_array_equal(gathered, table[index])
    rows = PackedRows(tf.constant(table), 8 * num_bytes - 3, tf.float64)
    unpacked = np.unpackbits(table[index], axis=1)[:, : 8 * num_bytes - 3]
    np.testing.assert_array_equal(rows.gather(index), unpacked)


def test_packed_search_space_behaves_as_the_dense_one() -> None:
    rows = _rows()
    dense, packed = _spaces(rows)
    np.testing.assert_array_equal(packed.points, dense.points)
    np.testing.assert_array_equal(packed.lower, np.zeros(WIDTH))
    np.testing.assert_array_equal(packed.upper, np.ones(WIDTH))
    assert int(packed.dimension) == WIDTH and packed.dtype == tf.float64
    assert tf.constant(rows[3]) in packed
    outside = 1.0 - rows[:1]
    assert (outside[0] in packed) == bool(np.any(np.all(rows == outside, axis=1)))
    assert tf.constant(np.full(WIDTH, 0.5)) not in packed
    sample = packed.sample(50, seed=1).numpy()
    assert sample.shape == (50, WIDTH) and all(row in dense for row in sample)
    assert packed == PackedSearchSpace(pack_rows(rows[::-1]), WIDTH)
    assert packed != PackedSearchSpace(pack_rows(rows[1:]), WIDTH)


def test_evaluated_candidates_are_found_in_packed_spaces() -> None:
    rows = _rows()
    dense, packed = _spaces(rows)
    queried = rows[[4, 9, 9, 200]]
    found = EvaluatedCandidates().among(packed, queried)
    np.testing.assert_array_equal(found, EvaluatedCandidates().among(dense, queried))
    assert np.flatnonzero(found).tolist() == [4, 9, 200]


def test_the_space_shares_aligned_rows_and_copies_others_aligned() -> None:
    """One copy of a library: rows made by ``aligned_rows`` are shared with TensorFlow (the
    problem and its search space hold the same memory); misaligned or read-only rows are copied
    once into aligned memory (TensorFlow's kernels abort on a misaligned buffer)."""
    bits = pack_rows(_rows())
    shared = aligned_rows(bits)
    space = PackedSearchSpace(shared, WIDTH)
    assert space.rows.bits.numpy().tobytes() == bits.tobytes()
    shared[0] ^= 0xFF  # visible through the space: the same memory
    np.testing.assert_array_equal(space.rows.bits[0].numpy(), shared[0])
    buffer = bytearray(bits.nbytes + 1)
    misaligned = np.frombuffer(buffer, np.uint8, offset=1).reshape(bits.shape)
    misaligned[...] = bits
    readonly = bits.copy()
    readonly.flags.writeable = False
    for rows in (misaligned, readonly, bits[:, :]):
        copied = PackedSearchSpace(rows, WIDTH)
        assert (copied.rows.bits + 0).numpy().tobytes() == bits.tobytes()  # an op runs on it
        np.testing.assert_array_equal(copied.points, _rows())


def test_row_index_finds_rows_and_marks_every_copy() -> None:
    table = np.random.default_rng(1).integers(0, 3, size=(200, 3)).astype(np.uint8)
    index = RowIndex(table)
    queries = np.random.default_rng(2).integers(0, 4, size=(60, 3)).astype(np.uint8)
    position, found = index.find(queries)
    present = [bool(np.any(np.all(table == q, axis=1))) for q in queries]
    np.testing.assert_array_equal(found, present)
    np.testing.assert_array_equal(table[position[found]], queries[found])
    expected = [bool(np.any(np.all(queries == row, axis=1))) for row in table]  # repeats too
    np.testing.assert_array_equal(index.mask(queries), expected)
    np.testing.assert_array_equal(index.positions(queries), np.flatnonzero(expected))
    assert not index.mask(queries[:0]).any() and index.positions(queries[:0]).size == 0
    with pytest.raises(ValueError, match="not a candidate"):
        index(queries[~found][:1])


@pytest.mark.parametrize("dtype", [np.uint8, np.float64])
def test_row_index_checks_every_hash_match_against_the_rows(
    monkeypatch: pytest.MonkeyPatch, dtype: type
) -> None:
    """With every hash colliding, lookups still find exactly the equal rows (first copy)."""
    monkeypatch.setattr(rows_module, "row_hashes", lambda rows: np.zeros(len(rows), np.uint64))
    table = np.random.default_rng(4).integers(0, 2, size=(40, 3)).astype(dtype)
    queries = np.random.default_rng(5).integers(0, 3, size=(30, 3)).astype(dtype)
    index = RowIndex(table)
    position, found = index.find(queries)
    for q, p, f in zip(queries, position, found):
        equal = np.flatnonzero(np.all(table == q, axis=1))
        assert f == bool(equal.size) and (not f or p == equal[0])
    expected = [bool(np.any(np.all(queries == row, axis=1))) for row in table]
    np.testing.assert_array_equal(index.mask(queries), expected)


class _CountingRows(np.ndarray):
    """An array that records the rows read through indexing."""

    read: list[int]

    def __getitem__(self, key: Any) -> Any:
        self.read.extend(np.atleast_1d(np.arange(len(self))[key]).tolist())
        return np.asarray(self)[key]


def test_a_row_index_built_from_hashes_reads_only_the_rows_it_looks_up() -> None:
    table = np.random.default_rng(6).integers(0, 256, size=(1000, 4), dtype=np.uint8)
    counting = table.view(_CountingRows)
    counting.read = []
    index = RowIndex(counting, index_keys(row_hashes(table)))
    assert counting.read == []
    assert index(table[[5, 700]]).tolist() == [5, 700]
    assert sorted(counting.read) == [5, 700]
    with pytest.raises(ValueError, match=r"rows \(1, 8\) for a table of rows \(4,\)"):
        index.find(np.zeros((1, 8), np.uint8))
    with pytest.raises(ValueError, match=r"keys uint64 \(2, 2\) for a table of 1000 rows"):
        RowIndex(table, index_keys(row_hashes(table[:2])))


def test_row_hashes_differ_for_rows_differing_in_one_bit() -> None:
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 256, size=(200, 128), dtype=np.uint8)
    flipped = rows.copy()
    flipped[np.arange(200), rng.integers(0, 128, 200)] ^= np.uint8(1)
    assert np.all(row_hashes(rows) != row_hashes(flipped))
    np.testing.assert_array_equal(row_hashes(rows), row_hashes(rows.copy()))
    np.testing.assert_array_equal(row_hashes(rows, chunk_size=7), row_hashes(rows))


@pytest.mark.parametrize("chunk_size", [1, 7, 1000])
def test_first_occurrences_are_those_of_numpy_unique(chunk_size: int) -> None:
    table = np.random.default_rng(3).integers(0, 2, size=(500, 5)).astype(np.uint8)
    _, expected = np.unique(table, axis=0, return_index=True)
    np.testing.assert_array_equal(first_occurrences(table, chunk_size), np.sort(expected))
    assert first_occurrences(table[:1]).tolist() == [0]


def test_bad_packed_input_is_refused_with_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="0/1"):
        pack_rows(np.array([[0.0, 2.0]]))
    with pytest.raises(ValueError, match="at least one candidate"):
        PackedSearchSpace(np.zeros((0, 2), np.uint8), WIDTH)
    with pytest.raises(ValueError, match="cannot hold"):
        PackedSearchSpace(np.zeros((3, 1), np.uint8), WIDTH)
    with pytest.raises(ValueError, match="uint8"):
        PackedRows(tf.zeros([3, 2], tf.float64), WIDTH, tf.float64)
    monkeypatch.setattr(packed_bits, "DENSE_LIMIT_BYTES", 1000)
    with pytest.raises(MemoryError, match="chunk at a time"):
        np.asarray(PackedSearchSpace(pack_rows(_rows()), WIDTH).points)


def _data(rows: np.ndarray, num: int = 20) -> Dataset:
    x = rows[np.random.default_rng(1).choice(len(rows), num, replace=False)]
    y = x[:, :5].sum(axis=1, keepdims=True) - x[:, 5:].sum(axis=1, keepdims=True)
    return Dataset(tf.constant(x), tf.constant(y))


def _thompson_tanimoto(data: Dataset) -> tuple[Any, Any]:
    model = AdaptiveSVGP(Tanimoto(), 0.01, data, inducing=10, fit_hyperparameters=False)
    rule = BatchThompsonSampling(8, num_features=64, chunk_size=37, exclude_evaluated=True)
    return model, rule


def _thompson_se(data: Dataset) -> tuple[Any, Any]:
    model = AdaptiveSVGP(se_kernel(1.0), 0.01, data, inducing=10, fit_hyperparameters=False)
    rule = BatchThompsonSampling(8, num_features=64, chunk_size=64, exclude_evaluated=True, seed=2)
    return model, rule


def _bbkb(data: Dataset) -> tuple[Any, Any]:
    model = NystromGPR(
        se_kernel(1.0), 1.0, data, dictionary=RidgeLeverageSampler(2.0), fit_hyperparameters=False
    )
    return model, BBKB("global_local", width="constant", exclude_evaluated=True)


def _mini(data: Dataset) -> tuple[Any, Any]:
    model = ReplicatedGPR(se_kernel(1.0), 0.1, data, fit_hyperparameters=False)
    return model, MiniGPUCB(width="constant", exclude_evaluated=True)


def _random(data: Dataset) -> tuple[Any, Any]:
    return None, RandomRule(8, seed=4, exclude_evaluated=True)


@pytest.mark.parametrize("build", [_thompson_tanimoto, _thompson_se, _bbkb, _mini, _random])
def test_rules_propose_the_same_batches_on_packed_and_dense_spaces(
    build: Callable[[Dataset], tuple[Any, Any]],
) -> None:
    rows = _rows()
    data = _data(rows)
    batches = []
    for space in _spaces(rows):
        model, rule = build(data)
        state, first = rule.acquire_single(space, model, dataset=data)(None)
        pending = data + Dataset(first, tf.zeros([len(first), 1], tf.float64))
        _, second = rule.acquire_single(space, model, dataset=pending)(state)  # first told
        batches.append((first.numpy(), second.numpy()))
    (dense_first, dense_second), (packed_first, packed_second) = batches
    assert len(dense_first) > 0
    np.testing.assert_array_equal(packed_first, dense_first)
    np.testing.assert_array_equal(packed_second, dense_second)
    assert not set(map(tuple, packed_first)) & set(map(tuple, data.query_points.numpy()))


def test_candidate_points_stay_packed() -> None:
    _, packed = _spaces(_rows())
    candidates = candidate_points(packed, None, 10, 0)
    assert isinstance(candidates, PackedRows) and candidates.bits.dtype == tf.uint8
