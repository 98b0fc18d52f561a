"""The ``trieste-scalable`` command's arguments: the parser, and every setting checked before
anything is computed or written."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from . import __version__
from .errors import UsageError

DEFAULT_FINGERPRINT, DEFAULT_WIDTH = "atom-pair-counts", 2048
"""``screen``'s fingerprint (``benchmarks/molpal_enamine.py``; ``docs/screening.md`` says why)."""
MIN_NOISE_VARIANCE = 1e-12  # models.base.NOISE_FLOOR (not imported: parsing loads no TensorFlow)


def _common(
    parser: argparse.ArgumentParser, algorithm: str, budget: int, batch: int, policy: str
) -> None:
    from .campaigns import ALGORITHMS

    parser.add_argument(
        "--algorithm",
        default=None,
        choices=ALGORITHMS,
        help=f"default {algorithm} (screen: ts for asynchronous campaigns and library stores, "
        "whose scale an exact GP does not reach; a resumed campaign's own)",
    )
    parser.add_argument(
        "--budget", type=int, default=budget, help="evaluations after the initial design"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"for fixed-batch rules (default {batch}; with --asynchronous, how many points are "
        "proposed at once: default twice the number of workers)",
    )
    parser.set_defaults(
        batch_size_default=batch, batch_policy_default=policy, algorithm_default=algorithm
    )
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
    parser.add_argument("--fit", action="store_true", help="fit the hyperparameters")
    parser.add_argument(
        "--exploration-rate",
        type=float,
        default=None,
        help="with --fit, UCB rules add about RATE*sqrt(n) random points in n evaluations so "
        "the fits stay honest (default 3; 0 for none; see docs/fitting.md)",
    )
    parser.add_argument(
        "--variance-optimism",
        type=float,
        default=None,
        help="with --fit, UCB rules' models raise the fitted signal variance Z times the fit's "
        "noise share Laplace standard deviations (default 2; 0 for none; see docs/fitting.md)",
    )
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
    parser.add_argument(
        "--batch-policy",
        default=None,
        choices=["adaptive", "fixed"],
        help="bbkb, bbkb-local, gp-bucb: adaptive batches end by the stopping rule (capped at "
        "--max-batch-size); fixed ones have --batch-size points every time (a protocol such as "
        f"MolPAL's), the last cut at the budget (default: {policy}; a resumed campaign's own)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true", help="continue the run in --logdir")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def parser() -> argparse.ArgumentParser:
    """The command line: ``screen`` and ``optimize`` with their options."""
    from .problems import PROBLEMS
    from .problems.molecules import BUILTIN_LIBRARIES, FINGERPRINTS, MOSES_FULL, OBJECTIVES

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
        help=f"{', '.join(sorted(OBJECTIVES))} (computed for the library up front), "
        "table:FILE[:COLUMN] (your scores: a CSV/TSV with a SMILES column; the first numeric "
        "column by default), python:module:function (SMILES -> float) or dock:TARGET "
        "(dockstring; lower is better); in this process, or on Ray with --workers",
    )
    screen.add_argument(
        "--lower-is-better",
        "--minimize",
        dest="lower_is_better",
        action="store_true",
        help="the objective's scores are better when lower (e.g. docking energies); every "
        "report shows them as they are",
    )
    screen.add_argument(
        "--fingerprint",
        default=None,
        choices=list(FINGERPRINTS),
        help=f"default {DEFAULT_FINGERPRINT} (a library store: its own); bits and counts are "
        "Morgan's; counts get the MinMax kernel",
    )
    screen.add_argument(
        "--radius", type=int, default=None, help="Morgan fingerprints' radius (default 2)"
    )
    screen.add_argument(
        "--fingerprint-width", type=int, default=None,
        help=f"fingerprint bits (default {DEFAULT_WIDTH}; counts take 3 bits a feature; "
        "--width is the UCB rules' confidence width)",
    )  # fmt: skip
    screen.add_argument("--noise", type=float, default=0.0, help="observation noise std")
    screen.add_argument("--initial", type=int, default=100, help="random initial molecules")
    screen.add_argument("--skip-invalid", action="store_true", help="drop unparseable SMILES")
    screen.add_argument("--logdir", default="runs/screen", help="outputs and TensorBoard logs")
    workers = screen.add_argument_group("evaluations on Ray workers (the [distributed] extra)")
    workers.add_argument("--workers", type=int, default=None, help="evaluations in flight")
    workers.add_argument(
        "--asynchronous", action="store_true", help="tell results and ask as they come"
    )
    workers.add_argument(
        "--ray-address", default=None, help="a Ray cluster for --workers and --scoring-actors"
    )
    workers.add_argument("--timeout", type=float, default=None, help="seconds per evaluation")
    workers.add_argument(
        "--latency", type=float, default=None, help="simulated mean delay per evaluation (s)"
    )
    screen.add_argument(
        "--scoring-actors",
        type=int,
        default=None,
        help="ts over a library store: score its shards on N Ray actors (same picks)",
    )
    _common(screen, "gp-bucb", 1000, 100, "fixed")

    store = commands.add_parser(
        "featurise", help="build a sharded library store from SMILES files (on Ray)"
    )
    store.add_argument("library", nargs="+", help=".smi or .csv files (optionally .gz)")
    store.add_argument("--out", required=True, help="the store's directory")
    store.add_argument("--fingerprint", default="bits", choices=list(FINGERPRINTS))
    store.add_argument("--radius", type=int, default=2, help="Morgan fingerprints' radius")
    store.add_argument("--fingerprint-width", type=int, default=1024, help="fingerprint bits")
    store.add_argument("--shard-size", type=int, default=1_000_000, help="molecules per shard")
    store.add_argument(
        "--ray-address",
        default=None,
        help="a Ray cluster to fingerprint on (default: worker processes on this machine)",
    )
    store.add_argument("--quiet", action="store_true", help="no progress lines")

    cache = commands.add_parser(
        "cache", help="list the cache directory's entries by library and kind, or prune them"
    )
    cache.add_argument("--library", default=None, help="only entries of libraries naming this")
    cache.add_argument("--prune", action="store_true", help="remove the entries selected")
    cache.add_argument(
        "--older-than", type=float, default=None, metavar="DAYS", help="last used before"
    )
    cache.add_argument(
        "--max-size", default=None, metavar="SIZE",
        help="remove the least recently used entries until the cache takes at most SIZE "
        "(e.g. 20G)",
    )  # fmt: skip
    cache.add_argument("--dry-run", action="store_true", help="say what --prune would remove")

    opt = commands.add_parser("optimize", help="optimise a built-in noisy problem")
    opt.add_argument("--problem", default="rkhs3", choices=PROBLEMS)
    opt.add_argument("--num-candidates", type=int, default=None)
    opt.add_argument("--initial", type=int, default=10, help="size of the random initial design")
    opt.add_argument("--lengthscale", type=float, default=0.3)
    opt.add_argument("--kernel-variance", type=float, default=0.1)
    opt.add_argument("--noise-variance", type=float, default=0.01, help="lambda")
    opt.add_argument("--logdir", default="runs/optimize", help="outputs and TensorBoard logs")
    _common(opt, "bbkb", 300, 10, "adaptive")
    return parser


