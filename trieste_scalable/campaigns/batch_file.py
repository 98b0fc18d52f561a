"""The file a prospective campaign's batch travels in (``trieste-scalable propose`` writes it,
the lab fills it in, ``trieste-scalable tell`` reads it back): a CSV with the columns
:data:`COLUMNS`, ``score`` empty.

Reading (:func:`read_filled`) takes what a spreadsheet saves: CSV, TSV or semicolon-separated
(the delimiter is the one of ``,``, tab and ``;`` that splits the header into columns naming
``smiles`` and ``score``), a byte-order mark, any case and surrounding spaces in the header,
gzip. Each row's score is parsed by :func:`parse_score`: an empty, non-numeric or non-finite
score is a failed evaluation with its reason, never a refusal of the file.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from ..errors import UsageError
from ..files import text_file
from .logdir import write_atomically

COLUMNS = ["smiles", "id", "batch", "rank", "predicted", "uncertainty", "score"]
"""``smiles`` (the library's own), ``id`` (the submission's job number), ``batch``, ``rank`` (the
rule's order of choice, 1 first), the model's ``predicted`` score and its ``uncertainty`` (a
standard deviation) in the user's units and direction (empty for the initial design), and the
``score`` to fill in."""
REQUIRED = ("smiles", "score")
DELIMITERS = (",", "\t", ";")


@dataclass(frozen=True)
class FilledRow:
    """One row of a filled-in batch.

    :ivar line: Its line in the file (the header is line 1).
    :ivar smiles: The SMILES as written.
    :ivar score: The score as written (stripped).
    """

    line: int
    smiles: str
    score: str


def write_batch(path: Path, rows: Sequence[Sequence[Any]]) -> None:
    """Write a batch to fill in (``rows`` in :data:`COLUMNS`' order), all or nothing."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerows([COLUMNS, *rows])
    write_atomically(path, text.getvalue())


def read_filled(path: Path) -> list[FilledRow]:
    """The rows of a filled-in batch (module docstring).

    :raise UsageError: If the file cannot be read, has no ``smiles`` or ``score`` column (naming
        the columns found), a row with fewer fields than the header, or no rows.
    """
    try:
        with text_file(path, "the filled-in batch") as handle:
            text = handle.read()
    except ValueError as error:
        raise UsageError(str(error)) from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise UsageError(f"{path} is empty: expected a header with smiles and score columns")
    delimiter = _delimiter(lines[0])
    if delimiter is None:
        raise UsageError(
            f"{path}: the header {lines[0].strip()!r} has no smiles and score columns; write "
            "the file as CSV or TSV with the columns propose wrote (or at least smiles and "
            "score)"
        )
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    header = [name.strip().lower() for name in rows[0]]
    where = {name: header.index(name) for name in REQUIRED}
    filled = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line, as spreadsheets leave at the end
        if len(row) <= max(where.values()):
            raise UsageError(
                f"{path}, line {number}: {len(row)} fields, but the header has {len(header)}"
            )
        filled.append(FilledRow(number, row[where["smiles"]].strip(), row[where["score"]].strip()))
    if not filled:
        raise UsageError(f"{path} has a header but no rows")
    return filled


def _delimiter(header: str) -> Optional[str]:
    """The delimiter that splits ``header`` into columns naming :data:`REQUIRED`, if any."""
    for delimiter in DELIMITERS:
        names = {name.strip().lower() for name in next(csv.reader([header], delimiter=delimiter))}
        if set(REQUIRED) <= names:
            return delimiter
    return None


def parse_score(text: str) -> tuple[Optional[float], str]:
    """A filled-in score and, where it is no score, why: ``(value, "")`` or ``(None, reason)``
    for an empty, non-numeric (``"n/a"``, ``"failed"``) or non-finite one."""
    if not text:
        return None, "no score given"
    try:
        value = float(text)
    except ValueError:
        return None, f"score {text!r} is not a number"
    if not math.isfinite(value):
        return None, f"score {text!r} is not finite"
    return value, ""
