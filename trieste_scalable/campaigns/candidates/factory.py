"""The one place where a library specification becomes what a campaign searches: an enumerated
library (:func:`~trieste_scalable.problems.screening.screening_problem`) or a make-on-demand space
(:mod:`trieste_scalable.spaces`), with the (model, rule) built over it and what its memory
forecast counts. ``screen`` and ``propose`` take all three from here, so neither branches on
the kind of space."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

from trieste.data import Dataset

from ...errors import UsageError
from ...problems.campaign_problem import MoleculeProblem
from ..algorithms.registry import algorithm
from ..run.runner import Build
from ..spec.library import LibrarySpec
from .library_models import library_models

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidates:
    """What a campaign searches.

    :ivar problem: The candidates (scores known up front only for a score table or a built-in
        property of an enumerated library).
    :ivar models: Maps the data so far and the evaluations left to the (model, rule).
    :ivar forecast_size: The candidates the memory forecast counts (a make-on-demand space's
        bounded caches, at any size of the space).
    :ivar description: The candidates as the campaign's first line names them.
    """

    problem: MoleculeProblem
    models: Build
    forecast_size: int
    description: str


def candidates(
    spec: LibrarySpec,
    *,
    scores: Optional[str] = None,
    noise: float = 0.0,
    remote: Optional[Any] = None,
    progress: bool = False,
) -> Candidates:
    """The candidates of ``spec`` (resolved) and its (model, rule) over them.

    :param scores: An objective known up front for an enumerated library (a built-in property
        or a score table); ``None``: an oracle's, known only where evaluated.
    :param noise: The observations' noise standard deviation (``screen --noise``).
    :param remote: Scores a library store's shards elsewhere (``screen --scoring-actors``).
    :param progress: Show featurising's progress.
    """
    higher = spec.higher_is_better
    if spec.space:
        return _catalog(spec, higher)
    if spec.reaction and spec.reagents:
        return _make_on_demand(spec, higher)
    from ...problems.screening import screening_problem

    _log.info(f"featurising {spec.library} (cached after the first run)...")
    problem = screening_problem(
        spec.library,
        scores,
        *spec.fingerprint_settings,
        noise_std=noise,
        skip_invalid=spec.skip_invalid,
        progress=progress,
        higher_is_better=higher,
    )
    size = len(problem.points)
    description = f"{size} unique fingerprints ({problem.num_molecules} molecules)"
    return Candidates(problem, library_models(spec, noise, remote), size, description)


def _make_on_demand(spec: LibrarySpec, higher_is_better: bool) -> Candidates:
    """A reaction and its reagent files: the model of the products' fingerprints, seen through
    a :class:`~trieste_scalable.spaces.featurised.FeaturisedModel`, the rule picking from the
    pools of a :class:`~trieste_scalable.spaces.pool_rule.MakeOnDemandPoolRule`."""
    from ...spaces.problem import make_on_demand_problem
    from ...spaces.search_space import FEATURE_CACHE

    assert spec.reaction and spec.reagents
    problem = make_on_demand_problem(
        spec.reaction,
        spec.reagents,
        spec.fingerprint_settings,
        higher_is_better=higher_is_better,
        keep_radicals=spec.keep_radicals,
    )
    _check_initial(problem.space, spec, f"the reaction {spec.reaction}")
    counts = " x ".join(str(n) for n in problem.library.counts)
    description = (
        f"a make-on-demand space of {counts} = {problem.library.size:.3g} reagent tuples (fewer "
        "molecules where tuples share a product)"
    )
    return Candidates(problem, _pool_models(spec, problem.space), FEATURE_CACHE, description)


def _catalog(spec: LibrarySpec, higher_is_better: bool) -> Candidates:
    """A vendor's synthon files (and a reaction with its reagent files, if given) as one
    :class:`~trieste_scalable.spaces.catalog_space.CatalogSpace`, searched as one reaction is."""
    from ...spaces.catalog_problem import CatalogProblem
    from ...spaces.catalog_space import CatalogSpace
    from ...spaces.problem import make_on_demand_problem
    from ...spaces.search_space import FEATURE_CACHE
    from ...spaces.synthons import read_synthon_files

    assert spec.space
    libraries: list[Any] = list(read_synthon_files(spec.space).values())
    if spec.reaction and spec.reagents:
        libraries.append(
            make_on_demand_problem(
                spec.reaction,
                spec.reagents,
                spec.fingerprint_settings,
                keep_radicals=spec.keep_radicals,
            ).library
        )
    try:
        space = CatalogSpace(libraries, spec.fingerprint_settings)
    except ValueError as error:
        raise UsageError(f"--space: {error}") from None
    if space.size >= 2**63:
        raise UsageError(f"{space.size:.3g} products: more than a 64-bit index can name")
    name = f"an oracle on {len(libraries)} reactions, {space.size:.3g} products"
    problem = CatalogProblem(name, space, higher_is_better)
    _check_initial(space, spec, "the catalog")
    sizes = ", ".join(f"{rid} {lib.size:.3g}" for rid, lib in zip(space.reaction_ids, libraries))
    _log.info(f"reactions and their products: {sizes}")
    description = (
        f"a make-on-demand catalog of {len(libraries)} reactions, {space.size:.3g} products "
        "(fewer molecules where two make one)"
    )
    return Candidates(
        problem, _pool_models(spec, space, _similar(spec, space)), FEATURE_CACHE, description
    )


def _similar(spec: LibrarySpec, space: Any) -> Optional[Any]:
    """The search for products similar to the best over the catalog's synthon reactions, or
    ``None`` where ``--pool-similar 0`` turns it off."""
    from ...spaces.similar_products import SimilarProducts

    if spec.pool_similar == 0:
        return None
    return SimilarProducts(
        space, **({} if spec.pool_similar is None else {"max_hits": spec.pool_similar})
    )


def _check_initial(space: Any, spec: LibrarySpec, what: str) -> None:
    """:raise UsageError: If ``space`` has too few products for the initial design (checked
    before anything is written)."""
    try:
        space.sample(spec.initial, seed=spec.seed)
    except ValueError as error:
        raise UsageError(f"{what} makes too few products: {error}") from None


def _pool_models(spec: LibrarySpec, space: Any, similar: Optional[Any] = None) -> Build:
    """The model of the products' fingerprints, seen through a
    :class:`~trieste_scalable.spaces.featurised.FeaturisedModel`, and the rule picking from the
    pools of a :class:`~trieste_scalable.spaces.pool_rule.MakeOnDemandPoolRule` (scoring the
    products ``similar`` finds, if given)."""
    from ...spaces.featurised import FeatureRows, FeaturisedModel
    from ...spaces.pool_rule import MakeOnDemandPoolRule

    packed = algorithm(spec.rule).reads_packed_inputs  # evaluated rows as packed bits
    fingerprints = library_models(spec, packed_width=space.width if packed else None)

    def models(data: Dataset, remaining: int) -> tuple[Any, Any]:
        # the inner model is built from the rows the wrapper keeps: one copy, shared
        rows = FeatureRows.of(space, packed)
        inner, rule = fingerprints(rows.dataset(data), remaining)
        options = spec.pool_options() | {"flat_pool": spec.batch_cap()}
        options |= {} if similar is None else {"similar": similar}
        pool_rule = MakeOnDemandPoolRule(rule, seed=spec.seed, **options)
        return FeaturisedModel(inner, rows), pool_rule

    return models
