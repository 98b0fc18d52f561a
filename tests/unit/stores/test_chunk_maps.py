"""Where a store's chunks are fingerprinted: worker processes build the store one process builds,
``build_store`` keeps as many shards in flight as its chunk map's CPUs need, and worker
processes end when the process that started them is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import pytest

from trieste_scalable.stores.chunk_maps import ProcessChunkMap
from trieste_scalable.stores.featurise import CHUNK_SIZE, fingerprint_chunk
from trieste_scalable.stores.store_build import build_store, shards_in_flight

from ...util import moses, write_library

pytest.importorskip("rdkit")


@pytest.mark.parametrize(
    "cpus, chunks_per_shard, expected",
    [(0, 1, 2), (1, 500, 2), (2, 13, 2), (2, 1, 5), (64, 13, 11), (64, 500, 2), (3, 2, 4)],
)
def test_shards_in_flight_leave_every_cpu_two_chunks_while_one_is_written(
    cpus: int, chunks_per_shard: int, expected: int
) -> None:
    in_flight = shards_in_flight(cpus, chunks_per_shard)
    assert in_flight == expected
    waiting = (in_flight - 1) * chunks_per_shard  # chunks left while one shard is written
    assert waiting >= 2 * cpus or in_flight == 2
    assert in_flight == 2 or (in_flight - 2) * chunks_per_shard < 2 * cpus  # none more


class _Recording:
    """A chunk map of ``cpus`` CPUs computing in this process that records, as each shard is
    collected, how many shards had been submitted and not collected."""

    def __init__(self, cpus: int):
        self.cpus, self.submitted, self.collected, self.in_flight = cpus, 0, 0, []

    def __call__(self, chunks: Sequence[Sequence[str]], settings: tuple) -> Any:
        parts = [fingerprint_chunk(chunk, settings) for chunk in chunks]
        self.submitted += 1

        def collect() -> list[Any]:
            self.in_flight.append(self.submitted - self.collected)
            self.collected += 1
            return parts

        return collect


@pytest.mark.parametrize("cpus", [1, 3, 5])
def test_a_build_keeps_the_shards_its_chunk_maps_cpus_need_in_flight(
    tmp_path: Path, cpus: int
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 30)
    chunk_map = _Recording(cpus)
    build_store([library], tmp_path / "store", shard_size=2, chunk_map=chunk_map)  # 15 shards
    depth = shards_in_flight(cpus, 1)  # shards of 2 molecules: one chunk each
    assert CHUNK_SIZE >= 2 and chunk_map.collected == 15
    assert max(chunk_map.in_flight) == depth  # the first shards wait for the look-ahead
    assert chunk_map.in_flight[: 15 - depth + 1] == [depth] * (15 - depth + 1)


def test_worker_processes_build_the_store_one_process_builds(tmp_path: Path) -> None:
    library = tmp_path / "library.smi"
    smiles = moses(2 * CHUNK_SIZE + 100) + ["not_a_molecule"]
    library.write_text("\n".join(smiles) + "\n")
    alone = build_store([library], tmp_path / "alone", shard_size=1500)
    with ProcessChunkMap(2) as chunk_map:
        pooled = build_store([library], tmp_path / "pooled", shard_size=1500, chunk_map=chunk_map)
    assert pooled.manifest["shards"] == alone.manifest["shards"]
    assert pooled.content_hash == alone.content_hash


def test_a_non_positive_number_of_processes_is_refused() -> None:
    with pytest.raises(ValueError, match="processes must be positive, got 0"):
        ProcessChunkMap(0)


_STARTS_WORKERS = """
import sys
from trieste_scalable.stores.chunk_maps import ProcessChunkMap
chunk_map = ProcessChunkMap(2)
chunk_map([["CCO"], ["CCN"]], ("bits", 2, 1024))()  # both workers up
print(" ".join(str(pid) for pid in chunk_map._pool._processes), flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_worker_processes_end_when_their_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _STARTS_WORKERS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 60  # they poll every 0.5 s; generous for a loaded machine
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _running(pid)]


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended and not reaped yet, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
