"""The file a prospective campaign's batch travels in (``trieste-scalable propose`` writes it,
the lab fills it in, ``trieste-scalable tell`` reads it back): a CSV with the columns
:data:`COLUMNS`, ``score`` empty.

Reading (:func:`read_filled`) takes what a spreadsheet saves: CSV, TSV or semicolon-separated
(the delimiter is the one of ``,``, tab and ``;`` that splits the header into columns naming
``smiles`` and ``score``), a byte-order mark, any case and surrounding spaces in the header,
Windows, Unix or old Mac (CR-only) line ends, gzip. A header naming ``smiles`` or ``score`` twice
(after case and space folding) is refused, naming both columns. Each row's score cell is read by
:func:`parse_score`: where the delimiter is ``;`` or a tab, a decimal comma (``0,8791``, what a
European Excel writes) is a decimal point. An empty score, a word (``n/a``, ``failed``), an
Excel error value (``#N/A``, ``#DIV/0!``) or ``nan``/``inf`` is a failed evaluation with its
reason; a cell that holds digits but is no number a spreadsheet writes (``-7.5 kcal/mol``,
``1_000``, digits of another script, a decimal comma in a comma-separated file) or a number
beyond +-:data:`~.evaluators.MAX_ABS_VALUE` is refused with the file, naming the line and the
cell: logged as a failure it could never be told again, and told to the model it would stop
every later ``propose``.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ...errors import UsageError
from ...evaluation.evaluators import MAX_ABS_VALUE
from ...files import text_file
from ..directory.lock import write_atomically

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
    cells: dict[str, str] = field(default_factory=dict, compare=False)
    """Every cell of the row by its column's name (stripped, lower case)."""


def write_batch(
    path: Path,
    rows: Sequence[Sequence[Any]],
    named: Sequence[str] = (),
    names: Sequence[Sequence[str]] = (),
) -> None:
    """Write a batch to fill in (``rows`` in :data:`COLUMNS`' order), all or nothing; the
    columns ``named`` (a make-on-demand product's name and reagents) hold each row's ``names``,
    before ``score``."""
    header = [*COLUMNS[:-1], *named, COLUMNS[-1]]
    if named:
        rows = [[*row[:-1], *row_names, row[-1]] for row, row_names in zip(rows, names)]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerows([header, *rows])
    write_atomically(path, text.getvalue())


def read_filled(path: Path) -> list[FilledRow]:
    """The rows of a filled-in batch (module docstring).

    :raise UsageError: If the file cannot be read, has no ``smiles`` or ``score`` column (naming
        the columns found) or one of them twice, a row with fewer fields than the header, or no
        rows.
    """
    table = _read_table(path, REQUIRED)
    where, filled = table.columns, []
    for number, row in table.rows:
        if len(row) <= max(where.values()):
            raise UsageError(
                f"{path}, line {number}: {len(row)} fields, but the header has {table.width}"
            )
        score = row[where["score"]].strip()
        if table.delimiter != "," and DECIMAL_COMMA.fullmatch(score):
            score = score.replace(",", ".")
        cells = table.cells(row)
        filled.append(FilledRow(number, row[where["smiles"]].strip(), score, cells))
    if not filled:
        raise UsageError(f"{path} has a header but no rows")
    return filled


def read_proposed(path: Path) -> list[tuple[int, int, dict[str, str]]]:
    """The ``(id, batch, cells)`` of each row of a batch file as ``propose`` wrote it (rows
    the lab left or edited without a number in ``id`` or ``batch`` left out; ``cells`` every
    cell by lower-case column): what a campaign proposed, should ``in_flight.json`` lose it.

    :raise UsageError: If the file cannot be read or lacks the ``smiles``, ``id`` and ``batch``
        columns.
    """
    table = _read_table(path, ("smiles", "id", "batch"))
    proposed = []
    for _, row in table.rows:
        cells = table.cells(row)
        numbers = [cells.get("id", ""), cells.get("batch", "")]
        if cells.get("smiles") and all(re.fullmatch("[0-9]+", cell) for cell in numbers):
            proposed.append((int(numbers[0]), int(numbers[1]), cells))
    return proposed


