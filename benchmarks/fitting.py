"""Fitted hyperparameters on noisy problems: our models against Trieste's GPR, side by side.

Run: ``.venv/bin/python benchmarks/fitting.py`` (about 20 minutes a seed on 2 CPU cores, 3 seeds;
``--quick`` for one seed and 60 evaluations). Prints two tables. ``--part-c`` runs part C
instead (``benchmarks/noisy_suite.py``: UCB rules on noisy problems with and without
``ExplorationShare`` beside Trieste's Fantasizer-KB and discrete Thompson sampling).

Problems: a smooth random function on a 22^3 grid (10,648 candidates) and on 3,000 random points
in [0, 1]^3, noise std half the function's spread (std over the candidates); 20 random initial
points per seed. Every model starts from Trieste's ``build_gpr`` guess for the initial data
(Matern-5/2, LogNormal priors, noise = variance / 100, which Trieste does not fit by default;
``--fit-noise`` fits it on both sides) and is fitted by its own ``optimize`` at every step.

A. Likelihood: on the 20 initial points plus 200 random ones, GPflow's ``GPR`` (Trieste's
   model, one start, constant mean fitted) and our exact models (``ReplicatedGPR``,
   ``NystromGPR(ExactDictionary())``) fitted from the same start: MAP objective (log likelihood
   plus log priors) and its relative gap.
B. Regret: cumulative regret / that of uniform random search after the budget, for each rule
   over our model ("bbkb", ...) and its counterpart over Trieste's
   ``GaussianProcessRegression`` ("bbkb@trieste", ...): the same rule where it runs over any
   model (MINI-GP-UCB, our batch TS), else Trieste's batch UCB (Fantasizer +
   NegativeLowerConfidenceBound(2), as our rules' ``width="constant"``) at the batch sizes our
   rule chose; and whether any run ended with a degenerate fit. ``--remedies`` runs our UCB
   rules with ``ExplorationShare`` and ``variance_optimism=2`` (the command line's ``--fit``
   defaults) against the same Trieste counterparts: what the remedies cost where fits do not
   collapse.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.acquisition import Fantasizer, NegativeLowerConfidenceBound  # noqa: E402
from trieste.acquisition.rule import AcquisitionRule, EfficientGlobalOptimization  # noqa: E402
from trieste.data import Dataset  # noqa: E402
from trieste.models import ProbabilisticModel  # noqa: E402
from trieste.models.gpflow import GaussianProcessRegression, build_gpr  # noqa: E402
from trieste.space import SearchSpace  # noqa: E402
from trieste.types import TensorType  # noqa: E402

from trieste_scalable.acquisition import (  # noqa: E402
    BBKB,
    GPBUCB,
    BatchThompsonSampling,
    ExplorationShare,
    MiniGPUCB,
)
from trieste_scalable.campaigns.run.runner import run_campaign  # noqa: E402
from trieste_scalable.models import (  # noqa: E402
    ExactDictionary,
    NystromGPR,
    ReplicatedGPR,
    build_adaptive_svgp,
    build_nystrom_gpr,
    build_replicated_gpr,
)
from trieste_scalable.models.fitting import degeneracy, input_scales  # noqa: E402
from trieste_scalable.problems import DiscreteProblem, grid_problem, rkhs_problem  # noqa: E402

BATCH = 10
BUILD: dict = {}  # Trieste's build_gpr defaults: noise variance / 100, not fitted


def problems() -> list[DiscreteProblem]:
    noisy = []
    for problem in (grid_problem(noise_std=0.0), rkhs_problem(3000, 3, 15, noise_std=0.0)):
        noise = 0.5 * float(problem.values.std())
        noisy.append(DiscreteProblem(problem.name, problem.points, problem.values, noise))
    return noisy


def part_a(problem: DiscreteProblem, seed: int) -> dict[str, float]:
    data = problem.initial_data(220, seed)
    space = problem.search_space
    gpr = build_gpr(data, space, **BUILD)
    gpflow.optimizers.Scipy().minimize(gpr.training_loss, gpr.trainable_variables)
    rows = {"gpflow GPR": -float(gpr.training_loss())}  # log likelihood + log priors
    for name, model in (  # the builders start where build_gpr starts
        ("ReplicatedGPR", build_replicated_gpr(data, space, **BUILD)),
        ("NystromGPR exact", build_nystrom_gpr(data, space, dictionary=ExactDictionary(), **BUILD)),
    ):
        model.optimize(data)
        rows[name] = _map_objective(model, data)
    return rows


def _map_objective(model: ReplicatedGPR | NystromGPR, data: Dataset) -> float:
    """GPflow GPR's MAP objective at the model's hyperparameters and prior mean."""
    gpr = gpflow.models.GPR(
        data.astuple(),
        model.get_kernel(),
        gpflow.mean_functions.Constant(model.prior_mean),
        noise_variance=float(model.get_observation_noise()),
    )
    return -float(gpr.training_loss())


class FantasizerAtSizes(AcquisitionRule[TensorType, SearchSpace, ProbabilisticModel]):
    """Trieste's batch UCB (Fantasizer + ``NegativeLowerConfidenceBound(2)``) with a given
    sequence of batch sizes: the nearest Trieste built-in to an adaptive-batch rule is batch UCB
    at the batch sizes that rule chose (fixed batches of 10 would compare batch regimes, not
    models: on these problems sequential UCB is ~2x worse than batches of 10 for both)."""

    def __init__(self, sizes: list[int]):
        self._sizes = iter(sizes)
        self._rules: dict[int, EfficientGlobalOptimization] = {}

    def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
        size = next(self._sizes)
        if size not in self._rules:
            self._rules[size] = EfficientGlobalOptimization(
                Fantasizer(NegativeLowerConfidenceBound(2.0)), num_query_points=size
            )
        return self._rules[size].acquire(search_space, models, datasets)


def runs(problem: DiscreteProblem, initial: Dataset, seed: int, remedies: bool) -> dict:
    """Our rule over our model, by name; each is compared with a Trieste run ("@trieste").
    With ``remedies`` our UCB rules run as the command line runs them with ``--fit``: wrapped in
    ``ExplorationShare`` and over models with ``variance_optimism=2`` (part C's "+both")."""
    space = problem.search_space
    ucb = dict(BUILD, variance_optimism=2.0 if remedies else 0.0)

    def share(rule: AcquisitionRule) -> AcquisitionRule:
        return ExplorationShare(rule, seed=seed) if remedies else rule

    return {
        "bbkb": lambda: (
            build_nystrom_gpr(initial, space, **ucb),
            share(BBKB(width="constant", max_batch_size=BATCH)),
        ),
        "gp-bucb": lambda: (
            build_nystrom_gpr(initial, space, dictionary=ExactDictionary(), **ucb),
            share(GPBUCB(width="constant", max_batch_size=BATCH)),
        ),
        "mini-ucb": lambda: (
            build_replicated_gpr(initial, space, **ucb),
            share(MiniGPUCB(width="constant", max_batch_size=BATCH)),
        ),
        "ts": lambda: (
            build_adaptive_svgp(initial, space, inducing=200, **BUILD),
            BatchThompsonSampling(BATCH),
        ),
    }


def trieste_counterpart(name: str, sizes: list[int]) -> AcquisitionRule:
    """The same rule (MINI-GP-UCB, batch TS: they run over any model with ``predict``) or, for
    the Nystrom rules, Trieste's batch UCB at the batch sizes our rule chose."""
    if name == "mini-ucb":
        return MiniGPUCB(width="constant", max_batch_size=BATCH)
    if name == "ts":
        return BatchThompsonSampling(BATCH)
    return FantasizerAtSizes(sizes)


def part_b(
    problem: DiscreteProblem, seed: int, budget: int, only: list[str], remedies: bool
) -> dict[str, tuple[float, str, float]]:
    initial = problem.initial_data(20, seed)
    uniform = float(problem.values.mean() - problem.minimum)
    rows = {}
    for name, make in runs(problem, initial, seed, remedies).items():
        if only and name not in only:
            continue
        model, rule = make()
        sizes: list[int] = []
        for label in (name, f"{name}@trieste"):
            if label != name:
                model = GaussianProcessRegression(build_gpr(initial, problem.search_space, **BUILD))
                rule = trieste_counterpart(name, sizes)
            tf.random.set_seed(seed)  # Trieste's fit draws its starts from TF's global seed
            start = time.perf_counter()
            result = run_campaign(problem, model, rule, initial, budget, seed, progress=False)
            sizes = result.batch_sizes
            regret = problem.regret(result.dataset.query_points[result.num_initial :])
            rows[label] = (
                float(regret.mean()) / uniform,
                _fit_state(model, result.dataset),
                time.perf_counter() - start,
            )
    return rows


def _fit_state(model: object, data: Dataset) -> str:
    inner = getattr(model, "model", model)  # Trieste's wrapper holds the GPflow model
    kernel = inner.get_kernel() if hasattr(inner, "get_kernel") else inner.kernel
    noise = (
        float(inner.get_observation_noise())
        if hasattr(inner, "get_observation_noise")
        else float(inner.likelihood.variance.numpy())
    )
    spacing, extent = input_scales(np.unique(data.query_points.numpy(), axis=0))
    reason = degeneracy(kernel, noise, spacing, extent)
    lengthscales = np.round(np.atleast_1d(kernel.lengthscales.numpy()), 3)
    values = f"var {float(kernel.variance.numpy()):.3g} ls {lengthscales} noise {noise:.3g}"
    return values + (f" DEGENERATE: {reason}" if reason else "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="parts B, C: seeds from this one")
    parser.add_argument("--budget", type=int, default=150)
    parser.add_argument("--fit-noise", action="store_true", help="fit the noise variance too")
    parser.add_argument("--only", nargs="*", default=[], help="rules of B, e.g. bbkb ts")
    parser.add_argument("--skip-a", action="store_true", help="part B only")
    parser.add_argument(
        "--remedies", action="store_true", help="part B: our UCB rules with both remedies"
    )
    parser.add_argument("--problems", nargs="*", default=[], help="parts B, C: names containing")
    parser.add_argument("--optimism", type=float, default=2.0, help="part C: variance_optimism")
    parser.add_argument(
        "--part-c", action="store_true", help="part C only (600 evaluations unless --budget)"
    )
    args = parser.parse_args()
    if args.part_c:
        from noisy_suite import part_c  # beside this script

        part_c(
            args.seeds,
            600 if args.budget == 150 else args.budget,
            args.only,
            args.problems,
            args.optimism,
            args.first_seed,
        )
        return
    if args.fit_noise:
        BUILD["trainable_likelihood"] = True
    seeds = 1 if args.quick else args.seeds
    budget = 60 if args.quick else args.budget
    tf.random.set_seed(0)
    print("== A. MAP objective (log likelihood + log priors) after fitting from one start ==")
    for problem in [] if args.skip_a else problems():
        for seed in range(seeds):
            rows = part_a(problem, seed)
            ref = rows["gpflow GPR"]
            print(
                f"{problem.name} seed {seed}: "
                + ", ".join(
                    f"{k} {v:.4f} (rel. gap {abs(v - ref) / abs(ref):.1e})" for k, v in rows.items()
                ),
                flush=True,
            )
    print(f"\n== B. cumulative regret / uniform random after {budget} evaluations ==")
    for problem in problems():
        if args.problems and not any(n in problem.name for n in args.problems):
            continue
        table: dict[str, list] = {}
        for seed in range(args.first_seed, args.first_seed + seeds):
            for name, (ratio, state, seconds) in part_b(
                problem, seed, budget, args.only, args.remedies
            ).items():
                table.setdefault(name, []).append(ratio)
                print(
                    f"{problem.name} seed {seed} {name:>14}: {ratio:.3f} {seconds:6.1f}s {state}",
                    flush=True,
                )
        print(f"-- {problem.name}, mean over {seeds} seeds (ours / Trieste's counterpart):")
        for name in (n for n in table if not n.endswith("@trieste")):
            ours, theirs = np.mean(table[name]), np.mean(table[f"{name}@trieste"])
            print(f"   {name:>10}: {ours:.3f} vs {theirs:.3f} = {ours / theirs:.2f}x", flush=True)


if __name__ == "__main__":
    main()
