"""A screening campaign as one Python call: :func:`screen` (``trieste-scalable screen`` is a thin
shell over it). A script runs exactly what the command runs, with the same defaults, checks,
campaign directory and ``--resume``::

    from trieste_scalable.campaigns.screen import screen

    done = screen(
        library="library.csv.gz",
        objective="table:ampc_scores.csv.gz",   # the chemist's own scores
        lower_is_better=True,                   # docking energies, kcal/mol
        budget=530, initial=106, batch_size=106,
        logdir="runs/ampc",
    )
    print(done.top_k.scores, done.logdir / "evaluations.csv")

Settings are the command's long options with underscores (``--batch-size`` is ``batch_size``);
those not given take the command's defaults.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..arguments import (
    fill_in_batch_size,
    fill_in_defaults,
    max_batch_size,
    parser,
    validate,
)
from ..errors import CampaignError, UsageError
from ..problems.molecules import for_library, library_label
from ..problems.screening import ScreeningProblem
from ..problems.top_k import TopKFound, top_k_found
from .engine import CampaignResult


@dataclass(frozen=True)
class ScreenResult:
    """What :func:`screen` did.

    :ivar campaign: This run's evaluations, acquisitions and the told dataset.
    :ivar problem: The library and its known values (Trieste's, minimised).
    :ivar logdir: The campaign directory (``evaluations.csv``, ``summary.png``, TensorBoard).
    :ivar evaluated: Candidate indices evaluated by the whole campaign, resumed runs included,
        failures excluded [N].
    """

    campaign: CampaignResult
    problem: ScreeningProblem
    logdir: Path
    evaluated: np.ndarray

    @property
    def top_k(self) -> TopKFound:
        """MolPAL's measures of the library's top 100 found (:mod:`~..problems.top_k`); zeros
        where the objective is known only where evaluated."""
        return top_k_found(self.problem.values, self.evaluated)


def settings_of(**settings: Any) -> argparse.Namespace:
    """The command's settings for a ``screen`` call: its defaults, then ``settings``, with the
    same defaults filled in and the same checks as the command line.

    :raise TypeError: On a setting the command does not have.
    :raise UsageError: On a bad setting, naming it.
    """
    args = parser().parse_args(["screen"])
    unknown = sorted(set(settings) - set(vars(args)) - {"command"})
    if unknown:
        known = ", ".join(sorted(k for k in vars(args) if not k.endswith("_default")))
        raise TypeError(f"screen() has no setting {unknown[0]!r} (settings: {known})")
    vars(args).update(settings)
    fill_in_batch_size(args)
    fill_in_defaults(args)
    validate(args)
    return args


def screen(**settings: Any) -> ScreenResult:
    """Run (or with ``resume=True`` continue) a screening campaign; module docstring.

    :raise UsageError: On a bad setting or campaign directory.
    :raise CampaignError: If the campaign cannot run (e.g. every initial evaluation failed).
    """
    return run_screen(settings_of(**settings))


def run_screen(args: argparse.Namespace) -> ScreenResult:
    """The campaign of checked settings (:func:`settings_of`); the cache entries it writes are
    recorded as the library's (``trieste-scalable cache``)."""
    with for_library(library_label(args.library)):
        return _run_screen(args)


def _run_screen(args: argparse.Namespace) -> ScreenResult:
    from ..acquisition import ConfidenceWidth
    from ..arguments import check_counts
    from ..kernels import Tanimoto
    from ..problems.oracles import is_table_objective
    from ..problems.screening import screening_problem, screening_regulariser
    from .algorithms import build
    from .records import EvaluationLog
    from .session import run_session

    try:
        import rdkit  # noqa: F401
    except ImportError:
        raise CampaignError(
            "screening needs RDKit: pip install 'trieste-scalable[molecules]'"
        ) from None
    higher = not (args.lower_is_better or args.objective.startswith("dock:"))
    oracle = None if is_table_objective(args.objective) else _oracle(args, None)
    print(f"featurising {args.library} (cached after the first run)...")
    try:
        problem = screening_problem(
            args.library,
            args.objective if is_table_objective(args.objective) else None,
            args.fingerprint,
            args.radius,
            args.fingerprint_width,
            noise_std=args.noise,
            skip_invalid=args.skip_invalid,
            progress=not args.quiet,
            higher_is_better=higher,
        )
    except ValueError as error:  # the library or its settings: a usage error
        raise UsageError(str(error)) from error
    check_counts(args, len(problem.points))
    if is_table_objective(args.objective):
        oracle = _oracle(args, problem)
    print(
        f"{args.algorithm} screening {len(problem.points)} unique fingerprints "
        f"({problem.num_molecules} molecules) for {args.objective}; budget {args.budget}, "
        f"logs in {args.logdir}"
    )
    remote = _scoring_actors(args)

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
            fixed_batches=args.batch_policy == "fixed",
        )

    result = run_session(problem, vars(args), models, oracle)
    logged = EvaluationLog(Path(args.logdir) / "evaluations.csv", problem).read()
    evaluated = logged.ids[~logged.failed]
    return ScreenResult(result, problem, Path(args.logdir), evaluated)


def _oracle(args: argparse.Namespace, problem: Optional[ScreeningProblem]) -> Optional[Any]:
    """Where evaluations come from: ``None`` for an objective known up front and evaluated in
    this process (the problem's values, with their noise); else an oracle, run on Ray workers
    with ``--workers`` and in this process without (checked before the library is featurised;
    a score table's after, from the ``problem`` it is matched to)."""
    from ..problems.oracles import Oriented, TableOracle, is_table_objective, oracle_for
    from ..problems.score_table import is_score_table

    if args.workers is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise CampaignError(
                "--workers needs Ray: pip install 'trieste-scalable[distributed]'"
            ) from None
    elif is_table_objective(args.objective):
        return None
    if is_score_table(args.objective):
        assert problem is not None
        scores = np.array([problem.user_value(v) for v in problem.values])
        table = TableOracle.of(problem.labels, scores, args.objective)
        return Oriented(table, problem.higher_is_better)
    try:
        return oracle_for(args.objective, args.lower_is_better)
    except ValueError as error:
        raise UsageError(str(error)) from error


def _scoring_actors(args: argparse.Namespace) -> Any:
    """A library store's shards scored on Ray actors (``--scoring-actors N``), else ``None``."""
    if not args.scoring_actors:
        return None
    from ..problems.molecules import cache_dir
    from ..problems.store import LibraryStore
    from .algorithms import LibrarySignStore
    from .scoring_actors import ScoringActors

    # the actors' shards' signs: the driver's cache, recorded as the library's
    kept = LibrarySignStore(str(cache_dir()), library_label(args.library))
    store = LibraryStore(args.library)
    return ScoringActors(store, args.scoring_actors, address=args.ray_address, sign_store=kept)
