"""A make-on-demand space of one reaction: a reaction SMARTS and one reagent list per component,
whose products (up to 10^10 and more) are made with RDKit when asked for, never enumerated
(what every such library shares: :mod:`~trieste_scalable.spaces.library`).

A product is named by a tuple of reagent indices, one per component, in the order of the
reaction's reactant templates (the order of the reagent files). It is made as Walters' reagent
Thompson sampling makes it (GitHub ``PatWalters/TS``): ``RunReactants`` on the tuple's reagents,
the first product of the first match, sanitised; it is then written as canonical SMILES. So a
tuple is one candidate, one molecule: a reagent that matches its template at several sites
reacts at the first match RDKit finds in its canonical SMILES (the same however its SMILES was
written), and a reaction with several product templates keeps the first; both are said at start
(:meth:`ReactionLibrary.ambiguities`). Making every distinct product a candidate of its own
would give one tuple several molecules, and the model one point several values. A tuple whose
reaction yields nothing fails (:class:`~.library.ComponentLibrary`).

Reagents that do not match their component's template can make no product: they are counted in
the library's size (as Walters counts them) but never drawn
(:meth:`~.library.ComponentLibrary.random_tuples`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import UsageError
from .library import PRODUCT_CACHE, ComponentLibrary
from .reagents import Reagents


class ReactionLibrary(ComponentLibrary):
    """A reaction and its reagent lists (module docstring).

    :param reaction: Reaction SMARTS with one reactant template per component.
    :param reagents: One reagent list per component (:func:`~.reagents.read_reagents`).
    :param cache_size: Products kept in memory (least recently asked dropped first).
    :param workers: Processes that make products (:class:`~.library.ComponentLibrary`).
    :raise UsageError: On a SMARTS that does not parse, a number of reagent lists other than the
        reaction's templates, or a component none of whose reagents matches its template (the
        reaction yields nothing).
    """

    def __init__(
        self,
        reaction: str,
        reagents: Sequence[Reagents],
        *,
        cache_size: int = PRODUCT_CACHE,
        workers: Optional[int] = None,
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
        self._reaction = parsed
        matches = [_matches(parsed.GetReactantTemplate(k), r) for k, r in enumerate(reagents)]
        self._sites = matches
        super().__init__(
            reaction,
            reagents,
            [np.flatnonzero(n) for n in matches],
            cache_size=cache_size,
            workers=workers,
        )

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

    def _joined(self, key: tuple[int, ...]) -> Optional[Any]:
        """``RunReactants`` on the tuple's reagents: the first product of the first match."""
        reactants = [r.molecules[i] for r, i in zip(self.reagents, key)]
        made = self._reaction.RunReactants(reactants, 1)
        return made[0][0] if made else None


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
