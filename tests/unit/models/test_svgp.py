"""AdaptiveSVGP against GPflow's SGPR/SVGP/GPR, Trieste's greedy selection, and its own
invariants (warm starts, no retracing, bad input)."""

import copy

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.models.gpflow.inducing_point_selectors import greedy_inference_dpp

from trieste_scalable.models import AdaptiveSVGP, InducingSchedule
from trieste_scalable.models.inducing import GreedyVarianceSelector, KMeansSelector

from ...util import reference_gpr, replicated_dataset, se_kernel

NOISE = 0.05


def _model(data: Dataset, **kwargs) -> AdaptiveSVGP:  # type: ignore[no-untyped-def]
    options = dict(inducing=12, selector="greedy", fit_hyperparameters=False)
    options.update(kwargs)
    return AdaptiveSVGP(se_kernel(), NOISE, data, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1])
def test_optimal_q_equals_gpflow_sgpr_and_svgp(seed: int) -> None:
    data = replicated_dataset(seed)
    model = _model(data)
    inducing, q_mu, q_sqrt, whiten = model.get_inducing_variables()
    mean = gpflow.mean_functions.Constant(float(np.mean(data.observations)))
    sgpr = gpflow.models.SGPR(
        data.astuple(), se_kernel(), inducing.numpy(), noise_variance=NOISE, mean_function=mean
    )
    x = tf.constant(np.random.default_rng(seed).uniform(size=(20, 2)))
    pred_mean, pred_var = model.predict(x)
    ref_mean, ref_var = sgpr.predict_f(x)
    np.testing.assert_allclose(pred_mean, ref_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(pred_var, ref_var, rtol=1e-6, atol=1e-9)
    svgp = gpflow.models.SVGP(
        se_kernel(), gpflow.likelihoods.Gaussian(NOISE), inducing.numpy(), mean_function=mean
    )
    svgp.q_mu.assign(q_mu)
    svgp.q_sqrt.assign(q_sqrt)
    assert whiten and svgp.whiten
    # At the optimal q the uncollapsed ELBO equals the collapsed bound (Titsias 2009).
    np.testing.assert_allclose(model.elbo(), svgp.elbo(data.astuple()), rtol=1e-8)
    np.testing.assert_allclose(model.elbo(), sgpr.elbo(), rtol=1e-8)
    np.testing.assert_allclose(np.tril(q_sqrt[0]), q_sqrt[0])


def test_all_points_inducing_equals_exact_gpr() -> None:
    data = replicated_dataset(2, num_unique=20)
    model = _model(data, inducing=20, jitter=1e-12)
    gpr = reference_gpr(data, se_kernel(), NOISE)
    x = tf.constant(np.random.default_rng(2).uniform(size=(15, 2)))
    for ours, ref in zip(model.predict(x), gpr.predict_f(x)):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-8)
    joint_mean, joint_cov = model.predict_joint(x)
    np.testing.assert_allclose(joint_cov[0], gpr.predict_f(x, full_cov=True)[1][0], atol=1e-7)


def test_greedy_selection_equals_trieste() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(80, 3))
    data = Dataset(tf.constant(x), tf.constant(rng.normal(size=(80, 1))))
    reference = greedy_inference_dpp(15, se_kernel(), tf.ones([80], tf.float64), data).numpy()
    model = _model(data, inducing=15)
    np.testing.assert_allclose(model.get_inducing_variables()[0], reference)


@pytest.mark.parametrize("selector", ["greedy", "kmeans", "random"])
def test_repeated_inputs_give_distinct_inducing_points(selector: str) -> None:
    data = replicated_dataset(5, num_unique=10, num_repeats=90)
    model = _model(data, inducing=30, selector=selector)
    inducing = model.get_inducing_variables()[0].numpy()
    assert inducing.shape == (10, 2)  # never more than the unique inputs
    assert np.unique(inducing, axis=0).shape[0] == 10


