"""A chemist's own scores as the objective: ``--objective table:FILE[:COLUMN]``.

``FILE`` is a CSV or TSV (optionally gzipped) with a header, a SMILES column (named ``smiles``,
any case) and a score column: ``COLUMN`` if given, else the first column holding a number. The
table is matched to the library by canonical SMILES (RDKit's), so a table written by another
tool, with other atom orders or aromaticity forms, finds its molecules. A library molecule the
table has no finite score for is a *failed evaluation* when a campaign picks it (a
docking that failed), never a value.

A molecule listed twice keeps its best score in the user's direction (repeated dockings of one
molecule, e.g. of several protonation states, report the best pose); how many were merged, and
how many rows had no score or an unparseable SMILES, is reported once.
"""

from __future__ import annotations

import csv
import logging
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..errors import UsageError
from ..files import text_file

_log = logging.getLogger(__name__)

PREFIX = "table:"
SHIPPED = {"enamine-10k-4unn": "enamine10k/4unn_scores.csv.gz"}
"""Score tables shipped in the package's ``data/``, by name (``table:enamine-10k-4unn``: AutoDock
Vina scores of the ``enamine-10k`` library against thymidylate kinase, PDB 4UNN, kcal/mol, lower
is better)."""
MISNAMED = {"enamine-10k-ampc": "enamine-10k-4unn"}
"""Old names of shipped tables, still read (with a ``DeprecationWarning``) so that campaigns and
scripts that used them go on: ``enamine-10k-ampc`` was never AmpC's."""


def renamed(spec: str) -> str:
    """``spec`` with a shipped table's old name (:data:`MISNAMED`) replaced by its name, with a
    ``DeprecationWarning``; any other ``spec`` as it is."""
    old = spec[len(PREFIX) :] if is_score_table(spec) else ""
    if old not in MISNAMED:
        return spec
    warnings.warn(
        f"table:{old} is table:{MISNAMED[old]} (thymidylate kinase, PDB 4UNN, not AmpC); the "
        "old name goes in 0.2",
        DeprecationWarning,
        stacklevel=3,
    )
    return PREFIX + MISNAMED[old]


def is_score_table(spec: str) -> bool:
    """Whether an ``--objective`` value names a score table."""
    return spec.startswith(PREFIX)


@dataclass(frozen=True)
class TableSpec:
    """Where a score table is and which column holds its scores (``None``: the first numeric)."""

    path: Path
    column: Optional[str] = None

    @classmethod
    def parse(cls, spec: str) -> TableSpec:
        """``table:FILE[:COLUMN]``; a ``FILE`` that itself exists wins over a split at its
        last colon.

        :raise UsageError: If the spec is not a table's, or the file does not exist.
        """
        if not is_score_table(spec):
            raise UsageError(f"expected table:FILE[:COLUMN], got {spec!r}")
        rest = renamed(spec)[len(PREFIX) :]
        if rest in SHIPPED:
            from ..chemistry.molecules import DATA

            return cls(DATA / SHIPPED[rest])
        if Path(rest).is_file():
            return cls(Path(rest))
        path, _, column = rest.rpartition(":")
        if path and Path(path).is_file() and column:
            return cls(Path(path), column)
        raise UsageError(f"score table {rest!r} is not a file (expected table:FILE[:COLUMN])")


@dataclass(frozen=True)
class ScoreTable:
    """A table's scores by canonical SMILES.

    :ivar scores: Canonical SMILES -> score (the best of its rows).
    :ivar column: The score column read.
    :ivar notes: What was merged or skipped, in words (empty if nothing was).
    """

    scores: dict[str, float]
    column: str
    notes: tuple[str, ...] = ()

    def lookup(self, canonical: Sequence[str]) -> np.ndarray:
        """Scores of molecules by canonical SMILES [N]; NaN where the table has none."""
        return np.array([self.scores.get(s, np.nan) for s in canonical], dtype=np.float64)


def read_table(spec: TableSpec, higher_is_better: bool, progress: bool = False) -> ScoreTable:
    """Read and canonicalise a score table (canonical SMILES cached in chunks on disk,
    :func:`~.featurise.map_chunks`).

    :raise UsageError: Naming the file, on a missing header, SMILES or score column, a column
        that holds no numbers, or a table with no usable row.
    """
    smiles, raw, column = _rows(spec)
    canonical = canonical_smiles(smiles, progress=progress)
    better = max if higher_is_better else min
    scores: dict[str, float] = {}
    unscored = unparsed = merged = 0
    for key, text in zip(canonical, raw):
        value = _number(text)
        if not key:
            unparsed += 1
        elif value is None:
            unscored += 1
        elif key in scores:
            merged += 1
            scores[key] = better(scores[key], value)
        else:
            scores[key] = value
    if not scores:
        raise UsageError(f"score table {spec.path} has no row with a SMILES and a finite score")
    notes = [
        f"{count} {what}"
        for count, what in (
            (merged, "rows repeat a molecule (its best score is kept)"),
            (unscored, "rows have no finite score (those molecules fail when picked)"),
            (unparsed, "rows have a SMILES RDKit cannot parse (left out)"),
        )
        if count
    ]
    return ScoreTable(scores, column, tuple(notes))


