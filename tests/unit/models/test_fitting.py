"""Hyperparameter fits: the collapse on noisy data is reproduced against GPflow's GPR and
avoided by every model; exact models reach GPR's likelihood; schedules and builders."""

from __future__ import annotations

import copy
from typing import Any, Callable

import gpflow
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from trieste.data import Dataset
from trieste.space import Box

from trieste_scalable.models import (
    AdaptiveSVGP,
    ExactDictionary,
    FitSchedule,
    NystromGPR,
    ReplicatedGPR,
    build_adaptive_svgp,
    build_nystrom_gpr,
    build_replicated_gpr,
)
from trieste_scalable.models.fitting import degeneracy, input_scales
from trieste_scalable.problems.synthetic import grid_problem


def noisy_data(num_points: int, seed: int = 0) -> Dataset:
    """A smooth function on a 22^3 grid, noise std half the function's spread."""
    problem = grid_problem(noise_std=0.0)
    rng = np.random.default_rng(seed)
    ids = rng.choice(len(problem.points), num_points, replace=False)
    noise = 0.5 * problem.values.std()
    y = problem.values[ids] + noise * rng.normal(size=num_points)
    return Dataset(tf.constant(problem.points[ids]), tf.constant(y[:, None]))


def start_kernel(data: Dataset, priors: bool) -> gpflow.kernels.Kernel:
    """Trieste's build_gpr start on [0, 1]^3 (Matern-5/2, lengthscale 0.2 sqrt(3), the
    empirical variance), with weakly informative LogNormal priors (scale ln 10, where Trieste
    uses 1) centred there."""
    variance = float(np.var(data.observations.numpy()))
    lengthscale = 0.2 * np.sqrt(3)
    kernel = gpflow.kernels.Matern52(variance=variance, lengthscales=lengthscale)
    if priors:
        for parameter, value in ((kernel.lengthscales, lengthscale), (kernel.variance, variance)):
            parameter.prior = tfp.distributions.LogNormal(
                tf.math.log(tf.constant(value, tf.float64)), tf.constant(np.log(10.0), tf.float64)
            )
    return kernel


MODELS: dict[str, Callable[[gpflow.kernels.Kernel, float], Any]] = {
    "replicated": lambda k, noise: ReplicatedGPR(k, noise),
    "exact_nystrom": lambda k, noise: NystromGPR(k, noise, dictionary=ExactDictionary()),
    "nystrom": lambda k, noise: NystromGPR(k, noise),
    "svgp": lambda k, noise: AdaptiveSVGP(k, noise, inducing=15),
}


def _scales(data: Dataset) -> tuple[float, float]:
    return input_scales(data.query_points.numpy())


def _fitted_gpr(data: Dataset, priors: bool) -> gpflow.models.GPR:
    noise = float(np.var(data.observations.numpy())) / 10
    mean = gpflow.mean_functions.Constant(float(np.mean(data.observations.numpy())))
    gpr = gpflow.models.GPR(data.astuple(), start_kernel(data, priors), mean, noise_variance=noise)
    gpflow.optimizers.Scipy().minimize(gpr.training_loss, gpr.trainable_variables)
    return gpr