class _FixedSelector:
    """Returns the first ``size`` rows of a fixed list of points (to test projections)."""

    def __init__(self, points: np.ndarray):
        self.points = points

    def select(self, points, size, greedy):  # type: ignore[no-untyped-def]
        return self.points[:size]


def test_projection_onto_a_superset_preserves_predictions() -> None:
    data = replicated_dataset(6)
    rng = np.random.default_rng(6)
    points = rng.uniform(size=(25, 2))
    schedule = InducingSchedule(maximum=25, minimum=1, scale=0.3, exponent=1.0)
    model = AdaptiveSVGP(
        se_kernel(),
        NOISE,
        inducing=schedule,
        selector=_FixedSelector(points),
        fit_hyperparameters=False,
        jitter=1e-10,
    )
    model.update(data)
    model.optimize(data)
    before = model.num_inducing
    x = tf.constant(rng.uniform(size=(10, 2)))
    mean, var = model.predict(x)
    more = data + Dataset(tf.constant(rng.uniform(size=(30, 2))), tf.zeros([30, 1], tf.float64))
    model.update(more)  # projects q onto a superset; does not condition on the new data yet
    assert model.num_inducing > before
    new_mean, new_var = model.predict(x)
    # Exact up to the jitter on K_ZZ and on the projected covariance.
    np.testing.assert_allclose(new_mean, mean, atol=1e-6)
    np.testing.assert_allclose(new_var, var, atol=1e-6)


def test_no_retracing_while_data_and_inducing_points_grow() -> None:
    rng = np.random.default_rng(7)
    schedule = InducingSchedule(maximum=60, scale=4.0, exponent=0.5)
    model = AdaptiveSVGP(se_kernel(), NOISE, inducing=schedule, max_optimizer_iterations=5)
    x = rng.uniform(size=(10, 2))
    sizes = []
    for _ in range(20):
        x = np.concatenate([x, rng.uniform(size=(10, 2))])
        data = Dataset(tf.constant(x), tf.constant(np.sin(5 * x[:, :1])))
        model.update(data)
        model.optimize(data)
        model.predict(tf.constant(x[:7]))
        model.elbo()
        sizes.append(model.num_inducing)
    assert sizes[-1] > sizes[0]
    assert all(count <= 1 for count in model.compiled.tracing_counts().values())


def test_hyperparameter_fit_improves_the_bound() -> None:
    data = replicated_dataset(8)
    # exact_fit_limit=0: fit on the bound (by default small data are fitted exactly)
    model = AdaptiveSVGP(
        gpflow.kernels.Matern52(lengthscales=2.0), 1.0, inducing=15, exact_fit_limit=0
    )
    fixed = AdaptiveSVGP(
        gpflow.kernels.Matern52(lengthscales=2.0), 1.0, data, inducing=15, fit_hyperparameters=False
    )
    model.update(data)
    model.optimize(data)
    assert model.elbo() > fixed.elbo() + 10.0
    known_noise = AdaptiveSVGP(
        gpflow.kernels.Matern52(lengthscales=2.0),
        1.0,
        data,
        inducing=15,
        fit_noise_variance=False,
        exact_fit_limit=0,
    )
    assert float(known_noise.get_observation_noise()) == pytest.approx(1.0)
    assert known_noise.elbo() > fixed.elbo()


def test_bad_input_is_rejected_and_loses_nothing() -> None:
    data = replicated_dataset(9)
    model = _model(data)
    x = tf.constant(np.random.default_rng(9).uniform(size=(5, 2)))
    mean, _ = model.predict(x)
    bad = Dataset(
        data.query_points, tf.where(tf.range(40)[:, None] == 3, np.nan, data.observations)
    )
    with pytest.raises(ValueError, match="NaN"):
        model.update(bad)
    with pytest.raises(ValueError, match="empty"):
        model.update(Dataset(tf.zeros([0, 2], tf.float64), tf.zeros([0, 1], tf.float64)))
    with pytest.raises(TypeError, match="dtype"):
        model.update(
            Dataset(tf.cast(data.query_points, tf.float32), tf.cast(data.observations, tf.float32))
        )
    np.testing.assert_array_equal(model.predict(x)[0], mean)
    with pytest.raises(ValueError, match="minimum"):
        InducingSchedule(maximum=5, minimum=10)


