"""``trieste-scalable screen --workers N`` end to end (subprocesses on a local Ray cluster):
a user's ``python:`` oracle with failures, logged with timings and never re-proposed; an
asynchronous campaign killed with SIGKILL mid-flight resumes, re-submits what was in flight and
evaluates every molecule at most once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.util import COMMAND, screen_argv, write_library  # noqa: E402
from trieste_scalable.chemistry.molecules import load_smiles

from .campaign_log import kill_once_logged, logged_rows, wait_until_logged

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]


def _screen(library: Path, logdir: Path, *extra: str) -> list[str]:
    return [*COMMAND, *screen_argv(library, logdir, *extra)]


@pytest.fixture
def setting(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    library = tmp_path / "library.smi"
    write_library(library, 400)
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    return library, env


def test_python_oracle_failures_are_logged_with_timings_and_never_told(
    tmp_path: Path, setting: tuple[Path, dict[str, str]]
) -> None:
    library, env = setting
    logdir = tmp_path / "run"
    oracle = "python:integration_tests.objectives:length_or_fail"
    command = _screen(library, logdir, "--objective", oracle, "--workers", "3", "--budget", "40")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = logged_rows(logdir)
    assert len(rows) == 50 and len({row["index"] for row in rows}) == 50  # failures counted
    failed = [row for row in rows if row["error"]]
    assert failed and all("no pose found" in row["error"] for row in failed)
    assert all(row["observed"] == "" and "Cl" in row["smiles"] for row in failed)
    for row in rows:
        if not row["error"]:
            assert float(row["score"]) == pytest.approx(len(row["smiles"]) / 100, rel=1e-5)
            assert float(row["observed"]) == -float(row["score"])  # Trieste minimises
            assert float(row["submitted"]) <= float(row["started"]) <= float(row["finished"])
            assert row["worker"]
    # synchronous on workers: whole batches of 10 after the initial design
    assert {row["batch"] for row in rows} == {str(b) for b in range(5)}
    assert f"{len(rows) - len(failed)} evaluations told, {len(failed)} failed" in done.stdout
    events = "".join(p.name for p in logdir.iterdir())
    assert "tfevents" in events


def _chlorine_library(
    tmp_path: Path, with_chlorine: int, without: int
) -> tuple[Path, dict[str, str]]:
    """A library of the first molecules with and without chlorine (the test oracles' slow or
    failing ones), and the environment of ``setting``."""
    smiles = load_smiles("moses-20k")
    chosen = [s for s in smiles if "Cl" in s][:with_chlorine]
    chosen += [s for s in smiles if "Cl" not in s][:without]
    library = tmp_path / "library.smi"
    library.write_text("\n".join(chosen) + "\n")
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    return library, env


def test_failed_initial_molecules_are_never_proposed_again(tmp_path: Path) -> None:
    """A library used up exactly (10 initial + a budget of 30 of 40 molecules, half with
    chlorine, on which the oracle fails): every molecule is evaluated once. A fresh rule used to
    start without the failed initial molecules as pending points, so it proposed them again and
    left others never evaluated."""
    library, env = _chlorine_library(tmp_path, 20, 20)
    logdir = tmp_path / "run"
    oracle = "python:integration_tests.objectives:length_or_fail"
    command = _screen(library, logdir, "--objective", oracle, "--workers", "2", "--budget", "30")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = logged_rows(logdir)
    initial_failures = [row for row in rows if row["batch"] == "0" and row["error"]]
    assert initial_failures  # what the test is about (10 of 40, half failing)
    assert len(rows) == 40 and len({row["index"] for row in rows}) == 40


def test_a_timeout_is_never_spent_waiting_behind_a_slow_evaluation(tmp_path: Path) -> None:
    """One worker, an initial design of 7 molecules of which one (chlorine) runs for a minute,
    --timeout 20: only that one times out. The initial design used to be submitted at once, so
    the fast molecules queued behind it timed out without ever running."""
    library, env = _chlorine_library(tmp_path, 1, 7)
    logdir = tmp_path / "run"
    oracle = "python:integration_tests.objectives:slow_for_chlorine"
    command = _screen(library, logdir, "--objective", oracle, "--workers", "1", "--budget", "1")
    command[command.index("--initial") + 1] = "7"
    command += ["--timeout", "20"]  # a margin for a new worker's start after a cancellation
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = logged_rows(logdir)
    initial = [row for row in rows if row["batch"] == "0"]
    assert len(initial) == 7 and any("Cl" in row["smiles"] for row in initial)
    for row in initial:
        assert ("timed out" in row["error"]) == ("Cl" in row["smiles"]), row


def test_the_console_script_finds_a_python_oracle_in_the_working_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "my_assay.py").write_text("def score(smiles):\n    return len(smiles) / 100\n")
    library = tmp_path / "library.smi"
    write_library(library, 30)
    script = Path(sys.executable).parent / "trieste-scalable"
    command = [str(script)] + _screen(library, tmp_path / "run", "--workers", "2")[3:]
    command += ["--objective", "python:my_assay:score", "--budget", "2"]
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"))
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stderr
    rows = logged_rows(tmp_path / "run")
    assert len(rows) == 12 and not any(row["error"] for row in rows)


def test_sigterm_ends_a_campaign_like_ctrl_c_and_it_resumes(
    tmp_path: Path, setting: tuple[Path, dict[str, str]]
) -> None:
    """Ray's native handler used to abort the driver on SIGTERM (exit -6)."""
    library, env = setting
    logdir = tmp_path / "run"
    command = _screen(library, logdir, "--workers", "2", "--asynchronous", "--latency", "0.3")
    command += ["--budget", "60"]
    first = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    wait_until_logged(first, logdir, 20)
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130 and "continue with the same command plus --resume" in err
    done = subprocess.run(
        command + ["--resume"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert done.returncode == 0, done.stderr
    rows = logged_rows(logdir)
    assert len(rows) == 70 and len({row["index"] for row in rows}) == 70


def test_asynchronous_campaign_killed_mid_flight_resumes_without_repeats(
    tmp_path: Path, setting: tuple[Path, dict[str, str]]
) -> None:
    library, env = setting
    logdir = tmp_path / "run"
    budget = 120
    command = _screen(library, logdir, "--workers", "4", "--asynchronous", "--latency", "0.3")
    # Morgan bits: the fingerprint whose acquisitions keep 4 workers busy on 2 cores here (the
    # default atom-pair counts, 3 x 2,048 bits, leave them idle between batches at this latency)
    command += ["--algorithm", "ts", "--budget", str(budget), "--fingerprint", "bits"]
    first = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    kill_once_logged(first, logdir, 40)
    logged = {row["job"] for row in logged_rows(logdir)}
    listed = json.loads((logdir / "in_flight.json").read_text())["in_flight"]
    in_flight = {str(job) for job, _, _ in listed} - logged
    assert in_flight, "nothing was in flight when the driver was killed"
    resumed = subprocess.run(
        command + ["--resume"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(in_flight)} were in flight" in resumed.stdout
    rows = logged_rows(logdir)
    assert len(rows) == 10 + budget
    assert len({row["index"] for row in rows}) == 10 + budget  # nothing evaluated twice
    assert len({row["job"] for row in rows}) == 10 + budget
    resubmitted = {int(index) for _, _, index in listed if str(_) in in_flight}
    assert resubmitted <= {int(row["index"]) for row in rows}
    assert json.loads((logdir / "in_flight.json").read_text())["in_flight"] == []


def test_a_campaign_whose_initial_evaluations_all_fail_stops_with_a_clear_error(
    tmp_path: Path, setting: tuple[Path, dict[str, str]]
) -> None:
    library, env = setting
    logdir = tmp_path / "run"
    oracle = "python:integration_tests.objectives:always_fails"
    command = _screen(library, logdir, "--objective", oracle, "--workers", "2", "--budget", "20")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 1
    assert "every initial evaluation failed" in done.stderr and "the assay rejected" in done.stderr
    rows = logged_rows(logdir)  # the failures are on record, with their errors
    assert len(rows) == 10 and all("the assay rejected" in row["error"] for row in rows)


def test_a_worker_campaign_logged_before_one_engine_resumes(tmp_path: Path) -> None:
    """``tests/fixtures/old_campaigns/workers_screen`` (made by the code of 387d50d, then cut as a
    crash leaves it: its last two evaluations listed in ``in_flight.json``, not logged): resumed,
    those two are submitted again and every molecule is evaluated once; ``summary.png`` too."""
    old = tmp_path / "old"
    shutil.copytree(ROOT / "tests" / "fixtures" / "old_campaigns", old)
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    before = logged_rows(old / "workers_screen")
    command = [sys.executable, "-m", "trieste_scalable", "screen", "--library", "library.smi"]
    command += ["--workers", "2", "--objective", "logp", "--budget", "25", "--initial", "10"]
    command += ["--algorithm", "ts", "--logdir", "workers_screen", "--quiet", "--resume"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=old, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "28 evaluations logged, 2 were in flight" in done.stdout
    rows = logged_rows(old / "workers_screen")
    assert rows[:28] == before and len(rows) == 35
    assert {row["index"] for row in rows[28:30]} == {"39", "46"}  # the two submitted again
    assert len({row["smiles"] for row in rows}) == 35
    assert (old / "workers_screen" / "summary.png").is_file()