@dataclass(frozen=True)
class _Table:
    """A spreadsheet's file: its non-blank rows after the header with their line numbers (the
    header is line 1), the column of each required name, the delimiter and the header (its
    names stripped, in lower case)."""

    rows: list[tuple[int, list[str]]]
    columns: dict[str, int]
    delimiter: str
    header: list[str]

    @property
    def width(self) -> int:
        return len(self.header)

    def cells(self, row: list[str]) -> dict[str, str]:
        """The cells of ``row`` by column name, stripped."""
        return {name: cell.strip() for name, cell in zip(self.header, row)}


def _read_table(path: Path, required: Sequence[str]) -> _Table:
    """``path`` read as a table with the ``required`` columns (module docstring).

    :raise UsageError: Naming the file: unreadable, empty, without the ``required`` columns or
        with one of them twice.
    """
    try:
        with text_file(path, "the filled-in batch") as handle:
            text = handle.read()
        lines = text.splitlines()
        if not lines or not lines[0].strip():
            raise UsageError(
                f"{path} is empty: expected a header with {' and '.join(required)} columns"
            )
        delimiter = _delimiter(lines[0], required)
        if delimiter is None:
            raise UsageError(
                f"{path}: the header {lines[0].strip()!r} has no {' and '.join(required)} "
                "columns; write the file as CSV or TSV with the columns propose wrote (or at "
                "least smiles and score)"
            )
        # universal newlines: Excel's "CSV (Macintosh)" ends its lines with CR alone
        rows = list(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter))
    except csv.Error as error:
        raise UsageError(f"cannot read the filled-in batch {path} ({error})") from None
    header = [name.strip().lower() for name in rows[0]]
    for name in required:
        same = [n for n, folded in enumerate(header) if folded == name]
        if len(same) > 1:
            spelled = " and ".join(f"{rows[0][n]!r} (column {n + 1})" for n in same)
            raise UsageError(
                f"{path}: the header names {name} twice, {spelled}: keep one; nothing was logged"
            )
    numbered = [(n, row) for n, row in enumerate(rows[1:], start=2) if any(c.strip() for c in row)]
    columns = {name: header.index(name) for name in required}
    return _Table(numbered, columns, delimiter, header)


def _delimiter(header: str, required: Sequence[str]) -> Optional[str]:
    """The delimiter that splits ``header`` into columns naming ``required``, if any."""
    for delimiter in DELIMITERS:
        names = {name.strip().lower() for name in next(csv.reader([header], delimiter=delimiter))}
        if set(required) <= names:
            return delimiter
    return None


NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number as a spreadsheet writes one: ASCII digits, a decimal point, an exponent."""
DECIMAL_COMMA = re.compile(r"[+\-\u2212]?[0-9]+,[0-9]+(?:[eE][+\-\u2212]?[0-9]+)?")
"""A number with a decimal comma (read as such where the delimiter is ``;`` or a tab)."""
NOT_FINITE = {"nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


def parse_score(text: str) -> tuple[Optional[float], str]:
    """A filled-in score and, where it is no score, why: ``(value, "")`` or ``(None, reason)``
    for an empty one, a word (``"n/a"``, ``"failed"``), an Excel error value (``"#N/A"``) or
    a non-finite one. A minus sign (U+2212, as word processors write it) is a minus.

    :raise ValueError: If ``text`` holds digits but is no number a spreadsheet writes, or a
        number beyond +-:data:`~.evaluators.MAX_ABS_VALUE` (module docstring), saying which.
    """
    if not text:
        return None, "no score given"
    number = text.replace("\u2212", "-")
    if NUMBER.fullmatch(number):
        value = float(number)
        if abs(value) > MAX_ABS_VALUE:
            raise ValueError(
                f"score {text!r} is beyond +-{MAX_ABS_VALUE:g}: the model cannot use it"
            )
        return value, ""
    if text.lower() in NOT_FINITE:
        return None, f"score {text!r} is not finite"
    if text.startswith("#") or not re.search(r"\d", text):
        return None, f"score {text!r} is not a number"
    hint = "write the number alone, digits 0-9 with a decimal point"
    if DECIMAL_COMMA.fullmatch(text):
        hint = "a decimal comma: save the file with ';' as its delimiter, or write a point"
    raise ValueError(f"score {text!r} is not a number as a spreadsheet writes one ({hint})")
