"""Scoring a library store on Ray actors (the ``[distributed]`` extra). For batch Thompson
sampling each actor owns a contiguous run of the store's shards and their cached sign features;
per batch the driver sends what the B samples need (the kernel's variance, the prior mean, the
feature draws, the samples' weights with the inducing points) and each actor's share of the
excluded rows; each actor returns its k lowest candidates per sample (value, global row id) and
the driver merges them, ties by row id, as ``_running_top_k``
breaks them in one process. The rows' values are computed by the same compiled scorer
(:class:`~trieste_scalable.sampling.scoring.ChunkedSampleScorer`), row by row independent of
the chunking, so the picks are those of in-process scoring (tested).

The same actors compute the batch-start marginals of every row for the hallucinating rules
(GP-BUCB, BBKB, BKB: :meth:`ScoringActors.marginals`): the driver sends the batch-start DTC
posterior (the dictionary's rows and [M, M] factors) and each actor returns the mean and
variance of its rows, the O(N) part of a batch; the lazy argmin and the in-batch updates of the
few best candidates stay in the driver.

The actors are spread over the cluster's nodes, one a node until each has one
(:mod:`.actor_placement`). An actor whose process dies is restarted by Ray on its node and its
call retried; one whose node is gone is started again on a live node by the driver and its call
submitted again (either reloads its shards and recomputes their sign features, or reads them
from ``sign_store``), so a batch's picks do not change. A shard missing or not matching its
hash is an error naming it. Where the cluster has GPUs, each actor asks Ray for an even share of
them (:func:`~.actor_placement.actor_options`).
"""

from __future__ import annotations

import os
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any, Optional

import gpflow
import numpy as np
import tensorflow as tf

from ..kernels import Tanimoto
from ..models.live import LiveConstantMean
from ..numerics.bits import PackedRows, shared_tensor
from ..numerics.cores import usable_cores
from ..numerics.dtc import CompiledDTC
from ..numerics.dtc_posterior import DTCPosterior
from ..numerics.linalg import chunked_map
from ..numerics.rows import mask_of
from ..sampling.feature_cache import SignCache, SignStore
from ..sampling.features import Draws, FeatureMap, feature_map_for
from ..sampling.pathwise import MeanFunction, PathwiseWeights
from ..sampling.scoring import ChunkedSampleScorer
from ..stores.store import LibraryStore, StoreError
from .actor_placement import actor_options, hosts, least_loaded, threads_each
from .connection import connect

REPLACEMENTS = 2
"""Times one call's actor is started again on another node (its own node gone) before the call
fails."""


def peak_rss() -> int:
    """This process's peak resident memory in bytes: ``VmHWM`` (Linux; 0 elsewhere), which,
    unlike ``ru_maxrss``, does not carry the peak of the process that started this one."""
    return _status_bytes("VmHWM")


def anonymous_rss() -> int:
    """This process's resident memory in bytes that no file backs (``RssAnon``, Linux; 0
    elsewhere): what it holds beyond memory-mapped shards, spilled signs and loaded
    libraries."""
    return _status_bytes("RssAnon")


def _status_bytes(field: str) -> int:
    try:
        status = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in status if line.startswith(field)), 0)


