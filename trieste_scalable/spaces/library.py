"""What every make-on-demand library shares, whatever makes its products: components of
building blocks (:class:`~.reagents.Reagents`), a product named by a tuple of their indices, one
per component, made when asked for and written as canonical SMILES, and the tuples that fail
remembered. A reaction SMARTS (:class:`~.reaction.ReactionLibrary`) and a vendor's synthons
joined at their link atoms (:class:`~.synthons.SynthonReaction`) are the two ways to make one.

A tuple whose building blocks join into nothing, a product RDKit cannot sanitise, or one with
unpaired electrons (a radical: no compound to order) *fails*: it is remembered
(:attr:`ComponentLibrary.failed`, its reason counted in :attr:`ComponentLibrary.failures`) and
never made again. Memory grows with the tuples asked about (a bounded cache of products, the
failures), never with the library's size.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional, Sequence

import numpy as np

from .lru import LRUCache
from .product_workers import ProductWorkers
from .reagents import SEPARATOR, Reagents, has_radical

PRODUCT_CACHE = 200_000
"""Products kept in memory by default (canonical SMILES by tuple; about 30 MB)."""


class ComponentLibrary:
    """The products of one tuple of building blocks a component (module docstring); a subclass
    says how they join (``_joined``).

    :param name: What makes the products (a reaction SMARTS or id), for the space's identity.
    :param reagents: One list of building blocks per component.
    :param usable: The building blocks of each component that can make a product [R_k].
    :param cache_size: Products kept in memory (least recently asked dropped first).
    :param workers: Processes that make products for :meth:`fingerprints`
        (:class:`~.product_workers.ProductWorkers`; ``None``: one a core).
    """

    def __init__(
        self,
        name: str,
        reagents: Sequence[Reagents],
        usable: Sequence[np.ndarray],
        cache_size: int = PRODUCT_CACHE,
        workers: Optional[int] = None,
    ):
        self.reaction = name
        self.reagents = tuple(reagents)
        self.usable = tuple(usable)
        self.failed: set[tuple[int, ...]] = set()
        """Tuples that failed: never made, sampled or proposed again."""
        self.failures: Counter[str] = Counter()
        """How many tuples failed for each reason: ``no product``, ``not sanitisable`` or
        ``radical``."""
        self._products: LRUCache[tuple[int, ...], str] = LRUCache(cache_size)
        self._workers = ProductWorkers(workers)

    def __getstate__(self) -> dict[str, Any]:
        """The library a worker process gets: no caches, no workers of its own."""
        state = dict(self.__dict__)
        state.update(failed=set(), failures=Counter(), _products=LRUCache(self._products.size))
        state["_workers"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._workers = ProductWorkers(1)

    @property
    def counts(self) -> tuple[int, ...]:
        """Building blocks of each component [C]."""
        return tuple(len(r) for r in self.reagents)

    @property
    def size(self) -> int:
        """Products in the library: the product of the counts (Python's ``int``)."""
        return math.prod(self.counts)

    def ambiguities(self) -> list[str]:
        """Lines saying what is ambiguous about how products are made (none here)."""
        return []

    def reagent_names(self, index: Sequence[int]) -> list[str]:
        """The names of the tuple's building blocks, one a component."""
        return [r.names[int(i)] for r, i in zip(self.reagents, index)]

    def name(self, index: Sequence[int]) -> str:
        """The product's name: its building blocks' names joined by
        :data:`~.reagents.SEPARATOR`, which no name holds (so two products never share one)."""
        return SEPARATOR.join(self.reagent_names(index))

    def product(self, index: Sequence[int]) -> Optional[str]:
        """The canonical SMILES of the tuple's product, or ``None`` if it fails.

        :raise ValueError: On a tuple that is not one index a component.
        """
        key = self._key(index)
        if key in self.failed:
            return None
        made = self._products.get(key)
        if made is None:
            reason, made, _ = self.made(key)
            if not self._remember(key, reason, made):
                return None
        return made

    def products(self, indices: np.ndarray) -> list[Optional[str]]:
        """:meth:`product` of each row of ``indices`` [N, C]."""
        return [self.product(row) for row in np.asarray(indices)]

    def fingerprints(
        self, indices: np.ndarray, settings: tuple[str, int, int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``indices`` [N, C] whose products exist [K] and those products' packed
        fingerprints [K, ceil(W / 8)], ``settings`` being the fingerprint's kind, radius and size
        (:func:`~trieste_scalable.chemistry.molecules.fingerprints` of the product as made,
        on every core: :mod:`~.product_workers`). No SMILES is written: a search scores
        thousands of products an ask and proposes a hundred, and writing each one's canonical
        SMILES was 41 % of making it (:meth:`product` writes those asked for).
        Stereocentres are features (``chirality``): products are distinct by canonical SMILES,
        and Walters' reagent lists hold many stereoisomers, which would otherwise share a
        fingerprint and be one candidate to a model (``design_measurements.md``)."""
        keys = [self._key(row) for row in np.asarray(indices)]
        tried = [key for key in dict.fromkeys(keys) if key not in self.failed]  # each once
        made = self._workers.make(self, tried, settings)
        found = [key for key, reason in zip(tried, made.reasons) if self._remember(key, reason)]
        row_of = {key: row for row, key in enumerate(found)}
        kept = [i for i, key in enumerate(keys) if key in row_of]
        return np.array(kept, dtype=np.int64), made.packed[[row_of[keys[i]] for i in kept]]

    def random_tuples(self, num: int, rng: np.random.Generator) -> np.ndarray:
        """``num`` tuples [num, C] drawn uniformly among the usable building blocks of each
        component (repeats and failing tuples possible: the caller filters them)."""
        columns = [usable[rng.integers(usable.size, size=num)] for usable in self.usable]
        return np.stack(columns, axis=1).astype(np.int64)

    def _key(self, index: Sequence[int]) -> tuple[int, ...]:
        key = tuple(int(i) for i in index)
        if len(key) != len(self.reagents) or any(not 0 <= i < n for i, n in zip(key, self.counts)):
            raise ValueError(f"{key} is not a tuple of reagent indices below {self.counts}")
        return key

    def _joined(self, key: tuple[int, ...]) -> Optional[Any]:
        """The tuple's product as an RDKit molecule, not yet sanitised, or ``None`` if its
        building blocks join into nothing."""
        raise NotImplementedError

    def made(
        self, key: tuple[int, ...], written: bool = True
    ) -> tuple[Optional[str], str, Optional[Any]]:
        """What ``key`` makes, not remembered: (``None``, its canonical SMILES, the sanitised
        molecule), or (the reason it fails, ``""``, ``None``); without ``written``, the SMILES
        is left ``""`` (not written)."""
        from rdkit import Chem

        molecule = self._joined(key)
        if molecule is None:
            return "no product", "", None
        try:
            Chem.SanitizeMol(molecule)
        except ValueError:  # RDKit's sanitisation errors derive from ValueError
            return "not sanitisable", "", None
        if has_radical(molecule):
            return "radical", "", None
        if not written:
            return None, "", molecule
        smiles = Chem.MolToSmiles(molecule)
        if any(mark in smiles for mark in "@/\\"):
            # with stereo, written, read and written again: RDKit's first canonical SMILES of a
            # ring stereo product (a 1,4-disubstituted cyclohexane) can depend on how it was
            # built, its second never does, so one molecule made two ways has one name
            smiles = str(Chem.CanonSmiles(smiles))
        return None, smiles, molecule

    def _remember(self, key: tuple[int, ...], reason: Optional[str], smiles: str = "") -> bool:
        """Keeps what ``key`` made (its SMILES where written, or that it failed and why);
        whether it made a product."""
        if reason is not None:
            self.failed.add(key)
            self.failures[reason] += 1
            return False
        if smiles:
            self._products.put(key, smiles)
        return True
