"""UCB with hyperparameters fitted on a noisy problem (issue 25): fitted on the data it collects,
MINI-GP-UCB's signal variance falls far below what uniform data say and the rule keeps
exploiting; with the remedies (``ExplorationShare`` and ``variance_optimism``,
``docs/fitting.md``) it keeps the variance.

The problem is the issue's: 8 squared-exponential bumps on a 22^3 grid, values in [0, 1], noise
std half the range, 20 random initial points, the noise fitted (the builders' path), 300
evaluations; seeds 0 and 1, on which the plain fit collapses. Final kernel variance without / with
the remedies, against 0.050 fitted on 600 uniform points: 0.017 / 0.033 and 0.017 / 0.044 (an
Intel Xeon), 0.017 / 0.033 and 0.017 / 0.073 (an AMD EPYC).

Regret is not asserted: it differs between machines (float64 sums of different CPUs' kernels
steer the fits apart) and does not improve reliably. Cumulative regret / uniform without -> with,
seeds 0-1: 1.002 -> 0.874 and 0.830 -> 0.951 on the Xeon (0.830 -> 0.390 on the EPYC); seeds
2-5 on the Xeon, where the plain fit does not collapse (variance 0.031-0.083): 0.679 -> 0.629,
0.437 -> 0.629, 0.516 -> 0.487, 0.562 -> 0.638. Mean gain over the six seeds: -0.03.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from trieste_scalable.acquisition import ExplorationShare, MiniGPUCB
from trieste_scalable.campaigns.run.runner import run_campaign
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


def test_fitted_ucb_on_a_noisy_problem_keeps_its_variance() -> None:
    """On each seed, without the remedies the fitted variance ends below half of a uniform
    fit's (measured 0.33-0.34 of it), with them above (0.66-1.46 of it)."""
    problem = noisy_grid()
    uniform = problem.initial_data(600, 1234)
    reference = build_replicated_gpr(
        uniform, problem.search_space, trainable_likelihood=True, variance_optimism=0.0
    )  # the honest fit, without the builders' default remedy
    reference.optimize(uniform)
    honest = float(reference.get_kernel().variance.numpy())
    for seed in (0, 1):
        _, plain_variance = run(problem, seed, remedies=False)
        _, variance = run(problem, seed, remedies=True)
        assert plain_variance < 0.5 * honest <= variance, (seed, plain_variance, variance, honest)
