"""Building a library store (:mod:`.store`) from SMILES files, shard by shard, resumable.

Shard ``k`` holds what is new in input molecules ``k * shard_size ...`` of the sources read in
order; its chunks are fingerprinted by a :data:`ChunkMap` (in this process, on worker processes
or on a Ray cluster: :mod:`~trieste_scalable.stores.chunk_maps`), the next shards' chunks
running while one is written (:func:`shards_in_flight`). Duplicates are removed across shards
by 64-bit row hashes, each match checked against the stored row's bytes.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

from ..chemistry.molecules import (
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
    fingerprint_width,
    read_smiles,
)
from ..errors import UsageError
from ..files import replace_atomically
from ..numerics.rows import first_occurrences, row_hashes
from .featurise import CHUNK_SIZE, fingerprint_chunk
from .store import (
    FORMAT_VERSION,
    MANIFEST,
    SHARD_SIZE,
    LibraryStore,
    StoreError,
    is_store,
    read_manifest,
    shard_hash,
    write_manifest,
)

ChunkMap = Callable[
    [Sequence[Sequence[str]], tuple], Callable[[], list[tuple[np.ndarray, np.ndarray]]]
]
"""Starts fingerprinting chunks of SMILES with settings ``(kind, radius, size)``; the callable it
returns waits for each chunk's unparseable positions [K] and packed fingerprints [n - K, W], in
order (so the next shards' chunks run while this one is written). One that has a ``cpus``
attribute runs that many chunks at once (:mod:`~trieste_scalable.stores.chunk_maps`); one
without computes them as it is called (two shards in flight, as with no CPUs)."""


def shards_in_flight(cpus: int, chunks_per_shard: int) -> int:
    """Shards whose chunks :func:`build_store` keeps submitted, the one being written included:
    enough that ``cpus`` workers still have two chunks each to take while a shard is written
    (``1 + ceil(2 cpus / chunks_per_shard)``), and at least two (the next shard is started
    before one is written)."""
    return max(2, 1 + math.ceil(2 * cpus / max(chunks_per_shard, 1)))


def build_store(
    sources: Sequence[Path | str],
    out: Path | str,
    kind: str = DEFAULT_FINGERPRINT,
    radius: int = DEFAULT_RADIUS,
    size: int = DEFAULT_WIDTH,
    shard_size: int = SHARD_SIZE,
    chunk_map: Optional[ChunkMap] = None,
    progress: Callable[[str], None] = lambda message: None,
) -> LibraryStore:
    """Build (or finish) the store ``out`` from SMILES files (.smi or .csv, optionally gzipped),
    read in order and never held whole; by default with the campaigns' fingerprint
    (:data:`~.molecules.DEFAULT_FINGERPRINT`), so ``screen``'s defaults find the store they want.

    :param shard_size: Input molecules per shard.
    :param chunk_map: Fingerprints chunks of SMILES: maps ``(chunks, settings)`` to each chunk's
        unparseable positions and packed fingerprints, in order (default: in this process; the
        command line passes worker processes or Ray tasks,
        :mod:`~trieste_scalable.stores.chunk_maps`).
    :param progress: Called with a line after each shard.
    :raise StoreError: If ``out`` holds a store of other sources or settings, or a listed shard
        no longer matches its hash.
    """
    if shard_size < 1:
        raise UsageError(f"shard_size must be positive, got {shard_size}")
    out, paths = Path(out), [Path(s) for s in sources]
    for path in paths:
        if not path.is_file():
            raise StoreError(f"library file {path} does not exist")
    manifest = _started_manifest(out, paths, (kind, radius, size), shard_size)
    done = {shard["name"]: shard for shard in manifest["shards"]}
    _remove_unlisted(out, set(done))
    seen = _SeenRows(out, [shard["name"] for shard in manifest["shards"]])
    chunk_map = chunk_map or _in_process
    molecules = itertools.chain.from_iterable(read_smiles(p) for p in paths)
    started: list[tuple[int, list[str], Callable[[], list[Any]]]] = []
    for number, block in enumerate(_blocks(molecules, shard_size)):
        if f"shard-{number:05d}" in done:
            continue
        chunks = [block[i : i + CHUNK_SIZE] for i in range(0, len(block), CHUNK_SIZE)]
        started.append((number, block, chunk_map(chunks, (kind, radius, size))))
        cpus = int(getattr(chunk_map, "cpus", 0))  # a cluster's may change
        while len(started) >= shards_in_flight(cpus, math.ceil(shard_size / CHUNK_SIZE)):
            _finish_shard(out, manifest, shard_size, seen, *started.pop(0), progress)
    for shard in started:
        _finish_shard(out, manifest, shard_size, seen, *shard, progress)
    hashes = "".join(shard["sha256"] for shard in manifest["shards"])
    manifest.update(complete=True, library_sha256=hashlib.sha256(hashes.encode()).hexdigest())
    write_manifest(out, manifest)
    return LibraryStore(out)


def _started_manifest(
    out: Path, paths: list[Path], fingerprint: tuple[str, int, int], shard_size: int
) -> dict[str, Any]:
    """The manifest of the store ``out`` is being built into: a new one, or the one of a store
    of the same sources and settings left unfinished, written before any shard; the shards it
    lists are checked against their hashes.

    :raise StoreError: If ``out`` holds a store of other sources or settings, or a listed shard
        no longer matches its hash.
    """
    kind, radius, size = fingerprint
    width = fingerprint_width(kind, size)
    settings = dict(kind=kind, radius=radius, size=size, width=width)
    origin = [[str(p.resolve()), p.stat().st_size] for p in paths]
    manifest: dict[str, Any] = dict(
        format=FORMAT_VERSION, fingerprint=settings, sources=origin, shard_size=shard_size,
        shards=[], complete=False, library_sha256="",
    )  # fmt: skip
    if is_store(out):
        found = read_manifest(out)
        same = ("fingerprint", "sources", "shard_size")
        if any(found[key] != manifest[key] for key in same):
            raise StoreError(
                f"{out} holds a store of other sources or settings ({MANIFEST}): choose another "
                "--out or delete it"
            )
        manifest = found
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(out, manifest)  # the store's sources and settings, before any shard
    for shard in manifest["shards"]:
        if shard_hash(out, shard["name"]) != shard["sha256"]:
            raise StoreError(f"{out}: shard {shard['name']} does not match its hash in {MANIFEST}")
    return manifest


def _finish_shard(
    out: Path,
    manifest: dict[str, Any],
    shard_size: int,
    seen: _SeenRows,
    number: int,
    block: list[str],
    parts: Callable[[], list[Any]],
    progress: Callable[[str], None],
) -> None:
    """Write shard ``number`` once its chunks are done and list it in the manifest."""
    name = f"shard-{number:05d}"
    entry = _write_shard(out, name, number * shard_size, block, parts(), seen)
    manifest["shards"].append(entry)
    write_manifest(out, manifest)
    new, invalid = entry["rows"], entry["invalid"]
    progress(f"{name}: {new} new molecules of {len(block)} ({invalid} invalid)")


def _in_process(chunks: Sequence[Sequence[str]], settings: tuple) -> Callable[[], list[Any]]:
    parts = [fingerprint_chunk(chunk, settings) for chunk in chunks]
    return lambda: parts


def _blocks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(items)
    while block := list(itertools.islice(iterator, size)):
        yield block


def _write_shard(
    out: Path, name: str, first: int, block: list[str], parts: list[Any], seen: _SeenRows
) -> dict[str, Any]:
    """Write one shard's files (temporary names, then renamed) and return its manifest entry."""
    offsets = np.arange(len(parts)) * CHUNK_SIZE
    invalid = np.concatenate([o + bad for o, (bad, _) in zip(offsets, parts)]).astype(np.int64)
    valid = np.setdiff1d(np.arange(len(block)), invalid)
    packed = np.concatenate([packed for _, packed in parts])
    new, hashes = seen.new_rows(packed)  # not seen before, in this shard or an earlier one
    bits, smiles = np.ascontiguousarray(packed[new]), [block[i] for i in valid[new]]
    ids = seen.next_id + np.arange(len(smiles), dtype=np.int64)
    lines = [f"{first + i}\t{block[i]}\n" for i in invalid]
    writers = {
        "bits.npy": lambda t: np.save(t, bits),
        "ids.npy": lambda t: np.save(t, ids),
        "smi": lambda t: t.write_text("".join(s + "\n" for s in smiles)),
        "invalid.smi": lambda t: t.write_text("".join(lines)),
    }
    for suffix, write in writers.items():
        replace_atomically(out / f"{name}.{suffix}", write)
    seen.record(np.load(out / f"{name}.bits.npy", mmap_mode="r"), hashes[new])
    sha = shard_hash(out, name)
    return dict(name=name, rows=len(smiles), invalid=len(lines), sha256=sha)


class _SeenRows:
    """64-bit hashes of every row stored so far (8 bytes a row), each match checked against the
    stored row's bytes (read memory-mapped from its shard), so a hash collision never drops a
    new molecule."""

    def __init__(self, out: Path, names: list[str]):
        self._hashes, self._where = np.zeros(0, np.uint64), np.zeros(0, np.int64)
        self._tables: list[np.ndarray] = []  # each shard's rows, memory-mapped
        self.next_id = 0
        for name in names:
            self.record(np.load(out / f"{name}.bits.npy", mmap_mode="r"))

    def new_rows(self, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which rows of ``packed`` [n, W] are new (first occurrences, not stored before) [n],
        and every row's hash [n]."""
        hashes = row_hashes(packed)
        new = np.zeros(len(packed), dtype=bool)
        new[first_occurrences(packed)] = True  # within the shard: exact
        position = np.searchsorted(self._hashes, hashes)
        known = position < len(self._hashes)
        known[known] = self._hashes[position[known]] == hashes[known]
        for i in np.flatnonzero(known & new):
            new[i] = not np.array_equal(packed[i], self._row(int(self._where[position[i]])))
        return new, hashes

    def record(self, rows: np.ndarray, hashes: Optional[np.ndarray] = None) -> None:
        """Add a written shard's rows [n, W] (memory-mapped), with their hashes if known."""
        hashes = row_hashes(rows) if hashes is None else hashes
        ids = self.next_id + np.arange(len(rows), dtype=np.int64)
        order = np.argsort(np.concatenate([self._hashes, hashes]), kind="stable")
        self._hashes = np.concatenate([self._hashes, hashes])[order]
        self._where = np.concatenate([self._where, ids])[order]
        self._tables.append(rows)
        self.next_id += len(rows)

    def _row(self, global_id: int) -> np.ndarray:
        for table in self._tables:
            if global_id < len(table):
                return table[global_id]
            global_id -= len(table)
        raise IndexError(global_id)


def _remove_unlisted(out: Path, listed: set[str]) -> None:
    """Remove shard files the manifest does not list (a shard cut by a kill) and temporaries."""
    for path in out.iterdir():
        name = path.name.split(".")[0]
        if path.name.startswith("shard-") and (name not in listed or ".tmp" in path.name):
            path.unlink()
