"""NystromGPR against independent computations (GPflow's GPR and SGPR)."""

import copy

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.models import (
    ExactDictionary,
    NystromGPR,
    PivotedCholeskyDictionary,
    RidgeLeverageSampler,
)
from trieste_scalable.numerics import dtc
from trieste_scalable.numerics.linalg import CholeskyError

from ...util import reference_gpr, reference_sgpr_predictions, replicated_dataset, se_kernel

NOISE = 0.05


def exact_model(dataset: Dataset, **kwargs) -> NystromGPR:  # type: ignore[no-untyped-def]
    return NystromGPR(
        se_kernel(),
        NOISE,
        dataset,
        dictionary=ExactDictionary(),
        fit_hyperparameters=False,
        jitter=1e-14,
        **kwargs,
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_full_dictionary_equals_gpflow_gpr(seed: int) -> None:
    data = replicated_dataset(seed)
    model = exact_model(data)
    gpr = reference_gpr(data, se_kernel(), NOISE)
    x = tf.constant(np.random.default_rng(seed).uniform(size=(25, 2)))
    mean, var = model.predict(x)
    ref_mean, ref_var = gpr.predict_f(x)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8)
    np.testing.assert_allclose(var, ref_var, rtol=1e-8)
    _, cov = model.predict_joint(x[None])
    _, ref_cov = gpr.predict_f(x, full_cov=True)
    np.testing.assert_allclose(cov[0], ref_cov, rtol=1e-7, atol=1e-12)
    _, var_y = model.predict_y(x)
    np.testing.assert_allclose(var_y, ref_var + NOISE, rtol=1e-8)


def test_memory_grows_with_unique_points_not_evaluations() -> None:
    data = replicated_dataset(0, num_unique=20, num_repeats=200)
    model = exact_model(data)
    assert model.num_unique_points == 20
    assert model.dictionary.shape == (20, 2)


def test_predict_keeps_leading_batch_dimensions() -> None:
    model = exact_model(replicated_dataset(0))
    x = tf.constant(np.random.default_rng(3).uniform(size=(4, 3, 2)))
    mean, var = model.predict(x)
    assert mean.shape == (4, 3, 1) and var.shape == (4, 3, 1)
    flat_mean, _ = model.predict(tf.reshape(x, [-1, 2]))
    np.testing.assert_allclose(tf.reshape(mean, [-1, 1]), flat_mean)
    samples = model.sample(x[0], 5)
    assert samples.shape == (5, 3, 1)


def test_dictionary_subset_matches_gpflow_sgpr_predictions() -> None:
    """A sparse dictionary gives the DTC predictive (SGPR's predict_f, spec errata 6)."""
    data = replicated_dataset(2, num_unique=60)
    model = NystromGPR(
        se_kernel(),
        NOISE,
        data,
        dictionary=RidgeLeverageSampler(0.02, seed=0),
        fit_hyperparameters=False,
        jitter=1e-14,
    )
    assert 0 < model.dictionary.shape[0] < 60
    x = tf.constant(np.random.default_rng(5).uniform(size=(10, 2)))
    mean, var = model.predict(x)
    ref_mean, ref_var = reference_sgpr_predictions(
        data, se_kernel(), NOISE, model.dictionary.numpy(), x
    )
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6)


def test_evidence_equals_gpflow_sgpr_elbo_on_duplicated_data() -> None:
    data = replicated_dataset(4, num_unique=40, num_repeats=30)
    model = NystromGPR(
        se_kernel(), NOISE, data, dictionary=RidgeLeverageSampler(0.05, seed=1), jitter=1e-6
    )
    x_np, y_np = data.query_points.numpy(), data.observations.numpy()
    jitter = model._evidence_jitter()
    sgpr = gpflow.models.SGPR(
        (x_np, y_np),
        se_kernel(),
        inducing_variable=model.dictionary.numpy(),
        noise_variance=NOISE,
        mean_function=gpflow.mean_functions.Constant(np.mean(y_np)),
    )
    with gpflow.config.as_context(gpflow.config.Config(jitter=jitter)):
        expected = sgpr.elbo()
    np.testing.assert_allclose(model._sparse_objective()(), expected, rtol=1e-9)


