"""MINI-GP-UCB / MINI-GP-EI against Trieste's sequential exact GP-UCB, side by side.

Run: ``.venv/bin/python benchmarks/minimeta.py`` (the Trieste baseline dominates: its step
costs O(A t^2), about 5 s at t = 3,000 here, so T = 3,000 takes well over an hour on 2 CPU
cores; ``--head-budget 1000`` takes a few minutes, ``--quick`` uses T = 600). Prints tables
and ratios.

Problem: the MINI-META paper's synthetic setting, a 22^3 grid (10,648 candidates) in [0, 1]^3
with a smooth objective scaled to [0, 1] and Gaussian noise of std 0.1; lambda = xi^2 = 0.01,
fixed kernel for every method, beta = 2 for both UCBs (Trieste's
``NegativeLowerConfidenceBound(2)``).

A. Head to head at T: Trieste's GPR + ``EfficientGlobalOptimization(NegativeLowerConfidenceBound)``
   (one evaluation per step), MINI-GP-UCB and MINI-GP-EI (C = 1.2 and 2) over ReplicatedGPR, BBKB.
B. Scale: MINI-GP-UCB/EI for T = 1,000 .. 20,000: wall time, regret R_t/t normalised by uniform
   random, epochs h and unique candidates q.

Times exclude the objective and include model updates.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
from common import FixedGPR  # noqa: E402
from trieste.acquisition import NegativeLowerConfidenceBound  # noqa: E402
from trieste.acquisition.rule import EfficientGlobalOptimization  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.acquisition import BBKB, ConfidenceWidth, MiniGPEI, MiniGPUCB  # noqa: E402
from trieste_scalable.campaigns.run.runner import run_campaign  # noqa: E402
from trieste_scalable.models import NystromGPR, ReplicatedGPR, RidgeLeverageSampler  # noqa: E402
from trieste_scalable.problems import DiscreteProblem, grid_problem  # noqa: E402

NOISE = 0.01


def kernel() -> gpflow.kernels.Kernel:
    return gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.25)


def make(name: str, initial: Dataset):  # type: ignore[no-untyped-def]
    if name == "trieste-gp-ucb":
        gpr = gpflow.models.GPR(
            initial.astuple(),
            kernel(),
            noise_variance=NOISE,
            mean_function=gpflow.mean_functions.Constant(float(np.mean(initial.observations))),
        )
        return FixedGPR(gpr), EfficientGlobalOptimization(NegativeLowerConfidenceBound(2.0))
    if name == "bbkb":
        model = NystromGPR(
            kernel(),
            NOISE,
            initial,
            dictionary=RidgeLeverageSampler(2.0, seed=0),
            fit_hyperparameters=False,
        )
        return model, BBKB(width=ConfidenceWidth("constant", beta=2.0))
    threshold = float(name.split("C=")[1])
    model = ReplicatedGPR(kernel(), NOISE, initial, fit_hyperparameters=False)
    if name.startswith("mini-gp-ucb"):
        return model, MiniGPUCB(threshold, width=ConfidenceWidth("constant", beta=2.0))
    return model, MiniGPEI(threshold, width=ConfidenceWidth("constant", beta=1.0))


def run(problem: DiscreteProblem, name: str, budget: int, seed: int = 0) -> dict:
    initial = problem.initial_data(10, seed=seed)
    model, rule = make(name, initial)
    start = time.perf_counter()
    result = run_campaign(problem, model, rule, initial, budget, seed=seed, progress=False)
    seconds = time.perf_counter() - start
    evaluated = result.dataset.query_points[result.num_initial :]
    regret = problem.regret(evaluated)
    uniform = problem.values.mean() - problem.minimum
    return {
        "T": budget,
        "seconds": seconds,
        "regret_ratio": float(regret.mean() / uniform),
        "last10pct_regret_ratio": float(regret[-budget // 10 :].mean() / uniform),
        "epochs_h": len(result.batch_sizes),
        "unique_q": int(np.unique(evaluated.numpy(), axis=0).shape[0]),
    }


def show(name: str, row: dict) -> None:
    print(f"{name:>18}: " + ", ".join(f"{k}={v:.4g}" for k, v in row.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--head-budget", type=int, default=None, help="T of part A")
    args = parser.parse_args()
    problem = grid_problem(22, 3)
    head = args.head_budget or (600 if args.quick else 3000)
    print(f"== A. T={head} on {len(problem.points)} grid candidates, d=3, noise std 0.1 ==")
    rows = {}
    names = [
        "trieste-gp-ucb",
        "mini-gp-ucb C=1.2",
        "mini-gp-ucb C=2",
        "mini-gp-ei C=1.2",
        "mini-gp-ei C=2",
        "bbkb",
    ]
    for name in names:
        rows[name] = run(problem, name, head)
        show(name, rows[name])
    base = rows["trieste-gp-ucb"]
    for name in names[1:]:
        row = rows[name]
        print(
            f"{name:>18}: {base['seconds'] / row['seconds']:.0f}x less wall time than Trieste's "
            f"sequential GP-UCB, regret {row['regret_ratio'] / base['regret_ratio']:.2f}x its"
        )

    print("\n== B. MINI-META for growing T ==")
    budgets = [1000, 3000] if args.quick else [1000, 3000, 10_000, 20_000]
    for name in ["mini-gp-ucb C=1.2", "mini-gp-ucb C=2", "mini-gp-ei C=2"]:
        for budget in budgets:
            show(name, run(problem, name, budget))


if __name__ == "__main__":
    main()
