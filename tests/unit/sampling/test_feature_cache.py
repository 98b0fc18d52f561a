"""Cached, bit-packed sign features: packing is lossless, scoring with the cache equals scoring
with features computed per chunk, and batch Thompson sampling with a Tanimoto kernel computes the
library's features once (a fixed draw per rule) and then only reuses them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition import BatchThompsonSampling, ThompsonState
from trieste_scalable.acquisition.pathwise_source import pathwise_source
from trieste_scalable.chemistry.molecules import fingerprints, parse
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.models import AdaptiveSVGP
from trieste_scalable.numerics.bits import PackedRows, on_bits, pack_rows
from trieste_scalable.sampling import ChunkedSampleScorer, TanimotoFeatures
from trieste_scalable.sampling.feature_cache import SignCache, pack

from ...util import moses


def _library(num: int) -> np.ndarray:
    bits = fingerprints(parse(moses(num))[0], size=256).astype(np.float64)
    bits[5] = 0.0  # an empty fingerprint: a row of zero features
    return np.unique(bits, axis=0)


def test_packing_signs_is_lossless_for_any_number_of_features() -> None:
    x = tf.constant(_library(60))
    for num_features in (8, 13, 100):
        features = TanimotoFeatures(Tanimoto(variance=2.0), num_features)
        draws = features.draw(tf.constant([1, 2]), 256, tf.float64)
        signs = features.signs(draws, x)
        packed = pack(signs)
        assert packed.bits.dtype == tf.uint8 and packed.bits.shape == (60, -(-num_features // 8))
        np.testing.assert_array_equal(packed.signs(num_features), signs)
        assert float(tf.reduce_min(tf.reduce_sum(tf.abs(signs), axis=1))) == 0.0  # empty row
        np.testing.assert_allclose(features(draws, x), features.amplitude(tf.float64) * signs)


def test_on_bits_of_packed_and_dense_rows() -> None:
    rows = (np.random.default_rng(1).random((50, 203)) < 0.3).astype(np.float64)
    expected = rows.sum(axis=1)
    np.testing.assert_array_equal(on_bits(pack_rows(rows), packed=True), expected)
    np.testing.assert_array_equal(on_bits(rows, packed=False), expected)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("spill", [False, True])
def test_signs_computed_in_blocks_ordered_by_on_bits_are_each_row_s_own(
    packed: bool, spill: bool, tmp_path: Path
) -> None:
    rng = np.random.default_rng(0)
    on = rng.integers(0, 120, size=1000)  # on-bits vary widely, empty rows included
    dense = (rng.random((1000, 256)) < on[:, None] / 256).astype(np.float64)
    features = TanimotoFeatures(Tanimoto(variance=2.0), 40)
    draws = features.draw(tf.constant([7, 8]), 256, tf.float64)
    rows = PackedRows(tf.constant(pack_rows(dense)), 256, tf.float64) if packed else dense
    # blocks of 7 x 64 rows: three, the last short; the packed signs in memory, or memory-mapped
    # from an unlinked file of their own in tmp_path (none is left there)
    cached = SignCache(features, chunk_size=7, spill_dir=str(tmp_path) if spill else None)
    signs = cached(draws, rows if packed else tf.constant(dense), tf.float64)
    np.testing.assert_array_equal(signs.signs(40), features.signs(draws, tf.constant(dense)))
    assert not list(tmp_path.iterdir())
    assert signs.nonzero.dtype == tf.int8  # a byte a row, not a float
    if spill and Path("/proc/self/maps").is_file():  # the signs and their flags: file pages
        maps = Path("/proc/self/maps").read_text().splitlines()
        assert len({line.split()[-2] for line in maps if str(tmp_path) in line}) == 2


def test_caches_of_one_feature_map_share_its_traces() -> None:
    # a scoring actor keeps a cache a shard: a trace each grew its memory with its shards
    rng = np.random.default_rng(1)
    features = TanimotoFeatures(Tanimoto(), 24)
    caches = [SignCache(features, chunk_size=16) for _ in range(3)]
    for num, cache, dtype in zip([40, 70, 5], caches, [tf.float64, tf.float64, tf.float32]):
        draws = features.draw(tf.constant([1, 2]), 64, dtype)
        rows = tf.constant((rng.random((num, 64)) < 0.2).astype(dtype.as_numpy_dtype))
        signs = cache(draws, rows, dtype).signs(24, dtype)
        np.testing.assert_array_equal(signs, features.signs(draws, rows))
    assert [cache.tracing_count for cache in caches] == [2, 2, 2]  # a trace a dtype, shared
    other = SignCache(TanimotoFeatures(Tanimoto(), 24), chunk_size=16)
    assert other.tracing_count == 0  # another map: its own function


def _model_and_space(num: int) -> tuple[AdaptiveSVGP, DiscreteSearchSpace, Dataset]:
    points = _library(num)
    rng = np.random.default_rng(0)
    y = points[:, :20].sum(axis=1, keepdims=True) + 0.1 * rng.normal(size=(len(points), 1))
    data = Dataset(tf.constant(points[:40]), tf.constant(y[:40]))
    model = AdaptiveSVGP(Tanimoto(variance=1.0), 0.01, data, inducing=20, fit_hyperparameters=False)
    return model, DiscreteSearchSpace(tf.constant(points)), data


def test_scoring_with_cached_signs_equals_scoring_with_features() -> None:
    model, space, _ = _model_and_space(300)
    source = pathwise_source(model)
    features = TanimotoFeatures(source.kernel, 64)
    draws = features.draw(tf.constant([3, 4]), 256, tf.float64)
    weights = source.sample_weights(features, draws, 6, tf.constant([5, 6]))
    scorer = ChunkedSampleScorer(features, source.mean_function, chunk_size=50)
    candidates = space.points
    excluded = tf.zeros([300], tf.bool)
    signs = SignCache(features, 50)(draws, candidates, tf.float64)
    plain = scorer.lowest(candidates, excluded, draws, weights, 3)
    cached = scorer.lowest(candidates, excluded, draws, weights, 3, signs)
    np.testing.assert_allclose(cached[0], plain[0], rtol=1e-12)
    np.testing.assert_array_equal(cached[1], plain[1])


def test_thompson_sampling_hashes_the_library_once() -> None:
    model, space, data = _model_and_space(400)
    rule = BatchThompsonSampling(5, num_features=64, chunk_size=64, exclude_evaluated=True)
    state, evaluated = None, data
    for _ in range(4):
        state, batch = rule.acquire_single(space, model, evaluated)(state)
        y = tf.reduce_sum(batch[:, :20], axis=1, keepdims=True)
        evaluated = evaluated + Dataset(batch, y)
        model.update(evaluated)
    (cache,) = rule._signs.caches.values()
    assert cache._compiled.experimental_get_tracing_count() == 1  # whole chunks and the last
    packed_once = cache._packed
    rule.acquire_single(space, model, evaluated)(state)
    assert cache._packed is packed_once  # reused, not recomputed
    assert len({tuple(p) for p in evaluated.query_points.numpy()}) == 40 + 20  # no repeats


def test_features_are_redrawn_on_schedule_and_batches_stay_reproducible() -> None:
    model, space, data = _model_and_space(400)
    once = BatchThompsonSampling(5, num_features=64, chunk_size=64, exclude_evaluated=True)
    every_two = BatchThompsonSampling(
        5, num_features=64, chunk_size=64, exclude_evaluated=True, redraw_features_every=2
    )
    caches = []
    for step in range(5):  # the same data each step (nothing pending): only the step changes
        _, batch_once = once.acquire_single(space, model, data)(ThompsonState(step))
        _, batch_two = every_two.acquire_single(space, model, data)(ThompsonState(step))
        (cache,) = every_two._signs.caches.values()
        assert cache._key is not None and cache._key[1] == step // 2
        caches.append(cache._packed)
        if step < 2:  # the first draw is the default rule's
            np.testing.assert_array_equal(batch_two, batch_once)
    assert caches[0] is caches[1] and caches[2] is caches[3] and caches[1] is not caches[2]
    assert not np.array_equal(caches[0].bits, caches[2].bits)  # a new draw, new features
    assert cache._compiled.experimental_get_tracing_count() == 1  # not once per draw
    (scorer, _) = next(iter(every_two._scorers.values()))
    assert scorer.tracing_count == 1
    restored = BatchThompsonSampling(
        5, num_features=64, chunk_size=64, exclude_evaluated=True, redraw_features_every=2
    )
    _, again = restored.acquire_single(space, model, data)(ThompsonState(4))
    np.testing.assert_array_equal(again, batch_two)  # a restored run redraws the same features
    with pytest.raises(ValueError, match="redraw_features_every"):
        BatchThompsonSampling(5, redraw_features_every=0)


def test_float32_products_score_as_float64_to_their_precision() -> None:
    model, space, _ = _model_and_space(300)
    source = pathwise_source(model)
    features = TanimotoFeatures(source.kernel, 64)
    x = space.points[:40]
    centres = space.points[100:120]
    # the Tanimoto kernel's inner products are counts, exact in float32: the kernel is exact
    np.testing.assert_array_equal(features.cross_covariance(x, centres), source.kernel(x, centres))
    # float32 scoring forms the whole ratio in float32: rounded to float32's precision
    rows32 = features.cross_covariance(tf.cast(x, tf.float32), centres, tf.float32)
    assert rows32.dtype == tf.float32
    np.testing.assert_allclose(rows32, source.kernel(x, centres), rtol=3e-7, atol=0)
    draws = features.draw(tf.constant([3, 4]), 256, tf.float64)
    weights = source.sample_weights(features, draws, 6, tf.constant([5, 6]))
    candidates = space.points
    excluded = tf.zeros([300], tf.bool)
    signs = SignCache(features, 50)(draws, candidates, tf.float64)
    exact = ChunkedSampleScorer(features, source.mean_function, 50)
    fast = ChunkedSampleScorer(features, source.mean_function, 50, products=tf.float32)
    values64, index64 = exact.lowest(candidates, excluded, draws, weights, 300, signs)
    values32, index32 = fast.lowest(candidates, excluded, draws, weights, 300, signs)
    scale = float(tf.reduce_max(tf.abs(values64)))
    # every candidate's value [B, N], sorted back by candidate
    by_candidate64 = np.take_along_axis(values64.numpy(), np.argsort(index64, axis=1), axis=1)
    by_candidate32 = np.take_along_axis(values32.numpy(), np.argsort(index32, axis=1), axis=1)
    np.testing.assert_allclose(by_candidate32, by_candidate64, rtol=0, atol=1e-5 * scale)
    assert np.all(values32.numpy()[:, 0] <= values64.numpy()[:, 0] + 1e-5 * scale)
    chosen = by_candidate64[np.arange(6), index32.numpy()[:, 0]]  # float32 argmins, in float64
    np.testing.assert_allclose(chosen, values64.numpy()[:, 0], rtol=0, atol=1e-5 * scale)
