"""A real campaign process: a second one on its directory is refused naming it; SIGKILL at a
random point of a batch, then ``--resume``, loses nothing and evaluates nothing twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np

from tests.util import COMMAND, screen_argv, write_library  # noqa: E402

from .campaign_log import logged_rows, wait_until_logged


def _command(library: Path, logdir: Path, *extra: str) -> list[str]:
    return [
        *COMMAND,
        *screen_argv(library, logdir, "--algorithm", "ts", "--budget", str(BUDGET), *extra),
    ]


BUDGET = 300  # after 10 initial molecules: 30 batches of 10


def test_concurrent_campaign_is_refused_and_sigkill_then_resume_loses_nothing(
    tmp_path: Path,
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 600)
    logdir = tmp_path / "run"
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"))
    first = subprocess.Popen(_command(library, logdir), env=env, stderr=subprocess.PIPE)
    try:
        wait_until_logged(first, logdir, 30)
        # paused (its lock held) while the second process starts, however fast the batches are
        first.send_signal(signal.SIGSTOP)
        second = subprocess.run(
            _command(library, logdir, "--resume"), env=env, capture_output=True, text=True
        )
        assert second.returncode == 1
        assert f"in use by another campaign (pid {first.pid}" in second.stderr
        first.send_signal(signal.SIGCONT)
        time.sleep(np.random.default_rng(0).uniform(0.0, 0.2))  # somewhere inside a batch
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    killed_at = len(logged_rows(logdir))
    assert 30 <= killed_at < 10 + BUDGET
    resumed = subprocess.run(
        _command(library, logdir, "--resume"), env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    rows = logged_rows(logdir)
    assert len(rows) == 10 + BUDGET  # the initial design and the budget, exactly
    assert len({row["smiles"] for row in rows}) == 10 + BUDGET  # nothing evaluated twice
    assert all(np.isfinite(float(row["observed"])) for row in rows)
