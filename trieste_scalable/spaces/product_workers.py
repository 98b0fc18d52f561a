"""Products' fingerprints made on every core (issue 81): most of a make-on-demand ask is RDKit
joining building blocks and fingerprinting the products, one at a time, and RDKit's Python calls
hold the GIL (two threads ran no faster than one), so the work is spread over processes.

:func:`make` is the one path, run here or in a worker: each product is fingerprinted from the
molecule it was made as, its stereochemistry perceived again first (without that, 77 % of the
quinazoline subset's atom-pair fingerprints differed from those of the molecule read back from
its canonical SMILES, as before issue 81; with it, every one tested is the same: the tests and
``benchmarks/evaluations_scale.py``), which saves reading each SMILES back. No SMILES is written
at all: a search scores thousands of products an ask, and the few it proposes are named later
(:meth:`~.library.ComponentLibrary.product`).

:class:`ProductWorkers` keeps a pool of ``spawn``-started processes (TensorFlow's threads do not
survive a ``fork``), each with a copy of the library made once (its caches left out), and splits a
request of at least :data:`PARALLEL_FROM` tuples into one contiguous share a worker, so the
results come back in the request's order, the same as made here. The pool starts at its first
such request and ends with the library.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple, Optional, Protocol, Sequence

import numpy as np

from ..chemistry.molecules import fingerprint_width, fingerprints

_log = logging.getLogger(__name__)

PARALLEL_FROM = 128
"""The fewest tuples a request sends to the workers (fewer are made here: a worker's round trip
costs about what a few products do)."""

JOB_SIZE = 2048
"""The most products made at once (a job's molecules are held until they are fingerprinted
together: a request of 10^5 products made in one job took 4.5 GB a worker)."""

WORKERS_VARIABLE = "TRIESTE_SCALABLE_PRODUCT_WORKERS"
"""The environment variable that sets how many processes make products (default: the cores;
1: none, all made in the calling process)."""


class MakesProducts(Protocol):
    """What the workers need of a library (:class:`~.library.ComponentLibrary`, picklable)."""

    def made(
        self, key: tuple[int, ...], written: bool = True
    ) -> tuple[Optional[str], str, Optional[Any]]:
        """(``None``, the canonical SMILES (``""`` unless ``written``), the molecule) of
        ``key``'s product, or (the reason it fails, ``""``, ``None``)."""


class Made(NamedTuple):
    """What a request's tuples made, in its order.

    :ivar reasons: Why each tuple failed, ``None`` where it made a product [N].
    :ivar packed: The products' packed fingerprints [N - failed, ceil(W / 8)], in order.
    """

    reasons: list[Optional[str]]
    packed: np.ndarray


def make(library: MakesProducts, keys: Sequence[tuple[int, ...]], settings: tuple) -> Made:
    """The products of ``keys`` and their fingerprints (``settings``: kind, radius, size), made
    in this process (module docstring)."""
    from rdkit import Chem

    reasons, molecules = [], []
    for key in keys:
        reason, _, molecule = library.made(key, written=False)
        reasons.append(reason)
        if reason is None:
            Chem.AssignStereochemistry(molecule, cleanIt=True, force=True)
            molecules.append(molecule)
    kind, radius, size = settings
    if molecules:
        packed = np.packbits(fingerprints(molecules, kind, radius, size, chirality=True), axis=1)
    else:
        packed = np.zeros((0, -(-fingerprint_width(kind, size) // 8)), dtype=np.uint8)
    return Made(reasons, packed)


class ProductWorkers:
    """A pool of processes that :func:`make` a library's products (module docstring).

    The library owns its workers and passes itself to each call (the workers keep no reference
    to it), so the pool ends when the library is dropped.

    :param workers: Processes (``None``: :data:`WORKERS_VARIABLE`, else the cores); 1 makes
        everything in the calling process.
    """

    def __init__(self, workers: Optional[int] = None):
        self.workers = workers or int(os.environ.get(WORKERS_VARIABLE) or os.cpu_count() or 1)
        self._pool: Optional[ProcessPoolExecutor] = None

    def make(
        self, library: MakesProducts, keys: Sequence[tuple[int, ...]], settings: tuple
    ) -> Made:
        """:func:`make` of ``library``'s ``keys``, split over the workers if there are enough
        (each worker gets a copy of ``library`` without its caches when the pool starts), in
        jobs of at most :data:`JOB_SIZE`."""
        here = self.workers < 2 or len(keys) < PARALLEL_FROM
        least = -(-len(keys) // JOB_SIZE)  # jobs of at most JOB_SIZE
        jobs = _jobs(keys, least if here else max(self.workers, least))
        if here:
            return _joined([make(library, job, settings) for job in jobs])
        try:
            parts = list(self._executor(library).map(_make_here, jobs, [settings] * len(jobs)))
        except BrokenProcessPool as error:  # e.g. a script that starts campaigns unguarded
            _log.warning(
                "making products in this process only: its workers could not start (%s; a "
                'script that runs a campaign needs `if __name__ == "__main__":`)',
                error,
            )
            self.workers = 1
            return _joined([make(library, job, settings) for job in jobs])
        return _joined(parts)

    def _executor(self, library: MakesProducts) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_install,
                initargs=(pickle.dumps(library),),  # bytes: the pool holds no reference to it
            )
            weakref.finalize(self, self._pool.shutdown, cancel_futures=True)
        return self._pool


def _jobs(keys: Sequence[tuple[int, ...]], num: int) -> list[list[tuple[int, ...]]]:
    """``keys`` split in order into ``num`` jobs (fewer where there are fewer keys)."""
    shares = np.array_split(np.arange(len(keys)), max(num, 1))
    return [[keys[i] for i in share] for share in shares if share.size] or [[]]


def _joined(parts: list[Made]) -> Made:
    """The jobs' products, in order."""
    return Made(
        [reason for part in parts for reason in part.reasons],
        np.concatenate([part.packed for part in parts]),
    )


_WORKER_LIBRARY: list[Any] = []
"""The library a worker process makes products of (set once, by :func:`_install`)."""


def _install(library: bytes) -> None:
    _WORKER_LIBRARY.append(pickle.loads(library))


def _make_here(keys: list[tuple[int, ...]], settings: tuple) -> Made:
    return make(_WORKER_LIBRARY[0], keys, settings)
