"""``trieste-scalable featurise`` end to end (subprocesses, chunks on worker processes): a store
built in one go, one killed with SIGKILL mid-build and finished by the same command (no shard
lost, none written twice: the same store), then screened with ``screen --library STORE``, in
this process and on scoring actors (the same molecules, in the same order)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tests.util import write_library  # noqa: E402
from trieste_scalable.stores.store import MANIFEST  # noqa: E402
from trieste_scalable.stores.store_build import build_store  # noqa: E402


def _featurise(library: Path, store: Path) -> list[str]:
    return [sys.executable, "-m", "trieste_scalable", "featurise", str(library), "--out",
            str(store), "--shard-size", "300"]  # fmt: skip


def _listed(store: Path) -> int:
    try:
        return len(json.loads((store / MANIFEST).read_text())["shards"])
    except (OSError, ValueError):
        return 0


@pytest.mark.slow  # ~50 s; tests/unit/problems/test_store.py cuts builds anywhere in one process
def test_a_store_killed_mid_build_finishes_to_the_same_store_and_screens(tmp_path: Path) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 3000, extra=["not_a_molecule"])
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"))
    reference = build_store([library], tmp_path / "reference", shard_size=300)

    store = tmp_path / "store"
    first = subprocess.Popen(
        _featurise(library, store), env=env, start_new_session=True, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while first.poll() is None and _listed(store) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    if first.poll() is None:
        os.killpg(first.pid, signal.SIGKILL)  # the driver and its local Ray cluster
    first.wait()
    cut = _listed(store)
    again = subprocess.run(
        _featurise(library, store), env=env, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr
    assert "unique molecules in 11 shards" in again.stdout
    finished = json.loads((store / MANIFEST).read_text())
    assert finished["shards"] == reference.manifest["shards"], f"cut after {cut} shards"
    assert finished["library_sha256"] == reference.content_hash
    assert "not_a_molecule" in (store / "shard-00010.invalid.smi").read_text()

    picked = {}
    for actors in ([], ["--scoring-actors", "2"]):
        logdir = tmp_path / f"run{len(actors)}"
        screen = [sys.executable, "-m", "trieste_scalable", "screen", "--library", str(store),
                  "--initial", "20", "--budget", "40", "--batch-size", "20", "--logdir",
                  str(logdir), "--quiet", *actors]  # fmt: skip
        done = subprocess.run(screen, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        with open(logdir / "evaluations.csv", newline="") as handle:
            picked[len(actors)] = [row["smiles"] for row in csv.DictReader(handle)]
    assert len(picked[0]) == 60 and len(set(picked[0])) == 60
    assert picked[2] == picked[0]  # the actors pick what one process picks