class ShardScorer:
    """One actor's shards of a store, memory-mapped and shared with TensorFlow (no copy: the
    resident pages follow the chunks scored), each shard's cached sign features (memory-mapped
    too, from unlinked files in the node's temporary directory), and a compiled scorer run
    shard by shard.

    :param path: The store's directory (a shared filesystem on a cluster).
    :param names: The shards this actor owns, contiguous and in store order.
    :param sign_store: Keeps the shards' sign features (see :class:`ScoringActors`).
    :raise StoreError: If one of them is missing or does not match its hash.
    """

    def __init__(
        self,
        path: str,
        names: list[str],
        num_features: int,
        chunk_size: int,
        products: Any,
        sign_store: Optional[SignStore] = None,
    ):
        store = LibraryStore(path)
        store.verify(names)
        width = store.fingerprint["width"]
        self._kernel = Tanimoto(binary_inputs=True)
        self._mean = tf.Variable(tf.constant(0.0, tf.float64))
        features = feature_map_for(self._kernel, num_features)
        self._scorer = ChunkedSampleScorer(features, self._mean_function, chunk_size, products)
        spill_dir, self._sign_store = tempfile.gettempdir(), sign_store
        self._shards = [
            (
                PackedRows(shared_tensor(shard.bits), width, tf.float64),
                np.asarray(shard.ids),
                SignCache(features, self._scorer.feature_chunk_size, spill_dir),
            )
            for shard in store.shards(copy_on_write=True)
            if shard.name in set(names) and len(shard.ids)  # a shard of invalid lines: empty
        ]
        self._dtc: Optional[CompiledDTC] = None
        self._anonymous = anonymous_rss()  # after loading, as documented

    def peak_rss(self) -> int:
        """This actor's peak resident memory in bytes (``VmHWM``, Linux; 0 elsewhere)."""
        return peak_rss()

    def intra_op_threads(self) -> int:
        """TensorFlow's intra-op threads in this actor as set for it (``TF_NUM_INTRAOP_THREADS``;
        0: TensorFlow's default, as many as its node has cores)."""
        return int(os.environ.get("TF_NUM_INTRAOP_THREADS", 0))

    def peak_anonymous_rss(self) -> int:
        """The most :func:`anonymous_rss` seen after loading and after scoring each shard."""
        return self._anonymous

    def _mean_function(self, x: tf.Tensor) -> tf.Tensor:
        shape = tf.concat([tf.shape(x)[:-1], [1]], axis=0)
        return tf.ones(shape, dtype=self._mean.dtype) * self._mean  # as LiveConstantMean

    def lowest(
        self,
        variance: np.ndarray,
        mean: np.ndarray,
        draws: tuple[np.ndarray, ...],
        weights: tuple[np.ndarray, ...],
        k: int,
        excluded: np.ndarray,
        draw: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """This actor's k lowest per sample: values [B, k] and global row ids [B, k];
        ``excluded`` the positions of the excluded rows among this actor's rows, ascending."""
        self._kernel.variance.unconstrained_variable.assign(variance)  # bit for bit
        self._mean.assign(mean)
        tensors: Draws = tuple(tf.constant(d) for d in draws)
        sample = PathwiseWeights(*(tf.constant(w) for w in weights))
        samples = weights[0].shape[1]
        parts, start = [(np.zeros((samples, 0)), np.zeros((samples, 0), np.int64))], 0
        for rows, ids, cache in self._shards:
            kept = self._sign_store if draw == 0 else None  # the first draw only, as in-process
            signs = cache(tensors, rows, sample.prior.dtype, draw, kept)
            lo, hi = np.searchsorted(excluded, [start, start + len(ids)])
            mask = tf.constant(mask_of(excluded[lo:hi] - start, len(ids)))
            values, index = self._scorer.lowest(rows, mask, tensors, sample, k, signs)
            parts.append((values.numpy(), ids[index.numpy()]))
            start += len(ids)
            self._anonymous = max(self._anonymous, anonymous_rss())
        return merge_lowest(parts, k)

    def marginals(
        self, variance: np.ndarray, posterior: tuple[np.ndarray, ...], chunk_size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The batch-start mean and ridge-leverage variance [R] of this actor's rows, in store
        order: the compiled :func:`~trieste_scalable.numerics.dtc.marginals` in chunks of
        ``chunk_size`` rows, shard by shard (a row's values do not depend on the rows chunked
        with it, so they are the driver's, bit for bit)."""
        self._kernel.variance.unconstrained_variable.assign(variance)
        if self._dtc is None:  # compiled once, on the first batch asking
            self._dtc = CompiledDTC(self._kernel, tf.float64)
        state = DTCPosterior(*(tf.constant(part) for part in posterior))
        parts, call = [(np.zeros([0]), np.zeros([0]))], partial(self._dtc.marginals, state)
        for rows, _, _ in self._shards:
            parts.append(tuple(t.numpy() for t in chunked_map(call, rows, chunk_size)))
            self._anonymous = max(self._anonymous, anonymous_rss())
        mean, var = (np.concatenate(column) for column in zip(*parts))
        return mean, var


def _check_kernel(kernel: Any) -> None:
    """Raise ``ValueError`` unless ``kernel`` is what the actors compute: the Tanimoto kernel on
    binary fingerprints."""
    if not (isinstance(kernel, Tanimoto) and kernel.binary_inputs):
        raise ValueError("scoring actors score the Tanimoto kernel on binary fingerprints")


def merge_lowest(
    parts: list[tuple[np.ndarray, np.ndarray]], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's k lowest of several parts' values [B, k_i] and row ids [B, k_i], by value
    and, on ties, by row id (as one scan over all rows in order keeps them): [B, k] each."""
    values = np.concatenate([v for v, _ in parts], axis=1)
    ids = np.concatenate([i for _, i in parts], axis=1)
    order = np.lexsort((ids, values), axis=-1)[:, :k]
    return np.take_along_axis(values, order, 1), np.take_along_axis(ids, order, 1)


class ScoringActors:
    """Scores batch Thompson samples over a store on ``num_actors`` Ray actors (a
    :class:`~trieste_scalable.sampling.scoring.RemoteSampleScoring`; pass it to
    :class:`~trieste_scalable.acquisition.BatchThompsonSampling` as ``remote_scoring``).

    :param store: The library store; the rule's search space must be its rows, in order.
    :param num_actors: Actors, each owning a contiguous run of shards (at most one per shard).
    :param num_features: The rule's ``num_features``.
    :param chunk_size: Rows per compiled call on an actor.
    :param products: The products' dtype (the rule's ``scoring_dtype``).
    :param address: A Ray cluster; ``None`` starts (or reuses) a local one.
    :param sign_store: Where the actors keep their shards' sign features under the first draw
        (:class:`~.sign_store.LibrarySignStore`), read by actors started again (on resuming).
    :raise StoreError: If a shard is missing or does not match its hash (each actor checks its
        own shards, where it reads them: on a cluster, its node's view of the store).
    """

    def __init__(
        self,
        store: LibraryStore,
        num_actors: int,
        *,
        num_features: int = 1000,
        chunk_size: int = 4096,
        products: Optional[tf.DType] = tf.float32,
        address: Optional[str] = None,
        sign_store: Optional[SignStore] = None,
    ):
        import ray

        if num_actors < 1:
            raise ValueError(f"num_actors must be positive, got {num_actors}")
        connect(address)
        shards = store.manifest["shards"]
        groups = [g for g in np.array_split(np.arange(len(shards)), num_actors) if g.size]
        rows = np.cumsum([0] + [int(s["rows"]) for s in shards])
        self._ranges = [(int(rows[g[0]]), int(rows[g[-1] + 1])) for g in groups]
        self._num_features = num_features
        nodes = {node["NodeID"] for node in ray.nodes() if node.get("Alive")}
        here = nodes == {ray.get_runtime_context().get_node_id()}  # this machine only
        threads = threads_each(len(groups), here, usable_cores())
        options = actor_options(len(groups), ray.cluster_resources().get("GPU", 0.0), threads)
        self._gpus = float(options.get("num_gpus", 0.0))
        self._class = ray.remote(num_cpus=0)(ShardScorer)
        self._options = dict(max_restarts=2, max_task_retries=2, **options)
        self._names = [[shards[i]["name"] for i in g] for g in groups]
        self._settings = (num_features, chunk_size, products, sign_store)
        self._path = str(store.path)
        self._ray: Any = ray
        self._actors: list[Any] = [None] * len(groups)
        self.nodes: list[Optional[str]] = [None] * len(groups)
        """Each actor's node ID (:mod:`.actor_placement`)."""
        self.replaced = 0
        """Actors started again on another node because theirs was gone."""
        for i in range(len(groups)):
            self._start(i)
        self.seconds = dict(broadcast=0.0, score=0.0, merge=0.0)
        """Driver seconds spent putting the samples' arrays, waiting for the actors and merging,
        summed over calls."""
        self._draws: tuple[int, Any] = (-1, None)
        self.num_candidates = int(rows[-1])
        self.peak_rss()  # every actor has loaded its shards: a damaged one is reported here

    def lowest(
        self,
        features: FeatureMap,
        mean_function: MeanFunction,
        draws: Draws,
        weights: PathwiseWeights,
        k: int,
        excluded: np.ndarray,
        draw: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """See :class:`~trieste_scalable.sampling.scoring.RemoteSampleScoring`."""
        kernel = features.kernel
        _check_kernel(kernel)
        if features.num_features != self._num_features:
            raise ValueError(f"the actors hold {self._num_features} features, not the rule's")
        if not isinstance(mean_function, (LiveConstantMean, gpflow.mean_functions.Constant)):
            raise ValueError("scoring actors need a constant prior mean")
        if len(excluded) and not 0 <= excluded[0] <= excluded[-1] < self.num_candidates:
            raise ValueError(f"excluded rows outside the store's {self.num_candidates} rows")
        start = time.perf_counter()
        if self._draws[0] != draw:  # the feature draws, put once per draw
            self._draws = (draw, self._ray.put(tuple(np.asarray(d) for d in draws)))
        variance = kernel.variance.unconstrained_variable.numpy()
        mean = mean_function(tf.zeros([1, 1], weights.prior.dtype))[0, 0].numpy()
        arrays = self._ray.put(tuple(np.asarray(w) for w in weights))
        bounds = np.searchsorted(excluded, np.asarray(self._ranges))  # [actors, 2]
        sent = time.perf_counter()
        parts = self._call(
            "lowest",
            [
                (variance, mean, self._draws[1], arrays, k, excluded[a:b] - lo, draw)
                for (lo, _), (a, b) in zip(self._ranges, bounds)
            ],
        )
        scored = time.perf_counter()
        merged = merge_lowest(parts, k)
        self._count_seconds(start, sent, scored)
        return merged

    def marginals(
        self, kernel: Any, posterior: DTCPosterior, chunk_size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The batch-start mean and ridge-leverage variance [N] of every row of the store, in
        order, computed on the actors (a
        :class:`~trieste_scalable.models.in_batch.RemoteMarginals`: what GP-BUCB, BBKB and
        BKB score a library by; equal to the driver's, so they pick what one process picks).

        :raise ValueError: Unless ``kernel`` is the Tanimoto kernel on binary fingerprints.
        """
        _check_kernel(kernel)
        start = time.perf_counter()
        variance = kernel.variance.unconstrained_variable.numpy()
        arrays = self._ray.put(tuple(np.asarray(part) for part in posterior))
        sent = time.perf_counter()
        parts = self._call("marginals", [(variance, arrays, chunk_size)] * len(self._actors))
        scored = time.perf_counter()
        mean, var = (np.concatenate(column) for column in zip(*parts))
        self._count_seconds(start, sent, scored)
        return mean, var

    def _count_seconds(self, start: float, sent: float, scored: float) -> None:
        """Add a call's broadcast (``start`` to ``sent``), score (to ``scored``) and merge (to
        now) seconds to :attr:`seconds`."""
        now = time.perf_counter()
        for name, seconds in zip(self.seconds, (sent - start, scored - sent, now - scored)):
            self.seconds[name] += seconds

    def peak_rss(self) -> list[int]:
        """Each actor's peak resident memory in bytes (waits until every actor is up)."""
        return self._call("peak_rss", [()] * len(self._actors))

    def peak_anonymous_rss(self) -> list[int]:
        """Each actor's :meth:`ShardScorer.peak_anonymous_rss`: its memory beyond the pages of
        its memory-mapped shards and signs."""
        return self._call("peak_anonymous_rss", [()] * len(self._actors))

    def _start(self, i: int) -> None:
        """Start actor ``i`` on the live node holding the fewest others (:mod:`.actor_placement`),
        pinned there: Ray restarts it there if its process dies."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        others = [node if j != i else None for j, node in enumerate(self.nodes)]
        node = least_loaded(hosts(self._ray.nodes(), self._gpus), others)
        strategy = NodeAffinitySchedulingStrategy(node, soft=False)
        actor = self._class.options(scheduling_strategy=strategy, **self._options)
        self._actors[i] = actor.remote(self._path, self._names[i], *self._settings)
        self.nodes[i] = node

    def _call(self, method: str, arguments: list[tuple]) -> list[Any]:
        """Each actor's ``method(*arguments[i])``, all submitted before any is awaited. An actor
        whose node is gone (Ray cannot restart it there) is started again on a live node and
        its call submitted again, up to :data:`REPLACEMENTS` times a call.

        :raise StoreError: If an actor failed on its shards (missing, or not matching a hash).
        :raise RuntimeError: If a call's actor was lost more often than that.
        """
        errors = (self._ray.exceptions.RayActorError, self._ray.exceptions.ActorUnschedulableError)
        calls = [getattr(a, method).remote(*args) for a, args in zip(self._actors, arguments)]
        results = []
        for i, call in enumerate(calls):
            for attempt in range(REPLACEMENTS + 1):
                try:
                    results.append(self._ray.get(call))
                    break
                except errors as error:  # a damaged shard, or a lost node
                    cause = str(error).strip().splitlines()
                    reason = next((line for line in reversed(cause) if "StoreError" in line), "")
                    if reason:
                        raise StoreError(f"a scoring actor failed: {reason}") from None
                    if attempt == REPLACEMENTS:
                        raise RuntimeError(
                            f"a scoring actor failed, started on {REPLACEMENTS} other nodes: "
                            f"{cause[-1]}"
                        ) from None
                    self._start(i)
                    self.replaced += 1
                    call = getattr(self._actors[i], method).remote(*arguments[i])
        return results
