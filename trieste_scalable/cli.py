"""The ``trieste-scalable`` command (also ``python -m trieste_scalable``).

- ``trieste-scalable screen``: a virtual-screening campaign over a molecular library;
- ``trieste-scalable optimize``: the same over a built-in synthetic problem.

Both write ``evaluations.csv``, ``summary.png`` and TensorBoard logs to ``--logdir`` and can be
continued after an interruption with ``--resume``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

from . import __version__
from .errors import CampaignError, UsageError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # hide CUDA-plugin noise on CPUs

MIN_NOISE_VARIANCE = 1e-12  # the lower bound of the models' positive() noise transform


def _common(parser: argparse.ArgumentParser, algorithm: str, budget: int, batch: int) -> None:
    from .campaigns.algorithms import ALGORITHMS

    parser.add_argument("--algorithm", default=algorithm, choices=ALGORITHMS)
    parser.add_argument(
        "--budget", type=int, default=budget, help="evaluations after the initial design"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"for fixed-batch rules (default {batch}; with --asynchronous, how many points are "
        "proposed at once: default the number of workers)",
    )
    parser.set_defaults(batch_size_default=batch)
    parser.add_argument(
        "--max-batch-size",
        type=int,
        default=None,
        help="cap adaptive batches (default the batch size; with --asynchronous, twice the "
        "number of workers)",
    )
    parser.add_argument(
        "--width", default="constant", choices=["theory", "reference_code", "constant"]
    )
    parser.add_argument("--beta", type=float, default=2.0, help="the constant width's beta")
    parser.add_argument("--fit", action="store_true", help="fit hyperparameters every step")
    parser.add_argument(
        "--inducing",
        type=int,
        default=None,
        help="ts: the SVGP's inducing points (default 1000 in screen, 500 in optimize)",
    )
    parser.add_argument(
        "--ratio-threshold",
        type=float,
        default=None,
        help="bbkb, bbkb-local, gp-bucb, mini-ucb, mini-ei: the stopping threshold C (default "
        "2): how much hallucinated variance a batch, or the points in flight, may hold (with "
        "--workers N --asynchronous, about N + 1 keeps N novel candidates in flight, 2N + 1 "
        "also proposes ahead)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true", help="continue the run in --logdir")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _parser() -> argparse.ArgumentParser:
    from .problems import PROBLEMS
    from .problems.molecules import BUILTIN_LIBRARIES, MOSES_FULL, OBJECTIVES

    parser = argparse.ArgumentParser(
        prog="trieste-scalable", description="Scalable GP Bayesian optimisation with Trieste."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    screen = commands.add_parser("screen", help="screen a molecular library")
    screen.add_argument(
        "--library",
        default="moses-20k",
        help=f"{' or '.join(BUILTIN_LIBRARIES)} (shipped), {MOSES_FULL} (1.9 M molecules; "
        "`pip install --no-deps molsets` first) or a .smi/.csv file of SMILES",
    )
    screen.add_argument(
        "--objective",
        default="celecoxib-mpo",
        help=f"{', '.join(sorted(OBJECTIVES))} (computed for the library up front), or with "
        "--workers: python:module:function (SMILES -> float) or dock:TARGET (dockstring)",
    )
    screen.add_argument(
        "--lower-is-better", action="store_true", help="minimise a python: objective"
    )
    screen.add_argument("--fingerprint", default="bits", choices=["bits", "counts"])
    screen.add_argument("--noise", type=float, default=0.0, help="observation noise std")
    screen.add_argument("--initial", type=int, default=100, help="random initial molecules")
    screen.add_argument("--skip-invalid", action="store_true", help="drop unparseable SMILES")
    screen.add_argument("--logdir", default="runs/screen", help="outputs and TensorBoard logs")
    workers = screen.add_argument_group("evaluations on Ray workers (the [distributed] extra)")
    workers.add_argument("--workers", type=int, default=None, help="evaluations in flight")
    workers.add_argument(
        "--asynchronous", action="store_true", help="tell results and ask as they come"
    )
    workers.add_argument("--ray-address", default=None, help="a Ray cluster (default: local)")
    workers.add_argument("--timeout", type=float, default=None, help="seconds per evaluation")
    workers.add_argument(
        "--latency", type=float, default=None, help="simulated mean delay per evaluation (s)"
    )
    _common(screen, "ts", 1000, 100)

    opt = commands.add_parser("optimize", help="optimise a built-in noisy problem")
    opt.add_argument("--problem", default="rkhs3", choices=PROBLEMS)
    opt.add_argument("--num-candidates", type=int, default=None)
    opt.add_argument("--initial", type=int, default=10, help="size of the random initial design")
    opt.add_argument("--lengthscale", type=float, default=0.3)
    opt.add_argument("--kernel-variance", type=float, default=0.1)
    opt.add_argument("--noise-variance", type=float, default=0.01, help="lambda")
    opt.add_argument("--logdir", default="runs/optimize", help="outputs and TensorBoard logs")
    _common(opt, "bbkb", 300, 10)
    return parser


def _validate(args: argparse.Namespace) -> None:
    """Every setting checked before anything is computed or written.

    :raise UsageError: Naming the first bad setting.
    """
    positive = ["budget", "initial", "batch_size", "beta"]
    positive += ["lengthscale", "kernel_variance"] if args.command == "optimize" else []
    for name in positive:
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name in ("max_batch_size", "num_candidates", "inducing"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")
    threshold, epochs = args.ratio_threshold, args.algorithm.startswith("mini")
    if threshold is not None and not (threshold > 1 if epochs else threshold >= 1):
        bound = "above 1" if epochs else "at least 1"
        raise UsageError(f"--ratio-threshold must be {bound}, got {threshold}")
    if args.command == "screen":
        _validate_screen(args)
    if args.command == "optimize" and not (
        math.isfinite(args.noise_variance) and args.noise_variance > MIN_NOISE_VARIANCE
    ):
        raise UsageError(
            f"--noise-variance must be finite and above {MIN_NOISE_VARIANCE:g} (the models' "
            f"floor), got {args.noise_variance}"
        )


def _validate_screen(args: argparse.Namespace) -> None:
    from .problems.oracles import is_table_objective

    if not (math.isfinite(args.noise) and args.noise >= 0):
        raise UsageError(f"--noise must be finite and non-negative, got {args.noise}")
    for name in ("workers", "timeout", "latency"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"--{name} must be positive, got {value}")
    try:
        table = is_table_objective(args.objective)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.workers is None:
        if not table:
            raise UsageError(f"--objective {args.objective} is evaluated on workers: add --workers")
        options = ("asynchronous", "ray_address", "timeout", "latency")
        used = [name for name in options if getattr(args, name)]
        if used:
            raise UsageError(f"--{used[0].replace('_', '-')} needs --workers")
    elif args.noise:
        raise UsageError("--noise simulates noise on a table objective, not with --workers")


def _check_counts(args: argparse.Namespace, num_candidates: int) -> None:
    if args.initial + args.budget > num_candidates and (
        args.command == "screen" or args.algorithm == "random"
    ):
        raise UsageError(
            f"--initial + --budget = {args.initial + args.budget} exceeds the "
            f"{num_candidates} candidates (screening never evaluates a candidate twice)"
        )


def _screen(args: argparse.Namespace) -> int:
    import numpy as np

    from .acquisition import ConfidenceWidth
    from .campaigns.algorithms import build
    from .campaigns.session import run_session
    from .kernels import Tanimoto
    from .problems.oracles import is_table_objective
    from .problems.screening import screening_problem, screening_regulariser

    try:
        import rdkit  # noqa: F401
    except ImportError:
        raise CampaignError(
            "screening needs RDKit: pip install 'trieste-scalable[molecules]'"
        ) from None
    oracle = _oracle(args)
    print(f"featurising {args.library} (cached after the first run)...")
    try:
        problem = screening_problem(
            args.library,
            args.objective if is_table_objective(args.objective) else None,
            args.fingerprint,
            noise_std=args.noise,
            skip_invalid=args.skip_invalid,
            progress=not args.quiet,
        )
    except ValueError as error:  # the library or its settings: a usage error
        raise UsageError(str(error)) from error
    _check_counts(args, len(problem.points))
    print(
        f"{args.algorithm} screening {len(problem.points)} unique fingerprints "
        f"({problem.num_molecules} molecules) for {args.objective}; budget {args.budget}, "
        f"logs in {args.logdir}"
    )

    def models(data: Any, remaining: int) -> tuple[Any, Any]:
        scale = float(np.var(data.observations.numpy())) or 1.0
        return build(
            args.algorithm,
            data,
            kernel=Tanimoto(variance=scale, binary_inputs=True),
            noise_variance=args.noise**2 + screening_regulariser(args.algorithm, scale),
            width=ConfidenceWidth(args.width, beta=args.beta),
            batch_size=args.batch_size,
            max_batch_size=max_batch_size(args),
            fit_hyperparameters=args.fit,
            seed=args.seed,
            screening=True,
            selector="random",
            budget=remaining,
            num_inducing=args.inducing,
            ratio_threshold=args.ratio_threshold,
        )

    if oracle is not None:
        _report_workers(problem, run_session(problem, vars(args), models, oracle), oracle)
        return 0
    result = run_session(problem, vars(args), models)
    evaluated = problem.indices(result.dataset.query_points)
    best = evaluated[np.argsort(problem.values[evaluated])[:5]]
    print(
        f"recall of the library's top 1%: {problem.recall(evaluated, 0.01):.3f}, "
        f"top 10%: {problem.recall(evaluated, 0.1):.3f}; best molecules found:"
    )
    for i in best:
        print(f"  {-problem.values[i]:.4f}  {problem.labels[i]}")
    return 0


def _oracle(args: argparse.Namespace) -> Any:
    """The oracle of a campaign on workers (``None`` without ``--workers``)."""
    if args.workers is None:
        return None
    from .problems.oracles import oracle_for

    try:
        import ray  # noqa: F401
    except ImportError:
        raise CampaignError(
            "--workers needs Ray: pip install 'trieste-scalable[distributed]'"
        ) from None
    try:
        return oracle_for(args.objective, args.lower_is_better)
    except ValueError as error:
        raise UsageError(str(error)) from error


def _report_workers(problem: Any, result: Any, oracle: Any) -> None:
    import numpy as np

    records = result.records
    told = ~records.failed
    print(
        f"{told.sum()} evaluations told, {records.failed.sum()} failed, in "
        f"{result.wall_seconds:.1f}s with {result.utilisation:.0%} worker utilisation"
    )
    if np.all(np.isfinite(problem.values)):
        ids = records.ids[told]
        print(
            f"recall of the library's top 1%: {problem.recall(ids, 0.01):.3f}, "
            f"top 10%: {problem.recall(ids, 0.1):.3f}"
        )
    print("best molecules found (score, SMILES):")
    observed, ids = records.observed[told], records.ids[told]
    for n in np.argsort(observed)[:5]:
        print(f"  {oracle.score(observed[n]):.4g}  {problem.labels[ids[n]]}")


def _optimize(args: argparse.Namespace) -> int:
    from .acquisition import ConfidenceWidth
    from .campaigns.algorithms import build
    from .campaigns.session import run_session
    from .problems import get_problem

    problem = get_problem(args.problem, args.num_candidates, seed=args.seed)
    _check_counts(args, len(problem.points))
    print(
        f"{args.algorithm} on {problem.name}: {len(problem.points)} candidates in "
        f"d={problem.points.shape[1]}, budget {args.budget}; logs in {args.logdir}"
    )

    def models(data: Any, remaining: int) -> tuple[Any, Any]:
        return build(
            args.algorithm,
            data,
            lengthscale=args.lengthscale,
            kernel_variance=args.kernel_variance,
            noise_variance=args.noise_variance,
            width=ConfidenceWidth(args.width, beta=args.beta),
            batch_size=args.batch_size,
            max_batch_size=args.max_batch_size,
            fit_hyperparameters=args.fit,
            seed=args.seed,
            budget=remaining,
            num_inducing=args.inducing,
            ratio_threshold=args.ratio_threshold,
        )

    result = run_session(problem, vars(args), models)
    evaluated = result.dataset.query_points[result.num_initial :]
    regret = problem.regret(evaluated)
    uniform = float(problem.values.mean() - problem.minimum)
    print(
        f"{result.num_evaluations} evaluations in {len(result.batch_sizes)} batches; "
        f"best true value {problem.minimum + regret.min():.4f} (optimum {problem.minimum:.4f}); "
        f"cumulative regret / uniform random = {regret.mean() / uniform:.3f}"
    )
    return 0


def max_batch_size(args: argparse.Namespace) -> int:
    """``--max-batch-size``, by default the batch size; with ``--workers N --asynchronous`` 2N:
    an adaptive rule's acquisition costs mostly scoring every candidate, so one that also
    refills the proposals in hand for workers that free up during the next acquisition is
    cheaper than two (BBKB on 20,000 molecules, 32 workers: 95.8 % of their time busy with 64,
    90-94 % with 32). The stopping threshold still bounds the points in flight. Resolved here,
    not stored: the logged settings of earlier campaigns stay resumable."""
    if args.max_batch_size is not None:
        return int(args.max_batch_size)
    if _asynchronous(args):
        return 2 * int(args.workers)
    return int(args.batch_size)


def _asynchronous(args: argparse.Namespace) -> bool:
    """Whether the command runs an asynchronous campaign on workers."""
    return bool(getattr(args, "asynchronous", False) and args.workers)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; exit codes: 0 done, 1 runtime failure, 2 usage error, 130 interrupted."""
    args = _parser().parse_args(argv)
    if args.batch_size is None:
        args.batch_size = args.workers if _asynchronous(args) else args.batch_size_default
    del args.batch_size_default
    try:
        _validate(args)
        return _screen(args) if args.command == "screen" else _optimize(args)
    except UsageError as error:
        print(f"trieste-scalable: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a runtime failure: one clear line, not a traceback
        print(f"trieste-scalable: error: {_describe(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: every finished batch is in {args.logdir}/evaluations.csv; "
            "continue with the same command plus --resume",
            file=sys.stderr,
        )
        return 130


def _describe(error: Exception) -> str:
    """One line for a runtime failure (TensorFlow's messages span many lines)."""
    message = str(error).strip().splitlines()
    kind = "" if isinstance(error, (CampaignError, ValueError)) else f"{type(error).__name__}: "
    return kind + (message[0] if message else type(error).__name__)


if __name__ == "__main__":
    sys.exit(main())
