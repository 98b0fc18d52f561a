"""A Trieste search space over a make-on-demand space (:mod:`.reaction`): its points are
tuples of reagent indices [C], as float64 rows (Trieste's points are real vectors), and a point's
features are its product's fingerprint, made on demand with the campaign's fingerprint settings.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from trieste.space import SearchSpace
from trieste.types import TensorType

from ..chemistry.molecules import fingerprint_width
from .library import ComponentLibrary
from .lru import LRUCache

FEATURE_CACHE = 200_000
"""Products whose fingerprints a space keeps (the last asked for; 220 MB at 6,144 bits: 1.1 KB a
row, its key and its entry)."""


class MakeOnDemandSpace(SearchSpace):
    """The tuples of reagent indices of ``library``. Like Trieste's categorical spaces, it has no
    numerical bounds: its points are indices, not coordinates.

    :param library: The reaction and its reagent lists.
    :param fingerprint: The products' fingerprint: kind, radius and size
        (:func:`~trieste_scalable.chemistry.molecules.fingerprints`).
    :param cache_size: Products whose fingerprints are kept.
    """

    def __init__(
        self,
        library: ComponentLibrary,
        fingerprint: tuple[str, int, int],
        *,
        cache_size: int = FEATURE_CACHE,
    ):
        self.library = library
        self.fingerprint = fingerprint
        self.width = fingerprint_width(fingerprint[0], fingerprint[2])
        self._counts = tf.constant(np.array(library.counts, dtype=np.float64))
        self._rows: LRUCache[tuple[int, ...], np.ndarray] = LRUCache(cache_size)

    @property
    def options(self) -> tuple[np.ndarray, ...]:
        """The reagents of each component that can make a product [R_k]."""
        return self.library.usable

    def random_tuples(self, num: int, rng: np.random.Generator) -> np.ndarray:
        """``num`` random tuples [num, C] of usable reagents (products not checked)."""
        return self.library.random_tuples(num, rng)

    @property
    def dimension(self) -> TensorType:
        """Components of the reaction, C."""
        return tf.constant(len(self.library.counts))

    @property
    def has_bounds(self) -> bool:
        return False

    @property
    def lower(self) -> TensorType:
        raise AttributeError("a make-on-demand space has no numerical bounds")

    @property
    def upper(self) -> TensorType:
        raise AttributeError("a make-on-demand space has no numerical bounds")

    def sample(self, num_samples: int, seed: Optional[int] = None) -> TensorType:
        """``num_samples`` tuples [num_samples, C] whose products exist and are distinct molecules
        (by canonical SMILES: two tuples that make one product are one candidate), uniform over
        the usable reagents of each component; ``seed`` makes the draw repeatable (else NumPy's
        global generator seeds it).

        :raise ValueError: If 100 rounds of draws found fewer (a space of few products), saying
            how many distinct tuples were tried and how many of them made no product.
        """
        rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
        points = distinct_products(
            num_samples,
            lambda num: self.library.random_tuples(num, rng),
            self.library.products,
        )
        return tf.constant(points.astype(np.float64).reshape(-1, len(self.library.counts)))

    def features(self, points: TensorType) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``points`` [N, C] whose products exist [K] and their packed fingerprints
        [K, ceil(W / 8)] (:meth:`~.library.ComponentLibrary.fingerprints`; the last
        ``cache_size`` tuples' rows are kept): the space's one features API (unpacked:
        :meth:`~.featurised.FeatureRows.of`)."""
        indices = np.rint(np.asarray(points)).astype(np.int64).reshape(-1, len(self.library.counts))
        keys = [tuple(row) for row in indices.tolist()]
        fresh: dict[tuple[int, ...], np.ndarray] = {}
        missing = [i for i, key in enumerate(keys) if key not in self._rows]
        if missing:
            kept, packed = self.library.fingerprints(indices[missing], self.fingerprint)
            # each row copied: a view would keep the whole request's array alive as long as any
            # one of its rows stays cached (the cache then held 2-3 times its rows' bytes:
            # benchmarks/results/design_measurements.md)
            fresh = {keys[i]: row.copy() for i, row in zip(np.asarray(missing)[kept], packed)}
        rows = [fresh[key] if key in fresh else self._rows.get(key) for key in keys]
        for key, row in fresh.items():
            self._rows.put(key, row)
        found = [(i, row) for i, row in enumerate(rows) if row is not None]
        empty = np.zeros((0, -(-self.width // 8)), dtype=np.uint8)
        packed = np.stack([row for _, row in found]) if found else empty
        return np.array([i for i, _ in found], dtype=np.int64), packed

    def _contains(self, value: TensorType) -> TensorType:
        """Whether each row of ``value`` [..., C] is a tuple of reagent indices (whole numbers
        below the counts). A tuple whose reaction fails is a point of the space that has no
        product: its evaluation fails."""
        whole = tf.equal(value, tf.round(value))
        inside = tf.logical_and(value >= 0.0, value < tf.cast(self._counts, value.dtype))
        return tf.reduce_all(tf.logical_and(whole, inside), axis=-1)

    def product(self, other: MakeOnDemandSpace) -> MakeOnDemandSpace:
        """Not supported (as Trieste's spaces that have no same-type product): a make-on-demand
        space is a search space of its own.

        :raise TypeError: Always.
        """
        raise TypeError("a make-on-demand space cannot be multiplied with another")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MakeOnDemandSpace):
            return NotImplemented
        mine, theirs = self.library, other.library
        return (
            mine.reaction == theirs.reaction
            and [r.smiles for r in mine.reagents] == [r.smiles for r in theirs.reagents]
            and self.fingerprint == other.fingerprint
        )

    def __hash__(self) -> int:
        return hash((self.library.reaction, self.library.counts, self.fingerprint))

    def __repr__(self) -> str:
        counts = " x ".join(str(n) for n in self.library.counts)
        return f"MakeOnDemandSpace({counts} = {self.library.size:.3g} reagent tuples)"


def distinct_products(
    num: int,
    draw: Callable[[int], np.ndarray],
    products: Callable[[np.ndarray], list[Optional[str]]],
) -> np.ndarray:
    """``num`` points whose products exist and are distinct molecules (by canonical SMILES: two
    points that make one product are one candidate), in the order drawn: each of up to 100
    rounds draws twice as many points as are missing (``draw(n)``: [n, D]) and keeps those that
    make a new product (``products``, ``None`` where none) [num, D].

    :raise ValueError: If the rounds found fewer, saying how many distinct points were tried and
        how many of them made no product.
    """
    found: dict[str, np.ndarray] = {}  # product -> the first point that made it
    tried: dict[tuple[float, ...], Optional[str]] = {}
    for _ in range(100):
        missing = num - len(found)
        if missing <= 0:
            break
        rows = draw(2 * missing)
        fresh = list({tuple(row): row for row in rows if tuple(row) not in tried}.values())
        made = products(np.array(fresh)) if fresh else []
        tried.update((tuple(row), smiles) for row, smiles in zip(fresh, made))
        for row in rows:
            smiles = tried[tuple(row)]
            if smiles is not None and smiles not in found and len(found) < num:
                found[smiles] = row
    if len(found) < num:
        failed = sum(smiles is None for smiles in tried.values())
        raise ValueError(
            f"asked for {num} distinct products, found {len(found)}: {failed} of the "
            f"{len(tried)} reagent tuples tried made no product"
        )
    return np.stack(list(found.values()))
