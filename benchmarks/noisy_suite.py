"""Part C of ``benchmarks/fitting.py``: UCB rules with fitted hyperparameters on noisy problems,
with and without :class:`~trieste_scalable.acquisition.ExplorationShare` and the models'
``variance_optimism`` ("+share", "+optimism", "+both"), beside Trieste's
Fantasizer batch UCB ("Fantasizer-KB") and its ``DiscreteThompsonSampling``, all on the Trieste
user's path (Trieste's ``build_gpr`` for Trieste, our builders for ours: LogNormal priors, the
noise fitted).

Problems: 8 squared-exponential bumps on a 22^3 grid (10,648 candidates; lengthscale 0.25; three
draws of the bumps: "grid22^3", "grid22^3 f1", "grid22^3 f2") and 15 bumps on 3,000 random points
in [0, 1]^3, values in [0, 1], noise std 0.25, 0.5 and 1 times the range; 20 random initial
points a seed. Prints per run the cumulative regret / that of uniform random search, the kernel
variance fitted at the end against the one fitted on as many uniform random points ("collapsed"
when below a fifth of it, the issue's criterion) and the wall time; then per problem the means
over seeds and the ratios to Fantasizer-KB.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import gpflow
import numpy as np
import tensorflow as tf
from trieste.acquisition import Fantasizer, NegativeLowerConfidenceBound
from trieste.acquisition.rule import DiscreteThompsonSampling, EfficientGlobalOptimization
from trieste.models.gpflow import GaussianProcessRegression, build_gpr

from trieste_scalable.acquisition import BBKB, GPBUCB, ExplorationShare, MiniGPUCB
from trieste_scalable.campaigns.run.runner import run_campaign
from trieste_scalable.models import ExactDictionary, build_nystrom_gpr, build_replicated_gpr
from trieste_scalable.problems import DiscreteProblem, grid_problem, rkhs_problem

BATCH = 20
FITTED = dict(trainable_likelihood=True)


def noisy_problems(noise_shares: tuple[float, ...] = (0.25, 0.5, 1.0)) -> list[DiscreteProblem]:
    def grid(function_seed: int) -> tuple[str, DiscreteProblem]:
        bumps = grid_problem(22, 3, num_centres=8, noise_std=0.0, seed=function_seed)
        return bumps.name + (f" f{function_seed}" if function_seed else ""), bumps

    rkhs = rkhs_problem(3000, 3, 15)
    smooth = (grid(0), (rkhs.name, rkhs), grid(1), grid(2))
    return [
        DiscreteProblem(f"{name} noise {share}", p.points, p.values, share * np.ptp(p.values))
        for name, p in smooth
        for share in noise_shares
    ]


def uniform_variance(problem: DiscreteProblem, size: int) -> float:
    """Kernel variance GPflow's GPR (Trieste's build_gpr, noise fitted) ends at on ``size``
    uniform random points: what a fit on unbiased data says."""
    data = problem.initial_data(min(size, len(problem.values)), 1234)
    gpr = build_gpr(data, problem.search_space, **FITTED)
    gpflow.optimizers.Scipy().minimize(gpr.training_loss, gpr.trainable_variables)
    return float(gpr.kernel.variance.numpy())


def contenders(
    problem: DiscreteProblem, initial: Any, seed: int, optimism: float
) -> dict[str, Callable]:
    """Every run of part C by name: each UCB rule plain, "+share" (ExplorationShare),
    "+optimism" (the model's ``variance_optimism``) and "+both"; then Trieste's."""
    space = problem.search_space

    def ours(model: Callable, rule: Callable, share: bool, optimism: float) -> Callable:
        def make() -> tuple:
            built = rule()
            return model(optimism), ExplorationShare(built, seed=seed) if share else built

        return make

    def trieste(rule: Callable) -> Callable:
        return lambda: (GaussianProcessRegression(build_gpr(initial, space, **FITTED)), rule())

    def nystrom(**kw: Any) -> Callable:
        return lambda z: build_nystrom_gpr(initial, space, variance_optimism=z, **kw, **FITTED)

    def replicated(z: float) -> Any:
        return build_replicated_gpr(initial, space, variance_optimism=z, **FITTED)

    rules = {
        "mini-ucb": (replicated, MiniGPUCB),
        "gp-bucb": (nystrom(dictionary=ExactDictionary()), GPBUCB),
        "bbkb": (nystrom(), BBKB),
    }
    runs = {}
    for name, (model, rule) in rules.items():
        ucb = lambda rule=rule: rule(width="constant", max_batch_size=BATCH)  # noqa: E731
        runs[name] = ours(model, ucb, share=False, optimism=0.0)
        runs[f"{name}+share"] = ours(model, ucb, share=True, optimism=0.0)
        runs[f"{name}+optimism"] = ours(model, ucb, share=False, optimism=optimism)
        runs[f"{name}+both"] = ours(model, ucb, share=True, optimism=optimism)
    fantasizer = Fantasizer(NegativeLowerConfidenceBound(2.0))
    runs["trieste fantasizer-kb"] = trieste(
        lambda: EfficientGlobalOptimization(fantasizer, num_query_points=BATCH)
    )
    runs["trieste discrete-ts"] = trieste(lambda: DiscreteThompsonSampling(2000, BATCH))
    return runs


def part_c(
    seeds: int,
    budget: int,
    only: list[str],
    problem_names: list[str],
    optimism: float = 2.0,
    first_seed: int = 0,
) -> None:
    print(f"\n== C. noisy problems, noise fitted: regret / uniform after {budget} evaluations ==")
    for problem in noisy_problems():
        if problem_names and not any(n in problem.name for n in problem_names):
            continue
        reference = uniform_variance(problem, budget)
        uniform = float(problem.values.mean() - problem.minimum)
        print(f"-- {problem.name}: kernel variance on {budget} uniform points {reference:.4f}")
        table: dict[str, list[tuple[float, float, float]]] = {}
        for seed in range(first_seed, first_seed + seeds):
            initial = problem.initial_data(20, seed)
            for name, make in contenders(problem, initial, seed, optimism).items():
                # a name, or its start (not a variant: "mini-ucb" is not "mini-ucb+share")
                if only and not any(_selects(o, name) for o in only):
                    continue
                model, rule = make()
                tf.random.set_seed(seed)
                start = time.perf_counter()
                result = run_campaign(problem, model, rule, initial, budget, seed, progress=False)
                seconds = time.perf_counter() - start
                regret = problem.regret(result.dataset.query_points[result.num_initial :])
                inner = getattr(model, "model", model)
                kernel = inner.get_kernel() if hasattr(inner, "get_kernel") else inner.kernel
                variance = float(kernel.variance.numpy())
                ratio = float(regret.mean()) / uniform
                table.setdefault(name, []).append((ratio, variance, seconds))
                flag = " COLLAPSED" if variance < reference / 5 else ""
                print(
                    f"{problem.name} seed {seed} {name:>22}: {ratio:.3f} var {variance:.4f}"
                    f"{flag} {seconds:6.1f}s",
                    flush=True,
                )
        means = {name: np.mean(rows, axis=0) for name, rows in table.items()}
        base = means.get("trieste fantasizer-kb")
        print(f"-- {problem.name}, means over {seeds} seeds (regret, var, wall; / fantasizer-kb):")
        for name, (ratio, variance, seconds) in means.items():
            vs = ""
            if base is not None:
                vs = f" = {ratio / base[0]:.2f}x regret, {seconds / base[2]:.2f}x wall"
            print(f"   {name:>22}: {ratio:.3f} var {variance:.4f} {seconds:6.1f}s{vs}", flush=True)


def _selects(pattern: str, name: str) -> bool:
    return name.startswith(pattern) and "+" not in name[len(pattern) :]
