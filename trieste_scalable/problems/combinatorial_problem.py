"""A screening campaign over a make-on-demand library (:mod:`.combinatorial`) as the campaigns see
a library (:class:`~.screening.ScreeningProblem`), without enumerating it: candidate ``i`` is the
reagent tuple at flat index ``i`` (C order of the reagent counts; up to 2^63 products), its point
is the tuple itself (:class:`TupleRows`), its label its product's canonical SMILES, made when it
is asked for (:class:`ProductLabels`), and its name its reagents' names (``A_B_C``).

Nothing here grows with the library's size: the problem holds the reagents, the space's bounded
caches, and no value of any product (the objective is an oracle, evaluated where asked).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import tensorflow as tf

from ..errors import UsageError
from .combinatorial import CombinatorialLibrary
from .combinatorial_space import CombinatorialSearchSpace
from .reagents import read_reagents
from .screening import ScreeningProblem


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

    :raise LookupError: On reading a candidate whose reaction fails (it has no product).
    """

    def __init__(self, library: CombinatorialLibrary, rows: TupleRows):
        self.library, self.rows = library, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):  # type: ignore[no-untyped-def,override]
        if isinstance(index, slice):
            raise TypeError("a make-on-demand library's labels are read one at a time")
        made = self.library.product(self.rows[[int(index)]][0])
        if made is None:
            raise LookupError(f"the reaction fails for {self.name(int(index))}: no product")
        return made

    def name(self, index: int) -> str:
        """The candidate's name, its reagents' names joined by ``_``."""
        return "_".join(self.reagent_names(index))

    def reagent_names(self, index: int) -> list[str]:
        """The names of the candidate's reagents, one a component."""
        tuple_ = self.rows[[index]][0].astype(np.int64)
        return [r.names[int(i)] for r, i in zip(self.library.reagents, tuple_)]


@dataclass(frozen=True)
class CombinatorialProblem(ScreeningProblem):
    """Screening a make-on-demand library (module docstring); the objective is always an oracle,
    so ``values`` is empty and :attr:`values_known` false.

    :ivar space: The library's search space (the fingerprint of the campaign).
    """

    space: CombinatorialSearchSpace = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        assert isinstance(self.points, TupleRows)

    @cached_property
    def search_space(self) -> CombinatorialSearchSpace:  # type: ignore[override]
        return self.space

    @property
    def library(self) -> CombinatorialLibrary:
        return self.space.library

    def indices(self, query_points: tf.Tensor | np.ndarray) -> np.ndarray:
        assert isinstance(self.points, TupleRows)
        return self.points.indices(np.asarray(query_points))

    @property
    def values_known(self) -> bool:
        return False

    def objective(self, seed: int) -> Callable[[int], float]:
        """Not available: a make-on-demand library's scores come from an oracle.

        :raise UsageError: Always.
        """
        raise UsageError("a make-on-demand library is scored by an oracle, not known up front")

    def initial_ids(self, rng: np.random.Generator, num: int) -> np.ndarray:
        """``num`` distinct candidates whose products exist, drawn uniformly among the usable
        reagents of each component (:meth:`CombinatorialSearchSpace.sample`)."""
        points = self.space.sample(num, seed=int(rng.integers(2**31)))
        return self.indices(points)

    def content_hash(self, legacy: bool = False) -> str:
        """SHA-256 of the reaction and the reagents' SMILES and names, in order."""
        digest = hashlib.sha256(self.library.reaction.encode())
        for reagents in self.library.reagents:
            digest.update(b"\0" + "\n".join(reagents.smiles).encode())
            digest.update(b"\0" + "\n".join(reagents.names).encode())
        return digest.hexdigest()

    def identity_columns(self) -> list[str]:
        """``smiles``, ``name`` (``A_B_C``), then one column of reagent names a component."""
        return ["smiles", "name", *reagent_columns(self.library)]

    def identity(self, index: int) -> list[str]:
        assert isinstance(self.labels, ProductLabels)
        parts = self.labels.reagent_names(index)
        return [self.labels[index], "_".join(parts), *parts]

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        """Whether each logged row names the candidate's reagents (the products are not made
        again to check them)."""
        assert isinstance(self.labels, ProductLabels)
        return np.array(
            [row[1:2] == [self.labels.name(int(i))] for i, row in zip(index, logged)], dtype=bool
        )

    def label_index(self, smiles: set[str]) -> dict[str, int]:
        """None: finding a product by its SMILES would enumerate the library (a batch file's
        molecules that a campaign's records lost stay lost; ``in_flight.json`` names them)."""
        return {}

    def candidate_name(self, index: int) -> str:
        assert isinstance(self.labels, ProductLabels)
        return self.labels.name(index)

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        return {}


def reagent_columns(library: CombinatorialLibrary) -> list[str]:
    """One ``evaluations.csv`` column a component, named after its reagent file (``reagent_``
    and the file's stem)."""
    stems = [Path(r.path).name.split(".")[0] for r in library.reagents]
    if len(set(stems)) < len(stems):
        return [f"reagent_{k + 1}" for k in range(len(stems))]
    return [f"reagent_{stem}" for stem in stems]


def combinatorial_problem(
    reaction: str,
    reagent_files: Sequence[str | Path],
    fingerprint: tuple[str, int, int],
    *,
    higher_is_better: bool = True,
) -> CombinatorialProblem:
    """The problem of a reaction SMARTS and its reagent files, one a reactant template.

    :raise UsageError: On a SMARTS that does not parse, a reagent file count other than the
        templates', or a bad reagent file (:func:`~.reagents.read_reagents`), or a component
        none of whose reagents matches its template.
    """
    if not reagent_files:
        raise UsageError("a reaction needs its reagent files, one a reactant template")
    library = CombinatorialLibrary(reaction, [read_reagents(path) for path in reagent_files])
    rows = TupleRows(library.counts)
    if len(rows) >= 2**63:
        raise UsageError(f"{len(rows):.3g} products: more than a 64-bit index can name")
    counts = " x ".join(str(n) for n in library.counts)
    return CombinatorialProblem(
        name=f"an oracle on {counts} = {library.size:.3g} products",
        points=rows,  # type: ignore[arg-type]
        values=np.zeros(0),
        noise_std=0.0,
        labels=ProductLabels(library, rows),  # type: ignore[arg-type]
        num_molecules=library.size,
        higher_is_better=higher_is_better,
        source=f"the reaction {reaction}",
        space=CombinatorialSearchSpace(library, fingerprint),
    )
