"""Campaign directories written before the one engine still resume (``tests/fixtures/
old_campaigns``, made by the code of 387d50d): a synchronous log has no timing columns and is
rewritten with them, blank; the rows logged stay as they were and nothing is evaluated twice.
The optimize fixture's ``library_sha256`` is the float32-rounded hash of today's code: the
float64 hash it was written with differs between CPUs (``values_bytes``).
(The worker-campaign fixture resumes on Ray: ``integration_tests/test_screen_workers.py``.)"""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trieste_scalable.cli import main
from trieste_scalable.problems import get_problem

FIXTURES = Path(__file__).parents[2] / "fixtures" / "old_campaigns"
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


def test_the_library_hash_ignores_last_bit_differences_between_machines() -> None:
    problem = get_problem("rkhs3")
    ulp = np.nextafter(problem.values, np.inf)  # another CPU's BLAS: one ulp apart
    other = dataclasses.replace(problem, values=ulp)
    assert other.content_hash() == problem.content_hash()
    assert other.content_hash(legacy=True) != problem.content_hash(legacy=True)
    changed = dataclasses.replace(problem, values=problem.values + 1e-6)
    assert changed.content_hash() != problem.content_hash()  # a changed library is told apart


def test_a_campaign_logged_with_the_float64_hash_resumes_where_it_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["optimize", "--initial", "10", "--batch-size", "5", "--logdir", "run", "--quiet"]
    assert main([*argv, "--budget", "15"]) == 0
    saved = tmp_path / "run" / "run.json"
    settings = json.loads(saved.read_text())
    assert settings["library_sha256"] == get_problem("rkhs3").content_hash()
    settings["library_sha256"] = get_problem("rkhs3").content_hash(legacy=True)  # as before
    saved.write_text(json.dumps(settings))
    assert main([*argv, "--budget", "20", "--resume"]) == 0
    assert len(_rows(tmp_path / "run" / "evaluations.csv")) == 10 + 20  # initial + budget
    settings["library_sha256"] = "0" * 64  # another machine's float64 hash, or another library
    saved.write_text(json.dumps(settings))
    assert main([*argv, "--budget", "25", "--resume"]) == 1
    assert len(_rows(tmp_path / "run" / "evaluations.csv")) == 30  # nothing lost