def test_optimize_increases_evidence_and_refreshes_posterior() -> None:
    data = replicated_dataset(6, num_unique=50)
    model = NystromGPR(se_kernel(lengthscale=2.0), 1.0, data, dictionary=ExactDictionary())
    before = float(model._sparse_objective()())
    model.optimize(data)
    after = float(model._sparse_objective()())
    assert after > before + 1.0
    gpr = reference_gpr(
        data, model.get_kernel(), float(model.get_observation_noise()), model.prior_mean
    )
    x = data.query_points[:5]
    np.testing.assert_allclose(model.predict(x)[0], gpr.predict_f(x)[0], rtol=1e-6)


def test_fixed_hyperparameters_are_not_fitted() -> None:
    data = replicated_dataset(6)
    model = NystromGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    assert model.optimize(data) is None
    assert float(model.get_kernel().lengthscales.numpy()) == pytest.approx(0.3)


def test_first_dictionary_is_sampled_from_the_prior_variance() -> None:
    # before any posterior, the batch-start variances are the prior's: k(x, x)/lambda
    seen = []

    class Recording(RidgeLeverageSampler):
        def select(self, counts, variances):  # type: ignore[no-untyped-def]
            seen.append(variances)
            return super().select(counts, variances)

    NystromGPR(se_kernel(variance=2.0), NOISE, replicated_dataset(0), dictionary=Recording(2.0))
    np.testing.assert_allclose(seen[0], 2.0 / NOISE)


def test_sampled_dictionary_is_never_empty() -> None:
    policy = RidgeLeverageSampler(1e-9, seed=0)
    chosen = policy.select(np.ones(50), np.full(50, 1e-3))
    assert chosen.size == 1


def test_unseeded_dictionaries_follow_numpys_global_seed() -> None:
    """As Trieste's runs: ``np.random.seed`` reproduces the draws; without it they differ."""
    counts, variances = np.ones(200), np.full(200, 0.2)

    def draws(seed: int) -> np.ndarray:
        np.random.seed(seed)
        return RidgeLeverageSampler(1.0).select(counts, variances)

    np.testing.assert_array_equal(draws(3), draws(3))
    assert not np.array_equal(draws(3), draws(4))


@pytest.mark.parametrize("repeats", ["exact", "union"])
def test_inclusion_probabilities_for_repeats(repeats: str) -> None:
    policy = RidgeLeverageSampler(2.0, repeats=repeats)  # type: ignore[arg-type]
    p = policy.inclusion_probabilities(np.array([1.0, 3.0, 1.0]), np.array([0.1, 0.1, 2.0]))
    expected_repeat = 1 - 0.8**3 if repeats == "exact" else 0.6
    np.testing.assert_allclose(p, [0.2, expected_repeat, 1.0])


def test_dictionary_stays_well_below_t_on_smooth_problem() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(2000, 2))
    y = np.sin(3 * x[:, :1]) + 0.1 * rng.normal(size=(2000, 1))
    model = NystromGPR(
        se_kernel(lengthscale=0.5),
        1.0,
        dictionary=RidgeLeverageSampler(2.0, seed=0),
        fit_hyperparameters=False,
    )
    for t in range(200, 2001, 200):
        model.update(Dataset(tf.constant(x[:t]), tf.constant(y[:t])))
    size = int(model.dictionary.shape[0])
    assert size < 2000 / 10, size
    assert 0 < model.effective_dimension < size


@pytest.mark.parametrize(
    "x, y, error, match",
    [
        (np.zeros((3, 2)), np.array([[0.0], [np.nan], [1.0]]), ValueError, "NaN/inf"),
        (np.zeros((3, 2)), np.array([[0.0], [np.inf], [1.0]]), ValueError, "NaN/inf"),
        (np.zeros((3, 2)), np.zeros((3, 2)), ValueError, "single output"),
        (np.zeros((3, 3)), np.zeros((3, 1)), ValueError, "columns"),
        (np.zeros((0, 2)), np.zeros((0, 1)), ValueError, "empty"),
        (np.zeros((3, 2), np.float32), np.zeros((3, 1), np.float32), TypeError, "dtype"),
    ],
)
def test_bad_data_raises_and_leaves_model_unchanged(x, y, error, match) -> None:  # type: ignore[no-untyped-def]
    data = replicated_dataset(0)
    model = exact_model(data)
    probe = tf.constant(np.random.default_rng(2).uniform(size=(5, 2)))
    before = model.predict(probe)
    with pytest.raises(error, match=match):
        model.update(Dataset(tf.constant(x), tf.constant(y)))
    after = model.predict(probe)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    assert model.num_unique_points == 30