def table_scores(
    spec: str, library: Sequence[str], higher_is_better: bool, progress: bool = False
) -> np.ndarray:
    """The scores of ``library``'s SMILES [N] from the table of ``spec`` (NaN where it has
    none), with what was merged, skipped or unmatched reported on standard error.

    :raise UsageError: On a bad table (:func:`read_table`) or one that scores no molecule of
        the library.
    """
    table = read_table(TableSpec.parse(spec), higher_is_better, progress)
    values = table.lookup(canonical_smiles(library, progress=progress))
    matched = int(np.isfinite(values).sum())
    if matched == 0:
        raise UsageError(
            f"score table {spec[len(PREFIX) :]} scores none of the library's {len(library)} "
            "molecules (matched by canonical SMILES)"
        )
    notes = list(table.notes)
    if matched < len(library):
        notes.append(f"{len(library) - matched} library molecules have no score (they fail)")
    _log.warning(
        f"{spec}: column {table.column!r}, {matched} of {len(library)} molecules scored"
        + "".join(f"; {note}" for note in notes)
    )
    return values


def canonical_smiles(smiles: Sequence[str], progress: bool = False) -> list[str]:
    """RDKit's canonical SMILES of each ("" where it cannot parse), cached in chunks."""
    from ..stores.featurise import map_chunks

    parts = map_chunks(canonical_chunk, smiles, (), progress=progress)
    return [str(s) for (part,) in parts for s in part.tolist()]


def canonical_chunk(smiles: Sequence[str], settings: tuple) -> tuple[np.ndarray]:
    """Canonical SMILES of a chunk (a ``ChunkTask``; "" where unparseable)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # stubs miss it
    out = []
    for text in smiles:
        molecule = Chem.MolFromSmiles(text) if text else None
        out.append(Chem.MolToSmiles(molecule) if molecule is not None else "")
    return (np.array(out, dtype=str),)


def _rows(spec: TableSpec) -> tuple[list[str], list[str], str]:
    """The SMILES, the score texts and the score column's name of a table."""
    path = spec.path
    tab = path.name.removesuffix(".gz").endswith((".tsv", ".tab"))
    with text_file(path, "score table") as handle:
        rows = list(csv.reader(handle, delimiter="\t" if tab else ","))
    if not rows:
        raise UsageError(f"score table {path} is empty")
    header = [name.strip() for name in rows[0]]
    lower = [name.lower() for name in header]
    if "smiles" not in lower:
        raise UsageError(f"score table {path} has no 'smiles' column (columns: {header})")
    at = lower.index("smiles")
    body = [row for row in rows[1:] if len(row) > at and row[at].strip()]
    if spec.column is not None:
        if spec.column not in header:
            raise UsageError(f"score table {path} has no column {spec.column!r} ({header})")
        column = header.index(spec.column)
        if not any(_number(_cell(row, column)) is not None for row in body):
            shown = [_cell(row, column) for row in body[:3]]
            raise UsageError(
                f"score table {path}: column {spec.column!r} holds no finite number (first "
                f"cells: {shown})"
            )
    else:
        beside = [j for j in range(len(header)) if j != at]
        numeric = [j for j in beside if any(_number(_cell(r, j)) is not None for r in body)]
        if not numeric:
            floats = [j for j in beside if any(_is_float(_cell(r, j)) for r in body)]
            if floats:
                raise UsageError(
                    f"score table {path}: column {header[floats[0]]!r} holds numbers, but none "
                    "finite (all NaN or inf)"
                )
            raise UsageError(f"score table {path} has no numeric column beside SMILES ({header})")
        column = numeric[0]
    return [row[at].strip() for row in body], [_cell(row, column) for row in body], header[column]


def _cell(row: list[str], column: int) -> str:
    return row[column].strip() if len(row) > column else ""


def _is_float(text: str) -> bool:
    """Whether a cell holds a number, finite or not."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: str) -> Optional[float]:
    """The finite number a cell holds, else ``None``."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