def validate(args: argparse.Namespace) -> None:
    """Every setting checked before anything is computed or written.

    :raise UsageError: Naming the first bad setting.
    """
    if args.command == "screen":  # first: --workers sets the default --batch-size
        _validate_screen(args)
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
    if epochs and args.batch_policy == "fixed":
        raise UsageError(f"--batch-policy fixed: {args.algorithm}'s epochs set its batches")
    if threshold is not None and not (threshold > 1 if epochs else threshold >= 1):
        bound = "above 1" if epochs else "at least 1"
        raise UsageError(f"--ratio-threshold must be {bound}, got {threshold}")
    for name in ("exploration_rate", "variance_optimism"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise UsageError(f"--{name.replace('_', '-')} must be finite and >= 0, got {value}")
    if args.command == "optimize" and not (
        math.isfinite(args.noise_variance) and args.noise_variance > MIN_NOISE_VARIANCE
    ):
        raise UsageError(
            f"--noise-variance must be finite and above {MIN_NOISE_VARIANCE:g} (the models' "
            f"floor), got {args.noise_variance}"
        )


def _validate_screen(args: argparse.Namespace) -> None:
    from .problems.oracles import is_table_objective
    from .problems.store import is_store

    if not (math.isfinite(args.noise) and args.noise >= 0):
        raise UsageError(f"--noise must be finite and non-negative, got {args.noise}")
    for name in ("workers", "timeout", "latency"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"--{name} must be positive, got {value}")
    if args.scoring_actors is not None:
        if args.scoring_actors < 1:
            raise UsageError(f"--scoring-actors must be positive, got {args.scoring_actors}")
        if args.algorithm != "ts" or not is_store(args.library):
            raise UsageError("--scoring-actors scores --algorithm ts over a library store")
    try:
        table = is_table_objective(args.objective)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.workers is None:
        options = ("asynchronous", "timeout", "latency")
        used = [name for name in options if getattr(args, name)]
        if used:
            raise UsageError(f"--{used[0].replace('_', '-')} needs --workers")
        if args.ray_address and not args.scoring_actors:  # Ray's two users in a campaign
            raise UsageError("--ray-address needs --workers or --scoring-actors")
    if args.noise and (args.workers is not None or not table):
        raise UsageError(
            "--noise simulates noise on an objective known up front (a built-in property or a "
            "score table) evaluated in this process, not with --workers or an oracle"
        )
    for name in ("radius", "fingerprint_width"):
        value = getattr(args, name)
        if value is not None and value < (1 if name == "radius" else 8):
            raise UsageError(
                f"--{name.replace('_', '-')} must be at least "
                f"{1 if name == 'radius' else 8}, got {value}"
            )


def check_counts(args: argparse.Namespace, num_candidates: int) -> None:
    """Refuse an initial design and budget larger than the candidates where screening (or
    random search) never evaluates one twice.

    :raise UsageError: Naming the counts.
    """
    if args.initial + args.budget > num_candidates and (
        args.command == "screen" or args.algorithm == "random"
    ):
        raise UsageError(
            f"--initial + --budget = {args.initial + args.budget} exceeds the "
            f"{num_candidates} candidates (screening never evaluates a candidate twice)"
        )


LEGACY_FINGERPRINT = {"radius": 2, "fingerprint_width": 1024}
"""The settings of campaigns logged before they could be chosen (Morgan, radius 2, 1,024 bits)."""


def fill_in_defaults(args: argparse.Namespace) -> None:
    """Resolve the settings whose defaults depend on the campaign where they were not given:
    ``--algorithm`` (a resumed campaign's own, else :func:`_default_algorithm`),
    ``--batch-policy`` (a resumed campaign's own, ``adaptive`` for one logged before it
    existed; else the command's, ``adaptive`` for the MINI rules and asynchronous campaigns)
    and ``screen``'s fingerprint (a resumed campaign's own, a library store's, else
    :data:`DEFAULT_FINGERPRINT`, radius 2, :data:`DEFAULT_WIDTH` bits). Drops the stored
    default."""
    saved = _saved_settings(Path(args.logdir) / "run.json") if args.resume else {}
    algorithm = args.__dict__.pop("algorithm_default")
    if args.algorithm is None:
        args.algorithm = saved.get("algorithm") or _default_algorithm(args, algorithm)
    policy = args.__dict__.pop("batch_policy_default")
    if args.algorithm.startswith("mini") or asynchronous(args):
        policy = "adaptive"  # MINI's epochs are its batches; workers take points as they free
    if args.batch_policy is None:
        args.batch_policy = saved.get("batch_policy", "adaptive") if saved else policy
    if args.command != "screen":
        return
    given = {"fingerprint": args.fingerprint, "radius": args.radius}
    given["fingerprint_width"] = args.fingerprint_width
    defaults = {"fingerprint": DEFAULT_FINGERPRINT, "radius": 2}
    defaults["fingerprint_width"] = DEFAULT_WIDTH
    if "fingerprint" in saved:
        defaults = {**LEGACY_FINGERPRINT, **saved}
    elif not args.resume:
        from .problems.store import is_store

        if is_store(args.library):
            from .problems.store import LibraryStore

            try:
                stored = LibraryStore(args.library).fingerprint
            except ValueError as error:  # the library: a usage error, as in screening_problem
                raise UsageError(str(error)) from error
            defaults = dict(fingerprint=stored["kind"], radius=stored["radius"])
            defaults["fingerprint_width"] = stored["size"]
    for name, value in given.items():
        setattr(args, name, defaults[name] if value is None else value)


def _default_algorithm(args: argparse.Namespace, default: str) -> str:
    """The command's default rule; ``screen``'s is ``ts`` where an exact GP's cost or batch
    rules' pace would not do: asynchronous campaigns, library stores, scoring actors."""
    if args.command != "screen":
        return default
    from .problems.store import is_store

    if asynchronous(args) or args.scoring_actors or is_store(args.library):
        return "ts"
    return default


def _saved_settings(path: Path) -> dict:
    """The settings of a campaign directory's ``run.json`` (empty if it cannot be read)."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def fill_in_batch_size(args: argparse.Namespace) -> None:
    """Set ``--batch-size``'s default where it was not given: the command's own, and with
    ``--workers N --asynchronous`` 2N, for the reason :func:`max_batch_size` gives (batch
    Thompson sampling on 20,000 molecules, 32 workers: an acquisition of 32 points took 0.9-1.4 s
    beside the workers, so the proposals in hand ran out and 13 % of the workers' time was
    spent waiting; with 64, 0.1 % after the first acquisition). Drops the stored default."""
    if args.batch_size is None:
        args.batch_size = 2 * args.workers if asynchronous(args) else args.batch_size_default
    del args.batch_size_default


def max_batch_size(args: argparse.Namespace) -> int:
    """``--max-batch-size``, by default the batch size; with ``--workers N --asynchronous`` 2N:
    an adaptive rule's acquisition costs mostly scoring every candidate, so one that also
    refills the proposals in hand for workers that free up during the next acquisition is
    cheaper than two (BBKB on 20,000 molecules, 32 workers: 95.8 % of their time busy with 64,
    90-94 % with 32). The stopping threshold still bounds the points in flight. Resolved here,
    not stored: the logged settings of earlier campaigns stay resumable."""
    if args.max_batch_size is not None:
        return int(args.max_batch_size)
    if asynchronous(args):
        return 2 * int(args.workers)
    return int(args.batch_size)


def asynchronous(args: argparse.Namespace) -> bool:
    """Whether the command runs an asynchronous campaign on workers."""
    return bool(getattr(args, "asynchronous", False) and args.workers)
