"""Products of a catalog's synthon reactions similar to given molecules, in any reaction, found by
RDKit's ``SynthonSpace.FingerprintSearch`` without enumerating the catalog. The pool rule
(:class:`~.pool_rule.MakeOnDemandPoolRule`) scores those like its best evaluated products with
the model's bound beside the products its searches score, so a product near the best found can
enter a batch's pool from a reaction no search is in.

Similarity here is the chemist's: Tanimoto on Morgan bits of radius 2 over 2,048 bits (ECFP4),
whatever fingerprint the model uses, because RDKit's search is built on fingerprints that add
up over synthons, which Morgan's do (with atom pairs it missed a query's own product in our
trials). What is heuristic: RDKit screens the synthons' fragment sets with an approximate
bound before it builds products, so the hits are products at least ``cutoff`` similar to the
query, exactly, but not necessarily all of them, and not necessarily the most similar
``max_hits`` of them.

RDKit fragments the query in every way it could have been made (up to four pieces): for a large
molecule that is millions of fragment sets, gigabytes and tens of seconds, and RDKit's own bound
on them (``maxNumFrags``) does not bound either. Measured on Chemspace's sample: a drug-like
query (QED's best, 21 heavy atoms) takes 0.4 s and finds its 256 hits; the docking surrogate's
best (94 and 109 heavy atoms) took 18 and 31 s and 3.2 GB, one of 59 atoms 7 s. So a query of
more than :data:`MAX_QUERY_ATOMS` heavy atoms finds nothing, without a search: a rule that picks
the same products on any machine, where a time limit would not. RDKit's ``timeOut`` is set to
:data:`TIME_LIMIT` only as a safety valve no query below the size limit came near.

RDKit reads synthons from its text format only; the catalog's synthons (already read and
checked, :mod:`~.synthons`) are written once to a temporary file in it, read back and removed.
The fingerprints of the synthons are built at the first query (seconds for Chemspace's sample,
once a campaign).
"""

from __future__ import annotations

import importlib
import logging
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .catalog_space import CatalogSpace
from .lru import LRUCache
from .synthons import SynthonReaction

_log = logging.getLogger(__name__)

MAX_QUERY_ATOMS = 50
"""The most heavy atoms of a query searched (drug-like molecules have up to about 35)."""
TIME_LIMIT = 60
"""RDKit's ``timeOut`` of a query, a safety valve (whole seconds)."""


class SimilarProducts:
    """Points of ``catalog`` whose products are similar to given molecules (module docstring).

    :param catalog: The catalog searched: its synthon reactions (a reaction SMARTS's products
        are never hits).
    :param max_hits: Most hits a query.
    :param cutoff: Least Tanimoto similarity of a hit to its query.
    :param cache_size: Queries whose hits are kept (a best product is asked about again and
        again).
    :raise ValueError: If the catalog has no synthon reaction, ``max_hits`` is below 1 or
        ``cutoff`` is outside (0, 1].
    """

    def __init__(
        self,
        catalog: CatalogSpace,
        *,
        max_hits: int = 256,
        cutoff: float = 0.45,
        cache_size: int = 256,
    ):
        self._reactions = {
            catalog.reaction_ids[r]: r
            for r, library in enumerate(catalog.libraries)
            if isinstance(library, SynthonReaction)
        }
        if not self._reactions:
            raise ValueError("the catalog has no synthon reaction to search for similar products")
        if max_hits < 1 or not 0 < cutoff <= 1:
            raise ValueError(f"need max_hits >= 1 and 0 < cutoff <= 1: {max_hits}, {cutoff}")
        self._catalog, self._max_hits, self._cutoff = catalog, max_hits, cutoff
        self._cache: LRUCache[str, np.ndarray] = LRUCache(cache_size)
        self._space: Optional[Any] = None
        self._generator: Optional[Any] = None

    def __call__(self, queries: Sequence[str]) -> np.ndarray:
        """The points [N, 1 + C_max] of products similar to each SMILES of ``queries``, the most
        similar to the first query first, each point once (a query's own product included)."""
        found = [self._hits(smiles) for smiles in queries]
        points = np.concatenate([np.zeros((0, int(self._catalog.dimension))), *found])
        _, first = np.unique(points, axis=0, return_index=True)
        return points[np.sort(first)]

    def _hits(self, smiles: str) -> np.ndarray:
        """The points of one query's hits [N_q, 1 + C_max], most similar first."""
        from rdkit import Chem

        cached = self._cache.get(smiles)
        if cached is not None:
            return cached
        query = Chem.MolFromSmiles(smiles)
        if query is None:
            raise ValueError(f"the query {smiles!r} does not parse")
        if query.GetNumHeavyAtoms() > MAX_QUERY_ATOMS:  # too large to fragment (module docstring)
            nothing = self._points([])
            self._cache.put(smiles, nothing)
            return nothing
        parameters = _synthon_search().SynthonSpaceSearchParams()
        parameters.maxHits, parameters.similarityCutoff = self._max_hits, self._cutoff
        parameters.timeOut = TIME_LIMIT
        space, generator = self._synthon_space()
        hits = space.FingerprintSearch(query, generator, parameters).GetHitMolecules()
        points = self._points([hit.GetProp("_Name") for hit in hits])
        self._cache.put(smiles, points)
        return points

    def _points(self, names: list[str]) -> np.ndarray:
        """The catalog's points [N, 1 + C_max] of RDKit's hit names (``id;id;...;reaction``)."""
        rows = [np.zeros((0, int(self._catalog.dimension)))]
        for name in names:
            *ids, reaction = name.split(";")
            r = self._reactions.get(reaction)
            if r is None:
                continue
            components = self._catalog.libraries[r].reagents
            tuple_ = [component.index_of(i) for component, i in zip(components, ids)]
            if len(ids) == len(components) and None not in tuple_:
                rows.append(self._catalog.points(r, np.array([tuple_])))
        return np.concatenate(rows)

    def _synthon_space(self) -> tuple[Any, Any]:
        """RDKit's ``SynthonSpace`` of the catalog's synthon reactions, its fingerprints built,
        and the fingerprint generator (made once)."""
        from rdkit.Chem import rdFingerprintGenerator

        if self._space is None:
            generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
            started = time.perf_counter()
            space = _synthon_search().SynthonSpace()
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "synthons.txt"
                path.write_text(self._synthon_text())
                space.ReadTextFile(str(path))
            space.BuildSynthonFingerprints(generator)
            self._space, self._generator = space, generator
            _log.info(
                f"similar products: RDKit's synthon space of {len(self._reactions)} reactions "
                f"built in {time.perf_counter() - started:.1f} s"
            )
        return self._space, self._generator

    def _synthon_text(self) -> str:
        """The catalog's synthon reactions in RDKit's text format: a header, then one synthon a
        line (SMILES, id, component from 1, reaction id), tab-separated."""
        lines = ["SMILES\tsynton_id\tsynton#\treaction_id"]
        for reaction, r in self._reactions.items():
            for number, component in enumerate(self._catalog.libraries[r].reagents, start=1):
                lines.extend(
                    f"{smiles}\t{name}\t{number}\t{reaction}"
                    for smiles, name in zip(component.smiles, component.names)
                )
        return "\n".join(lines) + "\n"


def _synthon_search() -> Any:
    """RDKit's ``rdSynthonSpaceSearch``, imported by name: its stub (RDKit 2026.09) is not valid
    Python and stops mypy wherever it is followed."""
    return importlib.import_module("rdkit.Chem.rdSynthonSpaceSearch")
