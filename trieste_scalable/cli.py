"""The ``trieste-scalable`` command (also ``python -m trieste_scalable``).

- ``trieste-scalable screen``: a virtual-screening campaign over a molecular library;
- ``trieste-scalable optimize``: the same over a built-in synthetic problem;
- ``trieste-scalable featurise``: a sharded library store from SMILES files, for ``screen
  --library STORE`` (:mod:`~trieste_scalable.problems.store`).

The campaigns write ``evaluations.csv``, ``summary.png`` and TensorBoard logs to ``--logdir``
and can be continued after an interruption with ``--resume``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Optional, Sequence

from .arguments import check_counts, fill_in_batch_size, max_batch_size, parser, validate
from .errors import CampaignError, UsageError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # hide CUDA-plugin noise on CPUs


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
    check_counts(args, len(problem.points))
    print(
        f"{args.algorithm} screening {len(problem.points)} unique fingerprints "
        f"({problem.num_molecules} molecules) for {args.objective}; budget {args.budget}, "
        f"logs in {args.logdir}"
    )

    remote = None
    if args.scoring_actors:
        from .campaigns.algorithms import LibrarySignStore
        from .campaigns.scoring_actors import ScoringActors
        from .problems.molecules import cache_dir
        from .problems.store import LibraryStore

        store = LibraryStore(args.library)
        kept = LibrarySignStore(str(cache_dir()))  # the actors' shards' signs: the driver's cache
        remote = ScoringActors(
            store, args.scoring_actors, address=args.ray_address, sign_store=kept
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
            remote_scoring=remote,
        )

    run_session(problem, vars(args), models, oracle)
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
    from .problems.store_build import build_store, ray_chunk_map

    if args.shard_size < 1:
        raise UsageError(f"--shard-size must be positive, got {args.shard_size}")
    try:
        import ray  # noqa: F401
        from rdkit import Chem  # noqa: F401
    except ImportError:
        raise CampaignError(
            "featurise needs RDKit and Ray: pip install 'trieste-scalable[molecules,distributed]'"
        ) from None
    store = build_store(
        args.library,
        args.out,
        args.fingerprint,
        shard_size=args.shard_size,
        chunk_map=ray_chunk_map(args.ray_address),
        progress=(lambda line: None) if args.quiet else print,
    )
    print(
        f"{args.out}: {store.num_rows} unique molecules in {len(store.manifest['shards'])} shards"
    )
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; exit codes: 0 done, 1 runtime failure, 2 usage error, 130 interrupted."""
    args = parser().parse_args(argv)
    if args.command != "featurise":
        fill_in_batch_size(args)
    try:
        if args.command == "featurise":
            return _featurise(args)
        validate(args)
        return _screen(args) if args.command == "screen" else _optimize(args)
    except UsageError as error:
        print(f"trieste-scalable: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a runtime failure: one clear line, not a traceback
        print(f"trieste-scalable: error: {_describe(error)}", file=sys.stderr)
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


def _describe(error: Exception) -> str:
    """One line for a runtime failure (TensorFlow's messages span many lines)."""
    message = str(error).strip().splitlines()
    kind = "" if isinstance(error, (CampaignError, ValueError)) else f"{type(error).__name__}: "
    return kind + (message[0] if message else type(error).__name__)


if __name__ == "__main__":
    sys.exit(main())
