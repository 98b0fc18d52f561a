"""What tests of campaign processes read and wait for: a campaign's logged evaluations."""

from __future__ import annotations

import csv
import signal
import subprocess
import time
from pathlib import Path


def logged_rows(logdir: Path) -> list[dict[str, str]]:
    """The rows of ``logdir``'s ``evaluations.csv`` (none before it exists)."""
    if not (logdir / "evaluations.csv").exists():
        return []
    with open(logdir / "evaluations.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def wait_until_logged(
    process: subprocess.Popen, logdir: Path, rows: int, seconds: float = 300.0
) -> None:
    """Wait until ``process``'s campaign has logged ``rows`` evaluations in ``logdir``.

    :raise AssertionError: If the process ended first, or ``seconds`` passed.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if len(logged_rows(logdir)) >= rows:
            return
        time.sleep(0.05)
    assert process.poll() is None, "the campaign ended before it could be interrupted"
    raise AssertionError(f"fewer than {rows} evaluations logged after {seconds:g} s")


def kill_once_logged(process: subprocess.Popen, logdir: Path, rows: int) -> None:
    """SIGKILL ``process`` once its campaign has logged ``rows`` evaluations in ``logdir``, and
    reap it (killed anyway if the wait fails)."""
    try:
        wait_until_logged(process, logdir, rows)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
