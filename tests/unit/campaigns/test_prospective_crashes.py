"""A prospective campaign's tell killed (SIGKILL) at the worst moments logs all of its rows or
none of them, never some: before its journal is written nothing is logged; after, whoever opens
the directory next finishes it, each row once
(:mod:`~trieste_scalable.campaigns.prospective.files`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rdkit")

from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign  # noqa: E402

from ...util import (
    csv_rows,  # noqa: E402
    write_library,
)

KILLED = """
import os, signal, sys
from trieste_scalable.campaigns.directory import records
from trieste_scalable.campaigns.prospective import files as prospective_files
from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

where = sys.argv[3]
if where == "before-journal":
    prospective_files.TellJournal.write = killed
else:  # the log half written: its first row, then killed
    def half(self, jobs, evaluations):
        original(self, jobs[:1], evaluations[:1])
        killed()
    original = records.EvaluationLog.append
    records.EvaluationLog.append = half
ProspectiveCampaign.open(sys.argv[1]).tell(sys.argv[2])
"""


@pytest.mark.parametrize("where, finished", [("before-journal", False), ("mid-log", True)])
def test_a_tell_killed_logs_every_row_or_none(tmp_path: Path, where: str, finished: bool) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 60)
    logdir = tmp_path / "lab"
    campaign = ProspectiveCampaign.start(
        library=str(library), logdir=str(logdir), initial=8, batch_size=8, budget=8, quiet=True
    )
    path = campaign.propose().path
    rows = csv_rows(path)
    filled = tmp_path / "filled.csv"
    filled.write_text(
        "smiles,score\n" + "".join(f"{r['smiles']},{n}\n" for n, r in enumerate(rows))
    )
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(logdir), str(filled), where],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    reopened = ProspectiveCampaign.open(logdir)
    if finished:  # the tell happened: the next command finishes it
        reopened.propose()
        told = csv_rows(logdir / "evaluations.csv")
        assert sorted(r["smiles"] for r in told) == sorted(r["smiles"] for r in rows)
        assert not (logdir / "telling.json").exists()
    else:  # it did not: nothing logged, and the same file can be told now
        assert csv_rows(logdir / "evaluations.csv") == []
        assert reopened.tell(filled).scores == len(rows)
    assert len(csv_rows(logdir / "evaluations.csv")) == len(rows)