def test_non_psd_kernel_raises_clear_error() -> None:
    class Indefinite(gpflow.kernels.SquaredExponential):
        def K(self, X, X2=None):  # type: ignore[no-untyped-def]
            return -super().K(X, X2)

    with pytest.raises(CholeskyError, match="positive"):
        NystromGPR(Indefinite(), NOISE, replicated_dataset(0), dictionary=ExactDictionary())


def test_bad_construction_arguments() -> None:
    with pytest.raises(ValueError, match="noise_variance"):
        NystromGPR(se_kernel(), 0.0)
    with pytest.raises(ValueError, match="oversampling"):
        RidgeLeverageSampler(0.0)
    with pytest.raises(ValueError, match="no data"):
        NystromGPR(se_kernel(), 1.0).predict(tf.zeros([1, 2], tf.float64))


def test_float32_model() -> None:
    with gpflow.config.as_context(gpflow.config.Config(float=np.float32)):
        kernel = se_kernel()
        data = replicated_dataset(0, dtype=np.float32)
        model = NystromGPR(kernel, NOISE, data, dictionary=ExactDictionary(), jitter=1e-7)
        mean, var = model.predict(data.query_points[:5])
    assert mean.dtype == tf.float32 and var.dtype == tf.float32
    gpr = reference_gpr(replicated_dataset(0), se_kernel(), NOISE)
    ref_mean, _ = gpr.predict_f(replicated_dataset(0).query_points[:5])
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-2, atol=1e-3)


def test_model_deep_copies() -> None:
    model = exact_model(replicated_dataset(0))
    clone = copy.deepcopy(model)
    x = tf.constant(np.random.default_rng(2).uniform(size=(3, 2)))
    np.testing.assert_array_equal(model.predict(x)[0], clone.predict(x)[0])


def test_updating_with_the_data_held_is_a_no_op_and_refits_nothing() -> None:
    """Trieste's loops update (and optimize) a model built with its initial data again: the
    dictionary is not resampled and the hyperparameters not refitted on the same data."""
    data = replicated_dataset(6, num_unique=60)
    model = NystromGPR(se_kernel(), NOISE, data, max_optimizer_iterations=5)
    model.optimize(data)
    posterior, dictionary = model._posterior, model.dictionary
    model.update(Dataset(tf.identity(data.query_points), tf.identity(data.observations)))
    for held, before in zip(model._posterior, posterior):
        np.testing.assert_array_equal(held, before)
    np.testing.assert_array_equal(model.dictionary, dictionary)
    assert model.optimize(data) is None and len(model.fitter.outcomes) == 1
    more = data + Dataset(data.query_points[:3], data.observations[:3] + 0.1)
    model.update(more)  # new evaluations: resampled and refitted as usual
    assert not np.array_equal(model._posterior.weights, posterior.weights)
    model.optimize(more)
    assert len(model.fitter.outcomes) == 2


def test_inducing_variables_give_the_dtc_posterior_through_gpflows_conditional() -> None:
    """The whitened (Z, q_mu, q_sqrt) view, read back by GPflow's own conditional, is the model's
    posterior: what Trieste's samplers (and batch Thompson sampling) see is the DTC posterior."""
    data = replicated_dataset(8, num_unique=40)
    model = NystromGPR(se_kernel(), NOISE, data, fit_hyperparameters=False, jitter=0.0)
    inducing, q_mu, q_sqrt, whiten = model.get_inducing_variables()
    assert whiten and q_mu.numpy().shape == (inducing.numpy().shape[0], 1)
    np.testing.assert_array_equal(q_sqrt[0], np.tril(q_sqrt[0]))  # lower triangular
    x = tf.constant(np.random.default_rng(3).uniform(size=(7, 2)))
    with gpflow.config.as_context(gpflow.config.Config(jitter=1e-12)):  # ours used none
        mean, var = gpflow.conditionals.conditional(
            x,
            gpflow.inducing_variables.InducingPoints(inducing),
            model.get_kernel(),
            q_mu,
            q_sqrt=q_sqrt,
            white=True,
        )
    expected_mean, expected_var = model.predict(x)
    np.testing.assert_allclose(mean + model.get_mean_function()(x), expected_mean, rtol=1e-6)
    np.testing.assert_allclose(var, expected_var, rtol=1e-6, atol=1e-10)


