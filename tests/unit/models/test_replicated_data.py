"""Grouping repeated inputs (models.data.aggregate) against a dictionary of row values, and the
dataset's rows shared, not copied, where none repeats."""

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.models import NystromGPR, ReplicatedGPR
from trieste_scalable.models import data as data_module
from trieste_scalable.models.data import aggregate, row_hashes

from ...util import se_kernel


def by_dictionary(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique rows in first-occurrence order, their counts and sums, one row at a time (rows
    keyed by their values: -0.0 and 0.0 are one key)."""
    groups: dict[tuple[float, ...], list[float]] = {}
    for row, value in zip(x, y[:, 0]):
        groups.setdefault(tuple((row + 0.0).tolist()), []).append(float(value))
    inputs = np.array(list(groups), dtype=x.dtype).reshape(len(groups), x.shape[1])
    counts = np.array([len(v) for v in groups.values()], dtype=x.dtype)
    sums = np.array([sum(v) for v in groups.values()], dtype=x.dtype)
    return inputs, counts, sums


def repeated_rows(seed: int, dtype: type, width: int) -> tuple[np.ndarray, np.ndarray]:
    """600 rows: 0/1 bits and arbitrary floats, each of 200 distinct rows repeated 1-5 times,
    shuffled, some zeros negative."""
    rng = np.random.default_rng(seed)
    distinct = (rng.random((200, width)) < 0.3).astype(dtype)
    distinct[:100] *= rng.normal(size=(100, width)).astype(dtype)
    x = distinct[rng.integers(0, 200, size=600)]
    x[(rng.random(x.shape) < 0.05) & (x == 0.0)] = -0.0
    return x, rng.normal(size=(600, 1)).astype(dtype)


@pytest.mark.parametrize("dtype, width", [(np.float64, 37), (np.float32, 37), (np.float32, 6)])
@pytest.mark.parametrize("seed", [0, 1])
def test_groups_equal_rows_in_first_occurrence_order(dtype: type, width: int, seed: int) -> None:
    x, y = repeated_rows(seed, dtype, width)
    data = aggregate(x, y)
    inputs, counts, sums = by_dictionary(x, y)
    assert data.inputs.shape[0] <= 200 and data.source is None
    np.testing.assert_array_equal(data.inputs + 0.0, inputs)
    np.testing.assert_array_equal(data.counts, counts)
    np.testing.assert_allclose(data.sums, sums, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(data.input_tensor.numpy(), data.inputs)


def test_a_hash_collision_falls_back_to_comparing_whole_rows(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    x, y = repeated_rows(2, np.float64, 11)
    monkeypatch.setattr(data_module, "row_hashes", lambda rows: np.zeros(len(rows), np.uint64))
    data = aggregate(x, y)
    inputs, counts, _ = by_dictionary(x, y)
    np.testing.assert_array_equal(data.inputs + 0.0, inputs)
    np.testing.assert_array_equal(data.counts, counts)


def test_hashes_are_equal_for_equal_values_and_spread_otherwise() -> None:
    rng = np.random.default_rng(3)
    x = (rng.random((2000, 64)) < 0.5).astype(np.float64)
    x = np.unique(x, axis=0)
    assert np.unique(row_hashes(x)).size == x.shape[0]  # 2,000 distinct bit rows, no collision
    signed = x.copy()
    signed[signed == 0.0] = -0.0
    np.testing.assert_array_equal(row_hashes(signed), row_hashes(x))
    # rows that differ only in one value's high bits (0.0 against 1.0) hash apart
    one = np.zeros((64, 64))
    one[np.arange(64), np.arange(64)] = 1.0
    assert np.unique(row_hashes(np.vstack([one, np.zeros((1, 64))]))).size == 65


def test_rows_that_never_repeat_are_the_datasets_own_not_copies() -> None:
    rng = np.random.default_rng(4)
    x = tf.constant((rng.random((300, 40)) < 0.2).astype(np.float64) + np.eye(300, 40))
    y = tf.constant(rng.normal(size=(300, 1)))
    data = aggregate(np.asarray(x), y.numpy(), x)
    assert data.input_tensor is x
    assert np.shares_memory(data.inputs, np.asarray(x))
    for model in (
        NystromGPR(se_kernel(), 0.1, Dataset(x, y), fit_hyperparameters=False),
        ReplicatedGPR(se_kernel(), 0.1, Dataset(x, y), fit_hyperparameters=False),
    ):
        assert model._require_data().input_tensor is x
    # with a repeat the model's rows are its own (the unique ones), converted once
    repeated = tf.concat([x, x[:1]], axis=0)
    model = NystromGPR(
        se_kernel(), 0.1, Dataset(repeated, tf.concat([y, y[:1]], 0)), fit_hyperparameters=False
    )
    held = model._require_data()
    assert held.source is None and held.inputs.shape[0] == 300
    assert held.input_tensor is held.input_tensor
