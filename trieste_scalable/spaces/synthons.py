"""Vendors' synthon files: the format Enamine, Chemspace and their like ship make-on-demand
catalogs of many reactions in, and RDKit's ``rdSynthonSpaceSearch.SynthonSpace.ReadTextFile``
reads.

One synthon a line: a SMILES whose link atoms (``[U]``, ``[Np]``, ``[Pu]``, ``[Am]``) mark where
it joins the synthons of the other components of its reaction, its id, its component (``1``,
``synton_2``, ...) and its reaction id; tab-, comma- or space-separated, with or without a
header, gzipped or not, ``#`` lines skipped. A product is one synthon a component of one
reaction, joined at the link atoms of the same element (RDKit's ``molzip``: the bond order is
that of the link bonds), sanitised and written as canonical SMILES, the same products
``SynthonSpace.WriteEnumeratedFile`` writes. Its name is its synthons' ids joined by
:data:`~.reagents.SEPARATOR` (RDKit writes them joined by ``;`` with the reaction id).

Each reaction is a :class:`~.library.ComponentLibrary`, so a
:class:`~.search_space.MakeOnDemandSpace` and everything built on it (the featurised model, the
pool rule) searches it as it searches a reaction SMARTS's products.

What is refused, naming the file and the line (:class:`~trieste_scalable.errors.UsageError`): a
file in neither format (fewer than four fields), a SMILES that does not parse, a synthon without
a link atom, an id given twice in one component of a reaction, a reaction whose components are
not numbered one after another (an empty component), a link atom that no other component of its
reaction carries, and a reaction split over two files.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import UsageError
from ..files import text_file
from .library import PRODUCT_CACHE, ComponentLibrary
from .reagents import SEPARATOR, Reagents

CHEMSPACE_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "synthons" / "Syntons_5567.csv.gz"
"""Chemspace's synthon-space sample, shipped: 10 reactions, 995,916 products
(``data/synthons/README.md``)."""

LINK_ATOMS = ("U", "Np", "Pu", "Am")
"""The elements that mark a synthon's links, as the vendors and RDKit write them."""


@dataclass(frozen=True)
class _Synthon:
    """One line of a synthon file."""

    line: int
    smiles: str
    id: str
    component: int
    molecule: Any
    links: frozenset[str]


class SynthonReaction(ComponentLibrary):
    """The products of one reaction of a synthon file (module docstring): one
    :class:`~.reagents.Reagents` a component, its names the synthons' ids.

    :param reaction: The reaction's id.
    :param components: Its synthons, one list a component, in the components' order.
    :param cache_size: Products kept in memory.
    :param workers: Processes that make products (:class:`~.library.ComponentLibrary`).
    """

    def __init__(
        self,
        reaction: str,
        components: Sequence[Reagents],
        *,
        cache_size: int = PRODUCT_CACHE,
        workers: Optional[int] = None,
    ):
        usable = [np.arange(len(component)) for component in components]
        super().__init__(reaction, components, usable, cache_size=cache_size, workers=workers)

    def _joined(self, key: tuple[int, ...]) -> Optional[Any]:
        """The tuple's synthons joined at their link atoms; ``None`` where a link is left."""
        from rdkit import Chem

        combined = self.reagents[0].molecules[key[0]]
        for component, i in zip(self.reagents[1:], key[1:]):
            combined = Chem.CombineMols(combined, component.molecules[i])
        joined = Chem.molzip(combined, _zip_parameters())
        if any(atom.GetSymbol() in LINK_ATOMS for atom in joined.GetAtoms()):
            return None
        return joined


def read_synthon_files(paths: Sequence[Path | str]) -> dict[str, SynthonReaction]:
    """Every reaction of the synthon files ``paths``, by reaction id, in the order first read
    (module docstring).

    :raise UsageError: Naming the file and the line of the first bad entry.
    """
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # stubs miss it
    reactions: dict[str, SynthonReaction] = {}
    read_in: dict[str, Path] = {}
    for path in map(Path, paths):
        for reaction, synthons in _read(path).items():
            if reaction in reactions:
                raise UsageError(
                    f"{path}: the reaction {reaction} is in {read_in[reaction]} too: give each "
                    "reaction's synthons in one file"
                )
            reactions[reaction] = SynthonReaction(reaction, _components(path, reaction, synthons))
            read_in[reaction] = path
    return reactions


