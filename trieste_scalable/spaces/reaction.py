"""A make-on-demand space: a reaction SMARTS and one reagent list per component, whose products
(up to 10^10 and more) are made with RDKit when asked for, never enumerated.

A product is named by a tuple of reagent indices, one per component, in the order of the
reaction's reactant templates (the order of the reagent files). It is made as Walters' reagent
Thompson sampling makes it (GitHub ``PatWalters/TS``): ``RunReactants`` on the tuple's reagents,
the first product of the first match, sanitised; it is then written as canonical SMILES. So a
tuple is one candidate, one molecule: a reagent that matches its template at several sites
reacts at the first match RDKit finds in its canonical SMILES (the same however its SMILES was
written), and a reaction with several product templates keeps the first; both are said at start
(:meth:`ReactionLibrary.ambiguities`). Making every distinct product a candidate of its own
would give one tuple several molecules, and the model one point several values.

A tuple whose reaction yields nothing, a product RDKit cannot sanitise, or one with unpaired
electrons (a radical: no compound to order) *fails*: it is remembered
(:attr:`ReactionLibrary.failed`, its reason counted in :attr:`ReactionLibrary.failures`) and
never made again. Memory grows with the tuples asked about (a bounded cache of products, the
failures), never with the library's size.

Reagents that do not match their component's template can make no product: they are counted in
the library's size (as Walters counts them) but :meth:`ReactionLibrary.random_tuples` never
draws them.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..chemistry.molecules import fingerprint_width, fingerprints
from ..errors import UsageError
from .lru import LRUCache
from .reagents import SEPARATOR, Reagents, has_radical

PRODUCT_CACHE = 200_000
"""Products kept in memory by default (canonical SMILES by tuple; about 30 MB)."""


class ReactionLibrary:
    """A reaction and its reagent lists (module docstring).

    :param reaction: Reaction SMARTS with one reactant template per component.
    :param reagents: One reagent list per component (:func:`~.reagents.read_reagents`).
    :param cache_size: Products kept in memory (least recently asked dropped first).
    :raise UsageError: On a SMARTS that does not parse, a number of reagent lists other than the
        reaction's templates, or a component none of whose reagents matches its template (the
        reaction yields nothing).
    """

    def __init__(
        self, reaction: str, reagents: Sequence[Reagents], *, cache_size: int = PRODUCT_CACHE
    ):
        from rdkit import RDLogger
        from rdkit.Chem import rdChemReactions

        RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # stubs miss it
        try:
            parsed = rdChemReactions.ReactionFromSmarts(reaction)
        except ValueError as error:
            raise UsageError(f"the reaction SMARTS {reaction!r} does not parse ({error})") from None
        if parsed is None or parsed.GetNumProductTemplates() == 0:
            raise UsageError(f"the reaction SMARTS {reaction!r} has no product")
        templates = parsed.GetNumReactantTemplates()
        if templates != len(reagents):
            raise UsageError(
                f"the reaction has {templates} reactant templates but {len(reagents)} reagent "
                "files were given: one file a template, in the templates' order"
            )
        parsed.Initialize()
        self.reaction = reaction
        self.reagents = tuple(reagents)
        self._reaction = parsed
        matches = [_matches(parsed.GetReactantTemplate(k), r) for k, r in enumerate(reagents)]
        self.usable = tuple(np.flatnonzero(counts) for counts in matches)
        self._sites = matches
        self.failed: set[tuple[int, ...]] = set()
        """Tuples whose reaction failed: never made, sampled or proposed again."""
        self.failures: Counter[str] = Counter()
        """How many tuples failed for each reason: ``no product``, ``not sanitisable`` or
        ``radical``."""
        self._products: LRUCache[tuple[int, ...], str] = LRUCache(cache_size)

    @property
    def counts(self) -> tuple[int, ...]:
        """Reagents of each component [C]."""
        return tuple(len(r) for r in self.reagents)

    @property
    def size(self) -> int:
        """Products in the library: the product of the reagent counts (Python's ``int``)."""
        return math.prod(self.counts)

    def ambiguities(self) -> list[str]:
        """A line for each component some of whose reagents match their template at more than
        one site, and for a reaction of more than one product template: what is made
        (module docstring)."""
        lines = []
        for reagents, sites in zip(self.reagents, self._sites):
            several = np.flatnonzero(sites > 1)
            if several.size:
                shown = ", ".join(reagents.smiles[i] for i in several[:3])
                match = "reagents match" if several.size > 1 else "reagent matches"
                lines.append(
                    f"{reagents.path.name}: {several.size} {match} their template at more than "
                    f"one site (e.g. {shown}); each reacts at the first match in its canonical "
                    "SMILES, as Walters' reagent TS makes it"
                )
        products = self._reaction.GetNumProductTemplates()
        if products > 1:
            lines.append(f"the reaction has {products} product templates: the first is kept")
        return lines

    def reagent_names(self, index: Sequence[int]) -> list[str]:
        """The names of the tuple's reagents, one a component."""
        return [r.names[int(i)] for r, i in zip(self.reagents, index)]

    def name(self, index: Sequence[int]) -> str:
        """The product's name: its reagents' names joined by :data:`~.reagents.SEPARATOR`,
        which no reagent name holds (so two products never share a name)."""
        return SEPARATOR.join(self.reagent_names(index))

    def product(self, index: Sequence[int]) -> Optional[str]:
        """The canonical SMILES of the tuple's product, or ``None`` if its reaction fails.

        :raise ValueError: On a tuple that is not one reagent index a component.
        """
        key = self._key(index)
        if key in self.failed:
            return None
        made = self._products.get(key)
        if made is None:
            made = self._make(key)
            if made is None:
                self.failed.add(key)
                return None
            self._products.put(key, made)
        return made

    def products(self, indices: np.ndarray) -> list[Optional[str]]:
        """:meth:`product` of each row of ``indices`` [N, C]."""
        return [self.product(row) for row in np.asarray(indices)]

    def fingerprints(
        self, indices: np.ndarray, settings: tuple[str, int, int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``indices`` [N, C] whose products exist [K] and those products' packed
        fingerprints [K, ceil(W / 8)], ``settings`` being the fingerprint's kind, radius and size
        (:func:`~trieste_scalable.chemistry.molecules.fingerprints`, of the product parsed from its
        canonical SMILES).
        Stereocentres are features (``chirality``): products are distinct by canonical SMILES,
        and Walters' reagent lists hold many stereoisomers, which would otherwise share a
        fingerprint and be one candidate to a model (``design_measurements.md``)."""
        from rdkit import Chem

        made = self.products(indices)
        kept = np.array([i for i, s in enumerate(made) if s is not None], dtype=np.int64)
        kind, radius, size = settings
        width = fingerprint_width(kind, size)
        if not kept.size:
            return kept, np.zeros((0, -(-width // 8)), dtype=np.uint8)
        molecules = [Chem.MolFromSmiles(made[i]) for i in kept]
        rows = fingerprints(molecules, kind, radius, size, chirality=True)
        return kept, np.packbits(rows, axis=1)

    def random_tuples(self, num: int, rng: np.random.Generator) -> np.ndarray:
        """``num`` tuples [num, C] drawn uniformly among the usable reagents of each component
        (repeats and failing tuples possible: the caller filters them)."""
        columns = [usable[rng.integers(usable.size, size=num)] for usable in self.usable]
        return np.stack(columns, axis=1).astype(np.int64)

    def _key(self, index: Sequence[int]) -> tuple[int, ...]:
        key = tuple(int(i) for i in index)
        if len(key) != len(self.reagents) or any(not 0 <= i < n for i, n in zip(key, self.counts)):
            raise ValueError(f"{key} is not a tuple of reagent indices below {self.counts}")
        return key

    def _make(self, key: tuple[int, ...]) -> Optional[str]:
        from rdkit import Chem

        reactants = [r.molecules[i] for r, i in zip(self.reagents, key)]
        made = self._reaction.RunReactants(reactants, 1)
        if not made:
            self.failures["no product"] += 1
            return None
        molecule = made[0][0]
        try:
            Chem.SanitizeMol(molecule)
        except ValueError:  # RDKit's sanitisation errors derive from ValueError
            self.failures["not sanitisable"] += 1
            return None
        if has_radical(molecule):
            self.failures["radical"] += 1
            return None
        return Chem.MolToSmiles(molecule)


def _matches(template: Any, reagents: Reagents) -> np.ndarray:
    """How many sites of each reagent match ``template`` [R].

    :raise UsageError: If no reagent matches (the reaction yields nothing).
    """
    sites = [len(m.GetSubstructMatches(template, maxMatches=2)) for m in reagents.molecules]
    if not any(sites):
        from rdkit import Chem

        raise UsageError(
            f"no reagent of {reagents.path} matches its reactant template "
            f"{Chem.MolToSmarts(template)!r}: the reaction yields nothing"
        )
    return np.array(sites)


REAGENTS = Path(__file__).resolve().parents[1] / "data" / "reagents"
"""Walters' reagent lists, shipped (``data/reagents/README.md``)."""

QUINAZOLINE = "N[c:4][c:3]C(O)=O.[#6:1][NH2].[#6:2]C(=O)[OH]>>[C:2]c1n[c:4][c:3]c(=O)n1[C:1]"
"""Walters' quinazoline reaction: an aminobenzoic acid, a primary amine and a carboxylic acid."""

AMIDE = "[NH2:2][#6:1].[#6:4][C:3]([OH])=O>>[NH:2]([#6:1])[C:3]([#6:4])=O"
"""Walters' amide coupling: a primary amine and a carboxylic acid."""
