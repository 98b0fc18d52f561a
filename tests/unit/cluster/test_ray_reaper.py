"""The reaper of a campaign's local Ray cluster acts only for the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trieste_scalable.cluster.reaper import _running, _table, descendants

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def test_a_reaper_given_another_process_than_its_parent_does_nothing() -> None:
    # not the reaper's parent (this process is): reaping its descendants would be wrong
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        done = subprocess.run(
            [sys.executable, "-m", "trieste_scalable.cluster.reaper", str(other.pid)],
            input=b"",
            capture_output=True,
            timeout=60,
        )
        assert done.returncode != 0
        assert f"process {other.pid} did not start this reaper" in done.stderr.decode()
        assert other.poll() is None  # untouched
    finally:
        other.kill()
        other.wait()


GRANDCHILD = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
time.sleep(60)
"""


def test_descendants_are_found_through_every_generation() -> None:
    child = subprocess.Popen([sys.executable, "-c", GRANDCHILD])
    try:
        deadline = time.time() + 60  # until the grandchild has started
        while not descendants(child.pid, _table()) and time.time() < deadline:
            time.sleep(0.1)
        grandchildren = descendants(child.pid, _table())
        assert len(grandchildren) == 1
        mine = descendants(os.getpid(), _table())
        assert grandchildren < mine and child.pid in {pid for pid, _ in mine}
        assert _running(grandchildren) == grandchildren
    finally:
        for pid, _ in descendants(child.pid, _table()):
            os.kill(pid, signal.SIGKILL)
        child.kill()
        child.wait()
