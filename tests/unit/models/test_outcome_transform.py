"""A model with an outcome transform is the same model given the transformed observations (the
transform applied by hand with numpy), refitted as data grow, and reads back in the data's units;
against GPflow's GPR where the model is exact."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.models import AdaptiveSVGP, ExactDictionary, NystromGPR, ReplicatedGPR

from ...util import reference_gpr, replicated_dataset, se_kernel

NOISE = 0.05


def _sparse(seed: int, num: int = 60) -> Dataset:
    """A probability-like objective, negated (Trieste minimises): near 0 except a bump."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(num, 2))
    p = np.exp(-40 * np.sum((x - 0.7) ** 2, axis=1, keepdims=True)) + rng.exponential(
        1e-3, (num, 1)
    )
    return Dataset(tf.constant(x), tf.constant(-p))


def _log_by_hand(y: np.ndarray) -> np.ndarray:
    """The log of the gap to the worst, standardised (numpy, as the module docstring says)."""
    gaps = y.max() - y
    warped = -np.log(gaps + 0.5 * gaps[gaps > 0].min())
    return (warped - warped.mean()) / warped.std()


def _by_hand(data: Dataset) -> Dataset:
    return Dataset(data.query_points, tf.constant(_log_by_hand(data.observations.numpy())))


def _nystrom(*args: object, **options: object) -> NystromGPR:
    """A Nystrom GP over a full dictionary (so its predictions do not hang on a draw)."""
    return NystromGPR(*args, dictionary=ExactDictionary(), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("model_type", [ReplicatedGPR, _nystrom])
def test_a_transformed_model_is_the_model_of_the_transformed_data(model_type: type) -> None:
    """Predictions equal a plain model's given the observations transformed by hand, and an
    exact GP's (GPflow's GPR, same constant mean); after more data, the transform is refitted to
    all of them and the predictions follow."""
    data = _sparse(0)
    x = tf.constant(np.random.default_rng(1).uniform(size=(25, 2)))
    transformed = model_type(
        se_kernel(), NOISE, data, outcome_transform="log", fit_hyperparameters=False
    )
    plain = model_type(se_kernel(), NOISE, _by_hand(data), fit_hyperparameters=False)
    for ours, theirs in zip(transformed.predict(x), plain.predict(x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    gpr = reference_gpr(_by_hand(data), se_kernel(), NOISE, transformed.prior_mean)
    np.testing.assert_allclose(transformed.predict(x)[0], gpr.predict_f(x)[0], rtol=1e-6)

    more = data + _sparse(2, 20)
    transformed.update(more)
    fresh = model_type(
        se_kernel(), NOISE, fit_hyperparameters=False, prior_mean=transformed.prior_mean
    )
    fresh.update(_by_hand(more))
    for ours, theirs in zip(transformed.predict(x), fresh.predict(x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_the_svgp_takes_the_transform_too() -> None:
    data = _sparse(3)
    x = tf.constant(np.random.default_rng(4).uniform(size=(10, 2)))
    options = dict(inducing=20, seed=0, fit_hyperparameters=False)
    transformed = AdaptiveSVGP(se_kernel(), NOISE, data, outcome_transform="log", **options)
    plain = AdaptiveSVGP(se_kernel(), NOISE, _by_hand(data), **options)
    for ours, theirs in zip(transformed.predict(x), plain.predict(x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)


def test_predictions_read_back_in_the_datas_units() -> None:
    """Without a transform: predict_y's mean and standard deviation. With the log: the median
    is the inverse at the mean, computed with numpy from the fitted transform's parameters."""
    data = replicated_dataset(5)
    x = tf.constant(np.random.default_rng(6).uniform(size=(12, 2)))
    plain = ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    mean, spread = plain.predict_in_data_units(x)
    np.testing.assert_allclose(mean, plain.predict_y(x)[0])
    np.testing.assert_allclose(spread, np.sqrt(plain.predict_y(x)[1]))

    sparse = _sparse(7)
    model = ReplicatedGPR(
        se_kernel(), NOISE, sparse, outcome_transform="log", fit_hyperparameters=False
    )
    transform = model.outcome_transform
    median, half = model.predict_in_data_units(x)
    z_mean, z_var = (v.numpy() for v in model.predict_y(x))
    y = sparse.observations.numpy()
    gaps = y.max() - y
    offset = 0.5 * gaps[gaps > 0].min()
    warped = -np.log(gaps + offset)

    def inverse(z: np.ndarray) -> np.ndarray:
        return y.max() + offset - np.exp(-(z * warped.std() + warped.mean()))

    assert transform is not None
    np.testing.assert_allclose(median, inverse(z_mean), rtol=1e-9)
    width = (inverse(z_mean + np.sqrt(z_var)) - inverse(z_mean - np.sqrt(z_var))) / 2
    np.testing.assert_allclose(half, width, rtol=1e-9)
    assert np.all(median.numpy() <= y.max() + offset)  # the log's range: up to the worst


def test_an_unknown_transform_is_refused_and_bad_data_change_nothing() -> None:
    with pytest.raises(ValueError, match="unknown outcome_transform 'cube'"):
        ReplicatedGPR(se_kernel(), NOISE, outcome_transform="cube")
    data = _sparse(8)
    model = ReplicatedGPR(
        se_kernel(), NOISE, data, outcome_transform="power", fit_hyperparameters=False
    )
    before = model.outcome_transform
    bad = Dataset(data.query_points[:2], tf.constant([[np.nan], [0.0]], tf.float64))
    with pytest.raises(ValueError):
        model.update(data + bad)
    assert model.outcome_transform is before


def test_auto_says_what_it_picks(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO"):
        model = ReplicatedGPR(
            se_kernel(), NOISE, _sparse(9), outcome_transform="auto", fit_hyperparameters=False
        )
    assert model.outcome_transform is not None and model.outcome_transform.name == "log"
    assert "outcome transform: auto picks log" in caplog.text
