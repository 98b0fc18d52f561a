"""Asynchronous vs synchronous campaigns on Ray workers with a slow, heavy-tailed oracle, at equal
wall-clock time, against Trieste's own asynchronous rule in the same loop.

Run: ``.venv/bin/python benchmarks/asynchronous.py [--problems rkhs screening] [--workers 8 32]
[--seconds 40] [--latency 1.0] [--bbkb-threshold-factors 1 2] [--runs LABEL ...]`` (about
2 x 2 x 9 x (seconds + 10) s). A local Ray cluster with 32 logical CPUs (the workers sleep: 32
fit on 2 cores) evaluates, behind a log-normal delay (mean ``--latency`` s, log-sd 1:
heavy-tailed), either

- ``rkhs``: the synthetic RKHS problem (3,000 candidates in d = 3, noise std 0.1), or
- ``screening``: celecoxib-MPO on the shipped 20,000-molecule MOSES subset (Morgan bits,
  Tanimoto kernel), each molecule evaluated at most once.

The workers are started before the first run. For each number of workers every run starts from
the same 20 random points and submits for ``--seconds`` (what is in flight then finishes):

- ``ts async`` / ``ts sync``: batch Thompson sampling over AdaptiveSVGP (fixed hyperparameters),
  asked two points per worker at a time, handed out as workers free up (the command line's
  default with ``--asynchronous``: an acquisition also refills the proposals in hand), or one
  batch of one point per worker told together;
- ``gp-bucb async`` / ``gp-bucb sync`` (``screening`` only): the command line's default rule,
  GP-BUCB with fixed batches over at most 1,000 evaluated molecules (a Nyström dictionary
  beyond), asked two points per worker at a time (the points in flight hallucinated;
  ``gp-bucb 4N async``: four, the command line's default with ``--asynchronous``;
  ``gp-bucb m=300 async``: two, over at most 300 points) or one batch of one point per worker;
- ``bbkb async`` / ``bbkb sync``: BBKB over NystromGPR (fixed hyperparameters), batches capped
  at 4 or at the number of workers, no repeats;
- ``bbkb C=... async`` / ``sync``: the same with the stopping threshold raised from 2 to each
  of ``--bbkb-threshold-factors`` (default 1 and 2) times the number of workers plus one, so
  that as many novel points as workers (or twice as many) may be pending
  (``--ratio-threshold``; see ``docs/asynchronous.md``), batches capped at twice the number of
  workers asynchronously (the command line's default with ``--asynchronous``: an acquisition
  also refills the proposals in hand) and at the number of workers in whole batches;
- ``trieste async``: Trieste's ``AsynchronousGreedy(LocalPenalization)`` (batch-of-one EI,
  penalised at the pending points) over its ``GaussianProcessRegression`` (``build_gpr`` on
  ``rkhs``; a Tanimoto GPR on ``screening``), fitted at every tell, as Trieste's asynchronous
  tutorial does.

Prints, per run: evaluations finished within the time and per second, worker utilisation within
the submission window (the evaluations' busy time inside it over workers x window: the drain
after it, when no new work may start, is not counted; in brackets the same from the first
submission on, i.e. without the model's set-up and first acquisition, and when that came, and
the share of that time workers had nothing in flight: the rule proposed too slowly; the rest
of the loss is Ray's dispatch and the driver's reaction to each result),
the best value and mean true regret (``rkhs``) or recall of the top 1 % (``screening``) over all
evaluations within the time; then, per rule, the async/sync ratio of evaluations and the same
quality measure over the *first n* evaluations of each (n = the smaller count, in finishing
order): quality per evaluation.
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
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.campaigns.algorithms.registry import LIBRARY_DEFAULT, algorithm  # noqa: E402
from trieste_scalable.campaigns.candidates.library_models import screening_regulariser  # noqa: E402
from trieste_scalable.campaigns.engine.loop import run_asynchronous  # noqa: E402
from trieste_scalable.cluster.evaluators import RayEvaluator, WithLatency  # noqa: E402
from trieste_scalable.kernels import Tanimoto  # noqa: E402
from trieste_scalable.models import AdaptiveSVGP, NystromGPR  # noqa: E402
from trieste_scalable.problems.screening import ScreeningProblem, screening_problem  # noqa: E402
from trieste_scalable.problems.synthetic import rkhs_problem  # noqa: E402


class Lookup:
    """The noisy value of candidate ``index`` (the payload; pickled by value to the workers)."""

    def __init__(self, values: np.ndarray, noise_std: float):
        self.values, self.noise_std = values, noise_std

    def __call__(self, index: int) -> float:
        noise = np.random.default_rng([index, time.time_ns()]).normal()
        return float(self.values[index] + self.noise_std * noise)


def rkhs_runs(space, data, workers, thresholds):  # type: ignore[no-untyped-def]
    width = ConfidenceWidth("constant", beta=2.0)

    def svgp():  # type: ignore[no-untyped-def]
        kernel = gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.3)
        return AdaptiveSVGP(kernel, 0.01, data, inducing=200, fit_hyperparameters=False)

    def nystrom():  # type: ignore[no-untyped-def]
        kernel = gpflow.kernels.SquaredExponential(variance=0.1, lengthscales=0.3)
        return NystromGPR(kernel, 0.05, data, fit_hyperparameters=False)

    def ts(batch):  # type: ignore[no-untyped-def]
        return BatchThompsonSampling(batch, num_features=500, exclude_evaluated=True)

    def bbkb(cap, threshold=2.0):  # type: ignore[no-untyped-def]
        return BBKB(
            width=width,
            max_batch_size=cap,
            allow_repeats=False,
            exclude_evaluated=True,
            ratio_threshold=threshold,
        )

    def trieste_gpr():  # type: ignore[no-untyped-def]
        return GaussianProcessRegression(build_gpr(data, space, likelihood_variance=0.01))

    trieste = AsynchronousGreedy(LocalPenalization(space))
    return {
        "ts async": (lambda: (svgp(), ts(2 * workers)), False),
        "ts sync": (lambda: (svgp(), ts(workers)), True),
        "bbkb async": (lambda: (nystrom(), bbkb(4)), False),
        "bbkb sync": (lambda: (nystrom(), bbkb(workers)), True),
        **threshold_runs(thresholds, lambda cap, c: (nystrom(), bbkb(cap, c)), workers),
        "trieste async": (lambda: (trieste_gpr(), trieste), False),
    }


def screening_runs(space, data, workers, thresholds):  # type: ignore[no-untyped-def]
    """The command line's screening models and rules (``algorithms.build``), fixed
    hyperparameters."""
    scale = float(np.var(data.observations.numpy()))

    def made(algorithm, batch, cap, threshold=None, **fixed):  # type: ignore[no-untyped-def]
        return build(
            algorithm,
            data,
            kernel=Tanimoto(variance=scale, binary_inputs=True),
            noise_variance=screening_regulariser(algorithm, scale),
            width=ConfidenceWidth("constant", beta=2.0),
            batch_size=batch,
            max_batch_size=cap,
            fit_hyperparameters=False,
            seed=0,
            screening=True,
            selector="random",
            ratio_threshold=threshold,
            **fixed,
        )

    def trieste_gpr():  # type: ignore[no-untyped-def]
        kernel = Tanimoto(variance=scale, binary_inputs=True)
        gpr = gpflow.models.GPR(data.astuple(), kernel, noise_variance=0.01 * scale)
        return GaussianProcessRegression(gpr)

    trieste = AsynchronousGreedy(LocalPenalization(space))
    # the command line's default rule in process: fixed batches over at most 1,000 points
    dictionary = dict(
        fixed_batches=True, dictionary_size=algorithm(LIBRARY_DEFAULT).default_inducing(True)
    )
    small = dict(fixed_batches=True, dictionary_size=300)
    return {
        "ts async": (lambda: made("ts", 2 * workers, workers), False),
        "ts sync": (lambda: made("ts", workers, workers), True),
        "gp-bucb async": (lambda: made("gp-bucb", 2 * workers, 2 * workers, **dictionary), False),
        "gp-bucb sync": (lambda: made("gp-bucb", workers, workers, **dictionary), True),
        "gp-bucb 4N async": (
            lambda: made("gp-bucb", 4 * workers, 4 * workers, **dictionary),
            False,
        ),
        "gp-bucb m=300 async": (lambda: made("gp-bucb", 2 * workers, 2 * workers, **small), False),
        "bbkb async": (lambda: made("bbkb", 4, 4), False),
        "bbkb sync": (lambda: made("bbkb", workers, workers), True),
        **threshold_runs(thresholds, lambda cap, c: made("bbkb", workers, cap, c), workers),
        "trieste async": (lambda: (trieste_gpr(), trieste), False),
    }


def threshold_runs(thresholds, make, workers):  # type: ignore[no-untyped-def]
    """The ``bbkb C=...`` runs: ``make(cap, C)`` for each threshold, capped at twice the workers
    asynchronously (the command line's default) and at the workers in whole batches."""
    runs = {}
    for c in thresholds:
        runs[f"bbkb C={c} async"] = (lambda c=c: make(2 * workers, c), False)
        runs[f"bbkb C={c} sync"] = (lambda c=c: make(workers, c), True)
    return runs


def quality(problem, ids):  # type: ignore[no-untyped-def]
    """Recall of the top 1 % (screening) or best and mean regret (rkhs) of candidate ids."""
    if isinstance(problem, ScreeningProblem):
        return f"recall top 1% {problem.recall(ids, 0.01):.3f}"
    regret = problem.values[ids] - problem.minimum
    return f"best {regret.min():.4f}, mean regret {regret.mean():.4f}"


def windowed_utilisation(evaluations, workers, start, end):  # type: ignore[no-untyped-def]
    """Busy time inside [start, end] over workers x (end - start)."""
    busy = sum(max(0.0, min(e.finished, end) - max(e.started, start)) for e in evaluations)
    return busy / (workers * (end - start))


def free_share(evaluations, workers, start, end):  # type: ignore[no-untyped-def]
    """Share of workers x [start, end] with no evaluation in flight (nothing proposed in time)."""
    events = sorted(
        [(e.submitted, 1) for e in evaluations] + [(e.finished, -1) for e in evaluations]
    )
    last, in_flight, free = start, 0, 0.0
    for moment, change in events:
        moment = min(max(moment, start), end)
        free += (workers - in_flight) * (moment - last)
        last, in_flight = moment, in_flight + change
    free += (workers - in_flight) * (end - last)
    return free / (workers * (end - start))


def run_problem(name, args):  # type: ignore[no-untyped-def]
    if name == "rkhs":
        problem, runs = rkhs_problem(num_points=3000, dim=3, noise_std=0.1, seed=0), rkhs_runs
    else:
        problem, runs = (
            screening_problem("moses-20k", "celecoxib-mpo", "bits", 2, 1024),
            screening_runs,
        )
    space, data = problem.search_space, problem.initial_data(20, 0)
    objective = WithLatency(Lookup(problem.values, problem.noise_std), args.latency, 1.0, 1)

    def payload(points):  # type: ignore[no-untyped-def]
        return [int(i) for i in problem.indices(points)]

    print(
        f"# {problem.name}, latency log-normal mean {args.latency} s (log-sd 1), "
        f"{args.seconds:g} s per run",
        flush=True,
    )
    for workers in args.workers:
        picked = {}
        thresholds = [factor * workers + 1 for factor in args.bbkb_threshold_factors]
        for label, (make, whole) in runs(space, data, workers, thresholds).items():
            if args.runs and label not in args.runs:
                continue
            tf.random.set_seed(0)
            model, rule = make()
            evaluator = RayEvaluator(objective, workers)
            start = time.time()
            result = run_asynchronous(
                space,
                model,
                rule,
                data,
                evaluator,
                100_000,
                whole_batches=whole,
                max_seconds=args.seconds,
                payload=payload,
            )
            within = [e for e in result.evaluations if e.finished - start <= args.seconds]
            ids = problem.indices(np.stack([e.point for e in within]))
            picked[label] = ids
            end = start + args.seconds
            busy = windowed_utilisation(result.evaluations, workers, start, end)
            first = min(e.submitted for e in result.evaluations)  # after the first acquisition
            steady = windowed_utilisation(result.evaluations, workers, first, end)
            free = free_share(result.evaluations, workers, first, end)
            print(
                f"{workers:3d} workers  {label:>16}: {len(within):4d} evaluations in "
                f"{args.seconds:g} s ({len(within) / args.seconds:5.2f}/s), utilisation "
                f"{busy:5.1%} ({steady:5.1%} after {first - start:4.1f} s; idle for want of a "
                f"proposal {free:4.1%}), "
                f"{quality(problem, ids)}, failures {len(result.failures)}",
                flush=True,
            )
        for rule in ("ts", "bbkb", *(f"bbkb C={c}" for c in thresholds)):
            if f"{rule} async" not in picked or f"{rule} sync" not in picked:
                continue
            fast, slow = picked[f"{rule} async"], picked[f"{rule} sync"]
            n = min(len(fast), len(slow))
            print(
                f"{workers:3d} workers  {rule}: async/sync evaluations "
                f"{len(fast) / max(len(slow), 1):.2f}x; first {n} evaluations: async "
                f"{quality(problem, fast[:n])} | sync {quality(problem, slow[:n])}",
                flush=True,
            )


def pause(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def warm_up(workers: int) -> None:
    """Start every worker process before the first timed run: rounds of ``workers`` tasks of
    1 s until one round runs on as many processes (a round of short tasks finishes on the few
    processes started first, and the rest would start, ~1 s of CPU each, inside a timed run)."""
    task = ray.remote(num_cpus=1)(pause)
    for _ in range(30):
        if len(set(ray.get([task.remote(1.0) for _ in range(workers)]))) == workers:
            break
    evaluator = RayEvaluator(pause, workers)  # the evaluation task's code, on every worker
    for _ in range(workers):
        evaluator.submit(np.zeros(1), 1.0)
    while evaluator.in_flight:
        evaluator.collect()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", nargs="+", default=["rkhs", "screening"])
    parser.add_argument("--workers", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument(
        "--bbkb-threshold-factors",
        type=int,
        nargs="+",
        default=[1, 2],
        help="the 'bbkb C=...' runs use the stopping thresholds C = factor x workers + 1",
    )
    parser.add_argument("--runs", nargs="+", default=None, help="only these runs (labels)")
    args = parser.parse_args()
    ray.init("local", num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    warm_up(max(args.workers))
    for name in args.problems:
        run_problem(name, args)
    ray.shutdown()


if __name__ == "__main__":
    main()
