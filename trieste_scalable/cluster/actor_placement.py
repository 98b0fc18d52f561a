"""Where the scoring actors run (:class:`~.scoring_actors.ScoringActors`), as pure functions of
the cluster's nodes (testable without Ray).

**Placement policy: spread, one actor a node until every node has one.** Each actor is pinned
to a node (Ray's hard node affinity) chosen by :func:`least_loaded` among the nodes that can
host it (:func:`hosts`): the node holding the fewest actors, ties to the first listed (the
head node first). A node's CPUs are not asked for (an actor asks for no CPU: it runs while the
node's CPUs also run evaluations), so Ray's own scheduler would pack the actors wherever it
liked: on Ray's multi-node harness its "SPREAD" strategy and soft node affinity both put two
or three of three actors on one node. An actor whose process dies is restarted by Ray on its
node; one whose node is gone is started again by the driver on the least loaded live node
(``ScoringActors``), and its call submitted again.
"""

from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence


def hosts(nodes: Sequence[dict[str, Any]], gpus: float) -> list[str]:
    """The IDs of the live nodes in ``nodes`` (as ``ray.nodes()`` lists them) that can host an
    actor asking for ``gpus`` GPUs, in their listed order.

    :raise RuntimeError: If none can.
    """
    found = [
        node["NodeID"]
        for node in nodes
        if node.get("Alive") and node.get("Resources", {}).get("GPU", 0.0) >= gpus
    ]
    if not found:
        raise RuntimeError(f"no live Ray node can host a scoring actor asking for {gpus} GPUs")
    return found


def least_loaded(candidates: Sequence[str], placed: Sequence[Optional[str]]) -> str:
    """The candidate node holding the fewest of the actors ``placed`` (each actor's node, or
    ``None`` for one not placed), ties to the first candidate."""
    return min(candidates, key=lambda node: (placed.count(node), candidates.index(node)))


def actor_options(num_actors: int, cluster_gpus: float, threads: Optional[int]) -> dict[str, Any]:
    """Ray options of each of ``num_actors`` scoring actors on a cluster of ``cluster_gpus`` GPUs,
    each running ``threads`` intra-op threads of TensorFlow (``None``: its default).

    An actor that asks for no GPU keeps the GPUs its node shows (Ray leaves
    ``CUDA_VISIBLE_DEVICES`` alone), so every actor would score on the node's first GPU. Each
    actor therefore asks for an even share of the cluster's GPUs (at most one, rounded down to
    Ray's 1e-4 resolution), and Ray places the actors on GPUs accordingly; and TensorFlow there
    takes GPU memory as it needs it (``TF_FORCE_GPU_ALLOW_GROWTH``, unless the driver's
    environment sets it), since by default each process maps nearly all of a GPU's memory and
    a second actor sharing it could not allocate. The threads are set by
    ``TF_NUM_INTRAOP_THREADS`` (unless the driver's environment sets it), which TensorFlow reads
    when it starts: in an actor it has started before the actor's constructor runs.
    """
    options: dict[str, Any] = {}
    env = {}
    if cluster_gpus:
        options["num_gpus"] = math.floor(1e4 * min(1.0, cluster_gpus / num_actors)) / 1e4
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    if threads:
        env["TF_NUM_INTRAOP_THREADS"] = os.environ.get("TF_NUM_INTRAOP_THREADS", str(threads))
    if env:
        options["runtime_env"] = {"env_vars": env}
    return options


def threads_each(num_actors: int, one_node: bool, cpus: int) -> Optional[int]:
    """TensorFlow's intra-op threads in each of ``num_actors`` actors, where they all run on one
    node of ``cpus`` CPUs (``one_node``): a share of its CPUs, so that the actors' thread pools
    do not oversubscribe the node (by default each would run a thread per core: A actors, A
    times as many threads as cores). Otherwise ``None``: TensorFlow's default, every core of the
    actor's node (a cluster's layout: an actor a node)."""
    return max(1, cpus // num_actors) if one_node else None
