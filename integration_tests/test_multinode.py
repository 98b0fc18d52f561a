"""Several Ray nodes (issue 50), on Ray's own multi-node harness (``ray.cluster_utils.Cluster``:
several raylets on this machine, each a node with its own resources): scoring actors one a node
pick what one process picks, also with a node lost mid-batch; a store featurised on every node,
also with a node lost mid-build, is the store one process builds; evaluation workers on every
node lose nothing and evaluate nothing twice when a node is lost mid-evaluation; a driver killed
mid-campaign resumes against the same cluster. One cluster for the module (its start takes
seconds); a test that removes a node adds another after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from tests.util import write_library  # noqa: E402
from trieste_scalable.cluster.chunk_maps import RayChunkMap  # noqa: E402
from trieste_scalable.cluster.evaluators import RayEvaluator  # noqa: E402
from trieste_scalable.cluster.scoring_actors import ScoringActors  # noqa: E402
from trieste_scalable.stores.featurise import fingerprint_chunk  # noqa: E402
from trieste_scalable.stores.store import LibraryStore  # noqa: E402
from trieste_scalable.stores.store_build import build_store  # noqa: E402

from .campaign_log import kill_once_logged, logged_rows  # noqa: E402
from .test_scoring_actors import _batches  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head node and two worker nodes of one CPU each; this process its driver."""
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(2):
        nodes.add_node(num_cpus=1)
    nodes.wait_for_nodes()
    ray.init(address=nodes.address, include_dashboard=False, log_to_driver=False)
    yield nodes
    ray.shutdown()
    nodes.shutdown()