@pytest.mark.parametrize("name", sorted(MODELS))
def test_collapse_of_a_single_start_fit_is_reproduced_and_avoided(name: str) -> None:
    data = noisy_data(20, seed=4)  # (GPR's single-start fit collapses on 2 of seeds 0-11)
    spacing, extent = _scales(data)
    gpr = _fitted_gpr(data, priors=True)
    collapsed = degeneracy(gpr.kernel, float(gpr.likelihood.variance.numpy()), spacing, extent)
    assert collapsed is not None and "lengthscale" in collapsed  # GPflow, one start: collapses
    noise = float(np.var(data.observations.numpy())) / 10
    model = MODELS[name](start_kernel(data, priors=True), noise)
    model.update(data)
    model.optimize(data)
    ours = degeneracy(model.get_kernel(), float(model.get_observation_noise()), spacing, extent)
    assert ours is None, ours
    mean, var = model.predict(data.query_points)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_noise_far_too_small_is_refitted_within_bounds_when_every_run_is_degenerate(
    name: str,
) -> None:
    """Seed 20's 20 points, no priors: every free run of the fit ends at a lengthscale below a
    tenth of the data's spacing. Restoring the build-time values kept a noise a million times
    too small (a nearly noise-free model of noisy data); the bounded refit holds the
    lengthscale and fits the variance and the noise, which lands within a factor 3 of the true
    noise variance."""
    data = noisy_data(20, seed=20)
    spacing, extent = _scales(data)
    model = MODELS[name](start_kernel(data, priors=False), np.var(data.observations) / 1e6)
    model.update(data)
    with pytest.warns(UserWarning, match="degenerate optimum .*; refitted within bounds"):
        model.optimize(data)
    true_noise = (0.5 * grid_problem(noise_std=0.0).values.std()) ** 2
    noise = float(model.get_observation_noise())
    assert true_noise / 3 < noise < 3 * true_noise, (noise, true_noise)
    kernel = model.get_kernel()
    assert degeneracy(kernel, noise, spacing, extent) is None
    assert kernel.lengthscales.numpy() == pytest.approx(0.2 * np.sqrt(3))  # held: the last good
    assert model.fit_rejections == 0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fits_reach_gpflow_gpr_likelihood(name: str) -> None:
    """Same data, same start, no priors: the exact models (and the sparse ones, which fit the
    exact likelihood at this size) end at GPR's log marginal likelihood to 1e-3 relative."""
    data = noisy_data(150, seed=1)
    gpr = _fitted_gpr(data, priors=False)
    noise = float(np.var(data.observations.numpy())) / 10
    model = MODELS[name](start_kernel(data, priors=False), noise)
    model.update(data)
    model.optimize(data)
    kernel = model.get_kernel()
    mean = gpflow.mean_functions.Constant(model.prior_mean)
    ours = gpflow.models.GPR(
        data.astuple(), kernel, mean, noise_variance=float(model.get_observation_noise())
    )
    expected = float(gpr.log_marginal_likelihood())
    np.testing.assert_allclose(float(ours.log_marginal_likelihood()), expected, rtol=1e-3)
    # the constant prior mean is fitted too, as GPR's is (to 5% of the data's spread)
    spread = float(np.std(data.observations.numpy()))
    assert abs(model.prior_mean - float(gpr.mean_function.c.numpy())) < 0.05 * spread


def test_a_fixed_prior_mean_stays_where_the_initial_design_put_it() -> None:
    data = noisy_data(60, seed=3)
    model = ReplicatedGPR(start_kernel(data, priors=True), 0.01, fit_prior_mean=False)
    model.update(data)
    model.optimize(data)
    assert model.prior_mean == pytest.approx(float(np.mean(data.observations.numpy())), rel=1e-12)


def test_a_warm_start_stuck_in_a_degenerate_optimum_recovers() -> None:
    data = noisy_data(150, seed=2)
    model = ReplicatedGPR(start_kernel(data, priors=False), 0.01)
    model.update(data)
    kernel = model.get_kernel()
    kernel.lengthscales.assign(1e-3)  # where a previous refit collapsed
    kernel.variance.assign(1e-5)
    model.optimize(data)
    spacing, extent = _scales(data)
    assert degeneracy(kernel, float(model.get_observation_noise()), spacing, extent) is None
    assert 0.1 < float(kernel.lengthscales.numpy()) < 2.0


def test_only_degenerate_optima_fall_back_to_the_last_good_fit() -> None:
    data = noisy_data(60, seed=3)
    model = ReplicatedGPR(start_kernel(data, priors=False), 0.01)
    model.update(data)
    model.optimize(data)
    good = [float(p.numpy()) for p in model.get_kernel().trainable_parameters]
    flat = Dataset(data.query_points, tf.zeros_like(data.observations) + 0.5)  # pure constant
    model.update(flat)
    with pytest.warns(UserWarning, match="previous values restored"):
        assert model.optimize(flat) is None
    restored = [float(p.numpy()) for p in model.get_kernel().trainable_parameters]
    np.testing.assert_allclose(restored, good, rtol=1e-12)  # (through the softplus transform)
    assert model.fit_rejections == 1


def test_fit_schedule_refits_when_the_data_have_grown_by_its_factor() -> None:
    data = noisy_data(160, seed=4)
    model = ReplicatedGPR(start_kernel(data, priors=False), 0.01, fit_schedule=FitSchedule(2.0, 0))
    fitted = []
    for n in (20, 30, 39, 40, 70, 80, 160):
        part = Dataset(data.query_points[:n], data.observations[:n])
        model.update(part)
        fitted.append(model.optimize(part) is not None)
    assert fitted == [True, False, False, True, False, True, True]
    for n in (90, 100):  # other data, not more (a trust region's local points): refitted
        part = Dataset(data.query_points[n : n + 30], data.observations[n : n + 30])
        model.update(part)
        assert model.optimize(part) is not None
    for n in (90, 100):  # fewer points than at the last fit: other data (a trust region's)
        part = Dataset(data.query_points[n : n + 30], data.observations[n : n + 30])
        model.update(part)
        assert model.optimize(part) is not None
    with pytest.raises(ValueError, match="growth factor"):
        FitSchedule(0.5)
    with pytest.raises(ValueError, match="refit_below"):
        FitSchedule(1.5, -1)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("exact", [True, False])
