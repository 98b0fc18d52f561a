"""Trieste's own acquisition functions over our models: a function built before an update and
updated in place (what Trieste's loops do) must give the values of one built afresh, and its
compiled call must give the values of the same object run eagerly (nothing captured stale).
Each model grows its data, dictionary / inducing set and unique inputs between the two."""

from __future__ import annotations

from typing import Any, Callable

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.acquisition import (
    GIBBON,
    AugmentedExpectedImprovement,
    BatchExpectedImprovement,
    BatchMonteCarloExpectedImprovement,
    ExpectedImprovement,
    Fantasizer,
    GreedyContinuousThompsonSampling,
    LocalPenalization,
    LogExpectedImprovement,
    MinValueEntropySearch,
    MonteCarloExpectedImprovement,
    NegativeLowerConfidenceBound,
    ParallelContinuousThompsonSampling,
)
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression
from trieste.observer import OBJECTIVE
from trieste.space import Box

from trieste_scalable.models import (
    AdaptiveSVGP,
    ExactDictionary,
    NystromGPR,
    ReplicatedGPR,
    build_adaptive_svgp,
    build_nystrom_gpr,
    build_replicated_gpr,
)

from ...util import reference_gpr, se_kernel

SPACE = Box([0.0, 0.0], [1.0, 1.0])


