"""What a prospective campaign shows after each tell: a few lines on stdout, ``summary.png``
(:mod:`.screening_summary`; the library's scores are unknown, so no top-k panel) and
``best_molecules.png`` (:mod:`.molecule_pictures`), extra molecules among them, marked."""

from __future__ import annotations

import logging

import numpy as np

from ..reporting.molecule_pictures import Found, best_molecules, write_best_molecules
from ..reporting.screening_summary import plot_screening
from .files import ProspectiveRecords
from .tell import Told

_log = logging.getLogger(__name__)


def report_prospective(campaign: ProspectiveRecords, told: Told, library: str) -> None:
    """Print what ``told`` logged and the best molecules so far; write the pictures."""
    problem, logdir = campaign.problem, campaign.logdir
    logged, extras = campaign.logged(), campaign.extras.read()
    ok = np.flatnonzero(~logged.failed)
    found = [
        Found(problem.labels[int(i)], problem.user_value(y), int(b))
        for i, y, b in zip(logged.ids[ok], logged.observed[ok], logged.batches[ok])
    ]
    found += [Found(e.smiles, e.score, e.batch, extra=True) for e in extras]
    higher = problem.higher_is_better
    if told.corrected:
        _log.info(
            f"corrected {told.corrected} scores (corrections.csv); the next propose uses them"
        )
    else:
        _log.info(
            f"told {told.scores} scores, {told.failed} failed evaluations (their reasons are in "
            f"evaluations.csv), {told.extra} extra molecules; {told.pending} proposed molecules "
            "are still pending"
        )
    _log.info("best molecules so far (score, SMILES):")
    for f in best_molecules(found, higher, 5):
        _log.info(f"  {f.score:.4g}  {f.smiles}{'  (extra)' if f.extra else ''}")
    pictured = write_best_molecules(logdir, found, higher, len(found))
    scores = np.array([f.score for f in found])
    batches = np.array([f.batch for f in found], dtype=np.int64)
    title = f"prospective campaign on {library}"
    every = np.concatenate([logged.batches, batches[len(ok) :]])  # failures included
    summary = logdir / "summary.png"
    plotted = bool(found) and plot_screening(
        summary, scores, batches, higher, title, proposed=every
    )
    written = [
        name for name, done in (("summary.png", plotted), ("best_molecules.png", pictured)) if done
    ]
    if written:
        _log.info(f"wrote {', '.join(str(logdir / name) for name in written)}")
    _log.info(
        f"next batch: trieste-scalable propose --logdir {logdir} (with the campaign's settings)"
    )
