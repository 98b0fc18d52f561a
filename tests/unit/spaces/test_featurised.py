"""The featurised model: predictions are the inner model's at the features, datasets are
featurised only where they grew, and featurisation runs inside compiled functions too."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression
from trieste.models.interfaces import TrainableProbabilisticModel

from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel


def _featurise_counting(calls: list[int]):  # type: ignore[no-untyped-def]
    def featurise(points: np.ndarray) -> np.ndarray:
        calls.append(len(points))
        x = np.asarray(points, dtype=np.float64)
        return np.concatenate([np.sin(x), x**2], axis=1)  # [N, 2] -> [N, 4]

    return featurise


def _data(n: int) -> Dataset:
    x = np.random.default_rng(0).uniform(size=(n, 2))
    return Dataset(tf.constant(x), tf.constant(np.cos(3 * x[:, :1])))


def test_predictions_are_the_inner_models_at_the_features() -> None:
    calls: list[int] = []
    featurise = _featurise_counting(calls)
    data = _data(12)
    features = Dataset(tf.constant(featurise(data.query_points.numpy())), data.observations)
    gpr = gpflow.models.GPR(
        features.astuple(), gpflow.kernels.SquaredExponential(), noise_variance=0.01
    )
    model = FeaturisedModel(GaussianProcessRegression(gpr), FeatureRows(featurise, 4))
    x = np.random.default_rng(1).uniform(size=(5, 2))
    mean, variance = model.predict(tf.constant(x))
    expected = gpr.predict_f(tf.constant(featurise(x)))
    np.testing.assert_allclose(mean, expected[0])
    np.testing.assert_allclose(variance, expected[1])
    compiled = tf.function(lambda q: model.predict(q)[0])  # as Trieste's acquisition functions
    np.testing.assert_allclose(compiled(tf.constant(x[None])), mean[None])


def test_datasets_are_featurised_only_where_they_grew() -> None:
    calls: list[int] = []
    rows = FeatureRows(_featurise_counting(calls), 4)
    full = _data(10)
    first = Dataset(full.query_points[:6], full.observations[:6])
    np.testing.assert_allclose(rows.dataset(first).query_points[:, 2:], first.query_points**2)
    grown = rows.dataset(full)
    assert calls == [6, 4]
    np.testing.assert_allclose(grown.query_points[:, :2], np.sin(full.query_points))
    changed = Dataset(full.query_points[::-1], full.observations[::-1])  # not a growth: all again
    np.testing.assert_allclose(rows.dataset(changed).query_points[:, 2:], changed.query_points**2)
    assert calls == [6, 4, 10]


def test_the_same_points_get_the_same_rows_tensor_which_our_models_share() -> None:
    """A tell's update, its optimisation and the next acquisition featurise one dataset: one
    tensor of rows, held once (a copy a call held 4.6 GB at 10,000 evaluations)."""
    from trieste_scalable.models import ReplicatedGPR

    calls: list[int] = []
    data = _data(8)
    inner = ReplicatedGPR(gpflow.kernels.SquaredExponential(), 0.01, fit_hyperparameters=False)
    model = FeaturisedModel(inner, FeatureRows(_featurise_counting(calls), 4))
    model.update(data)
    model.optimize(data)
    again = model.encode(Dataset(data.query_points, data.observations + 1.0))
    assert calls == [8]
    assert again.query_points is model.encode(data).query_points
    assert inner.data is not None and inner.data.input_tensor is again.query_points
    np.testing.assert_allclose(again.observations, data.observations + 1.0)
    shorter = Dataset(data.query_points[:3], data.observations[:3])
    assert model.encode(shorter).query_points.shape == [3, 4]
    empty = Dataset(tf.zeros([0, 2], tf.float64), tf.zeros([0, 1], tf.float64))
    assert model.encode(empty).query_points.shape == [0, 4]


def test_it_is_tristes_encoded_model_forwarding_kernel_noise_and_predict_y() -> None:
    """Trieste's encoded-model interface: ``encode`` gives the features, and the inner model's
    kernel, noise and ``predict_y`` are the wrapper's; an inner model without them is said."""
    from trieste.models.interfaces import EncodedTrainableProbabilisticModel

    from trieste_scalable.models import ReplicatedGPR

    data = _data(9)
    featurise = _featurise_counting([])
    kernel = gpflow.kernels.SquaredExponential()
    inner = ReplicatedGPR(kernel, 0.01, fit_hyperparameters=False)
    model = FeaturisedModel(inner, FeatureRows(featurise, 4))
    model.update(data)
    assert isinstance(model, EncodedTrainableProbabilisticModel)
    x = np.random.default_rng(2).uniform(size=(3, 2))
    np.testing.assert_allclose(model.encode(tf.constant(x)), featurise(x))
    assert model.get_kernel() is kernel
    np.testing.assert_allclose(model.get_observation_noise(), inner.get_observation_noise())
    np.testing.assert_allclose(
        model.predict_y(tf.constant(x))[1], inner.predict_y(tf.constant(featurise(x)))[1]
    )
    bare = FeaturisedModel(_NoKernel(), FeatureRows(featurise, 4))
    for forwarded in (bare.get_kernel, bare.get_observation_noise):
        with pytest.raises(NotImplementedError, match="has no"):
            forwarded()


class _NoKernel(TrainableProbabilisticModel):
    """A trainable model without a kernel or noise to give (nothing else is called)."""

    predict = sample = update = optimize = log = None  # type: ignore[assignment]


def test_packed_rows_keep_the_evaluated_bits_packed_and_give_query_points_dense() -> None:
    def threshold(points: np.ndarray) -> np.ndarray:  # [N, 2] -> 11 bits, packed
        x = np.asarray(points, dtype=np.float64)
        bits = (x[:, :1] * np.arange(1, 12) % 1.0 > 0.5).astype(np.uint8)
        return np.packbits(bits, axis=1)

    dense = FeatureRows(lambda p: np.unpackbits(threshold(p), axis=1)[:, :11], 11)
    packed = FeatureRows(threshold, 11, packed=True)
    data = _data(9)
    told = packed.dataset(Dataset(data.query_points[:5], data.observations[:5]))
    told = packed.dataset(data)  # grown: the new rows appended, packed
    assert told.query_points.dtype == tf.uint8 and told.query_points.shape == (9, 2)
    unpacked = np.unpackbits(told.query_points.numpy(), axis=1)[:, :11]
    np.testing.assert_array_equal(unpacked, dense.dataset(data).query_points.numpy())
    query = tf.constant(data.query_points.numpy()[:3])
    np.testing.assert_array_equal(packed(query).numpy(), dense(query).numpy())
    assert packed.dataset(
        Dataset(data.query_points[:0], data.observations[:0])
    ).query_points.shape == (0, 2)
