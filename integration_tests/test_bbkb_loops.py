"""Full BayesianOptimizer runs of BBKB, BKB and GP-BUCB on a noisy discrete problem."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.bayesian_optimizer import BayesianOptimizer

from trieste_scalable.acquisition import BBKB, BKB, GPBUCB, ConfidenceWidth
from trieste_scalable.models import ExactDictionary, NystromGPR, RidgeLeverageSampler
from trieste_scalable.problems import get_problem

WIDTH = ConfidenceWidth("constant", beta=2.0)
CAP = 64


def rules():  # type: ignore[no-untyped-def]
    # built inside a function: the rules carry per-run statistics. BBKB's batches are capped:
    # where the draw keeps every point (here, the noise's repeats of a few points), the posterior
    # is exact and, as GP-BUCB's, batches of repeats of a confident point double step after
    # step (the papers' O(log T) batches), thousands of evaluations by step 40 uncapped
    return [
        pytest.param(BBKB("global", width=WIDTH, max_batch_size=CAP), False, 40, id="bbkb-global"),
        pytest.param(
            BBKB("global_local", width=WIDTH, max_batch_size=CAP), False, 40, id="bbkb-global-local"
        ),
        pytest.param(BKB(width=WIDTH), False, 120, id="bkb"),
        pytest.param(GPBUCB(width=WIDTH), True, 40, id="gp-bucb"),
    ]


@pytest.mark.parametrize("rule, exact, steps", rules())
def test_rule_approaches_the_optimum_in_a_bayesian_optimizer_loop(rule, exact, steps) -> None:  # type: ignore[no-untyped-def]
    problem = get_problem("rkhs3", seed=0)  # 3,000 candidates in 3-D, noise std 0.1
    initial = problem.initial_data(10, seed=0)
    kernel = gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.3)
    dictionary = ExactDictionary() if exact else RidgeLeverageSampler(2.0, seed=0)
    model = NystromGPR(kernel, 0.01, dictionary=dictionary, fit_hyperparameters=False)
    sizes: list[int] = []

    def record(datasets, models, state):  # type: ignore[no-untyped-def]
        sizes.append(int(datasets["OBJECTIVE"].query_points.shape[0]))
        return False

    result = BayesianOptimizer(problem.observer(1), problem.search_space).optimize(
        steps, initial, model, rule, track_state=False, early_stop_callback=record
    )
    data = result.final_result.unwrap().datasets["OBJECTIVE"]
    regret = problem.regret(data.query_points[10:])
    uniform = problem.values.mean() - problem.minimum
    assert regret.min() < 0.02  # f is scaled to [0, 1]
    assert regret.mean() < 0.5 * uniform
    half = len(regret) // 2
    assert regret[half:].mean() < 0.5 * regret[:half].mean()  # it converges
    batch_sizes = np.diff(sizes + [int(data.query_points.shape[0])])
    if isinstance(rule, BBKB) and not isinstance(rule, BKB):
        third = len(batch_sizes) // 3
        assert batch_sizes[-third:].mean() > 2 * batch_sizes[:third].mean(), batch_sizes
    if isinstance(rule, BKB):
        assert np.all(batch_sizes == 1)


def test_hyperparameters_fitted_in_the_loop() -> None:
    problem = get_problem("rkhs3", seed=1)
    initial = problem.initial_data(20, seed=1)
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=1.0)
    model = NystromGPR(kernel, 0.1, dictionary=RidgeLeverageSampler(2.0, seed=1))
    result = BayesianOptimizer(problem.observer(2), problem.search_space).optimize(
        15, initial, model, BBKB(width=WIDTH), track_state=True
    )
    assert result.final_result.is_ok
    assert len(result.history) == 15  # the model deep-copies with track_state=True
    assert float(kernel.lengthscales.numpy()) != 1.0
    noise = float(model.get_observation_noise())
    assert 1e-4 < noise < 0.1  # true noise variance is 0.01
    mean, _ = model.predict(tf.constant(problem.points[:200]))
    assert np.corrcoef(mean.numpy()[:, 0], problem.values[:200])[0, 1] > 0.8
