"""Where scoring actors run (the placement policy: one a node until every node has one, on
nodes that can host them) and the options they start with (an even share of the GPUs, threads
that do not oversubscribe a shared node), as pure functions of the cluster's nodes."""

from __future__ import annotations

import pytest

from trieste_scalable.cluster.actor_placement import (
    actor_options,
    hosts,
    least_loaded,
    threads_each,
)


def _node(name: str, alive: bool = True, gpus: float = 0.0) -> dict:
    resources = {"CPU": 1.0, **({"GPU": gpus} if gpus else {})}
    return {"NodeID": name, "Alive": alive, "Resources": resources}


def test_actors_go_one_a_node_until_every_node_has_one() -> None:
    nodes = ["head", "a", "b"]
    placed: list = [None] * 5
    for i in range(5):
        placed[i] = least_loaded(nodes, placed)
    assert placed == ["head", "a", "b", "head", "a"]


def test_an_actor_started_again_goes_to_the_least_loaded_live_node() -> None:
    cluster = [_node("head"), _node("a", alive=False), _node("b")]
    placed = ["head", None, "b", "head"]  # actor 1's node "a" is gone
    assert least_loaded(hosts(cluster, 0.0), placed) == "b"


def test_only_live_nodes_with_the_gpus_asked_for_host_actors() -> None:
    cluster = [_node("head"), _node("a", gpus=1.0), _node("b", alive=False, gpus=2.0)]
    assert hosts(cluster, 0.0) == ["head", "a"]
    assert hosts(cluster, 0.5) == ["a"]
    with pytest.raises(RuntimeError, match="no live Ray node can host a scoring actor"):
        hosts(cluster, 2.0)


@pytest.mark.parametrize(
    "actors, one_node, cpus, threads",
    [
        (1, True, 2, 2),
        (2, True, 2, 1),
        (3, True, 2, 1),
        (2, True, 16, 8),
        (3, True, 16, 5),
        (4, False, 16, None),
    ],  # fmt: skip
)
def test_actors_on_one_node_share_its_cores(
    actors: int, one_node: bool, cpus: int, threads: int | None
) -> None:
    assert threads_each(actors, one_node, cpus) == threads


@pytest.mark.parametrize(
    "gpus, actors, share",
    [(1, 1, 1.0), (1, 2, 0.5), (1, 3, 0.3333), (4, 2, 1.0), (3, 2, 1.0), (2, 4, 0.5)],
)
def test_actors_ask_for_an_even_share_of_the_gpus(gpus: int, actors: int, share: float) -> None:
    assert actor_options(actors, gpus, None)["num_gpus"] == share
    assert 0 < actors * share <= gpus


def test_actors_get_settings_of_tensorflow_unless_the_driver_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert actor_options(2, 0.0, None) == {}  # no GPU, a cluster: Ray's defaults
    for name in ("TF_FORCE_GPU_ALLOW_GROWTH", "TF_NUM_INTRAOP_THREADS"):
        monkeypatch.delenv(name, raising=False)
    env = actor_options(2, 1.0, None)["runtime_env"]["env_vars"]
    assert env == {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    assert actor_options(2, 0.0, 1) == {
        "runtime_env": {"env_vars": {"TF_NUM_INTRAOP_THREADS": "1"}}
    }
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false")
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "3")
    env = actor_options(2, 1.0, 1)["runtime_env"]["env_vars"]
    assert env == {"TF_FORCE_GPU_ALLOW_GROWTH": "false", "TF_NUM_INTRAOP_THREADS": "3"}
