"""``evaluations.csv``: the durable record of a campaign, one row per evaluation.

Written so that nothing is lost or attributed to the wrong candidate:

- the file is created atomically (header and initial design written to a temporary file, then
  renamed), and every later batch is appended in one write, flushed and ``fsync``-ed before the
  model sees it, each row ending in a newline;
- a crash in the middle of a write can leave a partial last line: :meth:`EvaluationLog.read`
  detects it, reports it and cuts it off the file, so its evaluation is redone once and nothing
  is ever appended to a half-written line;
- every row carries the candidate's identity (SMILES, or coordinates) beside its index, and
  :meth:`EvaluationLog.read` checks it against the problem: an edited library is an error, never a
  silent re-labelling; every malformed row is an error naming the file and line;
- observations are written with ``repr`` (shortest exact round trip), so a resumed model sees the
  very numbers the first run saw.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from trieste.data import Dataset

from ..errors import CampaignError
from .logdir import write_atomically


class EvaluationLog:
    """The evaluation log of one campaign over ``problem``.

    Columns: ``batch`` (0 = initial design), ``index`` (the candidate), the problem's identity
    columns (``smiles``, or ``x0, x1, ...``), ``observed`` and the noise-free value (``score``
    for screening, ``true`` otherwise).

    :param path: The CSV file.
    :param problem: The problem whose candidates are logged (a ``DiscreteProblem``).
    """

    def __init__(self, path: Path, problem: Any):
        self.path = Path(path)
        self.problem = problem
        self.dropped_partial_line = ""
        """The partial last line that :meth:`read` cut off, if any."""

    @property
    def header(self) -> list[str]:
        value = "score" if self.problem.identity_columns() == ["smiles"] else "true"
        return ["batch", "index", *self.problem.identity_columns(), "observed", value]

    def start(self, initial: Dataset) -> None:
        """Create the file with the initial design as batch 0 (atomically: all or nothing)."""
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow(self.header)
        write_atomically(self.path, header.getvalue() + self._rows(0, initial))

    def append(self, batch: int, data: Dataset) -> None:
        """Append one batch in one write, flushed and fsync-ed to disk."""
        with open(self.path, "a", newline="") as handle:
            handle.write(self._rows(batch, data))
            handle.flush()
            os.fsync(handle.fileno())

    def _rows(self, batch: int, data: Dataset) -> str:
        ids = self.problem.indices(data.query_points)
        observed = data.observations.numpy()[:, 0]
        screening = self.header[-1] == "score"
        values = -self.problem.values[ids] if screening else self.problem.values[ids]
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        for i, row_id in enumerate(ids):
            identity = self.problem.identity(int(row_id))
            writer.writerow(
                [batch, int(row_id), *identity, repr(float(observed[i])), f"{values[i]:.6g}"]
            )
        return text.getvalue()

    def read(self) -> tuple[Dataset, np.ndarray]:
        """The logged evaluations as a dataset, and the batch of each row.

        A partial last line (a write cut by a crash) is reported on stderr and cut off the file.

        :raise CampaignError: If the file is missing, empty, has another header, or any row is
            malformed, non-finite or names a candidate other than the problem's (file and line
            in the message).
        """
        rows = self._rows_read()
        if not rows:
            raise CampaignError(f"{self.path} holds no evaluations (not even the initial design)")
        batches, ids, observed = self._parse(rows)
        self._check_identities(ids, rows)
        points = tf.constant(self.problem.points[ids])
        return Dataset(points, tf.constant(observed[:, None], dtype=points.dtype)), batches

    def _rows_read(self) -> list[list[str]]:
        """The rows after the header (a partial last line cut off first).

        :raise CampaignError: If the file is missing, unreadable or has another header.
        """
        if not self.path.is_file():
            raise CampaignError(f"nothing to resume: {self.path} does not exist")
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            self._drop_partial_line(raw)
            raw = raw[: raw.rfind(b"\n") + 1]
        try:
            lines = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
        except (UnicodeDecodeError, csv.Error) as error:
            raise CampaignError(f"{self.path} is not a readable CSV file ({error})") from None
        if not lines or lines[0] != self.header:
            found = lines[0] if lines else "nothing"
            raise CampaignError(
                f"{self.path}: header {found} is not that of this campaign ({self.header})"
            )
        return lines[1:]

    def _parse(self, rows: list[list[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        width = len(self.header)
        batches, ids, observed = (np.zeros(len(rows), dtype=t) for t in (int, int, float))
        for n, row in enumerate(rows):
            where = f"{self.path}, line {n + 2}"
            if len(row) != width:
                raise CampaignError(f"{where}: expected {width} fields, found {len(row)}")
            try:
                batches[n], ids[n], observed[n] = int(row[0]), int(row[1]), float(row[-2])
            except ValueError:
                raise CampaignError(f"{where}: batch, index or observed is not a number") from None
            if batches[n] < 0 or not 0 <= ids[n] < len(self.problem.points):
                raise CampaignError(
                    f"{where}: batch {batches[n]} / candidate {ids[n]} is outside this campaign "
                    f"(candidates 0..{len(self.problem.points) - 1})"
                )
            if not np.isfinite(observed[n]):
                raise CampaignError(f"{where}: observation {row[-2]!r} is not finite")
        return batches, ids, observed

    def _check_identities(self, ids: np.ndarray, rows: list[list[str]]) -> None:
        width = len(self.problem.identity_columns())
        logged = [row[2 : 2 + width] for row in rows]
        wrong = np.flatnonzero(~self.problem.identity_matches(ids, logged))
        if wrong.size:
            n = int(wrong[0])
            raise CampaignError(
                f"{self.path}, line {n + 2}: logged candidate {logged[n]} is not candidate "
                f"{ids[n]} of this library ({self.problem.identity(int(ids[n]))}); "
                f"{wrong.size} rows disagree: the library changed since the campaign ran"
            )

    def _drop_partial_line(self, raw: bytes) -> None:
        cut = raw.rfind(b"\n") + 1
        self.dropped_partial_line = raw[cut:].decode("utf-8", errors="replace")
        with open(self.path, "r+b") as handle:
            handle.truncate(cut)
            handle.flush()
            os.fsync(handle.fileno())
        print(
            f"{self.path}: dropped a partial last line written during a crash "
            f"({self.dropped_partial_line!r}); its evaluation will be redone",
            file=sys.stderr,
        )
