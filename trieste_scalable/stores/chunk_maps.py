"""Where a store's chunks are fingerprinted (:data:`~.store_build.ChunkMap`): worker processes
on this machine (:class:`ProcessChunkMap`, what ``featurise`` uses without ``--ray-address``);
one Ray task per chunk on a cluster is
:class:`~trieste_scalable.cluster.chunk_maps.RayChunkMap`.

Each says how many chunks it runs at once (``cpus``), so that
:func:`~.store_build.build_store` keeps enough shards in flight to keep every one busy
(:func:`~.store_build.shards_in_flight`).

On one machine a process pool replaces Ray: starting a local Ray cluster took a quarter of a
100,000-molecule featurisation, mostly on one core, while the pool's workers start in about a
second (each imports RDKit). Ray is for featurising on several machines.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import UsageError
from ..numerics.cores import usable_cores
from .featurise import fingerprint_chunk

Parts = Callable[[], list[tuple[np.ndarray, np.ndarray]]]


class ProcessChunkMap:
    """Fingerprints chunks on ``processes`` worker processes on this machine (default: one per
    usable core), started with ``spawn`` (the caller may hold TensorFlow's threads, which
    ``fork`` does not copy safely) at the first call. A context manager: leaving it stops them.
    If the caller is killed, its workers end within a second (``_exit_with_parent``): idle
    ones would otherwise wait on their task queue for ever, since each holds both its ends."""

    def __init__(self, processes: Optional[int] = None):
        if processes is not None and processes < 1:
            raise UsageError(f"processes must be positive, got {processes}")
        self.cpus = processes or usable_cores()
        self._pool: Optional[ProcessPoolExecutor] = None

    def __call__(self, chunks: Sequence[Sequence[str]], settings: tuple) -> Parts:
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                self.cpus, context, initializer=_exit_with_parent, initargs=(os.getpid(),)
            )
        futures = [self._pool.submit(fingerprint_chunk, list(c), settings) for c in chunks]
        return lambda: [future.result() for future in futures]

    def close(self) -> None:
        """Stop the worker processes (chunks not collected are cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ProcessChunkMap:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _exit_with_parent(parent: int, poll_seconds: float = 0.5) -> None:
    """Run in each worker as it starts: a daemon thread ends the worker once its parent
    ``parent`` is gone (the worker is then re-parented, so ``os.getppid()`` changes)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()
