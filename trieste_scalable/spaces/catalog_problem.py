"""Screening a catalog of make-on-demand libraries (a vendor's synthon files, reaction SMARTS's;
:class:`~.catalog_space.CatalogSpace`) as the campaigns see their candidates
(:class:`~trieste_scalable.problems.campaign_problem.MoleculeProblem`), without enumerating it:
candidate ``i`` is the product at flat index ``i`` (the libraries one after another, each in C
order of its counts), its point ``[library, tuple]`` (:class:`CatalogRows`), its label its
product's canonical SMILES, made when asked for, its name its building blocks' and reaction's
(``236434|19571|a2``), and its log and batch-file columns ``reaction`` and one building block a
component (``synthon_1`` ...), what a chemist orders by.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from .catalog_space import CatalogSpace
from .problem import ProductLabels


class CatalogRows:
    """The catalog's points by flat index: ``rows[ids]`` is [K, 1 + C_max] (float64),
    ``len(rows)`` the catalog's size; nothing is stored."""

    def __init__(self, space: CatalogSpace):
        self.counts = [lib.counts for lib in space.libraries]
        sizes = [int(np.prod(counts, dtype=object)) for counts in self.counts]
        self.starts = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
        self.shape = (sum(sizes), int(space.dimension))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        flat = np.asarray(ids, dtype=np.int64).reshape(-1)
        points = np.zeros((flat.size, self.shape[1]))
        library = np.searchsorted(self.starts, flat, side="right") - 1
        for r in np.unique(library):
            mine = np.flatnonzero(library == r)
            local = np.unravel_index(flat[mine] - self.starts[r], self.counts[r])
            points[mine, 0] = r
            points[mine, 1 : 1 + len(self.counts[r])] = np.stack(local, axis=1)
        return points

    def indices(self, points: np.ndarray) -> np.ndarray:
        """Flat indices [N] of points [N, 1 + C_max].

        :raise ValueError: If a row is no point of the catalog.
        """
        rows = np.asarray(points, dtype=np.float64).reshape(-1, self.shape[1])
        whole = np.rint(rows).astype(np.int64)
        library = whole[:, 0]
        known = bool(np.all((library >= 0) & (library < len(self.counts))))
        valid = np.array_equal(whole, rows) and known
        found = np.zeros(len(rows), dtype=np.int64)
        for r in np.unique(library) if valid else []:
            mine = np.flatnonzero(library == r)
            counts = self.counts[r]
            tuples, padding = whole[mine, 1 : 1 + len(counts)], whole[mine, 1 + len(counts) :]
            if np.any(tuples < 0) or np.any(tuples >= counts) or np.any(padding != 0):
                valid = False
                break
            found[mine] = self.starts[r] + np.ravel_multi_index(tuples.T, counts)
        if not valid:
            raise ValueError(f"not points of the catalog: {rows[:3]}")
        return found


