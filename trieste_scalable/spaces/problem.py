"""A screening campaign over a make-on-demand space (:mod:`.reaction`) as the campaigns see their
candidates (:class:`~trieste_scalable.problems.campaign_problem.MoleculeProblem`), without
enumerating it: candidate ``i`` is the reagent tuple at flat index ``i`` (C order of the reagent
counts; up to 2^63 products), its point is the tuple itself (:class:`TupleRows`), its label its
product's canonical SMILES, made when it is asked for (:class:`ProductLabels`), and its name its
reagents' names (``A|B|C``).

Nothing here grows with the library's size: the problem holds the reagents, the space's bounded
caches, and no value of any product (the objective is an oracle, evaluated where asked).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from ..errors import UsageError
from .library import ComponentLibrary
from .reaction import ReactionLibrary
from .reagents import read_reagents
from .search_space import MakeOnDemandSpace

_log = logging.getLogger(__name__)


class TupleRows:
    """The reagent tuples of a library by flat index: ``rows[ids]`` is [K, C] (float64, as
    Trieste's points are), ``len(rows)`` the library's size; nothing is stored."""

    def __init__(self, counts: Sequence[int]):
        self.counts = tuple(int(n) for n in counts)
        self.shape = (int(np.prod(self.counts, dtype=object)), len(self.counts))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        flat = np.asarray(ids, dtype=np.int64).reshape(-1)
        if not flat.size:
            return np.zeros((0, len(self.counts)))
        return np.stack(np.unravel_index(flat, self.counts), axis=1).astype(np.float64)

    def indices(self, points: np.ndarray) -> np.ndarray:
        """Flat indices [N] of tuples [N, C].

        :raise ValueError: If a row is no tuple of reagent indices.
        """
        rows = np.asarray(points, dtype=np.float64).reshape(-1, len(self.counts))
        whole = np.rint(rows)
        if not np.array_equal(whole, rows) or np.any(whole < 0) or np.any(whole >= self.counts):
            raise ValueError(f"not tuples of reagent indices below {self.counts}: {rows[:3]}")
        return np.ravel_multi_index(whole.astype(np.int64).T, self.counts).astype(np.int64)


class ProductLabels(Sequence[str]):
    """The canonical SMILES of each candidate's product, made on demand (``labels[i]``).

    :param rows: The candidates' points by flat index (``rows[[i]]`` is [1, D]).
    :param products: The SMILES of points' products [N] (``None`` where none).
    :param name: A point's name, for the error.
    :raise LookupError: On reading a candidate that has no product.
    """

    def __init__(
        self,
        rows: Any,
        products: Callable[[np.ndarray], list[Optional[str]]],
        name: Callable[[Any], str],
    ):
        self.rows, self._products, self._name = rows, products, name

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):  # type: ignore[no-untyped-def,override]
        if isinstance(index, slice):
            raise TypeError("a make-on-demand space's labels are read one at a time")
        point = self.rows[[int(index)]]
        made = self._products(point)[0]
        if made is None:
            raise LookupError(f"{self._name(point[0])} makes no product")
        return made


@dataclass(frozen=True)
class MakeOnDemandProblem:
    """Screening a make-on-demand space (module docstring): a
    :class:`~trieste_scalable.problems.campaign_problem.MoleculeProblem` whose objective is
    always an oracle, so ``values`` is empty and ``values_known`` false.

    :ivar name: What is screened, for reports.
    :ivar points: The reagent tuples by flat index.
    :ivar labels: Their products' canonical SMILES, made when read.
    :ivar space: The space's Trieste search space (the fingerprint of the campaign).
    :ivar higher_is_better: The user's direction.
    """

    name: str
    points: TupleRows
    labels: ProductLabels
    space: MakeOnDemandSpace = field(repr=False)
    higher_is_better: bool = True
    values: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    values_known: bool = False
    takes_extra_molecules: bool = False
    """Its model sees reagent tuples: a molecule it did not propose cannot be told to it."""

    @property
    def search_space(self) -> MakeOnDemandSpace:
        return self.space

    @property
    def library(self) -> ComponentLibrary:
        return self.space.library

    @property
    def num_molecules(self) -> int:
        return self.library.size

    def indices(self, query_points: tf.Tensor | np.ndarray) -> np.ndarray:
        return self.points.indices(np.asarray(query_points))

    def initial_ids(self, rng: np.random.Generator, num: int) -> np.ndarray:
        """``num`` distinct candidates whose products exist, drawn uniformly among the usable
        reagents of each component (:meth:`~.search_space.MakeOnDemandSpace.sample`)."""
        points = self.space.sample(num, seed=int(rng.integers(2**31)))
        return self.indices(points)

    def user_value(self, value: float) -> float:
        return -float(value) if self.higher_is_better else float(value)

    def content_hash(self, legacy: bool = False) -> str:
        """SHA-256 of the reaction and the reagents' SMILES and names, in order."""
        digest = hashlib.sha256(self.library.reaction.encode())
        for reagents in self.library.reagents:
            digest.update(b"\0" + "\n".join(reagents.smiles).encode())
            digest.update(b"\0" + "\n".join(reagents.names).encode())
        return digest.hexdigest()

    def identity_columns(self) -> list[str]:
        """``smiles``, ``name`` (``A|B|C``), then one column of reagent names a component."""
        return ["smiles", "name", *reagent_columns(self.library)]

    def identity(self, index: int) -> list[str]:
        tuple_ = self.points[[index]][0]
        return [self.labels[index], self.library.name(tuple_), *self.library.reagent_names(tuple_)]

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        """Whether each logged row's reagent columns name the candidate's reagents (not its
        ``name``, whose separator was ``_`` before 2026-12-06; the products are not made again
        to check them)."""
        names = [self.library.reagent_names(self.points[[int(i)]][0]) for i in index]
        return np.array([row[2:] == name for name, row in zip(names, logged)], dtype=bool)

    def proposed_index(self, rows: Sequence[Mapping[str, str]]) -> list[Optional[int]]:
        """The tuple each batch-file row's reagent columns name (no product is made: a row
        whose reagents do not make its SMILES is refused when told), ``None`` where a column is
        missing or names no reagent."""
        columns = [column.lower() for column in reagent_columns(self.library)]
        found: list[Optional[int]] = []
        for row in rows:
            tuple_ = [r.index_of(row.get(c, "")) for r, c in zip(self.library.reagents, columns)]
            known = all(i is not None for i in tuple_)
            found.append(int(self.indices(np.array([tuple_], float))[0]) if known else None)
        return found

    def candidate_name(self, index: int) -> str:
        return self.library.name(self.points[[index]][0])

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        """No product's value is known up front: how many tuples made no compound, by reason
        (:attr:`~.library.ComponentLibrary.failures`)."""
        failures = self.library.failures
        return {f"tuples_failed/{reason}": float(n) for reason, n in sorted(failures.items())}


def reagent_columns(library: ComponentLibrary) -> list[str]:
    """One ``evaluations.csv`` column a component, named after its reagent file (``reagent_``
    and the file's stem)."""
    stems = [Path(r.path).name.split(".")[0] for r in library.reagents]
    if len(set(stems)) < len(stems):
        return [f"reagent_{k + 1}" for k in range(len(stems))]
    return [f"reagent_{stem}" for stem in stems]


def make_on_demand_problem(
    reaction: str,
    reagent_files: Sequence[str | Path],
    fingerprint: tuple[str, int, int],
    *,
    higher_is_better: bool = True,
    keep_radicals: bool = False,
) -> MakeOnDemandProblem:
    """The problem of a reaction SMARTS and its reagent files, one a reactant template (their
    radicals kept only if ``keep_radicals``); what is ambiguous about its products is logged
    (:meth:`~.reaction.ReactionLibrary.ambiguities`).

    :raise UsageError: On a SMARTS that does not parse, a reagent file count other than the
        templates', or a bad reagent file (:func:`~.reagents.read_reagents`), or a component
        none of whose reagents matches its template.
    """
    if not reagent_files:
        raise UsageError("a reaction needs its reagent files, one a reactant template")
    reagents = [read_reagents(path, keep_radicals=keep_radicals) for path in reagent_files]
    library = ReactionLibrary(reaction, reagents)
    for line in library.ambiguities():
        _log.info(line)
    rows = TupleRows(library.counts)
    if len(rows) >= 2**63:
        raise UsageError(f"{len(rows):.3g} products: more than a 64-bit index can name")
    counts = " x ".join(str(n) for n in library.counts)
    return MakeOnDemandProblem(
        name=f"an oracle on {counts} = {library.size:.3g} reagent tuples",
        points=rows,
        labels=ProductLabels(rows, library.products, library.name),
        space=MakeOnDemandSpace(library, fingerprint),
        higher_is_better=higher_is_better,
    )
