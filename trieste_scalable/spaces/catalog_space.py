"""A catalog of several make-on-demand libraries (a vendor's reactions, reaction SMARTS's) as one
Trieste search space: a point is its library's index followed by one building-block index a
component, padded with 0 past that library's components, as float64 (Trieste's points are real
vectors) [1 + C_max]. A point's features are its product's fingerprint, made on demand with the
campaign's fingerprint settings (each library through its own
:class:`~.search_space.MakeOnDemandSpace` and bounded caches, so memory never grows with the
number of products).

``sample`` draws products uniformly over the whole catalog: a library with probability its share
of the products, then a tuple uniformly among its usable building blocks; one molecule is one
candidate across libraries (distinct canonical SMILES). Trieste's rules that need only
``sample`` and ``predict`` (through :class:`~.featurised.FeaturisedModel`) search it as they
search one library.
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
from trieste.space import SearchSpace
from trieste.types import TensorType

from .library import ComponentLibrary
from .reagents import SEPARATOR
from .search_space import FEATURE_CACHE, MakeOnDemandSpace, distinct_products
from .synthons import SynthonReaction


class CatalogSpace(SearchSpace):
    """The products of ``libraries`` as one search space (module docstring).

    :param libraries: The catalog's libraries, at least one.
    :param fingerprint: The products' fingerprint: kind, radius and size.
    :param cache_size: Products whose fingerprints are kept, over all libraries.
    :raise ValueError: If ``libraries`` is empty.
    """

    def __init__(
        self,
        libraries: Sequence[ComponentLibrary],
        fingerprint: tuple[str, int, int],
        *,
        cache_size: int = FEATURE_CACHE,
    ):
        if not libraries:
            raise ValueError("a catalog needs at least one library")
        share = max(1, cache_size // len(libraries))
        self.spaces = tuple(
            MakeOnDemandSpace(lib, fingerprint, cache_size=share) for lib in libraries
        )
        self.fingerprint = fingerprint
        self.width = self.spaces[0].width
        width = max(len(lib.counts) for lib in libraries)
        counts = np.zeros((len(libraries), width))
        for row, lib in zip(counts, libraries):
            row[: len(lib.counts)] = lib.counts
        self._counts = tf.constant(counts)
        self._columns = 1 + width
        sizes = np.array([float(lib.size) for lib in libraries])
        self._weights = sizes / sizes.sum()
        if len(set(self.reaction_ids)) < len(libraries):
            raise ValueError(f"two libraries of a catalog share a reaction id: {self.reaction_ids}")

    @property
    def libraries(self) -> tuple[ComponentLibrary, ...]:
        return tuple(space.library for space in self.spaces)

    @property
    def size(self) -> int:
        """Products in the catalog (Python's ``int``)."""
        return sum(lib.size for lib in self.libraries)

    @property
    def dimension(self) -> TensorType:
        """1 + the most components of a library, C_max."""
        return tf.constant(self._columns)

    @property
    def has_bounds(self) -> bool:
        return False

    @property
    def lower(self) -> TensorType:
        raise AttributeError("a catalog space has no numerical bounds")

    @property
    def upper(self) -> TensorType:
        raise AttributeError("a catalog space has no numerical bounds")

    def split(self, points: TensorType) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """``points`` [N, 1 + C_max] by library: each library's index, the rows of ``points`` it
        holds [N_r] and their tuples [N_r, C_r], libraries in order."""
        rows = np.rint(np.asarray(points)).astype(np.int64).reshape(-1, self._columns)
        groups = []
        for r, space in enumerate(self.spaces):
            mine = np.flatnonzero(rows[:, 0] == r)
            if mine.size:
                groups.append((r, mine, rows[mine, 1 : 1 + len(space.library.counts)]))
        return groups

    def products(self, points: TensorType) -> list[Optional[str]]:
        """The canonical SMILES of each point's product [N] (``None`` where it fails)."""
        made: list[Optional[str]] = [None] * len(np.asarray(points).reshape(-1, self._columns))
        for r, mine, tuples in self.split(points):
            for i, smiles in zip(mine, self.spaces[r].library.products(tuples)):
                made[i] = smiles
        return made

    @property
    def reaction_ids(self) -> tuple[str, ...]:
        """Each library's short name: a synthon file's reaction id, ``reaction`` for a reaction
        SMARTS (``reaction2`` ... where there are several)."""
        smarts = [r for r, lib in enumerate(self.libraries) if not isinstance(lib, SynthonReaction)]
        ids = [lib.reaction for lib in self.libraries]
        for k, r in enumerate(smarts):
            ids[r] = "reaction" if len(smarts) == 1 else f"reaction{k + 1}"
        return tuple(ids)

    def points(self, library: int, tuples: np.ndarray) -> np.ndarray:
        """The catalog's points [N, 1 + C_max] of ``library``'s tuples [N, C_r]."""
        tuples = np.asarray(tuples).reshape(len(tuples), -1)
        points = np.zeros((len(tuples), self._columns))
        points[:, 0] = library
        points[:, 1 : 1 + tuples.shape[1]] = tuples
        return points

    def name(self, point: Sequence[float]) -> str:
        """A product's name: its building blocks' names and its library's
        (:attr:`reaction_ids`), joined by :data:`~.reagents.SEPARATOR`."""
        ((r, _, tuples),) = self.split(np.asarray(point, dtype=np.float64).reshape(1, -1))
        return self.spaces[r].library.name(tuples[0]) + SEPARATOR + self.reaction_ids[r]

    def random_points(self, num: int, rng: np.random.Generator) -> np.ndarray:
        """``num`` random points [num, 1 + C_max]: a library with probability its share of the
        products, then a tuple of its usable building blocks (products not checked)."""
        chosen = rng.choice(len(self.spaces), size=num, p=self._weights)
        draws = np.zeros((num, self._columns))
        draws[:, 0] = chosen
        for r in np.unique(chosen):
            library, at = self.spaces[r].library, np.flatnonzero(chosen == r)
            draws[at, 1 : 1 + len(library.counts)] = library.random_tuples(at.size, rng)
        return draws

    def sample(self, num_samples: int, seed: Optional[int] = None) -> TensorType:
        """``num_samples`` points [num_samples, 1 + C_max] whose products exist and are distinct
        molecules across libraries (module docstring); ``seed`` makes the draw repeatable.

        :raise ValueError: If 100 rounds of draws found fewer (a catalog of few products).
        """
        rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
        draw = functools.partial(self.random_points, rng=rng)
        return tf.constant(distinct_products(num_samples, draw, self.products))

    def features(self, points: TensorType) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``points`` [N, 1 + C_max] whose products exist [K], in order, and their
        packed fingerprints [K, ceil(W / 8)] (each library's
        :meth:`~.search_space.MakeOnDemandSpace.features`)."""
        kept_rows, packed_rows = [], []
        for r, mine, tuples in self.split(points):
            kept, packed = self.spaces[r].features(tuples.astype(np.float64))
            kept_rows.append(mine[kept])
            packed_rows.append(packed)
        if not kept_rows:
            return np.zeros(0, np.int64), np.zeros((0, -(-self.width // 8)), np.uint8)
        kept, packed = np.concatenate(kept_rows), np.concatenate(packed_rows)
        order = np.argsort(kept, kind="stable")
        return kept[order], packed[order]

    def _contains(self, value: TensorType) -> TensorType:
        """Whether each row of ``value`` [..., 1 + C_max] is a library's index and a tuple of
        its building blocks (whole numbers below its counts, 0 past its components)."""
        whole = tf.reduce_all(tf.equal(value, tf.round(value)), axis=-1)
        reaction = value[..., 0]
        known = tf.logical_and(reaction >= 0.0, reaction < float(len(self.spaces)))
        index = tf.cast(tf.clip_by_value(reaction, 0.0, float(len(self.spaces) - 1)), tf.int32)
        counts = tf.cast(tf.gather(self._counts, index), value.dtype)
        blocks = value[..., 1:]
        inside = tf.where(counts > 0, (blocks >= 0.0) & (blocks < counts), tf.equal(blocks, 0.0))
        return tf.logical_and(tf.logical_and(whole, known), tf.reduce_all(inside, axis=-1))

    def product(self, other: CatalogSpace) -> CatalogSpace:
        """Not supported: a catalog is a search space of its own.

        :raise TypeError: Always.
        """
        raise TypeError("a catalog space cannot be multiplied with another")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CatalogSpace):
            return NotImplemented
        return self.spaces == other.spaces

    def __hash__(self) -> int:
        return hash(self.spaces)

    def __repr__(self) -> str:
        return f"CatalogSpace({len(self.spaces)} libraries, {self.size:.3g} reagent tuples)"
