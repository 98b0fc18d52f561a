"""Scoring actors on several Ray nodes (issue 50), on Ray's own multi-node harness
(``ray.cluster_utils.Cluster``: several raylets on this machine, each a node with its own
resources): the actors pick what one process picks, also after a node is removed before the
batches (its actors restart on another node). Placement is Ray's default: one actor a node is
not guaranteed (Ray's "SPREAD" and soft node affinity both put two of three on one node here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from trieste_scalable.campaigns.scoring_actors import ScoringActors  # noqa: E402
from trieste_scalable.problems.molecules import load_smiles  # noqa: E402
from trieste_scalable.problems.store import LibraryStore  # noqa: E402
from trieste_scalable.problems.store_build import build_store  # noqa: E402

from .test_scoring_actors import _batches  # noqa: E402


@pytest.fixture
def cluster() -> Iterator[tuple[Any, list[Any]]]:
    """A head node and two worker nodes of one CPU each."""
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    workers = [nodes.add_node(num_cpus=1) for _ in range(2)]
    nodes.wait_for_nodes()
    ray.init(address=nodes.address, include_dashboard=False, log_to_driver=False)
    yield nodes, workers
    ray.shutdown()
    nodes.shutdown()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))


def _node(actor: Any) -> str:
    return str(
        ray.get(actor.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id()))
    )


@pytest.mark.slow  # 1-2 min on 2 cores: three raylets and three TensorFlow actors
@pytest.mark.parametrize("remove", [False, True])
def test_actors_on_several_nodes_pick_what_one_process_picks(
    cluster: tuple[Any, list[Any]], tmp_path: Path, remove: bool
) -> None:
    nodes, workers = cluster
    library = tmp_path / "library.smi"
    library.write_text("\n".join(load_smiles("moses-20k")[:1500]) + "\n")
    store = build_store([library], tmp_path / "store", shard_size=500)
    expected = _batches(store.path, None)
    remote = ScoringActors(LibraryStore(store.path), 3, address=nodes.address)
    placed = {_node(actor) for actor in remote._actors}
    if remove:
        lost = next((w for w in workers if w.node_id in placed), workers[0])  # one with actors
        nodes.remove_node(lost)  # its actors restart on another node, their calls retried
    picked = _batches(store.path, remote)
    for mine, theirs in zip(picked, expected):
        np.testing.assert_array_equal(mine, theirs)
    if remove:
        alive = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
        assert lost.node_id not in alive
        assert {_node(actor) for actor in remote._actors} <= alive
