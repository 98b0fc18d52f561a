"""S-GP-TS in Trieste's BayesianOptimizer: batches of 100 on the paper's noisy Hartmann6 and
Shekel4 (noise variances 0.5 and 0.1), against random search with the same budget.

Compared on the noiseless objective: the best evaluated point, and the mean of the last batch
(Thompson sampling concentrates its batches where the optimum probably is).
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.bayesian_optimizer import BayesianOptimizer
from trieste.data import Dataset
from trieste.objectives import Hartmann6, Shekel4
from trieste.objectives.utils import mk_observer

from trieste_scalable.acquisition import BatchThompsonSampling
from trieste_scalable.models import AdaptiveSVGP

BATCH = 100
STEPS = 5


@pytest.mark.parametrize(
    "problem, noise_variance",
    [
        pytest.param(Hartmann6, 0.5, id="hartmann6", marks=pytest.mark.slow),  # 27 s on 2 cores
        pytest.param(Shekel4, 0.1, id="shekel4"),
    ],
)
def test_batch_thompson_sampling_beats_random_search(problem, noise_variance) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    dim = int(problem.search_space.dimension)

    def noisy(x: tf.Tensor) -> tf.Tensor:
        clean = problem.objective(x)
        return clean + np.sqrt(noise_variance) * rng.normal(size=clean.shape)

    initial_x = problem.search_space.sample(BATCH, seed=1)
    initial = Dataset(initial_x, noisy(initial_x))
    kernel = gpflow.kernels.Matern52(
        variance=float(np.var(initial.observations)), lengthscales=[0.2 * np.sqrt(dim)] * dim
    )
    model = AdaptiveSVGP(kernel, noise_variance, inducing=250, selector="kmeans")
    rule = BatchThompsonSampling(BATCH, pool_size=500 * dim, seed=0)
    result = BayesianOptimizer(mk_observer(noisy), problem.search_space).optimize(
        STEPS, initial, model, rule, track_state=False
    )
    data = result.try_get_final_dataset()
    assert data.query_points.shape[0] == BATCH * (STEPS + 1)
    values = problem.objective(data.query_points).numpy()[:, 0]
    random_values = problem.objective(problem.search_space.sample(len(values), seed=2)).numpy()
    assert values.min() < random_values.min(), (values.min(), random_values.min())
    assert values[-BATCH:].mean() < random_values.mean(), (
        values[-BATCH:].mean(),
        random_values.mean(),
    )
    assert rule.last_statistics["distinct_points"] == BATCH
