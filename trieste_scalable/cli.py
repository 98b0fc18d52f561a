"""The ``trieste-scalable`` command (also ``python -m trieste_scalable``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # hide CUDA-plugin noise on CPUs


def _parser() -> argparse.ArgumentParser:
    from .campaign import ALGORITHMS
    from .problems import PROBLEMS

    parser = argparse.ArgumentParser(
        prog="trieste-scalable", description="Scalable GP Bayesian optimisation with Trieste."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    opt = commands.add_parser("optimize", help="optimise a built-in noisy problem")
    opt.add_argument("--problem", default="rkhs3", choices=PROBLEMS)
    opt.add_argument("--num-candidates", type=int, default=None)
    opt.add_argument("--algorithm", default="bbkb", choices=ALGORITHMS)
    opt.add_argument("--budget", type=int, default=300, help="evaluations after the initial design")
    opt.add_argument("--initial", type=int, default=10, help="size of the random initial design")
    opt.add_argument("--batch-size", type=int, default=10, help="for fixed-batch algorithms")
    opt.add_argument("--max-batch-size", type=int, default=None, help="cap adaptive batches")
    opt.add_argument(
        "--width", default="constant", choices=["theory", "reference_code", "constant"]
    )
    opt.add_argument("--beta", type=float, default=2.0, help="the constant width's beta")
    opt.add_argument("--lengthscale", type=float, default=0.3)
    opt.add_argument("--kernel-variance", type=float, default=0.1)
    opt.add_argument("--noise-variance", type=float, default=0.01, help="lambda")
    opt.add_argument("--fit", action="store_true", help="fit hyperparameters every step")
    opt.add_argument("--logdir", default="runs/optimize", help="TensorBoard logs and outputs")
    opt.add_argument("--seed", type=int, default=0)
    opt.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _optimize(args: argparse.Namespace) -> int:
    from .acquisition import ConfidenceWidth
    from .campaign import build, run_campaign
    from .problems import get_problem
    from .report import plot_summary, write_evaluations_csv

    for name in ("budget", "initial", "batch_size"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be positive")
    problem = get_problem(args.problem, args.num_candidates, seed=args.seed)
    if args.initial + args.budget > len(problem.points) and args.algorithm == "random":
        raise ValueError("budget larger than the candidate set for random search")
    initial = problem.initial_data(args.initial, args.seed)
    width = ConfidenceWidth(args.width, beta=args.beta)
    model, rule = build(
        args.algorithm,
        initial,
        lengthscale=args.lengthscale,
        kernel_variance=args.kernel_variance,
        noise_variance=args.noise_variance,
        width=width,
        batch_size=args.batch_size,
        max_batch_size=args.max_batch_size,
        fit_hyperparameters=args.fit,
        seed=args.seed,
    )
    logdir = Path(args.logdir)
    logdir.mkdir(parents=True, exist_ok=True)
    print(
        f"{args.algorithm} on {problem.name}: {len(problem.points)} candidates in "
        f"d={problem.points.shape[1]}, budget {args.budget}; logs in {logdir}"
    )
    start = time.perf_counter()
    result = run_campaign(
        problem, model, rule, initial, args.budget, args.seed, str(logdir), not args.quiet
    )
    seconds = time.perf_counter() - start
    regret = problem.regret(result.dataset.query_points[result.num_initial :])
    uniform = float(problem.values.mean() - problem.minimum)
    write_evaluations_csv(logdir / "evaluations.csv", problem, result)
    plot_summary(logdir / "summary.png", problem, result, f"{args.algorithm} on {problem.name}")
    print(
        f"done in {seconds:.1f}s: {result.num_evaluations} evaluations in "
        f"{len(result.batch_sizes)} batches (last batch {result.batch_sizes[-1]}), "
        f"dictionary {result.model_sizes[-1]}\n"
        f"best true value {problem.minimum + regret.min():.4f} (optimum {problem.minimum:.4f}); "
        f"cumulative regret / uniform random = {regret.mean() / uniform:.3f}\n"
        f"wrote {logdir / 'evaluations.csv'} and {logdir / 'summary.png'}; "
        f"view the run with: tensorboard --logdir {logdir}"
    )
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "optimize":
            return _optimize(args)
    except (ValueError, TypeError) as error:
        print(f"trieste-scalable: error: {error}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