def test_float32_model() -> None:
    data = replicated_dataset(10, dtype=np.float32)
    with gpflow.config.as_context(gpflow.config.Config(float=tf.float32)):
        kernel = gpflow.kernels.SquaredExponential(lengthscales=0.3)
    model = AdaptiveSVGP(kernel, NOISE, data, inducing=10)
    mean, var = model.predict(
        tf.constant(np.random.default_rng(0).uniform(size=(4, 2)), tf.float32)
    )
    assert mean.dtype == tf.float32 and np.all(np.isfinite(var))


def test_deepcopy_keeps_predictions() -> None:
    data = replicated_dataset(11)
    model = _model(data, selector=KMeansSelector(seed=1))
    x = tf.constant(np.random.default_rng(11).uniform(size=(5, 2)))
    copied = copy.deepcopy(model)
    np.testing.assert_allclose(copied.predict(x)[0], model.predict(x)[0])
    # a variable with a dynamic shape, updated in place (Trieste's feature functions keep it)
    inducing = _model(data).get_inducing_variables()[0]
    assert isinstance(inducing, tf.Variable) and inducing.shape.as_list() == [None, None]
    assert repr(GreedyVarianceSelector()) == "GreedyVarianceSelector()"


def test_priors_on_hyperparameters_are_used() -> None:
    """optimize maximises bound + log prior (MAP): a tight prior pins the lengthscale."""
    import tensorflow_probability as tfp

    data = replicated_dataset(12)
    kernel = gpflow.kernels.Matern52(lengthscales=0.5)
    kernel.lengthscales.prior = tfp.distributions.LogNormal(
        tf.constant(np.log(3.0), tf.float64), tf.constant(0.01, tf.float64)
    )
    AdaptiveSVGP(kernel, NOISE, data, inducing=15)
    free = AdaptiveSVGP(gpflow.kernels.Matern52(lengthscales=0.5), NOISE, data, inducing=15)
    assert float(kernel.lengthscales.numpy()) == pytest.approx(3.0, rel=0.05)
    assert float(free.get_kernel().lengthscales.numpy()) < 1.0


def test_a_trieste_loop_conditions_once_and_never_projects_unused_q() -> None:
    """Built with data then handed to Ask/Tell (which updates and optimizes again): one
    inducing-point selection and one fit; in the loop, update is always followed by optimize,
    so the warm-start projection of q (only needed for predictions in between) never runs."""
    from trieste.ask_tell_optimization import AskTellOptimizer
    from trieste.space import Box

    from trieste_scalable.acquisition import BatchThompsonSampling

    class CountingSelector(KMeansSelector):
        calls = 0

        def select(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            CountingSelector.calls += 1
            return super().select(*args, **kwargs)

    data = replicated_dataset(3, num_unique=40)
    selector = CountingSelector()
    model = AdaptiveSVGP(se_kernel(), NOISE, data, inducing=20, selector=selector)
    ask_tell = AskTellOptimizer(Box([0.0, 0.0], [1.0, 1.0]), data, model, BatchThompsonSampling(4))
    assert CountingSelector.calls == 1  # the same data was not re-selected
    assert len(model.fitter.outcomes) == 1  # nor refitted
    for _ in range(3):
        batch = ask_tell.ask()
        ask_tell.tell(Dataset(batch, tf.reduce_sum(batch, axis=1, keepdims=True)))
    assert len(model.fitter.outcomes) == 4
    assert model.compiled.project.experimental_get_tracing_count() == 0
