"""Reagent files: the building blocks of one component of a make-on-demand reaction
(:mod:`.reaction`).

Two formats are read, optionally gzipped: Walters' ``.smi`` (``SMILES name`` a line, as in his
reagent-level Thompson sampling, GitHub ``PatWalters/TS``; the name is the rest of the line,
spaces kept), and a CSV with ``smiles`` and ``name`` columns (any case; other columns are
ignored). A ``.smi`` line without a name is named by its line number (``L12``).

What is refused, naming the file and the line (:class:`~trieste_scalable.errors.UsageError`): a
file that cannot be read, one with no reagent, a SMILES that does not parse, a name given twice or
holding :data:`SEPARATOR` (a product is named by its reagents' names joined by it). A reagent whose
canonical SMILES repeats an earlier one's is dropped, with one warning for the file: its products
would all be products already listed (Walters' ``primary_amines_ok.smi`` holds three such repeats).
A reagent with unpaired electrons (a radical, such as 35 of Walters' amines and 23 of his acids) is
left out, with one warning for the file, unless kept on request: its products would be radicals
too, which a chemist cannot order. Each reagent's molecule is parsed from its canonical SMILES, so
the site a reagent reacts at does not depend on how its SMILES was written (:mod:`.reaction`).
"""

from __future__ import annotations

import csv
import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import UsageError
from ..files import text_file

_log = logging.getLogger(__name__)

SEPARATOR = "|"
"""What joins the reagents' names into a product's name (``A|B|C``); no reagent name holds it."""


@dataclass(frozen=True)
class Reagents:
    """The reagents of one component: canonical SMILES, names and RDKit molecules, in the file's
    order (repeats dropped).

    :ivar path: The file read.
    :ivar smiles: Canonical SMILES [R].
    :ivar names: Names [R], distinct.
    :ivar molecules: RDKit molecules [R].
    """

    path: Path
    smiles: tuple[str, ...]
    names: tuple[str, ...]
    molecules: tuple[Any, ...]

    def __len__(self) -> int:
        return len(self.smiles)

    def index_of(self, name: str) -> Optional[int]:
        """The index of the reagent called ``name``, ``None`` if none is."""
        return self._by_name.get(name)

    @functools.cached_property
    def _by_name(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}


def read_reagents(path: Path | str, *, keep_radicals: bool = False) -> Reagents:
    """The reagents of ``path`` (module docstring); ``keep_radicals`` keeps those with unpaired
    electrons.

    :raise UsageError: Naming the file, and the line where there is one: unreadable, empty, a
        SMILES that does not parse, a name given twice.
    """
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # stubs miss it
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"reagent file {path} is a directory: give one file a component")
    if not path.is_file():
        raise UsageError(f"reagent file {path} does not exist")
    smiles: list[str] = []
    names: list[str] = []
    molecules: list[Any] = []
    first_line: dict[str, int] = {}  # canonical SMILES and names: the line they were first on
    repeats: list[str] = []
    radicals: list[str] = []
    for line, text, name in _entries(path):
        molecule = Chem.MolFromSmiles(text)
        if molecule is None:
            raise UsageError(f"{path}, line {line}: the SMILES {text!r} does not parse")
        if SEPARATOR in name:
            raise UsageError(
                f"{path}, line {line}: the name {name!r} holds {SEPARATOR!r}, which joins the "
                "reagents' names into a product's"
            )
        if f"name:{name}" in first_line:
            raise UsageError(
                f"{path}, line {line}: the name {name!r} is given to line "
                f"{first_line[f'name:{name}']} too (products are named by their reagents)"
            )
        canonical = Chem.MolToSmiles(molecule)
        if canonical in first_line:
            repeats.append(f"line {line}: {text} is the reagent of line {first_line[canonical]}")
            continue
        first_line[canonical], first_line[f"name:{name}"] = line, line
        if not keep_radicals and has_radical(molecule):
            radicals.append(f"line {line}: {text} {name}")
            continue
        smiles.append(canonical)
        names.append(name)
        molecules.append(Chem.MolFromSmiles(canonical))
    if repeats:
        many = len(repeats) > 1
        _log.warning(
            f"{path}: {len(repeats)} reagent{'s' * many} repeat{'s' * (not many)} an earlier one"
            f", used once ({_some(repeats)})"
        )
    if radicals:
        _log.warning(
            f"{path}: {len(radicals)} reagent{'s' * (len(radicals) > 1)} with unpaired electrons "
            f"left out, their products being radicals ({_some(radicals)}; --keep-radicals keeps "
            "them)"
        )
    if not smiles:
        left = " but radicals (--keep-radicals keeps them)" if radicals else ""
        raise UsageError(f"reagent file {path} holds no reagent{left}")
    return Reagents(path, tuple(smiles), tuple(names), tuple(molecules))


def has_radical(molecule: Any) -> bool:
    """Whether an RDKit molecule has an atom with unpaired electrons."""
    return any(atom.GetNumRadicalElectrons() for atom in molecule.GetAtoms())


def _some(lines: list[str]) -> str:
    """The first three of ``lines`` and how many more."""
    return "; ".join(lines[:3]) + (f" and {len(lines) - 3} more" if len(lines) > 3 else "")


def _entries(path: Path) -> list[tuple[int, str, str]]:
    """(line number, SMILES, name) of each reagent line of ``path``.

    :raise UsageError: If it cannot be read, or a CSV has no ``smiles`` column.
    """
    with text_file(path, "reagent file") as handle:
        if path.name.removesuffix(".gz").endswith(".csv"):
            rows = list(csv.reader(handle))
            if not rows:
                return []
            lower = [column.strip().lower() for column in rows[0]]
            if "smiles" not in lower:
                raise UsageError(f"{path} has no 'smiles' column (columns: {rows[0]})")
            at, named = lower.index("smiles"), lower.index("name") if "name" in lower else None
            return [
                (n, row[at].strip(), row[named].strip() if named is not None else f"L{n}")
                for n, row in enumerate(rows[1:], start=2)
                if len(row) > at and row[at].strip()
            ]
        entries = []
        for n, text in enumerate(handle, start=1):
            fields = text.strip().split(maxsplit=1)  # the name: the rest of the line
            if fields:
                entries.append((n, fields[0], fields[1].strip() if len(fields) > 1 else f"L{n}"))
        return entries
