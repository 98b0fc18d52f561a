"""Fingerprinting a store's chunks on a Ray cluster (a
:data:`~trieste_scalable.stores.store_build.ChunkMap`; ``featurise --ray-address``): one Ray
task per chunk. On one machine a process pool does it faster
(:class:`~trieste_scalable.stores.chunk_maps.ProcessChunkMap`)."""

from __future__ import annotations

from typing import Optional, Sequence

from ..stores.chunk_maps import Parts
from ..stores.featurise import fingerprint_chunk
from .connection import connect


class RayChunkMap:
    """Fingerprints each chunk as a Ray task (one CPU each) on the cluster at ``address``, or on
    a local one this process starts (:func:`~.connection.connect`), at the
    first call or at the first read of :attr:`cpus`."""

    def __init__(self, address: Optional[str] = None):
        import ray

        self._ray, self._address = ray, address
        self._task = ray.remote(num_cpus=1)(fingerprint_chunk)

    @property
    def cpus(self) -> int:
        """The cluster's CPUs now (nodes may join or leave while a store is built)."""
        connect(self._address)
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def __call__(self, chunks: Sequence[Sequence[str]], settings: tuple) -> Parts:
        connect(self._address)
        refs = [self._task.remote(list(chunk), settings) for chunk in chunks]
        return lambda: list(self._ray.get(refs))
