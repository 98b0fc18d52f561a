"""ReplicatedGPR against GPflow's GPR on the full duplicated data."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.models import ReplicatedGPR

from ...util import reference_gpr, replicated_dataset, se_kernel

NOISE = 0.05


def heavily_replicated(seed: int) -> Dataset:
    return replicated_dataset(seed, num_unique=15, num_repeats=300)


@pytest.mark.parametrize("seed", [0, 1])
def test_equals_gpflow_gpr_on_duplicated_data(seed: int) -> None:
    data = heavily_replicated(seed)
    model = ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    gpr = reference_gpr(data, se_kernel(), NOISE)
    assert model.num_unique_points == 15
    x = tf.constant(np.random.default_rng(seed).uniform(size=(20, 2)))
    mean, var = model.predict(x)
    ref_mean, ref_var = gpr.predict_f(x)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8)
    np.testing.assert_allclose(var, ref_var, rtol=1e-7)
    _, cov = model.predict_joint(x[None])
    np.testing.assert_allclose(cov[0], gpr.predict_f(x, full_cov=True)[1], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(
        model.log_marginal_likelihood(), gpr.log_marginal_likelihood(), rtol=1e-10
    )
    expected_gain = np.linalg.slogdet(
        np.eye(len(data)) + se_kernel()(data.query_points).numpy() / NOISE
    )[1]
    np.testing.assert_allclose(model.information_gain(), expected_gain, rtol=1e-8)


@pytest.mark.parametrize("new_point", [False, True])
def test_epoch_update_equals_recomputation(new_point: bool) -> None:
    data = heavily_replicated(2)
    model = ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    rng = np.random.default_rng(3)
    x0 = rng.uniform(size=(1, 2)) if new_point else data.query_points.numpy()[4:5]
    epoch = Dataset(tf.constant(np.repeat(x0, 7, axis=0)), tf.constant(rng.normal(size=(7, 1))))
    model.update(data + epoch)
    assert model.last_update_was_incremental
    fresh = ReplicatedGPR(
        se_kernel(), NOISE, fit_hyperparameters=False, prior_mean=float(np.mean(data.observations))
    )
    fresh.update(data + epoch)
    assert not fresh.last_update_was_incremental
    x = tf.constant(rng.uniform(size=(30, 2)))
    np.testing.assert_allclose(model.predict(x)[0], fresh.predict(x)[0], rtol=1e-9)
    np.testing.assert_allclose(model.predict(x)[1], fresh.predict(x)[1], rtol=1e-9)
    gpr = reference_gpr(data, se_kernel(), NOISE)  # same constant mean as the model's
    full = data + epoch
    gpr.data = (full.query_points, full.observations)
    np.testing.assert_allclose(model.predict(x)[1], gpr.predict_f(x)[1], rtol=1e-7)


def test_fit_recovers_noise_from_replicates() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(20, 1))
    x = np.repeat(x, 40, axis=0)
    y = np.sin(6 * x) + 0.2 * rng.normal(size=x.shape)  # noise variance 0.04
    data = Dataset(tf.constant(x), tf.constant(y))
    model = ReplicatedGPR(se_kernel(), 1.0, data)
    gpflow.set_trainable(model.get_kernel().variance, False)
    model.optimize(data)
    assert float(model.get_observation_noise()) == pytest.approx(0.04, rel=0.15)
    gpr = reference_gpr(
        data, model.get_kernel(), float(model.get_observation_noise()), model.prior_mean
    )
    np.testing.assert_allclose(
        model.log_marginal_likelihood(), gpr.log_marginal_likelihood(), rtol=1e-8
    )


@pytest.mark.parametrize(
    "y, match",
    [
        (np.array([[0.0], [np.nan], [1.0]]), "NaN/inf"),
        (np.array([[0.0], [np.inf], [1.0]]), "NaN/inf"),
        (np.zeros((2, 1)), "observations"),
    ],
)
def test_bad_data_raises_and_leaves_model_unchanged(y, match) -> None:  # type: ignore[no-untyped-def]
    data = heavily_replicated(0)
    model = ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    probe = tf.constant(np.random.default_rng(2).uniform(size=(5, 2)))
    before = model.predict(probe)
    with pytest.raises(ValueError, match=match):
        model.update(Dataset(tf.zeros([3, 2], tf.float64), tf.constant(y)))
    after = model.predict(probe)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])


def test_traced_once_over_many_epochs() -> None:
    data = heavily_replicated(5)
    model = ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    rng = np.random.default_rng(6)
    for _ in range(20):
        x0 = rng.uniform(size=(1, 2)) if rng.uniform() < 0.5 else data.query_points.numpy()[:1]
        data = data + Dataset(
            tf.constant(np.repeat(x0, 3, 0)), tf.constant(rng.normal(size=(3, 1)))
        )
        model.update(data)
        model.predict(tf.constant(rng.uniform(size=(7, 2))))
    assert all(count <= 1 for count in model.compiled.tracing_counts().values())


def test_float32_model() -> None:
    with gpflow.config.as_context(gpflow.config.Config(float=np.float32)):
        kernel = se_kernel()
        data = replicated_dataset(0, dtype=np.float32)
        model = ReplicatedGPR(kernel, NOISE, data, fit_hyperparameters=False, jitter=1e-6)
        mean, var = model.predict(data.query_points[:5])
    assert mean.dtype == tf.float32 and var.dtype == tf.float32
    reference = reference_gpr(replicated_dataset(0), se_kernel(), NOISE)
    np.testing.assert_allclose(
        mean, reference.predict_f(replicated_dataset(0).query_points[:5])[0], rtol=1e-2, atol=1e-3
    )
