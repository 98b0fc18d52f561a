"""Candidate sets for the rules, and the lazy (exact) argmin over in-batch lower bounds."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.observer import OBJECTIVE
from trieste.space import Box, DiscreteSearchSpace, SearchSpace
from trieste.types import Tag

from ..numerics.bits import Rows, pack_rows
from ..numerics.rows import RowIndex, mask_of
from ..packed_space import PackedSearchSpace


def objective_of(
    models: Mapping[Tag, Any],
    datasets: Optional[Mapping[Tag, Dataset]],
    search_space: Optional[SearchSpace] = None,
) -> tuple[Any, Optional[Dataset]]:
    """The model and (if any) dataset tagged ``OBJECTIVE``: our rules optimise one objective.

    With ``search_space``, also checks up front that the search space, the dataset (unless its
    query points are packed bits, uint8: a Nyström GP's fingerprints) and the model (where it
    says its dtype) share one dtype, instead of failing inside TensorFlow.

    :raise ValueError: If no model has that tag.
    :raise TypeError: On a dtype mismatch.
    """
    if OBJECTIVE not in models:
        raise ValueError(f"expected a model tagged {OBJECTIVE!r}, got tags {list(models)}")
    model = models[OBJECTIVE]
    dataset = None if datasets is None else datasets.get(OBJECTIVE)
    if search_space is not None:
        _check_dtypes(search_space, model, dataset)
    return model, dataset


def _check_dtypes(search_space: SearchSpace, model: Any, dataset: Optional[Dataset]) -> None:
    dtypes = {"search space": space_dtype(search_space)}
    if dataset is not None and dataset.query_points.dtype != tf.uint8:  # uint8: packed bits
        dtypes["dataset"] = dataset.query_points.dtype
    if isinstance(getattr(model, "dtype", None), tf.DType):
        dtypes["model"] = model.dtype
    if len(set(dtypes.values())) > 1:
        found = ", ".join(f"{name} {dtype.name}" for name, dtype in dtypes.items())
        raise TypeError(f"the search space, dataset and model must share one dtype; got {found}")


def space_dtype(search_space: SearchSpace) -> tf.DType:
    """The dtype of a search space's points (without touching a packed space's dense points)."""
    if isinstance(search_space, PackedSearchSpace):
        return search_space.dtype
    if isinstance(search_space, DiscreteSearchSpace):
        return search_space.points.dtype
    return tf.convert_to_tensor(search_space.lower).dtype


def candidate_rows(search_space: DiscreteSearchSpace) -> Rows:
    """The candidates of a discrete space as rules read them: packed ones stay packed."""
    if isinstance(search_space, PackedSearchSpace):
        return search_space.rows
    return search_space.points


def check_search_space(search_space: SearchSpace) -> None:
    """Check that every rule here supports ``search_space``.

    :raise ValueError: Unless it is a ``DiscreteSearchSpace`` or a ``Box``.
    """
    if not isinstance(search_space, (DiscreteSearchSpace, Box)):
        raise ValueError(
            f"this rule supports DiscreteSearchSpace and Box search spaces, got "
            f"{type(search_space).__name__}"
        )


def candidate_points(
    search_space: SearchSpace,
    dataset: Optional[Dataset],
    pool_size: int,
    seed: int,
) -> Rows:
    """The candidates a rule scores this step [N, D]: the rules' one strategy for a ``Box``.

    On a :class:`~trieste.space.DiscreteSearchSpace` every point is a candidate (kept packed in
    a :class:`~trieste_scalable.packed_space.PackedSearchSpace`). On a
    :class:`~trieste.space.Box` a fresh uniform pool of ``pool_size`` points (drawn from
    ``seed``) plus the unique evaluated points ``dataset`` holds is used: a heuristic, since the
    papers' guarantees are for finite candidate sets only. The hallucinating rules score the
    pool; batch Thompson sampling starts each sample at the pool's best and refines it.

    :raise ValueError: For any other search space.
    """
    check_search_space(search_space)
    if isinstance(search_space, DiscreteSearchSpace):
        return candidate_rows(search_space)
    assert isinstance(search_space, Box)
    lower, upper = search_space.lower, search_space.upper
    rng = np.random.default_rng(seed)
    unit = rng.uniform(size=(pool_size, int(lower.shape[-1])))
    pool = lower + tf.constant(unit, dtype=lower.dtype) * (upper - lower)
    if dataset is not None and dataset.query_points.shape[0] > 0:
        evaluated = np.unique(dataset.query_points.numpy(), axis=0)
        pool = tf.concat([pool, tf.constant(evaluated, dtype=lower.dtype)], axis=0)
    return pool


class CandidatesExhausted(ValueError):
    """A rule has nothing left to pick: every candidate it can reach has been evaluated. A
    campaign then ends with what it found (it is no error of the rule's)."""


class EvaluatedCandidates:
    """Which candidates of a discrete search space have been evaluated (or are pending): the
    rules that exclude them share this (row keys of the candidates are computed once per space;
    those of a packed space are its packed rows, ``D / 8`` bytes each)."""

    def __init__(self) -> None:
        self._index: tuple[int, Optional[RowIndex]] = (0, None)

    def __call__(self, search_space: DiscreteSearchSpace, dataset: Optional[Dataset]) -> np.ndarray:
        """Whether each candidate [N] appears among ``dataset``'s query points.

        :raise CandidatesExhausted: If every candidate has been evaluated.
        """
        evaluated = self.evaluated_positions(search_space, dataset)
        return mask_of(evaluated, num_candidates(search_space))

    def evaluated_positions(
        self, search_space: DiscreteSearchSpace, dataset: Optional[Dataset]
    ) -> np.ndarray:
        """The candidates among ``dataset``'s query points, ascending [A] (see ``__call__``)."""
        # a view of the dataset's rows: ``.numpy()`` would copy them (1.2 GB at 24,000 x 6,144)
        queried = None if dataset is None else np.asarray(dataset.query_points)
        evaluated = self.positions(search_space, queried)
        if len(evaluated) == num_candidates(search_space):
            raise CandidatesExhausted("every candidate has been evaluated: nothing is left to pick")
        return evaluated

    def among(self, search_space: DiscreteSearchSpace, rows: Optional[np.ndarray]) -> np.ndarray:
        """Whether each candidate [N] appears among ``rows`` [K, D] (e.g. pending points)."""
        return mask_of(self.positions(search_space, rows), num_candidates(search_space))

    def positions(
        self, search_space: DiscreteSearchSpace, rows: Optional[np.ndarray]
    ) -> np.ndarray:
        """The candidates among ``rows`` [K, D] (over a packed space, 0/1 rows or their packed
        bits, uint8 [K, ceil(D / 8)]), ascending, each once [A]: a few rows where a mask of a
        library of 10^8 is 100 MB."""
        if rows is None or rows.shape[0] == 0:
            return np.zeros([0], dtype=np.int64)
        if isinstance(search_space, PackedSearchSpace):  # rows packed already, or 0/1
            packed = rows if rows.dtype == np.uint8 else pack_rows(rows)
            return search_space.index().positions(packed)
        key, index = self._index
        if key != id(search_space) or index is None:
            index = RowIndex(search_space.points.numpy())
            self._index = (id(search_space), index)
        return index.positions(rows)


def num_candidates(search_space: DiscreteSearchSpace) -> int:
    """The number of candidates of a discrete search space."""
    return len(candidate_rows(search_space))


def distinct_picks(ranked: np.ndarray) -> Optional[np.ndarray]:
    """For each sample in turn, its best-ranked candidate no earlier sample took; None if some
    sample's ranked candidates [B, k] are all taken (never when k >= B). The loop is over the B
    samples, not the candidates."""
    taken: set[int] = set()
    chosen = np.empty(ranked.shape[0], dtype=np.int64)
    for b, row in enumerate(ranked):
        free = next((int(i) for i in row if int(i) not in taken), None)
        if free is None:
            return None
        chosen[b] = free
        taken.add(free)
    return chosen