@pytest.fixture
def three_nodes(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with three live nodes, topped up again after the test."""
    yield cluster
    while len(_alive()) < 3:
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()


pytestmark = pytest.mark.usefixtures("private_cache")  # conftest.py


def _alive() -> set[str]:
    return {node["NodeID"] for node in ray.nodes() if node["Alive"]}


def _node_of(actor: Any) -> str:
    return str(
        ray.get(actor.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id()))
    )


def _worker(cluster: Cluster, node_id: str) -> Any:
    """The worker node (not the head) of ``node_id``."""
    return next(node for node in cluster.worker_nodes if node.node_id == node_id)


def test_actors_one_a_node_pick_what_one_process_picks_with_a_node_lost_mid_batch(
    three_nodes: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 1500)
    store = build_store([library], tmp_path / "store", shard_size=500)
    expected = _batches(store.path, None)
    remote = ScoringActors(LibraryStore(store.path), 3, address=three_nodes.address)
    assert sorted(remote.nodes) == sorted(_alive())  # one a node
    assert [_node_of(actor) for actor in remote._actors] == remote.nodes
    lost = _worker(three_nodes, next(n for n in remote.nodes if n != three_nodes.head_node.node_id))
    get, removed = ray.get, []

    def get_losing_a_node(*args: Any, **kwargs: Any) -> Any:
        if not removed:  # the first batch's calls are all submitted, none awaited yet
            three_nodes.remove_node(lost)
            removed.append(lost.node_id)
        return get(*args, **kwargs)

    monkeypatch.setattr(ray, "get", get_losing_a_node)
    picked = _batches(store.path, remote)
    monkeypatch.undo()
    for mine, theirs in zip(picked, expected):
        np.testing.assert_array_equal(mine, theirs)
    assert removed == [lost.node_id] and lost.node_id not in _alive()
    assert remote.replaced >= 1  # its actor was started again on a live node
    assert set(remote.nodes) == _alive()  # three actors on the two live nodes
    assert [_node_of(actor) for actor in remote._actors] == remote.nodes
    for actor in remote._actors:
        ray.kill(actor)


def test_a_store_featurised_on_every_node_with_one_lost_mid_build_is_one_process_store(
    three_nodes: Cluster, tmp_path: Path
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 9000, extra=["not_a_molecule"])
    reference = build_store([library], tmp_path / "reference", shard_size=3000)
    notes = tmp_path / "notes"
    notes.mkdir()

    def noting_node(chunk: list[str], settings: tuple) -> Any:  # pickled by value
        node = ray.get_runtime_context().get_node_id()
        (notes / f"{node}-{uuid.uuid4().hex}").touch()
        return fingerprint_chunk(chunk, settings)

    chunk_map = RayChunkMap(three_nodes.address)
    chunk_map._task = ray.remote(num_cpus=1)(noting_node)
    assert chunk_map.cpus == 3
    lost = next(iter(three_nodes.worker_nodes))
    lines: list[str] = []

    def progress(line: str) -> None:  # after the first shard: the next shards' chunks running
        lines.append(line)
        if len(lines) == 1:
            three_nodes.remove_node(lost)

    store = build_store(
        [library], tmp_path / "store", shard_size=3000, chunk_map=chunk_map, progress=progress
    )
    assert store.manifest["shards"] == reference.manifest["shards"]
    assert store.content_hash == reference.content_hash
    ran_on = {note.name.split("-")[0] for note in notes.iterdir()}
    assert len(ran_on) == 3  # chunks ran on every node, the lost one included


def test_evaluations_on_every_node_lose_nothing_and_repeat_nothing_when_a_node_is_lost(
    three_nodes: Cluster, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()

    def objective(point: np.ndarray) -> float:  # pickled by value; notes where it runs
        node, key = ray.get_runtime_context().get_node_id(), int(point[0])
        (notes / f"start-{key}-{node}-{uuid.uuid4().hex}").touch()
        time.sleep(4.0)
        (notes / f"finish-{key}-{node}-{uuid.uuid4().hex}").touch()
        return float(point[0] ** 2)

    evaluator = RayEvaluator(objective, 3, address=three_nodes.address)
    points = np.arange(6, dtype=np.float64)[:, None]
    keys = [evaluator.submit(point) for point in points]
    workers = {node.node_id for node in three_nodes.worker_nodes}
    deadline = time.monotonic() + 120

    def started() -> list[tuple[int, str]]:
        return [
            (int(key), node)
            for kind, key, node, _ in (n.name.split("-") for n in notes.iterdir())
            if kind == "start"
        ]

    while not {node for _, node in started()} & workers and time.monotonic() < deadline:
        time.sleep(0.02)
    lost_id = next(node for _, node in started() if node in workers)
    three_nodes.remove_node(_worker(three_nodes, lost_id))  # its evaluation running
    cut = {key for key, node in started() if node == lost_id}
    results = []
    while evaluator.in_flight and time.monotonic() < deadline:
        results += evaluator.collect(wait=5.0)
    assert sorted(e.key for e in results) == keys  # each evaluation once, none lost
    assert [e.value for e in sorted(results, key=lambda e: e.key)] == [k**2 for k in keys]
    finished = [name.split("-")[1:3] for name in os.listdir(notes) if name.startswith("finish")]
    assert sorted(int(key) for key, _ in finished) == keys  # none ran to its end twice
    assert lost_id not in {node for _, node in finished}
    assert len({node for _, node in started()}) == 3  # they ran on every node
    for key in cut:  # re-submitted: started again on a live node
        assert any(k == key and node != lost_id for k, node in started())


def test_a_driver_killed_mid_campaign_resumes_against_the_same_cluster(
    three_nodes: Cluster, tmp_path: Path
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 300)
    logdir, budget = tmp_path / "run", 50
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"))
    command = [sys.executable, "-m", "trieste_scalable", "screen", "--library", str(library),
               "--initial", "10", "--batch-size", "5", "--budget", str(budget), "--logdir",
               str(logdir), "--quiet", "--algorithm", "ts", "--fingerprint", "bits",
               "--workers", "3", "--asynchronous", "--latency", "0.5",
               "--ray-address", three_nodes.address]  # fmt: skip
    first = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    kill_once_logged(first, logdir, 20)
    assert len(_alive()) == 3  # the cluster is not the driver's: it stays
    before = logged_rows(logdir)
    resumed = subprocess.run(
        command + ["--resume"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    rows = logged_rows(logdir)
    assert rows[: len(before)] == before  # nothing logged was lost
    assert len(rows) == 10 + budget
    assert len({row["index"] for row in rows}) == 10 + budget  # nothing evaluated twice
    assert json.loads((logdir / "in_flight.json").read_text())["in_flight"] == []