def _objective(x: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum((x - 0.3) ** 2, axis=-1, keepdims=True) + 0.05 * tf.sin(20.0 * x[:, :1])


def _data(seed: int, num: int) -> Dataset:
    x = tf.constant(np.random.default_rng(seed).uniform(size=(num, 2)))
    return Dataset(x, _objective(x))


MODELS: dict[str, Callable[[Dataset], Any]] = {
    "nystrom": lambda data: build_nystrom_gpr(data, SPACE),
    "nystrom-exact": lambda data: build_nystrom_gpr(data, SPACE, dictionary=ExactDictionary()),
    "replicated": lambda data: build_replicated_gpr(data, SPACE),
    "svgp": lambda data: build_adaptive_svgp(data, SPACE, inducing=12),
}

# (builder factory, batch size B of the points [N, B, D] it scores, deterministic)
BUILDERS: dict[str, tuple[Callable[[], Any], int, bool]] = {
    "EI": (ExpectedImprovement, 1, True),
    "AugmentedEI": (AugmentedExpectedImprovement, 1, True),
    "NLCB": (lambda: NegativeLowerConfidenceBound(2.0), 1, True),
    "LogEI": (LogExpectedImprovement, 1, True),
    "BatchEI": (lambda: BatchExpectedImprovement(50), 3, False),
    "MC-EI": (lambda: MonteCarloExpectedImprovement(64), 1, False),
    "BatchMC-EI": (lambda: BatchMonteCarloExpectedImprovement(64), 3, False),
    "MES": (lambda: MinValueEntropySearch(SPACE, num_samples=3), 1, False),
    "GIBBON": (lambda: GIBBON(SPACE, num_samples=3), 1, False),
    "LocalPenalization": (lambda: LocalPenalization(SPACE), 1, False),
    "Fantasizer": (Fantasizer, 1, False),
    "PCTS": (ParallelContinuousThompsonSampling, 3, False),
    "GCTS": (GreedyContinuousThompsonSampling, 1, False),
}


def _test_points(batch: int) -> tf.Tensor:
    return tf.constant(np.random.default_rng(7).uniform(size=(6, batch, 2)))


def _eager(fn: Any, x: tf.Tensor) -> np.ndarray:
    tf.config.run_functions_eagerly(True)
    try:
        return np.asarray(fn(x))
    finally:
        tf.config.run_functions_eagerly(False)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_in_place_updates_match_fresh_builds_and_eager_execution(model_name: str) -> None:
    """Every builder of :data:`BUILDERS` over one model (one fit before and one after the
    update, as in a Trieste loop step); failures are collected and reported together."""
    tf.random.set_seed(0)
    first, more = _data(0, 8), _data(1, 14)
    grown = first + more
    model = MODELS[model_name](first)
    model.optimize(first)
    pending = tf.constant([[0.5, 0.5]], tf.float64)
    functions, before = {}, {}
    for name, (make_builder, batch, _) in BUILDERS.items():
        builder = make_builder()
        functions[name] = (
            builder,
            builder.prepare_acquisition_function(*_arguments(name, model, first, pending)),
        )
        before[name] = np.asarray(functions[name][1](_test_points(batch)))  # traced now

    sizes = _sizes(model)
    model.update(grown)
    model.optimize(grown)
    assert all(new > old for new, old in zip(_sizes(model), sizes))  # data and dictionary grew

    failures = []
    for name, (builder, fn) in functions.items():
        make_builder, batch, deterministic = BUILDERS[name]
        x = _test_points(batch)
        fn = builder.update_acquisition_function(fn, *_arguments(name, model, grown, pending))
        in_place = np.asarray(fn(x))
        references = {"eager": _eager(fn, x)}
        if deterministic:
            fresh = make_builder().prepare_acquisition_function(model, grown)
            references["fresh"] = np.asarray(fresh(x))
        if not np.all(np.isfinite(in_place)):
            failures.append(f"{name}: not finite {in_place.ravel()}")
        elif np.allclose(in_place, before[name], rtol=1e-12, atol=0.0):
            failures.append(f"{name}: the update did not reach the function")
        for kind, reference in references.items():
            if not np.allclose(in_place, reference, rtol=1e-8, atol=1e-10):
                gap = np.max(np.abs(in_place - reference))
                failures.append(f"{name}: in place vs {kind} differ by {gap:.3g}")
    assert not failures, failures


def _arguments(name: str, model: Any, data: Dataset, pending: tf.Tensor) -> tuple[Any, ...]:
    """``prepare/update_acquisition_function``'s arguments after the function (greedy builders
    get a pending point; Fantasizer is a multi-model builder)."""
    if name == "Fantasizer":
        return {OBJECTIVE: model}, {OBJECTIVE: data}, pending
    if name in ("GIBBON", "LocalPenalization", "GCTS"):
        return model, data, pending
    return model, data


def _sizes(model: Any) -> tuple[int, ...]:
    """Unique inputs and the dictionary / inducing size."""
    if isinstance(model, NystromGPR):
        return model.num_unique_points, int(model.dictionary.shape[0])
    if isinstance(model, AdaptiveSVGP):
        return model.num_unique_points, model.num_inducing
    return (model.num_unique_points,)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_trajectories_update_in_place_across_growing_inducing_sets(model_name: str) -> None:
    tf.random.set_seed(1)
    first, grown = _data(0, 8), _data(0, 8) + _data(2, 20)
    model = MODELS[model_name](first)
    model.optimize(first)
    sampler = model.trajectory_sampler()
    trajectory = sampler.get_trajectory()
    x = _test_points(2)
    trajectory(x)  # fixes the batch size and traces
    model.update(grown)
    model.optimize(grown)
    trajectory = sampler.update_trajectory(trajectory)
    values = np.asarray(trajectory(x))
    assert values.shape == (6, 2, 1) and np.all(np.isfinite(values))
    np.testing.assert_allclose(values, _eager(trajectory, x), rtol=1e-8, atol=1e-10)
    # the trajectories are posterior samples of the grown model: at the data they match its
    # mean up to a few posterior standard deviations (the features are random)
    at_data = grown.query_points[:, None, :] * tf.ones([1, 2, 1], tf.float64)
    mean, var = model.predict(grown.query_points)
    gap = np.abs(np.asarray(trajectory(at_data))[..., 0] - mean.numpy())
    assert np.median(gap / np.sqrt(var.numpy() + model.get_observation_noise().numpy())) < 4.0


def test_replicated_fantasies_equal_gpflow_gpr_on_the_extended_data() -> None:
    data = _data(3, 12)
    data = data + Dataset(data.query_points[:4], data.observations[:4] + 0.01)  # repeats
    kernel, noise = se_kernel(0.3, 0.5), 1e-2
    model = ReplicatedGPR(kernel, noise, data, fit_hyperparameters=False)
    extra_x = tf.constant(np.random.default_rng(4).uniform(size=(2, 3, 2)))  # two fantasies
    extra_y = tf.constant(np.random.default_rng(5).normal(size=(2, 3, 1)))
    query = tf.constant(np.random.default_rng(6).uniform(size=(5, 2)))
    mean, var = model.conditional_predict_f(query, Dataset(extra_x, extra_y))
    joint_mean, cov = model.conditional_predict_joint(query, Dataset(extra_x, extra_y))
    assert mean.shape == (2, 5, 1) and cov.shape == (2, 1, 5, 5)
    for f in range(2):
        extended = data + Dataset(extra_x[f], extra_y[f])
        reference = reference_gpr(extended, kernel, noise, mean=model.prior_mean)
        ref_mean, ref_var = reference.predict_f(query)
        _, ref_cov = reference.predict_f(query, full_cov=True)
        np.testing.assert_allclose(mean[f], ref_mean, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(var[f], ref_var, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(joint_mean[f], ref_mean, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(cov[f], ref_cov, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_covariance_between_points_matches_the_joint_covariance(model_name: str) -> None:
    model = MODELS[model_name](_data(0, 15))
    x = tf.constant(np.random.default_rng(8).uniform(size=(3, 4, 2)))
    x2 = tf.constant(np.random.default_rng(9).uniform(size=(5, 2)))
    cov = model.covariance_between_points(x, x2)
    assert cov.shape == (3, 1, 4, 5)
    for i in range(3):
        _, joint = model.predict_joint(tf.concat([x[i], x2], axis=0))
        np.testing.assert_allclose(cov[i, 0], joint[0, :4, 4:], rtol=1e-8, atol=1e-12)


def test_models_survive_a_pickle_with_live_state() -> None:
    """A pickled model (what Trieste's dill copies of acquisition functions do) predicts the
    same and can still be updated with data of another size."""
    import dill

    data = _data(0, 10)
    for model in (
        NystromGPR(se_kernel(), 1e-2, data, fit_hyperparameters=False),
        ReplicatedGPR(se_kernel(), 1e-2, data, fit_hyperparameters=False),
        AdaptiveSVGP(se_kernel(), 1e-2, data, inducing=6, fit_hyperparameters=False),
        GaussianProcessRegression(gpflow.models.GPR(data.astuple(), se_kernel())),
    ):
        copy = dill.loads(dill.dumps(model))
        x = _test_points(1)[:, 0]
        np.testing.assert_allclose(copy.predict(x)[0], model.predict(x)[0], rtol=1e-12)
        copy.update(data + _data(1, 7))
        assert np.all(np.isfinite(copy.predict(x)[0]))


@pytest.mark.parametrize("model_name", ["nystrom", "replicated", "svgp"])
def test_sampling_runs_compiled_and_matches_the_posterior(model_name: str) -> None:
    """``sample`` inside a compiled function (Trieste's samplers call it there): the sample
    mean is within 4 standard errors of the predicted mean (seeded)."""
    tf.random.set_seed(3)
    model = MODELS[model_name](_data(0, 12))
    x = _test_points(1)[:5, 0]
    samples = tf.function(lambda points: model.sample(points, 4000))(x)
    mean, var = model.predict(x)
    assert samples.shape == (4000, 5, 1)
    error = np.abs(np.mean(samples, axis=0) - mean.numpy())
    assert np.all(error <= 4.0 * np.sqrt(var.numpy() / 4000) + 1e-9)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_compiled_batched_predict_joint_equals_each_set_alone(model_name: str) -> None:
    """``predict_joint`` over a batch of sets [S, B, D] inside a compiled function (how Trieste's
    optimisers call it), on the model and on a ``dill`` copy of it (what Trieste's history
    reloads use), equals each set's own eager ``predict_joint`` and its covariance computed
    independently, by ``covariance_between_points`` (one solve per side, the two-argument
    kernel), also when the sets are scored in several chunks."""
    import dill

    model = MODELS[model_name](_data(0, 15))
    x = tf.constant(np.random.default_rng(10).uniform(size=(7, 3, 2)))
    chunked = dill.loads(dill.dumps(model))
    chunked._chunk_size = 7  # two sets per chunk: four chunks, the last one padded
    for candidate in (model, dill.loads(dill.dumps(model)), chunked):
        mean, cov = tf.function(candidate.predict_joint)(x)
        assert mean.shape == (7, 3, 1) and cov.shape == (7, 1, 3, 3)
        for s in range(7):
            set_mean, set_cov = model.predict_joint(x[s])
            np.testing.assert_allclose(mean[s], set_mean, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(cov[s], set_cov, rtol=1e-10, atol=1e-12)
            between = model.covariance_between_points(x[s], x[s])
            np.testing.assert_allclose(cov[s], between, rtol=1e-8, atol=1e-12)
