"""The signal variance set z Laplace standard deviations above its fit (``variance_optimism``)."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import multivariate_normal
from trieste.data import Dataset

from trieste_scalable.models import ReplicatedGPR
from trieste_scalable.models.variance_optimism import credible_upper_variance, noise_share

from .test_fitting import noisy_data


def fitted_gpr(seed: int = 3) -> tuple[gpflow.models.GPR, np.ndarray, np.ndarray]:
    data = noisy_data(40, seed=seed)
    x, y = data.query_points.numpy(), data.observations.numpy()
    gpr = gpflow.models.GPR((x, y), gpflow.kernels.SquaredExponential(), noise_variance=0.05)
    gpflow.optimizers.Scipy().minimize(gpr.training_loss, gpr.trainable_variables)
    return gpr, x, y


def test_the_upper_variance_is_z_standard_deviations_of_the_log_variance_above_the_fit() -> None:
    """Against a parabola fitted (numpy, scipy) to the negative log likelihood over a grid of
    log variances around the fit, the other hyperparameters held: the standard deviation of the
    log variance agrees within 3 % (the loss is not exactly quadratic over either stencil)."""
    gpr, x, y = fitted_gpr()
    fitted = float(gpr.kernel.variance.numpy())
    lengthscale = float(gpr.kernel.lengthscales.numpy())
    noise = float(gpr.likelihood.variance.numpy())
    base = np.exp(-0.5 * ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1) / lengthscale**2)

    def negative_log_likelihood(u: float) -> float:
        cov = np.exp(u) * base + noise * np.eye(len(x))
        return -multivariate_normal(np.zeros(len(x)), cov).logpdf(y[:, 0])

    grid = np.log(fitted) + np.linspace(-0.3, 0.3, 13)
    curvature = 2.0 * np.polyfit(grid, [negative_log_likelihood(u) for u in grid], 2)[0]
    expected = fitted * np.exp(2.0 / np.sqrt(curvature))
    upper = credible_upper_variance(gpr.training_loss, gpr.kernel.variance, 2.0)
    assert np.log(upper / fitted) == pytest.approx(np.log(expected / fitted), rel=0.03)
    assert upper > fitted  # and the parameter is left as fitted (through the softplus):
    assert float(gpr.kernel.variance.numpy()) == pytest.approx(fitted, rel=1e-12)


def test_where_the_loss_is_flat_in_the_variance_it_moves_z_in_log_units() -> None:
    variance = gpflow.Parameter(0.2, transform=gpflow.utilities.positive())
    flat = credible_upper_variance(lambda: tf.constant(1.0, tf.float64), variance, 1.5)
    assert flat == pytest.approx(0.2 * np.exp(1.5))


def test_a_model_with_optimism_ends_above_the_same_fit_without() -> None:
    data = noisy_data(60, seed=5)
    kernel = lambda: gpflow.kernels.Matern52(variance=0.1, lengthscales=0.3)  # noqa: E731
    plain = ReplicatedGPR(kernel(), 0.01, data)
    plain.optimize(data)
    hopeful = ReplicatedGPR(kernel(), 0.01, data, variance_optimism=2.0)
    hopeful.optimize(data)
    fitted, raised = (float(m.get_kernel().variance.numpy()) for m in (plain, hopeful))
    assert raised > 1.03 * fitted  # by 2 rho spreads: here rho ~ 0.1, the spread < 1
    np.testing.assert_allclose(  # only the variance moves; the fit itself is the same
        hopeful.get_kernel().lengthscales.numpy(), plain.get_kernel().lengthscales.numpy()
    )
    mean, _ = hopeful.predict(data.query_points[:5])  # the posterior follows the new variance
    assert np.all(np.isfinite(mean.numpy()))
    for bad in (-1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="variance_optimism"):
            ReplicatedGPR(kernel(), 0.01, data, variance_optimism=bad)


def test_a_known_small_noise_leaves_the_fitted_variance_almost_alone() -> None:
    """The optimism is scaled by the fit's noise share rho: with the noise fixed at about a
    fiftieth of the variance (as Trieste's build_gpr fixes it, a fit cannot call the signal
    noise) the variance rises by at most exp(2 rho) - 1, under 2 %; with the noise fitted
    (rho ~ 0.1 here) by more than 4 % (measured 0.9 % and 6.7 %)."""
    data = noisy_data(60, seed=5)
    kernel = lambda: gpflow.kernels.Matern52(variance=0.1, lengthscales=0.3)  # noqa: E731
    raised = {}
    for fitted_noise in (False, True):
        options = dict(fit_noise_variance=fitted_noise)
        plain = ReplicatedGPR(kernel(), 0.001, data, **options)
        plain.optimize(data)
        hopeful = ReplicatedGPR(kernel(), 0.001, data, variance_optimism=2.0, **options)
        hopeful.optimize(data)
        fitted = float(plain.get_kernel().variance.numpy())
        raised[fitted_noise] = float(hopeful.get_kernel().variance.numpy()) / fitted
        rho = noise_share(fitted, float(hopeful.get_observation_noise()))
        assert np.log(raised[fitted_noise]) <= 2.0 * rho + 1e-9  # z rho spreads, spread <= 1
    assert 1.0 < raised[False] < 1.02 < 1.04 < raised[True]
    assert noise_share(1.0, 3.0) == pytest.approx(0.75) and noise_share(np.nan, 1.0) == 1.0


def test_raising_does_not_compound_over_refits() -> None:
    """Each fit starts from the last fit's variance, not the raised one: refitted on one more
    point the raised variance stays within 30 % (compounding would multiply it by the factor
    again, here > 1.5)."""
    data = noisy_data(61, seed=6)
    first = Dataset(data.query_points[:60], data.observations[:60])
    more = data
    model = ReplicatedGPR(  # a noise fixed at the signal's level: rho ~ 1/2, the factor large
        gpflow.kernels.Matern52(variance=0.1, lengthscales=0.3),
        0.05,
        first,
        variance_optimism=2.0,
        fit_noise_variance=False,
    )
    model.optimize(first)
    once = float(model.get_kernel().variance.numpy())
    factor = once / float(model.fitter._fitted_variance)
    assert factor > 1.5
    model.update(more)
    model.optimize(more)
    assert float(model.get_kernel().variance.numpy()) == pytest.approx(once, rel=0.3)


def test_the_builders_apply_the_command_lines_remedy_when_the_noise_is_fitted() -> None:
    from trieste.space import Box

    from trieste_scalable.models import build_adaptive_svgp, build_nystrom_gpr, build_replicated_gpr
    from trieste_scalable.models.builders import RECOMMENDED_VARIANCE_OPTIMISM

    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(size=(20, 2)))
    data = Dataset(x, tf.reduce_sum(x**2, axis=1, keepdims=True))
    space = Box([0.0, 0.0], [1.0, 1.0])
    for build in (build_nystrom_gpr, build_replicated_gpr):
        fitted = build(data, space, trainable_likelihood=True)
        assert fitted.fitter.variance_optimism == RECOMMENDED_VARIANCE_OPTIMISM == 2.0
        assert build(data, space).fitter.variance_optimism == 0.0  # the noise known: no remedy
        chosen = build(data, space, trainable_likelihood=True, variance_optimism=0.5)
        assert chosen.fitter.variance_optimism == 0.5
    svgp = build_adaptive_svgp(data, space, trainable_likelihood=True, inducing=10)
    assert svgp.fitter.variance_optimism == 0.0  # Thompson sampling needs no optimism
