"""A screening campaign as one Python call: :func:`screen` (``trieste-scalable screen`` is a thin
shell over it). A script runs exactly what the command runs, with the same defaults, checks,
campaign directory and ``--resume``::

    from trieste_scalable.campaigns.screen import screen

    done = screen(
        library="library.csv.gz",
        objective="table:4unn_scores.csv.gz",   # the chemist's own scores
        lower_is_better=True,                   # docking energies, kcal/mol
        budget=530, initial=106, batch_size=106,
        logdir="runs/4unn",
    )
    print(done.top_k.scores, done.logdir / "evaluations.csv")

Settings are the command's long options with underscores (``--batch-size`` is ``batch_size``),
the fields of :class:`~.spec.library.ScreenSpec`; those not given take the command's
defaults. Each is checked for type and range before anything is read or written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ..errors import CampaignError
from ..problems.campaign_problem import MoleculeProblem
from ..problems.top_k import TopKFound, top_k_found
from ..stores.cache import for_library, library_label
from .candidates.memory_estimate import check_memory
from .engine.loop import CampaignResult
from .spec.defaults import resolved
from .spec.library import ScreenSpec

_log = logging.getLogger(__name__)


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
    problem: MoleculeProblem
    logdir: Path
    evaluated: np.ndarray

    @property
    def top_k(self) -> TopKFound:
        """MolPAL's measures of the library's top 100 found (``top_k``); zeros
        where the objective is known only where evaluated."""
        return top_k_found(self.problem.values, self.evaluated)


def screen(**settings: Any) -> ScreenResult:
    """Run (or with ``resume=True`` continue) a screening campaign; module docstring.

    :raise TypeError: On a setting ``screen`` does not have, or of the wrong type.
    :raise UsageError: On a bad setting or campaign directory.
    :raise CampaignError: If the campaign cannot run (e.g. every initial evaluation failed).
    """
    return run_screen(resolved(ScreenSpec.of(**settings)))


def run_screen(spec: ScreenSpec) -> ScreenResult:
    """The campaign of a resolved specification (:func:`~.spec.defaults.resolved`); the
    cache entries it writes are recorded as the library's (``trieste-scalable cache``)."""
    with for_library(library_label(spec.library)):
        return _run_screen(spec)


def _run_screen(spec: ScreenSpec) -> ScreenResult:
    from .candidates.factory import candidates
    from .directory.checks import check_same_settings
    from .directory.records import EvaluationLog
    from .run.session import run_session

    try:
        import rdkit  # noqa: F401
    except ImportError:
        raise CampaignError(
            "screening needs RDKit: pip install 'trieste-scalable[molecules]'"
        ) from None
    saved = Path(spec.logdir) / "run.json"
    if spec.resume and saved.is_file():
        check_same_settings(saved, spec)  # before the library is read: it may take minutes
    table = spec.scores_up_front
    oracle = None if table else _oracle(spec, None)
    found = candidates(
        spec,
        scores=spec.objective if table else None,
        noise=spec.noise,
        remote=_scoring_actors(spec),
        progress=not spec.quiet,
    )
    problem = found.problem
    spec.check_counts(len(problem.points))
    memory = check_memory(spec, found.forecast_size)
    if table:
        oracle = _oracle(spec, problem)
    _log.info(
        f"{spec.algorithm} screening {found.description} for {spec.objective}; budget "
        f"{spec.budget}, logs in {spec.logdir}; about {memory.total / 1e9:.1f} GB of memory at "
        "the last batch"
    )
    if spec.dictionary_note():
        _log.info(f"{spec.algorithm}: {spec.dictionary_note()}")
    result = run_session(problem, spec, found.models, oracle, _ray_workers(spec))
    logged = EvaluationLog(Path(spec.logdir) / "evaluations.csv", problem).read()
    evaluated = logged.ids[~logged.failed]
    return ScreenResult(result, problem, Path(spec.logdir), evaluated)


def _ray_workers(spec: ScreenSpec) -> Optional[Callable[[Any], Any]]:
    """With ``--workers``: the oracle's evaluations on Ray workers (with ``--latency``, each
    delayed as a simulated slow oracle's), else none (in this process)."""
    if spec.workers is None:
        return None
    workers = spec.workers

    def evaluator(oracle: Any) -> Any:
        from ..cluster.evaluators import RayEvaluator, WithLatency

        objective = WithLatency(oracle, spec.latency, seed=spec.seed) if spec.latency else oracle
        return RayEvaluator(objective, workers, timeout=spec.timeout, address=spec.ray_address)

    return evaluator


def _oracle(spec: ScreenSpec, problem: Optional[MoleculeProblem]) -> Optional[Any]:
    """Where evaluations come from: ``None`` for an objective known up front and evaluated in
    this process (the problem's values, with their noise); else an oracle, run on Ray workers
    with ``--workers`` and in this process without (checked before the library is featurised;
    a score table's after, from the ``problem`` it is matched to)."""
    from ..evaluation.oracles import Oriented, TableOracle, oracle_for
    from ..problems.score_table import is_score_table

    if spec.workers is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise CampaignError(
                "--workers needs Ray: pip install 'trieste-scalable[distributed]'"
            ) from None
    elif spec.scores_up_front:
        return None
    if is_score_table(spec.objective):
        assert problem is not None
        scores = np.array([problem.user_value(v) for v in problem.values])
        table = TableOracle.of(problem.labels, scores, spec.objective)
        return Oriented(table, problem.higher_is_better)
    return oracle_for(spec.objective, spec.lower_is_better)


def _scoring_actors(spec: ScreenSpec) -> Any:
    """A library store's shards scored on Ray actors (``--scoring-actors N``), else ``None``."""
    if not spec.scoring_actors:
        return None
    from ..cluster.scoring_actors import ScoringActors
    from ..stores.cache import cache_dir
    from ..stores.store import LibraryStore
    from .algorithms.builders import LibrarySignStore

    # the actors' shards' signs: the driver's cache, recorded as the library's
    kept = LibrarySignStore(str(cache_dir()), library_label(spec.library))
    store = LibraryStore(spec.library)
    return ScoringActors(store, spec.scoring_actors, address=spec.ray_address, sign_store=kept)
