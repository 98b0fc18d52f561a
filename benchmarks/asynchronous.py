"""Asynchronous vs synchronous campaigns on Ray workers with a slow, heavy-tailed oracle, at equal
wall-clock time, against Trieste's own asynchronous rule in the same loop.

Run: ``.venv/bin/python benchmarks/asynchronous.py [--workers 8 32] [--seconds 40]
[--latency 1.0]`` (about 2 x 5 x (seconds + 10) s). A local Ray cluster with 32 logical CPUs
(the workers sleep: 32 fit on 2 cores) evaluates the synthetic RKHS problem (3,000 candidates in
d = 3, noise std 0.1) behind a log-normal delay (mean ``--latency`` s, log-sd 1: heavy-tailed).
For each number of workers, every run starts from the same 20 random points and submits for
``--seconds`` (what is in flight then finishes):

- ``ts async`` / ``ts sync``: batch Thompson sampling (batches of 4 asked as workers free up, or
  batches of one per worker told together) over AdaptiveSVGP (200 inducing points, fixed
  hyperparameters);
- ``bbkb async`` / ``bbkb sync``: BBKB (batches capped at 4, or at the number of workers) over
  NystromGPR (lambda = 0.05, fixed hyperparameters), no repeats;
- ``trieste async``: Trieste's ``AsynchronousGreedy(LocalPenalization)`` (batch-of-one EI,
  penalised at the pending points) over its ``GaussianProcessRegression`` (``build_gpr``, fitted
  at every tell, as Trieste's asynchronous tutorial does).

Prints, per run: evaluations finished within the time, evaluations per second, worker
utilisation (evaluating time / workers / wall time), the best true value found and the mean
true regret per evaluation (lower is better), and the async/sync ratio of evaluations.
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
import ray  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.acquisition import LocalPenalization  # noqa: E402
from trieste.acquisition.rule import AsynchronousGreedy  # noqa: E402
from trieste.models.gpflow import GaussianProcessRegression, build_gpr  # noqa: E402

from trieste_scalable.acquisition import BBKB, BatchThompsonSampling, ConfidenceWidth  # noqa: E402
from trieste_scalable.asynchronous import run_asynchronous  # noqa: E402
from trieste_scalable.distributed import RayEvaluator, WithLatency  # noqa: E402
from trieste_scalable.models import AdaptiveSVGP, NystromGPR  # noqa: E402
from trieste_scalable.problems.synthetic import rkhs_problem  # noqa: E402


class Lookup:
    """The problem's noisy value at a candidate (pickled by value to the workers)."""

    def __init__(self, points: np.ndarray, values: np.ndarray, noise_std: float):
        self.table = {tuple(p): v for p, v in zip(points, values)}
        self.noise_std = noise_std

    def __call__(self, point: np.ndarray) -> float:
        noise = np.random.default_rng(abs(hash(tuple(point))) + time.time_ns()).normal()
        return float(self.table[tuple(point)] + self.noise_std * noise)


def runs(space, data, workers):  # type: ignore[no-untyped-def]
    width = ConfidenceWidth("constant", beta=2.0)

    def svgp():  # type: ignore[no-untyped-def]
        kernel = gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.3)
        return AdaptiveSVGP(kernel, 0.01, data, inducing=200, fit_hyperparameters=False)

    def nystrom():  # type: ignore[no-untyped-def]
        kernel = gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.3)
        return NystromGPR(kernel, 0.05, data, fit_hyperparameters=False)

    def ts(batch):  # type: ignore[no-untyped-def]
        return BatchThompsonSampling(batch, num_features=500, exclude_evaluated=True)

    def bbkb(cap):  # type: ignore[no-untyped-def]
        return BBKB(width=width, max_batch_size=cap, allow_repeats=False, exclude_evaluated=True)

    def trieste_gpr():  # type: ignore[no-untyped-def]
        return GaussianProcessRegression(build_gpr(data, space, likelihood_variance=0.01))

    return {
        "ts async": (svgp, lambda: ts(4), False),
        "ts sync": (svgp, lambda: ts(workers), True),
        "bbkb async": (nystrom, lambda: bbkb(4), False),
        "bbkb sync": (nystrom, lambda: bbkb(workers), True),
        "trieste async": (trieste_gpr, lambda: AsynchronousGreedy(LocalPenalization(space)), False),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    problem = rkhs_problem(num_points=3000, dim=3, noise_std=0.1, seed=0)
    space = problem.search_space
    data = problem.initial_data(20, 0)
    objective = WithLatency(Lookup(problem.points, problem.values, 0.1), args.latency, 1.0, 1)
    ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    print(
        f"# {problem.name}, latency log-normal mean {args.latency} s (log-sd 1), "
        f"{args.seconds:g} s per run",
        flush=True,
    )
    for workers in args.workers:
        counts = {}
        for name, (make_model, make_rule, whole) in runs(space, data, workers).items():
            tf.random.set_seed(0)
            evaluator = RayEvaluator(objective, workers)
            result = run_asynchronous(
                space,
                make_model(),
                make_rule(),
                data,
                evaluator,
                100_000,
                whole_batches=whole,
                max_seconds=args.seconds,
            )
            start = min(e.started for e in result.evaluations)
            within = [e for e in result.evaluations if e.finished - start <= args.seconds]
            ids = problem.indices(np.stack([e.point for e in within]))
            regret = problem.values[ids] - problem.minimum
            counts[name] = len(within)
            print(
                f"{workers:3d} workers  {name:>13}: {len(within):4d} evaluations in "
                f"{args.seconds:g} s ({len(within) / args.seconds:5.2f}/s), utilisation "
                f"{result.utilisation:5.1%}, best {regret.min():.4f}, mean regret "
                f"{regret.mean():.4f}, failures {len(result.failures)}",
                flush=True,
            )
        for rule in ("ts", "bbkb"):
            ratio = counts[f"{rule} async"] / max(counts[f"{rule} sync"], 1)
            print(f"{workers:3d} workers  {rule}: async/sync evaluations {ratio:.2f}x", flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
