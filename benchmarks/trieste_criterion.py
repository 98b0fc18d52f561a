"""Pass rates of Trieste's integration criterion (``integration_tests/trieste_criterion.py``)
for every rule of the README's table, beside Trieste's EGO and LocalPenalization over its own
GPR on the same seeds: ScaledBranin, Trieste's step counts, noise variance 1e-7, 5 initial
points; the ask/tell loop on seeds 0-4, and at seed 0 also the loop rebuilt from a pickled
state after every ask (``reload``) and the ``BayesianOptimizer`` loop.

Usage: ``python benchmarks/trieste_criterion.py [--seeds 5] [--workers 2] [--rules NAME ...]``
(default every rule, ours and Trieste's). Each run is a
fresh process (one TensorFlow each, ``--workers`` at a time).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _one(job: tuple[str, int, str]) -> tuple[tuple[str, int, str], Any, float]:
    from integration_tests.trieste_criterion import run_case

    start = time.perf_counter()
    outcome = run_case(job[0], "branin", job[1], job[2])  # type: ignore[arg-type]
    return job, outcome, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rules", nargs="+", default=None)
    args = parser.parse_args()
    from integration_tests.trieste_criterion import CASES, TRIESTE_CASES

    names = [n for n in list(CASES) + list(TRIESTE_CASES) if n in (args.rules or [n])]
    jobs = [(name, seed, "ask_tell") for name in names for seed in range(args.seeds)]
    ours = [name for name in names if name in CASES]
    jobs += [(name, 0, loop) for name in ours for loop in ("reload", "bayesian_optimizer")]
    results: dict[tuple[str, int, str], Any] = {}
    seconds: dict[tuple[str, int, str], float] = {}
    context = get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        for job, outcome, took in pool.map(_one, jobs):
            results[job], seconds[job] = outcome, took
            print(
                f"# {job}: passed={outcome.passed} best={outcome.best_value:.4f} "
                f"batches={list(outcome.batch_sizes)} {took:.0f} s",
                flush=True,
            )
    print()
    print(
        f"| rule (ScaledBranin, {args.seeds} seeds) | steps | ask/tell passes | reload, seed 0 "
        "| BayesianOptimizer, seed 0 | mean batch (a run's, median) | s a run |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        runs = [results[(name, seed, "ask_tell")] for seed in range(args.seeds)]
        passes = sum(o.passed for o in runs)
        batches = [b for o in runs for b in o.batch_sizes]
        median = float(np.median([np.mean(o.batch_sizes) for o in runs]))
        took = sum(seconds[(name, seed, "ask_tell")] for seed in range(args.seeds)) / args.seeds
        extra = [
            ("yes" if results[(name, 0, loop)].passed else "no")
            if (name, 0, loop) in results
            else "-"
            for loop in ("reload", "bayesian_optimizer")
        ]
        steps = {**CASES, **TRIESTE_CASES}[name].steps
        print(
            f"| {name} | {steps} | {passes}/{args.seeds} | {extra[0]} | {extra[1]} | "
            f"{sum(batches) / len(batches):.1f} ({median:.1f}) | {took:.0f} |"
        )


if __name__ == "__main__":
    main()
