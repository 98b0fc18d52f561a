"""The papers' regulariser lambda, separate from the noise (BBKB, BKB, GP-BUCB), and the
refinement of UCB picks on a ``Box``, against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import Box, DiscreteSearchSpace

from trieste_scalable.acquisition import BBKB, BKB, GPBUCB, ConfidenceWidth
from trieste_scalable.acquisition.ucb_refinement import lower_bound
from trieste_scalable.models import ExactDictionary, NystromGPR, RidgeLeverageSampler

from ...util import reference_gpr, replicated_dataset, se_kernel

NOISE, LAMBDA = 1e-4, 2.0


def model_on(data: Dataset, exact: bool = True, noise: float = NOISE) -> NystromGPR:
    policy = ExactDictionary() if exact else RidgeLeverageSampler(2.0, seed=0)
    return NystromGPR(se_kernel(0.3), noise, data, dictionary=policy, fit_hyperparameters=False)


def test_regularised_posterior_is_gpr_with_lambda_as_noise() -> None:
    """With an exact dictionary the posterior regularised by lambda is GPflow's GPR with noise
    variance lambda: ridge-leverage variances are GPR's divided by lambda, and the means move
    from the noise's as GPR's do (the in-batch means are centred on the data: a constant apart)."""
    data = replicated_dataset(0)
    model = model_on(data)
    x = tf.constant(np.random.default_rng(1).uniform(size=(50, 2)))
    mean, variance = model.batch_posterior(LAMBDA).batch_start_marginals(x)
    bayes_mean, _ = model.batch_posterior().batch_start_marginals(x)
    ref_mean, ref_variance = reference_gpr(data, se_kernel(0.3), LAMBDA).predict_f(x)
    ref_bayes_mean, _ = reference_gpr(data, se_kernel(0.3), NOISE).predict_f(x)
    np.testing.assert_allclose(variance * LAMBDA, ref_variance[:, 0], atol=1e-8)
    # GPflow's GPR at noise 1e-4 is accurate to a few 1e-6
    np.testing.assert_allclose(mean - bayes_mean, (ref_mean - ref_bayes_mean)[:, 0], atol=2e-5)
    np.testing.assert_allclose(model.predict(x)[0], ref_bayes_mean, atol=2e-5)  # unchanged
    assert model.batch_posterior(LAMBDA).noise == pytest.approx(LAMBDA)
    assert model.batch_posterior().noise == pytest.approx(NOISE)


def test_information_gain_uses_the_regulariser() -> None:
    """log det(I + K/lambda) over the unique inputs weighted by their counts, computed directly."""
    data = replicated_dataset(1, num_unique=20, num_repeats=0)
    model = model_on(data)
    k = se_kernel(0.3).K(data.query_points).numpy()
    expected = np.linalg.slogdet(np.eye(len(k)) + k / LAMBDA)[1]
    assert model.information_gain(LAMBDA) == pytest.approx(expected, rel=1e-8)


def test_prior_variance_is_the_kernel_variance_of_a_stationary_kernel() -> None:
    data = replicated_dataset(2)
    model = NystromGPR(se_kernel(0.3, variance=2.5), NOISE, data, fit_hyperparameters=False)
    assert model.prior_variance() == pytest.approx(2.5)


def test_kernel_variance_regulariser_resolves_to_the_larger_of_noise_and_kernel_variance() -> None:
    data = replicated_dataset(3)
    assert BBKB().regulariser_for(model_on(data, noise=1e-4)) == pytest.approx(1.0)
    assert BBKB().regulariser_for(model_on(data, noise=3.0)) == pytest.approx(3.0)
    assert BBKB(regulariser="noise").regulariser_for(model_on(data)) is None
    assert BBKB(regulariser=0.25).regulariser_for(model_on(data)) == 0.25


def _space_and_data(seed: int) -> tuple[DiscreteSearchSpace, Dataset]:
    rng = np.random.default_rng(seed)
    points = rng.uniform(size=(400, 2))
    x = points[rng.choice(400, 15, replace=False)]
    y = np.sin(6 * x[:, :1]) + x[:, 1:] ** 2
    return DiscreteSearchSpace(tf.constant(points)), Dataset(tf.constant(x), tf.constant(y))


@pytest.mark.parametrize("seed", [0, 1])
def test_global_stopping_counts_variances_in_lambda_units(seed: int) -> None:
    """BBKB's Global rule with lambda: the batch is the longest prefix whose batch-start
    variances of the lambda-posterior sum to at most C - 1, plus the point that crosses it."""
    space, data = _space_and_data(seed)
    model = model_on(data, exact=False)
    rule = BBKB(ratio_threshold=2.0, regulariser=LAMBDA)
    batch = rule.acquire_single(space, model, data)(None)[1]
    _, s2 = model.batch_posterior(LAMBDA).batch_start_marginals(batch)
    sums = 1.0 + np.cumsum(s2.numpy())
    assert np.all(sums[:-1] <= 2.0) and sums[-1] > 2.0
    assert batch.shape[0] >= 2


def test_picks_follow_the_bayesian_posterior_whatever_the_regulariser() -> None:
    """The regulariser changes where a batch stops, never which points it picks first: the
    batches with lambda and with the noise share their first points."""
    space, data = _space_and_data(2)
    width = ConfidenceWidth("constant", beta=2.0)
    small = GPBUCB(width=width, regulariser="noise", max_batch_size=50)
    large = GPBUCB(width=width, regulariser=LAMBDA, max_batch_size=50)
    a = small.acquire_single(space, model_on(data), data)(None)[1].numpy()
    b = large.acquire_single(space, model_on(data), data)(None)[1].numpy()
    assert len(a) == 1  # at noise 1e-4 the first pick alone ends GP-BUCB's batch
    assert len(b) > len(a)
    np.testing.assert_array_equal(b[: len(a)], a)


def test_refined_picks_lower_the_bound_and_stay_in_the_box() -> None:
    """On a Box a refined pick's lower bound under the in-batch posterior is below that of the
    pool point it started from (the same pool: same seed, refinement off)."""
    box = Box(tf.constant([0.0, 0.0], tf.float64), tf.constant([1.0, 1.0], tf.float64))
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(12, 2))
    data = Dataset(tf.constant(x), tf.constant((x[:, :1] - 0.4) ** 2 + (x[:, 1:] - 0.7) ** 2))
    pool_only = BKB(pool_size=200, seed=3, max_refine_iterations=0)
    refined = BKB(pool_size=200, seed=3)
    start = pool_only.acquire_single(box, model_on(data), data)(None)[1]
    end = refined.acquire_single(box, model_on(data), data)(None)[1]
    model = model_on(data)
    alpha = 2.0 * np.sqrt(NOISE)  # the constant width in the noise's units (lambda = 1)
    posterior = model.batch_posterior()
    assert float(lower_bound(posterior, end, alpha)[0]) < float(
        lower_bound(posterior, start, alpha)[0]
    )
    assert np.all(end.numpy() >= 0.0) and np.all(end.numpy() <= 1.0)
    assert not np.allclose(end.numpy(), start.numpy(), atol=1e-6)


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(regulariser=0.0), "regulariser must be finite and > 0"),
        (dict(regulariser=float("nan")), "regulariser must be finite and > 0"),
        (dict(regulariser="ridge"), "regulariser must be a number"),
        (dict(max_refine_iterations=-1), "max_refine_iterations must be >= 0"),
    ],
)
def test_bad_settings_are_refused(setting: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BBKB(**setting)