def test_thompson_sampling_ours_and_triestes_run_on_it() -> None:
    from trieste.acquisition.rule import DiscreteThompsonSampling
    from trieste.acquisition.sampler import ThompsonSamplerFromTrajectory
    from trieste.space import DiscreteSearchSpace

    from trieste_scalable.acquisition import BatchThompsonSampling

    data = replicated_dataset(8, num_unique=40)
    model = NystromGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    space = DiscreteSearchSpace(tf.constant(np.random.default_rng(4).uniform(size=(200, 2))))
    ours = BatchThompsonSampling(4).acquire_single(space, model, data)(None)[1]
    theirs = DiscreteThompsonSampling(
        100, 3, thompson_sampler=ThompsonSamplerFromTrajectory()
    ).acquire_single(space, model, data)
    assert ours.shape == (4, 2) and theirs.shape == (3, 2)
    assert np.all(space.contains(ours)) and np.all(space.contains(theirs))


def test_fast_update_with_an_exact_dictionary_equals_gpr_on_the_extended_data() -> None:
    data = replicated_dataset(0)
    model = exact_model(data)
    rng = np.random.default_rng(7)
    extra = Dataset(tf.constant(rng.uniform(size=(4, 2))), tf.constant(rng.normal(size=(4, 1))))
    gpr = reference_gpr(data + extra, se_kernel(), NOISE, model.prior_mean)
    x = tf.constant(rng.uniform(size=(20, 2)))
    mean, var = model.conditional_predict_f(x, extra)
    ref_mean, ref_var = gpr.predict_f(x)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-7)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6, atol=1e-12)
    mean, cov = model.conditional_predict_joint(x, extra)
    np.testing.assert_allclose(cov[0], gpr.predict_f(x, full_cov=True)[1][0], atol=1e-10)
    _, var_y = model.conditional_predict_y(x, extra)
    np.testing.assert_allclose(var_y, ref_var + NOISE, rtol=1e-6)
    samples = model.conditional_predict_f_sample(x, extra, 3)
    assert samples.shape == (3, 20, 1)
    np.testing.assert_allclose(
        model.predict(x)[0],
        reference_gpr(data, se_kernel(), NOISE, model.prior_mean).predict_f(x)[0],
        rtol=1e-7,
    )  # the model itself is unchanged


def test_fast_update_with_a_sparse_dictionary_equals_refactorising_with_that_dictionary() -> None:
    data = replicated_dataset(1, num_unique=60)
    model = NystromGPR(se_kernel(), NOISE, data, dictionary=PivotedCholeskyDictionary(20))
    assert int(model.dictionary.shape[0]) == 20  # sparse: the fantasies keep the dictionary
    rng = np.random.default_rng(2)
    extras = [rng.uniform(size=(3, 2)) for _ in range(2)]
    observed = [rng.normal(size=(3, 1)) for _ in range(2)]
    batched = Dataset(tf.constant(np.stack(extras)), tf.constant(np.stack(observed)))
    x = tf.constant(rng.uniform(size=(15, 2)))
    mean, var = model.conditional_predict_f(x, batched)  # two fantasy sets at once
    assert mean.shape == var.shape == (2, 15, 1)
    centre = model.prior_mean - float(model._mean.numpy())  # the data are stored centred on it
    for k in range(2):  # from scratch: the extended data factorised over the same dictionary
        extended = Dataset(
            tf.concat([data.query_points, extras[k]], 0),
            tf.concat([data.observations, observed[k]], 0),
        )
        inputs, index = np.unique(extended.query_points.numpy(), axis=0, return_inverse=True)
        counts = np.bincount(index.ravel()).astype(np.float64)
        sums = np.bincount(index.ravel(), weights=extended.observations.numpy()[:, 0] - centre)
        post, _ = dtc.build_posterior(
            model.compiled,
            model.dictionary,
            int(model.dictionary.shape[0]),
            tf.constant(inputs),
            tf.constant(counts),
            tf.constant(sums),
            tf.constant(NOISE, tf.float64),
            model._prior_mean(),
            1e-10,
        )
        ref_mean, ref_s2 = model.compiled.marginals(post, x)
        np.testing.assert_allclose(mean[k, :, 0], ref_mean + centre, rtol=1e-8)
        np.testing.assert_allclose(var[k, :, 0], NOISE * ref_s2, rtol=1e-7)