@dataclass(frozen=True)
class CatalogProblem:
    """Screening a catalog (module docstring): a
    :class:`~trieste_scalable.problems.campaign_problem.MoleculeProblem` whose objective is
    always an oracle.

    :ivar name: What is screened, for reports.
    :ivar space: The catalog's Trieste search space.
    :ivar higher_is_better: The user's direction.
    """

    name: str
    space: CatalogSpace = field(repr=False)
    higher_is_better: bool = True
    values: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    values_known: bool = False
    takes_extra_molecules: bool = False
    """Its model sees points of the catalog: a molecule it did not propose cannot be told."""
    points: CatalogRows = field(init=False, repr=False)
    labels: ProductLabels = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", CatalogRows(self.space))
        labels = ProductLabels(self.points, self.space.products, self.space.name)
        object.__setattr__(self, "labels", labels)

    @property
    def search_space(self) -> CatalogSpace:
        return self.space

    @property
    def num_molecules(self) -> int:
        return self.space.size

    def indices(self, query_points: tf.Tensor | np.ndarray) -> np.ndarray:
        return self.points.indices(np.asarray(query_points))

    def initial_ids(self, rng: np.random.Generator, num: int) -> np.ndarray:
        """``num`` distinct products, drawn uniformly over the catalog
        (:meth:`~.catalog_space.CatalogSpace.sample`)."""
        return self.indices(self.space.sample(num, seed=int(rng.integers(2**31))))

    def user_value(self, value: float) -> float:
        return -float(value) if self.higher_is_better else float(value)

    def content_hash(self, legacy: bool = False) -> str:
        """SHA-256 of each library's reaction and building blocks' SMILES and names, in order."""
        digest = hashlib.sha256()
        for library in self.space.libraries:
            digest.update(b"\1" + library.reaction.encode())
            for blocks in library.reagents:
                digest.update(b"\0" + "\n".join(blocks.smiles).encode())
                digest.update(b"\0" + "\n".join(blocks.names).encode())
        return digest.hexdigest()

    def identity_columns(self) -> list[str]:
        """``smiles``, ``name``, ``reaction``, then one building block a component
        (``synthon_1`` ..., empty past a reaction's components)."""
        return ["smiles", "name", "reaction", *self._block_columns()]

    def identity(self, index: int) -> list[str]:
        point = self.points[[index]][0]
        return [self.labels[index], self.space.name(point), *self._blocks(point)]

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        """Whether each logged row's reaction and building-block columns are the candidate's
        (the products are not made again to check them)."""
        expected = [self._blocks(self.points[[int(i)]][0]) for i in index]
        return np.array([row[2:] == mine for mine, row in zip(expected, logged)], dtype=bool)

    def proposed_index(self, rows: Sequence[Mapping[str, str]]) -> list[Optional[int]]:
        """The product each batch-file row's ``reaction`` and building-block columns name,
        ``None`` where a column is missing or names nothing of the catalog."""
        reactions = {rid: r for r, rid in enumerate(self.space.reaction_ids)}
        columns = self._block_columns()
        found: list[Optional[int]] = []
        for row in rows:
            r = reactions.get(row.get("reaction", ""))
            if r is None:
                found.append(None)
                continue
            library = self.space.libraries[r]
            tuple_ = [
                blocks.index_of(row.get(column, ""))
                for blocks, column in zip(library.reagents, columns)
            ]
            if any(i is None for i in tuple_):
                found.append(None)
                continue
            point = self.space.points(r, np.array([tuple_], dtype=np.float64))
            found.append(int(self.indices(point)[0]))
        return found

    def candidate_name(self, index: int) -> str:
        return self.space.name(self.points[[index]][0])

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        """How the evaluated products spread over the reactions, and how many tuples made no
        compound, by reason (:attr:`~.library.ComponentLibrary.failures`, over the catalog)."""
        libraries = self.points[np.asarray(evaluated, dtype=np.int64)][:, 0].astype(np.int64)
        counts = np.bincount(libraries, minlength=len(self.space.libraries))
        spread = {
            f"evaluated_by_reaction/{rid}": float(n)
            for rid, n in zip(self.space.reaction_ids, counts)
        }
        failures: dict[str, int] = {}
        for library in self.space.libraries:
            for reason, n in library.failures.items():
                failures[reason] = failures.get(reason, 0) + n
        return {**spread, **{f"tuples_failed/{k}": float(n) for k, n in sorted(failures.items())}}

    def _block_columns(self) -> list[str]:
        return [f"synthon_{k + 1}" for k in range(int(self.space.dimension) - 1)]

    def _blocks(self, point: np.ndarray) -> list[str]:
        """A point's reaction id and building blocks' names, "" past its components."""
        ((r, _, tuples),) = self.space.split(point[None])
        names = self.space.libraries[r].reagent_names(tuples[0])
        padding = [""] * (int(self.space.dimension) - 1 - len(names))
        return [self.space.reaction_ids[r], *names, *padding]
