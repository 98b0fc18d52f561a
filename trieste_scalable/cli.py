"""The ``trieste-scalable`` command (also ``python -m trieste_scalable``).

- ``trieste-scalable screen``: a virtual-screening campaign over a molecular library
  (:func:`~trieste_scalable.campaigns.screen.screen` in Python);
- ``trieste-scalable optimize``: the same over a built-in synthetic problem;
- ``trieste-scalable featurise``: a sharded library store from SMILES files, for ``screen
  --library STORE`` (:mod:`~trieste_scalable.problems.store`);
- ``trieste-scalable cache``: the cache directory's entries by library, and pruning them
  (:mod:`~trieste_scalable.cache_admin`).

The campaigns write ``evaluations.csv``, ``summary.png`` and TensorBoard logs to ``--logdir``
and can be continued after an interruption with ``--resume``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from .arguments import check_counts, fill_in_batch_size, fill_in_defaults, parser, validate
from .errors import CampaignError, UsageError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # hide CUDA-plugin noise on CPUs


def _screen(args: argparse.Namespace) -> int:
    from .campaigns.screen import run_screen

    run_screen(args)
    return 0


def _optimize(args: argparse.Namespace) -> int:
    from .acquisition import ConfidenceWidth
    from .campaigns.algorithms import build
    from .campaigns.session import run_session
    from .problems import get_problem

    problem = get_problem(args.problem, args.num_candidates, seed=args.seed)
    check_counts(args, len(problem.points))
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
            fixed_batches=args.batch_policy == "fixed",
            fit_hyperparameters=args.fit,
            seed=args.seed,
            budget=remaining,
            num_inducing=args.inducing,
            ratio_threshold=args.ratio_threshold,
            exploration_rate=args.exploration_rate,
            variance_optimism=args.variance_optimism,
        )

    run_session(problem, vars(args), models)
    return 0


def _featurise(args: argparse.Namespace) -> int:
    from .problems.chunk_maps import ProcessChunkMap, RayChunkMap
    from .problems.store_build import ChunkMap, build_store

    if args.shard_size < 1:
        raise UsageError(f"--shard-size must be positive, got {args.shard_size}")
    try:
        from rdkit import Chem  # noqa: F401

        if args.ray_address is not None:
            import ray  # noqa: F401
    except ImportError as error:
        extra = "molecules" if error.name and "rdkit" in error.name else "distributed"
        raise CampaignError(
            f"featurise needs {error.name}: pip install 'trieste-scalable[{extra}]'"
        ) from None
    with contextlib.ExitStack() as stack:
        if args.ray_address is None:  # this machine: worker processes, no Ray (chunk_maps)
            chunk_map: ChunkMap = stack.enter_context(ProcessChunkMap())
        else:
            chunk_map = RayChunkMap(args.ray_address)
        store = build_store(
            args.library,
            args.out,
            args.fingerprint,
            args.radius,
            args.fingerprint_width,
            shard_size=args.shard_size,
            chunk_map=chunk_map,
            progress=(lambda line: None) if args.quiet else print,
        )
    print(
        f"{args.out}: {store.num_rows} unique molecules in {len(store.manifest['shards'])} shards"
    )
    return 0


def _cache(args: argparse.Namespace) -> int:
    from . import cache_admin as admin
    from .problems.molecules import cache_dir

    directory = cache_dir()
    found = admin.entries(directory)
    if args.library is not None:
        found = [entry for entry in found if args.library in entry.library]
    held = admin.held_files(directory)
    total = admin.human(sum(entry.size for entry in found))
    print(f"cache {directory}: {total} in {len(found)} entries")
    if not args.prune:
        if found:
            print(admin.listing(found, held))
        return 0
    if args.older_than is not None and not args.older_than >= 0:
        raise UsageError(f"--older-than must be a number of days >= 0, got {args.older_than}")
    try:
        max_size = None if args.max_size is None else admin.parse_size(args.max_size)
    except ValueError as error:
        raise UsageError(f"--max-size: {error}") from None
    if args.library is None and args.older_than is None and max_size is None:
        raise UsageError("--prune needs --library, --older-than or --max-size")
    if held is None:
        raise CampaignError("cannot tell which entries running processes hold here (no /proc)")
    chosen = admin.select(found, args.older_than, max_size)  # found: --library's entries
    removed, kept = admin.remove(chosen, held, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    freed = admin.human(sum(entry.size for entry in removed))
    print(f"{verb} {len(removed)} entries ({freed})")
    if kept:
        print(f"kept {len(kept)} entries that running processes hold:")
        print(admin.listing(kept, held))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; exit codes: 0 done, 1 runtime failure, 2 usage error, 130 interrupted."""
    args = parser().parse_args(argv)
    try:
        if args.command == "featurise":
            return _featurise(args)
        if args.command == "cache":
            return _cache(args)
        fill_in_batch_size(args)
        fill_in_defaults(args)  # reads a resumed run.json or a store's manifest: may fail
        validate(args)
        return _screen(args) if args.command == "screen" else _optimize(args)
    except UsageError as error:
        print(f"trieste-scalable: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a runtime failure: one clear line, not a traceback
        print(f"trieste-scalable: error: {_describe(error)}", file=sys.stderr)
        kept = _logged(args)
        if kept:
            print(
                f"the {kept} evaluations logged are kept in {args.logdir}/evaluations.csv: fix "
                "the cause and continue with the same command plus --resume",
                file=sys.stderr,
            )
        return 1
    except KeyboardInterrupt:
        again = (
            "every finished shard is kept; run the same command again to finish the store"
            if args.command == "featurise"
            else f"every finished batch is in {args.logdir}/evaluations.csv; continue with the "
            "same command plus --resume"
        )
        print(f"\ninterrupted: {again}", file=sys.stderr)
        return 130


def _logged(args: argparse.Namespace) -> int:
    """Rows of a new campaign's log after a failure (0 if it has none, for ``featurise`` and for
    ``--resume``)."""
    path = Path(getattr(args, "logdir", "")) / "evaluations.csv"
    if args.command == "featurise" or args.resume or not path.is_file():
        return 0  # a resumed campaign's user knows its log (and a damaged one is named)
    with open(path) as handle:
        return max(sum(1 for line in handle if line.strip()) - 1, 0)


def _describe(error: Exception) -> str:
    """One line for a runtime failure (TensorFlow's messages span many lines)."""
    message = str(error).strip().splitlines()
    kind = "" if isinstance(error, (CampaignError, ValueError)) else f"{type(error).__name__}: "
    return kind + (message[0] if message else type(error).__name__)


if __name__ == "__main__":
    sys.exit(main())
