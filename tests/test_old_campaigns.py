"""Campaign directories written before the one engine still resume (``tests/fixtures/
old_campaigns``, made by the code of 387d50d): a synchronous log has no timing columns and is
rewritten with them, blank; the rows logged stay as they were and nothing is evaluated twice.
(The worker-campaign fixture resumes on Ray: ``integration_tests/test_screen_workers.py``.)"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from trieste_scalable.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "old_campaigns"
LEGACY = ["batch", "index", "observed"]


@pytest.fixture
def old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixtures as the working directory (``run.json`` names ``library.smi``)."""
    shutil.copytree(FIXTURES, tmp_path / "old")
    monkeypatch.chdir(tmp_path / "old")
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "old"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(
    "logdir, argv, identity",
    [
        ("sync_optimize", ["optimize", "--initial", "10"], "x0"),
        (
            "sync_screen",
            ["screen", "--library", "library.smi", "--initial", "10", "--algorithm", "ts"],
            "smiles",
        ),
    ],
)
def test_a_synchronous_campaign_logged_before_one_engine_resumes(
    old: Path, logdir: str, argv: list[str], identity: str
) -> None:
    before = _rows(old / logdir / "evaluations.csv")
    assert len(before) == 30 and "job" not in before[0]
    argv = [*argv, "--budget", "35", "--logdir", logdir, "--quiet", "--resume"]
    assert main(argv) == 0
    after = _rows(old / logdir / "evaluations.csv")
    assert len(after) == 45
    for n, (was, now) in enumerate(zip(before, after)):  # kept, numbered, timings blank
        assert {k: now[k] for k in was} == was
        assert now["job"] == str(n) and now["submitted"] == now["error"] == ""
    assert [row["job"] for row in after[30:]] == [str(n) for n in range(30, 45)]
    assert all(float(row["submitted"]) <= float(row["started"]) for row in after[30:])
    assert min(int(row["batch"]) for row in after[30:]) > max(int(r["batch"]) for r in before)
    if identity == "smiles":  # a screening campaign evaluates each molecule once
        assert len({row["smiles"] for row in after}) == 45
