"""Full BayesianOptimizer runs of MINI-GP-UCB and MINI-GP-EI over ReplicatedGPR."""

import gpflow
import numpy as np
import pytest
from trieste.bayesian_optimizer import BayesianOptimizer

from trieste_scalable.acquisition import ConfidenceWidth, MiniGPEI, MiniGPUCB
from trieste_scalable.models import ReplicatedGPR
from trieste_scalable.problems import get_problem


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(MiniGPUCB(2.0, width=ConfidenceWidth("constant", beta=2.0)), id="mini-gp-ucb"),
        pytest.param(MiniGPEI(2.0, width=ConfidenceWidth("constant", beta=1.0)), id="mini-gp-ei"),
    ],
)
def test_reaches_low_regret_with_few_unique_candidates(rule) -> None:  # type: ignore[no-untyped-def]
    problem = get_problem("rkhs3", seed=0)  # 3,000 candidates, noise std 0.1
    initial = problem.initial_data(10, seed=0)
    kernel = gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.3)
    model = ReplicatedGPR(kernel, 0.01, fit_hyperparameters=False)
    result = BayesianOptimizer(problem.observer(1), problem.search_space).optimize(
        60, initial, model, rule, track_state=False
    )
    data = result.final_result.unwrap().datasets["OBJECTIVE"]
    evaluated = data.query_points[10:]
    regret = problem.regret(evaluated)
    unique = np.unique(evaluated.numpy(), axis=0).shape[0]
    assert len(regret) > 500  # epochs repeat their candidate many times
    assert unique < len(regret) / 10
    assert regret.mean() < 0.2 * (problem.values.mean() - problem.minimum)
    assert regret[-100:].mean() < 0.05
    assert model.num_unique_points == np.unique(data.query_points.numpy(), axis=0).shape[0]
