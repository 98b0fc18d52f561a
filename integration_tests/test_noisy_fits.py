"""UCB with hyperparameters fitted on a noisy problem (issue 25): fitted on the data it collects,
MINI-GP-UCB's signal variance falls far below what uniform data say and the rule keeps
exploiting; with the remedies (``ExplorationShare`` and ``variance_optimism``,
``docs/fitting.md``) it keeps the variance and explores.

The problem is the issue's: 8 squared-exponential bumps on a 22^3 grid, values in [0, 1], noise
std half the range, 20 random initial points, the noise fitted (the builders' path), 300
evaluations; seeds 0 and 1. Measured on a 2-core machine (the share scaled by the fit's noise
share): cumulative regret / uniform 1.002 and 0.830 without, 0.874 and 0.390 with; final kernel
variance 0.017 and 0.017 without, 0.033 and 0.073 with, against 0.050 fitted on 600 uniform
points.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from trieste_scalable.acquisition import ExplorationShare, MiniGPUCB
from trieste_scalable.campaigns.runner import run_campaign
from trieste_scalable.models import build_replicated_gpr
from trieste_scalable.problems import DiscreteProblem, grid_problem


def noisy_grid() -> DiscreteProblem:
    smooth = grid_problem(22, 3, num_centres=8, noise_std=0.0)
    return DiscreteProblem(smooth.name, smooth.points, smooth.values, 0.5 * np.ptp(smooth.values))


def run(problem: DiscreteProblem, seed: int, remedies: bool) -> tuple[float, float]:
    """Cumulative regret / that of uniform random search, and the final kernel variance."""
    initial = problem.initial_data(20, seed)
    optimism = 2.0 if remedies else 0.0
    model = build_replicated_gpr(
        initial, problem.search_space, trainable_likelihood=True, variance_optimism=optimism
    )
    rule = MiniGPUCB(width="constant", max_batch_size=20)
    tf.random.set_seed(seed)
    result = run_campaign(
        problem,
        model,
        ExplorationShare(rule, seed=seed) if remedies else rule,
        initial,
        300,
        seed,
        progress=False,
    )
    regret = problem.regret(result.dataset.query_points[result.num_initial :])
    uniform = float(problem.values.mean() - problem.minimum)
    return float(regret.mean()) / uniform, float(model.get_kernel().variance.numpy())


def test_fitted_ucb_on_a_noisy_problem_keeps_its_variance_and_explores() -> None:
    """On each seed, without the remedies the fitted variance ends below half of a uniform
    fit's, with them above; over the two seeds the remedies lower the mean regret by at least
    0.15 (measured 0.28; single seeds vary: gaps 0.13 and 0.44)."""
    problem = noisy_grid()
    uniform = problem.initial_data(600, 1234)
    reference = build_replicated_gpr(uniform, problem.search_space, trainable_likelihood=True)
    reference.optimize(uniform)
    honest = float(reference.get_kernel().variance.numpy())
    gaps = []
    for seed in (0, 1):
        plain_regret, plain_variance = run(problem, seed, remedies=False)
        regret, variance = run(problem, seed, remedies=True)
        assert plain_variance < 0.5 * honest <= variance, seed
        gaps.append(plain_regret - regret)
    assert np.mean(gaps) >= 0.15, gaps