def test_refits_on_growing_data_reuse_one_compiled_loss(name: str, exact: bool) -> None:
    if name == "replicated" and not exact:
        pytest.skip("ReplicatedGPR fits the exact likelihood only")
    data = noisy_data(80, seed=5)
    model = MODELS[name](start_kernel(data, priors=True), 0.01)
    model.fitter.schedule = FitSchedule(1.0)
    model._exact_fit_limit = 1000 if exact else 10  # the sparse bound above 10 unique inputs
    for n in range(20, 81, 10):
        part = Dataset(data.query_points[:n], data.observations[:n])
        model.update(part)
        assert model.optimize(part) is not None
    objective = model._objective()  # the compiled loss is the MAP loss, computed eagerly
    parameters = [p for p in model._hyperparameters() if p.trainable]
    loss = model.fitter._compiled_loss(objective.function, parameters)
    eager = -(objective() + tf.add_n([p.log_prior_density() for p in parameters]))
    np.testing.assert_allclose(loss(*objective.arguments), eager, rtol=1e-10)
    # the first shape traces, the second relaxes it; no later fit traces again
    assert model.fitter.tracing_count() <= 2
    copied = copy.deepcopy(model)  # drops the compiled loss with the model's variables
    assert copied.fitter.tracing_count() == 0
    more = noisy_data(90, seed=5)
    copied.update(more)
    assert copied.optimize(more) is not None


def test_the_default_schedule_refits_every_call_early_then_at_a_quarter_s_growth() -> None:
    schedule = FitSchedule()
    last, fits = 0, []
    for size in range(20, 601, 20):
        if schedule.due(size, last, size):
            last = size
            fits.append(size)
    assert fits == [20, 40, 60, 80, 100, 140, 180, 240, 300, 380, 480, 600]
    # a rule re-evaluating 41 points (sequential BKB on a noisy problem): every call refits
    # during the first 100 evaluations only, then replicates alone never do
    repeats = [e for e in range(60, 301) if schedule.due(41, 41, e)]
    assert repeats == list(range(60, 100))


@pytest.mark.parametrize("builder", [build_nystrom_gpr, build_replicated_gpr, build_adaptive_svgp])
def test_builders_start_where_triestes_build_gpr_starts(builder: Callable) -> None:
    from trieste.models.gpflow.builders import build_gpr

    data = noisy_data(30, seed=5)
    space = Box([0.0] * 3, [1.0] * 3)
    model = builder(data, space, fit_hyperparameters=False)
    reference = build_gpr(data, space)
    kernel = model.get_kernel()
    assert isinstance(kernel, gpflow.kernels.Matern52)
    np.testing.assert_allclose(kernel.lengthscales.numpy(), reference.kernel.lengthscales.numpy())
    np.testing.assert_allclose(kernel.variance.numpy(), reference.kernel.variance.numpy())
    assert kernel.lengthscales.prior is not None and kernel.variance.prior is not None
    np.testing.assert_allclose(model.get_observation_noise(), reference.likelihood.variance.numpy())
    assert not model._noise.trainable  # Trieste's default: the noise is not fitted
    trainable = builder(data, space, trainable_likelihood=True, fit_hyperparameters=False)
    assert trainable._noise.trainable


def test_degeneracy_criteria() -> None:
    kernel = gpflow.kernels.Matern52(variance=1.0, lengthscales=[0.3, 5e3])
    assert degeneracy(kernel, 0.1, spacing=0.1, extent=1.0) is None  # an irrelevant dimension
    kernel.lengthscales.assign([5e3, 5e3])
    assert "every lengthscale" in degeneracy(kernel, 0.1, spacing=0.1, extent=1.0)
    kernel.lengthscales.assign([0.005, 0.3])
    assert "a tenth of the data spacing" in degeneracy(kernel, 0.1, spacing=0.1, extent=1.0)
    kernel.lengthscales.assign([0.3, 0.3])
    kernel.variance.assign(1e-4)
    assert "signal variance" in degeneracy(kernel, 0.1, spacing=0.1, extent=1.0)
    inputs = np.array([[0.0, 0.0], [0.0, 0.1], [0.5, 0.5], [0.5, 0.7]])
    np.testing.assert_allclose(input_scales(inputs), (0.15, 0.7))
