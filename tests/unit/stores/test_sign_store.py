"""Sign features kept across processes: a store is read only for the very features it holds
(the candidates, the draws, the feature map and the dtype make its key), batch Thompson
sampling picks the same with it, and the screening cache directory's store survives a new
process and a damaged entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.acquisition import BatchThompsonSampling, ThompsonState
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.numerics.bits import PackedRows, pack_rows
from trieste_scalable.sampling import TanimotoFeatures
from trieste_scalable.sampling.feature_cache import SignCache
from trieste_scalable.stores.sign_store import LibrarySignStore

from ..sampling.test_feature_cache import _model_and_space


class DictStore:
    """A :class:`~trieste_scalable.sampling.feature_cache.SignStore` in a dict."""

    def __init__(self) -> None:
        self.kept: dict[str, np.ndarray] = {}
        self.computed = 0

    def __call__(
        self, key: str, shape: tuple[int, ...], compute: Callable[[], np.ndarray]
    ) -> np.ndarray:
        if key not in self.kept:
            value = compute()
            assert value.shape == shape and value.dtype == np.uint8
            self.kept[key], self.computed = value.copy(), self.computed + 1
        return self.kept[key]


def _no_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise AssertionError("the signs were computed, not read")

    monkeypatch.setattr(SignCache, "_compute", fail)


def test_a_store_is_read_for_the_very_same_features_only(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    dense = (rng.random((300, 256)) < 0.2).astype(np.float64)
    dense[4] = 0.0  # an empty row: all-zero features, flagged
    rows = PackedRows(tf.constant(pack_rows(dense)), 256, tf.float64)
    features = TanimotoFeatures(Tanimoto(variance=2.0), 44)  # 44: a part-filled last octet
    draws = features.draw(tf.constant([7, 8]), 256, tf.float64)
    expected = features.signs(draws, tf.constant(dense)).numpy()
    store = DictStore()
    first = SignCache(features, chunk_size=16)(draws, rows, tf.float64, store=store)
    np.testing.assert_array_equal(first.signs(44), expected)
    assert store.computed == 1

    with monkeypatch.context() as patched:  # another process: the same features, read
        _no_hashing(patched)
        again = SignCache(TanimotoFeatures(Tanimoto(variance=2.0), 44), chunk_size=16)
        read = again(draws, rows, tf.float64, store=store)
        np.testing.assert_array_equal(read.signs(44), expected)
        assert read.nonzero.dtype == tf.int8 and float(read.nonzero[4]) == 0.0

    other_draws = features.draw(tf.constant([7, 9]), 256, tf.float64)
    other_rows = PackedRows(tf.constant(pack_rows(dense[1:])), 256, tf.float64)
    SignCache(features, 16)(other_draws, rows, tf.float64, store=store)
    SignCache(features, 16)(draws, other_rows, tf.float64, store=store)
    draws32 = features.draw(tf.constant([7, 8]), 256, tf.float32)
    SignCache(features, 16)(draws32, rows, tf.float32, store=store)
    fewer = TanimotoFeatures(Tanimoto(variance=2.0), 40)
    fewer_draws = fewer.draw(tf.constant([7, 8]), 256, tf.float64)
    SignCache(fewer, 16)(fewer_draws, rows, tf.float64, store=store)
    assert store.computed == len(store.kept) == 5  # each its own entry, none read for another


def test_batch_ts_with_the_library_store_picks_the_same_in_a_new_process_and_after_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path))
    model, space, data = _model_and_space(300)

    def batch(**options: Any) -> np.ndarray:
        rule = BatchThompsonSampling(5, num_features=64, chunk_size=64, **options)
        return rule.acquire_single(space, model, data)(ThompsonState(3))[1].numpy()

    plain = batch()
    np.testing.assert_array_equal(batch(sign_store=LibrarySignStore()), plain)
    (entry,) = tmp_path.glob("sign-features-*.npy")
    with monkeypatch.context() as patched:  # a new rule (a resumed campaign) reads the file
        _no_hashing(patched)
        np.testing.assert_array_equal(batch(sign_store=LibrarySignStore()), plain)

    damaged = bytearray(entry.read_bytes())
    damaged[-1] ^= 0xFF  # a flipped byte: the entry's content hash no longer matches
    entry.write_bytes(bytes(damaged))
    np.testing.assert_array_equal(batch(sign_store=LibrarySignStore()), plain)
    assert "is damaged" in capsys.readouterr().err  # reported, recomputed and rewritten
    with monkeypatch.context() as patched:
        _no_hashing(patched)
        np.testing.assert_array_equal(batch(sign_store=LibrarySignStore()), plain)

    redrawn = BatchThompsonSampling(
        5, num_features=64, chunk_size=64, redraw_features_every=1, sign_store=LibrarySignStore()
    )
    for step in range(3):  # generations 0, 1, 2: only the first draw's signs are kept
        redrawn.acquire_single(space, model, data)(ThompsonState(step))
    assert len(list(tmp_path.glob("sign-features-*.npy"))) == 1


def test_signs_that_cannot_be_kept_are_computed_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, space, data = _model_and_space(300)
    (tmp_path / "a-file").write_text("")  # the store's directory would be inside a file
    unwritable = LibrarySignStore(str(tmp_path / "a-file" / "signs"))
    computed = 0

    def compute() -> np.ndarray:
        nonlocal computed
        computed += 1
        return np.zeros((3, 2), np.uint8)

    np.testing.assert_array_equal(unwritable("key", (3, 2), compute), np.zeros((3, 2)))
    assert computed == 1  # once, not again after the failed write
    assert "sign features not kept" in capsys.readouterr().err
    rule = BatchThompsonSampling(5, num_features=64, chunk_size=64, sign_store=unwritable)
    plain = BatchThompsonSampling(5, num_features=64, chunk_size=64)
    np.testing.assert_array_equal(
        rule.acquire_single(space, model, data)(ThompsonState(3))[1],
        plain.acquire_single(space, model, data)(ThompsonState(3))[1],
    )