def _read(path: Path) -> dict[str, list[_Synthon]]:
    """The synthons of each reaction of ``path``, checked line by line."""
    from rdkit import Chem

    if not path.is_file():
        raise UsageError(f"synthon file {path} does not exist")
    by_reaction: dict[str, list[_Synthon]] = defaultdict(list)
    with text_file(path, "synthon file") as handle:
        lines = [(n, text.strip()) for n, text in enumerate(handle, start=1)]
    lines = [(n, text) for n, text in lines if text and not text.startswith("#")]
    if lines and lines[0][1].lower().startswith("smiles"):
        lines = lines[1:]  # the header
    for line, text in lines:
        delimiter = "\t" if "\t" in text else "," if "," in text else None  # None: spaces
        fields = [field.strip() for field in text.split(delimiter)]
        if len(fields) < 4:
            raise UsageError(
                f"{path}, line {line}: {len(fields)} fields; a synthon file has a SMILES, a "
                "synthon id, its component and its reaction id a line"
            )
        smiles, synthon, role, reaction = fields[:4]
        component = re.search(r"(\d+)$", role)
        if component is None:
            raise UsageError(f"{path}, line {line}: the component {role!r} has no number")
        molecule = Chem.MolFromSmiles(smiles)
        if molecule is None:
            raise UsageError(f"{path}, line {line}: the SMILES {smiles!r} does not parse")
        links = frozenset(a.GetSymbol() for a in molecule.GetAtoms()) & set(LINK_ATOMS)
        if not links:
            raise UsageError(f"{path}, line {line}: {smiles} has no link atom {LINK_ATOMS}")
        if SEPARATOR in synthon:
            raise UsageError(f"{path}, line {line}: the id {synthon!r} holds {SEPARATOR!r}")
        entry = _Synthon(line, smiles, synthon, int(component.group(1)), molecule, links)
        by_reaction[reaction].append(entry)
    if not by_reaction:
        raise UsageError(f"synthon file {path} holds no synthon")
    return dict(by_reaction)


def _components(path: Path, reaction: str, synthons: list[_Synthon]) -> list[Reagents]:
    """The reaction's components in order, checked: numbered one after another, ids once a
    component, each link atom carried by at least two components."""
    from rdkit import Chem

    numbers = sorted({s.component for s in synthons})
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))) or len(numbers) < 2:
        raise UsageError(
            f"{path}: the reaction {reaction} has components {numbers}: it needs two or more, "
            "numbered one after another (a component with no synthon makes no product)"
        )
    carriers: dict[str, set[int]] = defaultdict(set)
    for synthon in synthons:
        for link in synthon.links:
            carriers[link].add(synthon.component)
    components = []
    for number in numbers:
        mine = [s for s in synthons if s.component == number]
        first: dict[str, int] = {}
        for synthon in mine:
            if synthon.id in first:
                raise UsageError(
                    f"{path}, line {synthon.line}: the synthon id {synthon.id} is given to line "
                    f"{first[synthon.id]} too, in component {number} of reaction {reaction}"
                )
            first[synthon.id] = synthon.line
            alone = sorted(link for link in synthon.links if len(carriers[link]) < 2)
            if alone:
                raise UsageError(
                    f"{path}, line {synthon.line}: the link atom [{alone[0]}] of {synthon.smiles} "
                    f"is carried by no other component of reaction {reaction}"
                )
        canonical = tuple(Chem.MolToSmiles(s.molecule) for s in mine)
        molecules = tuple(Chem.MolFromSmiles(smiles) for smiles in canonical)
        components.append(Reagents(path, canonical, tuple(s.id for s in mine), molecules))
    return components


def _zip_parameters() -> Any:
    """``molzip`` joining link atoms of the same element."""
    from rdkit import Chem

    parameters = Chem.MolzipParams()
    parameters.label = Chem.MolzipLabel.AtomType
    parameters.setAtomSymbols(list(LINK_ATOMS))
    return parameters