def test_a_compiled_fantasy_follows_the_dictionary_filling_and_dropping_points() -> None:
    class FullThenHalf(RidgeLeverageSampler):  # every input at the first update, then half
        def _select(self, counts: np.ndarray, variances: np.ndarray) -> np.ndarray:
            self.draws = getattr(self, "draws", 0) + 1
            return np.arange(counts.size if self.draws == 1 else counts.size // 2)

    data = replicated_dataset(4, num_unique=30, num_repeats=0)
    first = Dataset(data.query_points[:20], data.observations[:20])
    model = NystromGPR(se_kernel(), NOISE, first, dictionary=FullThenHalf())
    rng = np.random.default_rng(5)
    extra = Dataset(tf.constant(rng.uniform(size=(3, 2))), tf.constant(rng.normal(size=(3, 1))))
    x = tf.constant(rng.uniform(size=(10, 2)))
    compiled = tf.function(lambda: model.conditional_predict_f(x, extra))
    before = compiled()  # traced while the draw keeps every point: exact, GPR's
    gpr = reference_gpr(first + extra, se_kernel(), NOISE, model.prior_mean)
    np.testing.assert_allclose(before[1], gpr.predict_f(x)[1], rtol=1e-6, atol=1e-12)
    model.update(data)  # the draw keeps half: the fantasies keep the dictionary
    assert int(model.dictionary.shape[0]) == 15
    after, eager = compiled(), model.conditional_predict_f(x, extra)
    np.testing.assert_allclose(after[0], eager[0], rtol=1e-10)
    np.testing.assert_allclose(after[1], eager[1], rtol=1e-10)
    wrong = model.compiled.condition_extending  # what a trace frozen on "exact" would use
    assert not np.allclose(eager[1][:, 0], _extended_variances(model, wrong, x, extra))


def _extended_variances(model: NystromGPR, condition, x, extra) -> np.ndarray:  # type: ignore[no-untyped-def]
    post = model._require_posterior()
    residuals = extra.observations[:, 0] - model._centre_tensor() - post.mean
    conditioned = condition(post, extra.query_points, residuals)
    return (NOISE * model.compiled.marginals(conditioned, x)[1]).numpy()


def test_triestes_fantasizer_runs_on_the_fast_updates_and_matches_gpr() -> None:
    from trieste.acquisition import Fantasizer, NegativeLowerConfidenceBound
    from trieste.acquisition.rule import EfficientGlobalOptimization
    from trieste.models.gpflow import GaussianProcessRegression
    from trieste.models.interfaces import FastUpdateModel
    from trieste.space import DiscreteSearchSpace

    data = replicated_dataset(2)
    model = exact_model(data)
    assert isinstance(model, FastUpdateModel)
    space = DiscreteSearchSpace(tf.constant(np.random.default_rng(3).uniform(size=(200, 2))))
    batches = []
    for m in (
        model,
        GaussianProcessRegression(reference_gpr(data, se_kernel(), NOISE, model.prior_mean)),
    ):
        rule = EfficientGlobalOptimization(
            Fantasizer(NegativeLowerConfidenceBound(2.0)), num_query_points=4
        )
        batches.append(rule.acquire_single(space, m, data).numpy())
    np.testing.assert_array_equal(batches[0], batches[1])
