"""Acquisition over a make-on-demand space without enumerating it: each step builds a pool of
candidate products by coordinate searches of the model's lower confidence bound, and a rule for
discrete spaces (GP-BUCB, BBKB, batch Thompson sampling, or any of Trieste's) picks the batch
from that pool.

What is exact and what is heuristic:

- *Exact*: each move of a search scores every option it is given (all the usable reagents of a
  component, or ``move_size`` of them drawn at random); the pool is the ``pool_size`` distinct
  products of lowest bound among all the products the searches scored, plus ``random_share`` as
  many drawn at random; the inner rule's batch over the pool is what it would pick over a
  library of those products (its own guarantees hold over the pool).
- *Heuristic*: the pool itself. The searches restart from the best evaluated products and from
  random tuples and end at coordinate-wise minima of the bound
  (:mod:`~trieste_scalable.spaces.coordinate_search`), so a product that no search passes
  near is never in a pool, however good the model thinks it is.
- *Over a catalog of several reactions* (:class:`~.catalog_space.CatalogSpace`), each search
  moves within one reaction. The model allocates them: those from evaluated products start in
  the reactions that made the best, and the others at the tuples of lowest bound among
  ``probes`` random tuples scored in every reaction (so a reaction whose products the model
  rates poorly gets no search that step, and one it rates well several). The random share is
  drawn over the whole catalog, reactions weighted by their products. TensorBoard shows the
  searches each reaction got (``pool/starts/<reaction>``).
- *Products similar to the best*, given ``similar`` (a catalog's
  :class:`~.similar_products.SimilarProducts`): the products of any synthon reaction that RDKit's
  fingerprint search finds similar to the ``similar_queries`` best evaluated products are scored
  beside the searches' (``pool/similar``: how many), so the pool's ordering decides whether they
  enter it. Which products the search finds is heuristic (that module's docstring).
- *Before the scores say anything*: while every score told is the same (a hit call before its
  first hit), the model tells products apart only by how far they lie from those evaluated, so
  its bound sends the searches to outliers. The pool is then ``flat_pool`` random products (the
  batch size: the batch is a uniform draw over the space), no search. On Walters' 10^6
  quinazoline subset with a hit call (0.1 % of products hits), the searches found no hit in
  2,000 evaluations in 2 seeds of 3, where a uniform draw finds one with probability 0.86
  (``benchmarks/results/sparse_objectives.txt``).

The model is a :class:`~trieste_scalable.spaces.featurised.FeaturisedModel` of the space's reagent
tuples: the inner rule sees the model of fingerprints it wraps, the pool's fingerprints as a
:class:`~trieste_scalable.packed_space.PackedSearchSpace`, and the evaluated products' fingerprints.
Its state is the wrapped rule's: the campaign sees (and saves) the pending and failed points as
reagent tuples, and the wrapped rule sees them as their products' fingerprints.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.models.interfaces import ProbabilisticModel
from trieste.observer import OBJECTIVE
from trieste.space import SearchSpace
from trieste.types import Tag, TensorType

from ..acquisition.candidates import CandidatesExhausted
from ..acquisition.pending import PendingState, Points, proposed, rows_seen
from ..acquisition.pick_stream import translated_picks
from ..acquisition.summaries import write_scalars
from ..acquisition.wrapped_rule import WrapsRule
from ..numerics.bits import unpack_bits
from ..numerics.host_tensors import host_tensor
from ..packed_space import PackedSearchSpace
from .catalog_space import CatalogSpace
from .coordinate_search import Score, coordinate_search
from .featurised import FeaturisedModel
from .search_space import MakeOnDemandSpace

TupleSpace = Union[MakeOnDemandSpace, CatalogSpace]
"""The spaces the rule searches: one library's tuples, or a catalog of libraries (points
[library, tuple])."""


class MakeOnDemandPoolRule(WrapsRule, AcquisitionRule[Any, SearchSpace, ProbabilisticModel]):
    """The batch ``rule`` picks from a pool of products built by coordinate searches (module
    docstring).

    :param rule: A rule for a ``DiscreteSearchSpace`` (stateful or not).
    :param pool_size: Products of lowest bound in the pool.
    :param num_starts: Searches a step; half start from the best evaluated products.
    :param move_size: Options scored by a move (``None``: every usable reagent).
    :param max_sweeps: Most sweeps of a search over the components.
    :param beta: The bound searched is the mean less ``beta`` standard deviations.
    :param random_share: Random products added to the pool, as a share of ``pool_size``.
    :param probes: Over a catalog, random tuples of each library whose bounds decide where the
        searches that do not start from evaluated products start.
    :param similar: Over a catalog, the points [N, D] of products similar to molecules
        (SMILES), whose bounds are scored beside the searches' (module docstring); ``None``:
        none.
    :param similar_queries: The best evaluated products whose similar products are scored.
    :param flat_pool: Random products in the pool while every score told is the same (module
        docstring); ``None``: ``pool_size``.
    :param seed: Seed of the searches (with the number of evaluations).
    """

    def __init__(
        self,
        rule: AcquisitionRule,
        *,
        pool_size: int = 2048,
        num_starts: int = 8,
        move_size: Optional[int] = 256,
        max_sweeps: int = 2,
        beta: float = 2.0,
        random_share: float = 0.25,
        probes: int = 32,
        similar: Optional[Callable[[Sequence[str]], np.ndarray]] = None,
        similar_queries: int = 2,
        flat_pool: Optional[int] = None,
        seed: int = 0,
    ):
        if min(pool_size, num_starts, max_sweeps, probes, similar_queries) < 1:
            raise ValueError(
                "pool_size, num_starts, max_sweeps, probes and similar_queries must be positive"
            )
        if not (math.isfinite(beta) and beta >= 0 and 0 <= random_share):
            raise ValueError(
                f"need a finite beta >= 0 and random_share >= 0: {beta}, {random_share}"
            )
        self._rule = rule
        self._pool_size, self._num_starts = pool_size, num_starts
        self._move_size, self._max_sweeps = move_size, max_sweeps
        self._beta, self._random_share, self._seed = beta, random_share, seed
        self._probes = probes
        self._similar, self._similar_queries = similar, similar_queries
        self._flat_pool = pool_size if flat_pool is None else flat_pool
        self.last_pool_size = 0
        """Distinct products in the last step's pool."""
        self.last_starts: list[int] = []
        """Searches the last step started in each library."""
        self.last_similar = 0
        """Products similar to the best that the last step scored."""

    def acquire(
        self,
        search_space: SearchSpace,
        models: Mapping[Tag, ProbabilisticModel],
        datasets: Optional[Mapping[Tag, Dataset]] = None,
    ) -> Any:
        """Points of the space [B, D]: reagent tuples, or a catalog's [library, tuple] (inside
        the wrapped rule's ``State`` function if it keeps one).

        :raise TypeError: If the space is neither a make-on-demand space nor a catalog, or the
            model no
            :class:`~trieste_scalable.spaces.featurised.FeaturisedModel`.
        """
        if not isinstance(search_space, (MakeOnDemandSpace, CatalogSpace)):
            raise TypeError(
                f"{type(self).__name__} needs a make-on-demand space or catalog: {search_space!r}"
            )
        model = models.get(OBJECTIVE)
        if not isinstance(model, FeaturisedModel):
            raise TypeError(f"{type(self).__name__} needs a FeaturisedModel, got {model!r}")
        dataset = None if datasets is None else datasets.get(OBJECTIVE)
        tuples, bits = self._pool(search_space, model, dataset)
        write_scalars("pool", {"size": self.last_pool_size})
        if isinstance(search_space, CatalogSpace):
            write_scalars("pool/starts", dict(zip(search_space.reaction_ids, self.last_starts)))
        if self._similar is not None:
            write_scalars("pool", {"similar": self.last_similar})
        pool = PackedSearchSpace(bits, search_space.width)
        inner_data = None if dataset is None else {OBJECTIVE: model.encode(dataset)}
        result = self._rule.acquire(pool, {OBJECTIVE: model.inner}, inner_data)
        if not callable(result):
            return self._tuples(result, tuples, bits)

        def state_func(state: Any) -> tuple[Any, TensorType]:
            with translated_picks(lambda point: self._tuples(point, tuples, bits).numpy()):
                inner_state, points = result(_as_features(state, search_space))
            picked = self._tuples(points, tuples, bits)
            return _as_tuples(inner_state, state, picked, dataset), picked

        return state_func

    def _pool(
        self, space: TupleSpace, model: FeaturisedModel, dataset: Optional[Dataset]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pool's points [P, D] and packed fingerprints [P, ceil(W / 8)], one point a
        distinct fingerprint, evaluated products left out."""
        evaluated = set() if dataset is None else _keys(np.asarray(dataset.query_points))
        rng = np.random.default_rng([self._seed, 0 if dataset is None else len(evaluated)])
        scored: dict[tuple[int, ...], float] = {}

        def bound_of(library: int) -> Score:
            own = _libraries(space)[library]

            def bound(tuples: np.ndarray) -> np.ndarray:
                keys = _keys_list(_points(space, library, tuples))
                scores = np.full(len(tuples), np.inf)
                kept, packed = own.features(tuples)
                if len(kept):
                    scores[kept] = self._lower_bound(model, packed, space.width)
                scores[np.array([key in evaluated for key in keys], dtype=bool)] = np.inf
                scored.update((k, float(v)) for k, v in zip(keys, scores) if np.isfinite(v))
                return scores

            return bound

        if _flat(dataset):  # the scores say nothing yet: a uniform draw (module docstring)
            self.last_starts = [0] * len(_libraries(space))
            extra = _random_points(space, self._flat_pool, rng)
        else:
            self._search(space, [bound_of(r) for r in range(len(_libraries(space)))], dataset, rng)
            extra = _random_points(space, int(self._random_share * self._pool_size), rng)
        best = sorted(scored, key=scored.__getitem__)[: self._pool_size]
        candidates = np.array(best + [k for k in _keys_list(extra) if k not in evaluated])
        kept, packed = space.features(candidates.reshape(-1, int(space.dimension)))
        _, first = np.unique(packed, axis=0, return_index=True)
        first = np.sort(first)
        self.last_pool_size = len(first)
        if not len(first):
            raise CandidatesExhausted(
                "no product is left to propose: every one scored is evaluated"
            )
        return candidates[kept][first], packed[first]

    def _search(
        self,
        space: TupleSpace,
        bounds: list[Score],
        dataset: Optional[Dataset],
        rng: np.random.Generator,
    ) -> None:
        """Score (with each library's ``bounds``) the products of the coordinate searches and
        those similar to the best."""
        starts = self._starts(space, bounds, dataset, rng)
        if self._similar is not None and isinstance(space, CatalogSpace):
            leading = _best(dataset, self._similar_queries, int(space.dimension))
            self._score_similar(space, bounds, leading)
        self.last_starts = [len(mine) for mine in starts]
        for library, mine in enumerate(starts):
            if len(mine):
                coordinate_search(
                    bounds[library],
                    _libraries(space)[library].options,
                    mine,
                    rng,
                    max_sweeps=self._max_sweeps,
                    move_size=self._move_size,
                )

    def _starts(
        self,
        space: TupleSpace,
        bounds: list[Score],
        dataset: Optional[Dataset],
        rng: np.random.Generator,
    ) -> list[np.ndarray]:
        """Each library's starts [S_r, C_r]: the best evaluated points (up to half the starts)
        and random tuples; over a catalog, the random tuples are those of lowest bound among
        ``probes`` drawn from each library, so the model allocates the searches to reactions."""
        best = _best(dataset, self._num_starts // 2, int(space.dimension))
        if isinstance(space, MakeOnDemandSpace):
            starts = space.random_tuples(self._num_starts, rng)
            starts[: len(best)] = best
            return [starts]
        probes = [lib.random_tuples(self._probes, rng) for lib in space.spaces]
        scores = np.concatenate([bound(mine) for bound, mine in zip(bounds, probes)])
        owner = np.repeat(np.arange(len(probes)), self._probes)
        lowest = np.argsort(scores, kind="stable")[: self._num_starts - len(best)]
        lowest = lowest[np.isfinite(scores[lowest])]
        per_library = []
        for r, library in enumerate(space.spaces):
            mine = best[best[:, 0] == r, 1 : 1 + len(library.options)]
            drawn = probes[r][lowest[owner[lowest] == r] - r * self._probes]
            per_library.append(np.concatenate([mine, drawn]))
        return per_library

    def _score_similar(self, space: CatalogSpace, bounds: list[Score], best: np.ndarray) -> None:
        """Score (with each library's ``bounds``) the products similar to those of ``best``
        [K, D], the catalog's points of the best evaluated products."""
        assert self._similar is not None
        queries = [smiles for smiles in space.products(best) if smiles is not None]
        hits = self._similar(queries)
        for r, _, tuples in space.split(hits):
            bounds[r](tuples)
        self.last_similar = len(hits)

    def _lower_bound(self, model: FeaturisedModel, packed: np.ndarray, width: int) -> np.ndarray:
        """The model's mean less ``beta`` standard deviations at packed fingerprints [K]."""
        # unpacked by TensorFlow: NumPy's unpack and its copy into a tensor took 0.5 s an ask
        rows = unpack_bits(host_tensor(packed), width, tf.float64)
        mean, variance = model.inner.predict(rows)
        spread = np.sqrt(np.maximum(variance.numpy()[:, 0], 0.0))
        return mean.numpy()[:, 0] - self._beta * spread

    @staticmethod
    def _tuples(points: TensorType, tuples: np.ndarray, bits: np.ndarray) -> TensorType:
        """The pool tuples [B, C] of the inner rule's picks [B, W] (0/1 fingerprint rows)."""
        picked = np.packbits(np.asarray(points).astype(np.uint8), axis=1)
        index = {row.tobytes(): i for i, row in enumerate(bits)}
        return host_tensor(tuples[[index[row.tobytes()] for row in picked]], tf.float64)

    def __repr__(self) -> str:
        return f"MakeOnDemandPoolRule({self._rule!r}, pool_size={self._pool_size})"


def _as_features(state: Any, space: TupleSpace) -> Any:
    """``state`` (tuples pending and failed) as the wrapped rule keeps it: their products'
    fingerprints (a tuple without a product is left out)."""
    if not isinstance(state, PendingState):
        return state

    def rows(points: Points) -> Points:
        if not points:
            return ()
        _, packed = space.features(np.asarray(points))
        return proposed(np.unpackbits(packed, axis=1)[:, : space.width], np.zeros((0, 0)))

    return replace(state, pending=rows(state.pending), failed=rows(state.failed))


def _as_tuples(inner: Any, outer: Any, picked: TensorType, dataset: Optional[Dataset]) -> Any:
    """The wrapped rule's new state ``inner`` with the tuples the campaign sees: those of the
    last ``outer`` state still pending, then ``picked``; the failed tuples of ``outer``."""
    if not isinstance(inner, PendingState):
        return inner
    last = outer if isinstance(outer, PendingState) else type(inner)()
    still = last.outstanding(dataset)
    return replace(
        inner, pending=proposed(still, picked), failed=last.failed, seen=rows_seen(dataset)
    )


def _flat(dataset: Optional[Dataset]) -> bool:
    """Whether scores were told and all are the same."""
    if dataset is None or not len(dataset.observations):
        return False
    return bool(np.ptp(np.asarray(dataset.observations)) == 0)


def _best(dataset: Optional[Dataset], num: int, dimension: int) -> np.ndarray:
    """The points [min(num, N), D] of the ``num`` best evaluated products, best first."""
    if dataset is None or not len(dataset.query_points):
        return np.zeros((0, dimension), dtype=np.int64)
    order = np.argsort(np.asarray(dataset.observations)[:, 0], kind="stable")
    return np.rint(np.asarray(dataset.query_points)[order[:num]]).astype(np.int64)


def _keys_list(tuples: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(row) for row in np.rint(np.asarray(tuples)).astype(np.int64).tolist()]


def _keys(tuples: np.ndarray) -> set[tuple[int, ...]]:
    return set(_keys_list(tuples))


def _libraries(space: TupleSpace) -> tuple[MakeOnDemandSpace, ...]:
    """The libraries the searches move in: the space itself, or a catalog's."""
    return space.spaces if isinstance(space, CatalogSpace) else (space,)


def _points(space: TupleSpace, library: int, tuples: np.ndarray) -> np.ndarray:
    """The space's points [N, D] of ``library``'s tuples [N, C_r]."""
    return space.points(library, tuples) if isinstance(space, CatalogSpace) else tuples


def _random_points(space: TupleSpace, num: int, rng: np.random.Generator) -> np.ndarray:
    """``num`` random points [num, D] (products not checked): over a catalog, libraries weighted
    by their products."""
    if isinstance(space, CatalogSpace):
        return space.random_points(num, rng)
    return space.random_tuples(num, rng)
