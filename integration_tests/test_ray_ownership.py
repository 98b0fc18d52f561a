"""A campaign owns the local Ray cluster it starts (issue 49, cases 5 and 6): it never attaches
to a cluster it did not ask for, and nothing it started outlives it, even when the driver is
SIGKILLed (:mod:`trieste_scalable.cluster.connection`, :mod:`trieste_scalable.cluster.reaper`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.util import write_library  # noqa: E402
from trieste_scalable.cluster.reaper import _running, _table, descendants

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]

CONNECT = """
import ray
from trieste_scalable.cluster.connection import connect
connect(None, num_cpus=3)
print("cpus", ray.cluster_resources()["CPU"])
"""


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the probe is


def _stale_env(tmp_path: Path) -> dict[str, str]:
    """A shell whose RAY_ADDRESS names a cluster that is gone (as after a killed `ray start`)."""
    return dict(
        os.environ,
        RAY_ADDRESS=f"127.0.0.1:{_closed_port()}",
        TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"),
        PYTHONPATH=str(ROOT),
    )


def test_without_an_address_a_fresh_local_cluster_is_started(tmp_path: Path) -> None:
    """``ray.init()`` took the stale address and failed (or joined another cluster and then
    refused ``num_cpus``)."""
    done = subprocess.run(
        [sys.executable, "-c", CONNECT],
        env=_stale_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cpus 3.0" in done.stdout


def test_nothing_a_sigkilled_campaign_started_outlives_it(tmp_path: Path) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 300)
    logdir = tmp_path / "run"
    command = [sys.executable, "-m", "trieste_scalable", "screen", "--library", str(library)]
    command += ["--initial", "10", "--batch-size", "10", "--budget", "200", "--quiet"]
    command += ["--workers", "2", "--asynchronous", "--latency", "0.3", "--logdir", str(logdir)]
    driver = subprocess.Popen(command, env=_stale_env(tmp_path), cwd=ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        log = logdir / "evaluations.csv"
        while time.time() < deadline and driver.poll() is None:
            if log.exists() and len(log.read_text().splitlines()) > 15:
                break
            time.sleep(0.1)
        assert driver.poll() is None, driver.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
        started = descendants(driver.pid, _table())
        names = {_name(pid) for pid, _ in started}
        assert {"ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= names, names  # as measured
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    deadline = time.time() + 60  # the reaper takes ~1 s and a grace of 3 s
    while _running(started) and time.time() < deadline:
        time.sleep(0.5)
    left = sorted(_name(pid) for pid, _ in _running(started))
    assert not left, f"still running 60 s after the driver's SIGKILL: {left}"


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return "(ended)"
