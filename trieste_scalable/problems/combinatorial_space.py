"""A Trieste search space over a make-on-demand library (:mod:`.combinatorial`): its points are
tuples of reagent indices [C], as float64 rows (Trieste's points are real vectors), and a point's
features are its product's fingerprint, made on demand with the campaign's fingerprint settings.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional

import numpy as np
import tensorflow as tf
from trieste.space import SearchSpace
from trieste.types import TensorType

from .combinatorial import CombinatorialLibrary
from .molecules import fingerprint_width

FEATURE_CACHE = 200_000
"""Products whose fingerprints a space keeps (the last asked for; 150 MB at 6,144 bits)."""


class CombinatorialSearchSpace(SearchSpace):
    """The tuples of reagent indices of ``library``.

    :param library: The reaction and its reagent lists.
    :param fingerprint: The products' fingerprint: kind, radius and size
        (:func:`~trieste_scalable.problems.molecules.fingerprints`).
    """

    def __init__(
        self,
        library: CombinatorialLibrary,
        fingerprint: tuple[str, int, int],
        *,
        cache_size: int = FEATURE_CACHE,
    ):
        self.library = library
        self.fingerprint = fingerprint
        self.width = fingerprint_width(fingerprint[0], fingerprint[2])
        self._upper = tf.constant(np.array(library.counts, dtype=np.float64) - 1.0)
        self._rows: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()
        self._cache_size = cache_size

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
    def lower(self) -> TensorType:
        """Zeros [C]: the first reagent of each component."""
        return tf.zeros_like(self._upper)

    @property
    def upper(self) -> TensorType:
        """The last reagent index of each component [C]."""
        return self._upper

    @property
    def has_bounds(self) -> bool:
        return True

    def sample(self, num_samples: int, seed: Optional[int] = None) -> TensorType:
        """``num_samples`` distinct tuples whose products exist [num_samples, C] (fewer only in
        a library with fewer), uniform over the usable reagents of each component; ``seed``
        makes the draw repeatable (else NumPy's global generator seeds it)."""
        rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
        found: dict[tuple[int, ...], None] = {}
        for _ in range(100):  # each round draws what is missing, twice over
            missing = num_samples - len(found)
            if missing <= 0:
                break
            for row in self.library.random_tuples(2 * missing, rng):
                key = tuple(int(i) for i in row)
                if key not in found and self.library.product(key) is not None:
                    found[key] = None
                    if len(found) == num_samples:
                        break
        points = np.array(list(found), dtype=np.float64).reshape(-1, len(self.library.counts))
        return tf.constant(points)

    def features(self, points: TensorType) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``points`` [N, C] whose products exist [K] and their packed fingerprints
        [K, ceil(W / 8)] (:meth:`~.combinatorial.CombinatorialLibrary.fingerprints`; the last
        ``cache_size`` tuples' rows are kept)."""
        indices = np.rint(np.asarray(points)).astype(np.int64).reshape(-1, len(self.library.counts))
        keys = [tuple(row) for row in indices.tolist()]
        missing = [i for i, key in enumerate(keys) if key not in self._rows]
        if missing:
            kept, packed = self.library.fingerprints(indices[missing], self.fingerprint)
            for i, row in zip(np.asarray(missing)[kept], packed):
                self._rows[keys[i]] = row
        found = [i for i, key in enumerate(keys) if key in self._rows]
        rows = [self._rows[keys[i]] for i in found]
        for key in (keys[i] for i in found):
            self._rows.move_to_end(key)
        while len(self._rows) > self._cache_size:
            self._rows.popitem(last=False)
        bytes_a_row = -(-self.width // 8)
        packed_rows = np.stack(rows) if rows else np.zeros((0, bytes_a_row), dtype=np.uint8)
        return np.asarray(found, dtype=np.int64), packed_rows

    def feature_rows(self, points: np.ndarray) -> np.ndarray:
        """The fingerprints of ``points``' products [N, W] as 0/1 float64 (for
        :class:`~trieste_scalable.models.featurised.FeaturisedModel`).

        :raise ValueError: Naming the first point whose product does not exist.
        """
        kept, packed = self.features(points)
        if len(kept) < len(points):
            lost = sorted(set(range(len(points))) - set(kept.tolist()))[0]
            raise ValueError(f"the reagent tuple {np.asarray(points)[lost]} makes no product")
        return np.unpackbits(packed, axis=1)[:, : self.width].astype(np.float64)

    def _contains(self, value: TensorType) -> TensorType:
        """Whether each row of ``value`` [..., C] is a tuple of reagent indices (whole numbers
        within the counts). A tuple whose reaction fails is a point of the space that has no
        product: its evaluation fails."""
        whole = tf.equal(value, tf.round(value))
        inside = tf.logical_and(value >= 0.0, value <= tf.cast(self._upper, value.dtype))
        return tf.reduce_all(tf.logical_and(whole, inside), axis=-1)

    def product(self, other: CombinatorialSearchSpace) -> CombinatorialSearchSpace:
        """Not supported: a make-on-demand library is a search space of its own.

        :raise TypeError: Always.
        """
        raise TypeError("a combinatorial search space cannot be multiplied with another")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CombinatorialSearchSpace):
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
        return f"CombinatorialSearchSpace({counts} = {self.library.size:.3g} products)"
