"""A library store: a directory of shards of bit-packed fingerprints, larger than memory if need
be, built once from SMILES files and read memory-mapped (issue: libraries past one machine).

Layout::

    STORE/manifest.json                 format, fingerprint settings, sources, shards, hashes
    STORE/shard-00000.bits.npy          packed fingerprints [n, ceil(width / 8)] uint8
    STORE/shard-00000.ids.npy           global row ids [n] int64 (0, 1, ... across shards)
    STORE/shard-00000.smi               the n SMILES, one a line
    STORE/shard-00000.invalid.smi       input position and SMILES of each unparseable line

Shard ``k`` holds what is new in input molecules ``k * shard_size ...`` of the sources read in
order: unparseable SMILES are left out (listed in its ``.invalid.smi``) and so is any molecule
whose fingerprint an earlier molecule of the store has (duplicates are removed across shards; the
first occurrence stays). A shard's content hash covers its four files.

Building is resumable shard by shard: files are written under temporary names and renamed, then
the shard is added to the manifest (written atomically). After a kill, shards the manifest lists
stay (their hashes are checked), anything else is removed and rebuilt; a shard is never written
twice into the store. A shard whose files no longer match its hash is an error naming it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

from ..numerics.bits import aligned_empty
from ..numerics.rows import first_occurrences
from .featurise import CHUNK_SIZE, fingerprint_chunk
from .molecules import fingerprint_width, read_smiles, replace_atomically

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SHARD_SIZE = 1_000_000
SHARD_FILES = ("bits.npy", "ids.npy", "smi", "invalid.smi")


class StoreError(ValueError):
    """A store that is missing, damaged or not the one asked for (the message names the file)."""


@dataclass(frozen=True)
class Shard:
    """One shard, memory-mapped: ``bits`` [n, W] and ``ids`` [n] are read as used."""

    name: str
    bits: np.ndarray
    ids: np.ndarray
    path: Path

    def smiles(self) -> list[str]:
        return (self.path / f"{self.name}.smi").read_text().splitlines()


class LibraryStore:
    """A built store (module docstring), its manifest checked on opening.

    :raise StoreError: If the manifest is missing, of another format or damaged, or a shard's
        files are missing (naming the shard).
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.manifest = _read_manifest(self.path)
        if not self.manifest.get("complete"):
            raise StoreError(f"{self.path} is not complete: run `featurise` again to finish it")
        for shard in self.manifest["shards"]:
            for suffix in SHARD_FILES:
                if not (self.path / f"{shard['name']}.{suffix}").is_file():
                    raise StoreError(f"{self.path}: shard {shard['name']} is missing its {suffix}")

    @property
    def num_rows(self) -> int:
        return sum(int(s["rows"]) for s in self.manifest["shards"])

    @property
    def fingerprint(self) -> dict[str, Any]:
        """``kind``, ``radius``, ``size`` and ``width`` (columns once unpacked)."""
        return dict(self.manifest["fingerprint"])

    @property
    def content_hash(self) -> str:
        """One hash of every shard's content hash, in order."""
        return str(self.manifest["library_sha256"])

    def shards(self) -> Iterator[Shard]:
        for shard in self.manifest["shards"]:
            name = shard["name"]
            bits = np.load(self.path / f"{name}.bits.npy", mmap_mode="r")
            ids = np.load(self.path / f"{name}.ids.npy", mmap_mode="r")
            yield Shard(name, bits, ids, self.path)

    def verify(self, names: Optional[Sequence[str]] = None) -> None:
        """Check every shard's files (or those of ``names``) against its content hash.

        :raise StoreError: Naming the first shard that does not match.
        """
        for shard in self.manifest["shards"]:
            if names is not None and shard["name"] not in names:
                continue
            if _shard_hash(self.path, shard["name"]) != shard["sha256"]:
                raise StoreError(
                    f"{self.path}: shard {shard['name']} does not match its hash in {MANIFEST} "
                    "(damaged or edited): rebuild it with `featurise`"
                )

    def packed(self, names: Optional[Sequence[str]] = None) -> np.ndarray:
        """Every shard's packed fingerprints (or those of ``names``) in one array [N, W], in
        memory, copied shard by shard into an array TensorFlow can share
        (:func:`~..numerics.bits.shared_tensor`)."""
        width = -(-int(self.fingerprint["width"]) // 8)
        shards = [s for s in self.shards() if names is None or s.name in names]
        rows = sum(len(shard.ids) for shard in shards)
        packed, start = aligned_empty((rows, width), np.uint8), 0
        for shard in shards:
            packed[start : start + len(shard.bits)] = shard.bits
            start += len(shard.bits)
        return packed

    def smiles(self) -> list[str]:
        return [s for shard in self.shards() for s in shard.smiles()]


def is_store(path: Path | str) -> bool:
    """Whether ``path`` is a library store's directory (it has a manifest)."""
    return (Path(path) / MANIFEST).is_file()


ChunkMap = Callable[
    [Sequence[Sequence[str]], tuple], Callable[[], list[tuple[np.ndarray, np.ndarray]]]
]
"""Starts fingerprinting chunks of SMILES with settings ``(kind, radius, size)``; the callable it
returns waits for each chunk's unparseable positions [K] and packed fingerprints [n - K, W], in
order (so the next shard's chunks run while this one is written)."""


def build_store(
    sources: Sequence[Path | str],
    out: Path | str,
    kind: str = "bits",
    radius: int = 2,
    size: int = 1024,
    shard_size: int = SHARD_SIZE,
    chunk_map: Optional[ChunkMap] = None,
    progress: Callable[[str], None] = lambda message: None,
) -> LibraryStore:
    """Build (or finish) the store ``out`` from SMILES files (.smi or .csv, optionally gzipped),
    read in order and never held whole.

    :param shard_size: Input molecules per shard.
    :param chunk_map: Fingerprints chunks of SMILES: maps ``(chunks, settings)`` to each chunk's
        unparseable positions and packed fingerprints, in order (default: in this process; the
        command line passes Ray tasks, :func:`ray_chunk_map`).
    :param progress: Called with a line after each shard.
    :raise StoreError: If ``out`` holds a store of other sources or settings, or a listed shard
        no longer matches its hash.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size must be positive, got {shard_size}")
    out, paths = Path(out), [Path(s) for s in sources]
    for path in paths:
        if not path.is_file():
            raise StoreError(f"library file {path} does not exist")
    width = fingerprint_width(kind, size)
    settings = dict(kind=kind, radius=radius, size=size, width=width)
    origin = [[str(p.resolve()), p.stat().st_size] for p in paths]
    manifest: dict[str, Any] = dict(
        format=FORMAT_VERSION, fingerprint=settings, sources=origin, shard_size=shard_size,
        shards=[], complete=False, library_sha256="",
    )  # fmt: skip
    if is_store(out):
        found = _read_manifest(out)
        same = ("fingerprint", "sources", "shard_size")
        if any(found[key] != manifest[key] for key in same):
            raise StoreError(
                f"{out} holds a store of other sources or settings ({MANIFEST}): choose another "
                "--out or delete it"
            )
        manifest = found
    out.mkdir(parents=True, exist_ok=True)
    _write_manifest(out, manifest)  # the store's sources and settings, before any shard
    done = {shard["name"]: shard for shard in manifest["shards"]}
    for name, shard in done.items():
        if _shard_hash(out, name) != shard["sha256"]:
            raise StoreError(f"{out}: shard {name} does not match its hash in {MANIFEST}")
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
        if len(started) == 2:  # the next shard runs while this one is written
            _finish_shard(out, manifest, shard_size, seen, *started.pop(0), progress)
    for shard in started:
        _finish_shard(out, manifest, shard_size, seen, *shard, progress)
    hashes = "".join(shard["sha256"] for shard in manifest["shards"])
    manifest.update(complete=True, library_sha256=hashlib.sha256(hashes.encode()).hexdigest())
    _write_manifest(out, manifest)
    return LibraryStore(out)


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
    _write_manifest(out, manifest)
    new, invalid = entry["rows"], entry["invalid"]
    progress(f"{name}: {new} new molecules of {len(block)} ({invalid} invalid)")


def ray_chunk_map(address: Optional[str] = None) -> ChunkMap:
    """A :data:`ChunkMap` of one Ray task per chunk, on a local cluster (every core) or the one
    at ``address`` (started or joined at the first call)."""
    import ray

    task = ray.remote(fingerprint_chunk)

    def chunk_map(chunks: Sequence[Sequence[str]], settings: tuple) -> Callable[[], list[Any]]:
        if not ray.is_initialized():
            ray.init(address, include_dashboard=False, log_to_driver=False)
        refs = [task.remote(list(chunk), settings) for chunk in chunks]
        return lambda: ray.get(refs)

    return chunk_map


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
    new = seen.add(packed)  # drops rows seen before, in this shard or an earlier one
    bits, smiles = np.ascontiguousarray(packed[new]), [block[i] for i in valid[new]]
    ids = seen.next_id - len(smiles) + np.arange(len(smiles), dtype=np.int64)
    lines = [f"{first + i}\t{block[i]}\n" for i in invalid]
    writers = {
        "bits.npy": lambda t: np.save(t, bits),
        "ids.npy": lambda t: np.save(t, ids),
        "smi": lambda t: t.write_text("".join(s + "\n" for s in smiles)),
        "invalid.smi": lambda t: t.write_text("".join(lines)),
    }
    for suffix, write in writers.items():
        replace_atomically(out / f"{name}.{suffix}", write)
    sha = _shard_hash(out, name)
    return dict(name=name, rows=len(smiles), invalid=len(lines), sha256=sha)


class _SeenRows:
    """64-bit hashes of every row stored so far (8 bytes a row), each match checked against the
    stored row's bytes, so a hash collision never drops a new molecule."""

    def __init__(self, out: Path, names: list[str]):
        self._out, self._hashes, self._where = out, np.zeros(0, np.uint64), np.zeros(0, np.int64)
        self._tables: list[np.ndarray] = []
        self.next_id = 0
        for name in names:
            self._extend(np.load(out / f"{name}.bits.npy", mmap_mode="r"))

    def add(self, packed: np.ndarray) -> np.ndarray:
        """Which rows of ``packed`` [n, W] are new (first occurrences); records them."""
        hashes = _row_hashes(packed)
        new = np.zeros(len(packed), dtype=bool)
        new[first_occurrences(packed)] = True  # within the shard: exact
        position = np.searchsorted(self._hashes, hashes)
        known = position < len(self._hashes)
        known[known] = self._hashes[position[known]] == hashes[known]
        for i in np.flatnonzero(known & new):
            new[i] = not np.array_equal(packed[i], self._row(int(self._where[position[i]])))
        self._extend(packed[new])
        return new

    def _row(self, global_id: int) -> np.ndarray:
        for table in self._tables:
            if global_id < len(table):
                return table[global_id]
            global_id -= len(table)
        raise IndexError(global_id)

    def _extend(self, rows: np.ndarray) -> None:
        hashes = _row_hashes(rows)
        ids = self.next_id + np.arange(len(rows), dtype=np.int64)
        order = np.argsort(np.concatenate([self._hashes, hashes]), kind="stable")
        self._hashes = np.concatenate([self._hashes, hashes])[order]
        self._where = np.concatenate([self._where, ids])[order]
        self._tables.append(rows)
        self.next_id += len(rows)


def _row_hashes(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's bytes [n] (vectorised: multiply-xorshift over 8-byte words)."""
    data = np.ascontiguousarray(rows)
    pad = -data.shape[1] % 8
    words = np.pad(data, [(0, 0), (0, pad)]).view(np.uint64)  # [n, ceil(W / 8)]
    h = np.full(len(data), 0x9E3779B97F4A7C15, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h = (h ^ words[:, j]) * np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
    return h


def _shard_hash(out: Path, name: str) -> str:
    digest = hashlib.sha256()
    for suffix in SHARD_FILES:
        path = out / f"{name}.{suffix}"
        if not path.is_file():
            return ""
        with open(path, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def _remove_unlisted(out: Path, listed: set[str]) -> None:
    """Remove shard files the manifest does not list (a shard cut by a kill) and temporaries."""
    for path in out.iterdir():
        name = path.name.split(".")[0]
        if path.name.startswith("shard-") and (name not in listed or ".tmp" in path.name):
            path.unlink()


def _read_manifest(path: Path) -> dict[str, Any]:
    file = path / MANIFEST
    if not file.is_file():
        raise StoreError(f"{path} is not a library store: it has no {MANIFEST}")
    try:
        manifest = json.loads(file.read_text())
        if manifest["format"] != FORMAT_VERSION:
            raise StoreError(
                f"{file}: format {manifest['format']}, this version reads {FORMAT_VERSION}"
            )
        for shard in manifest["shards"]:
            int(shard["rows"]), str(shard["name"]), str(shard["sha256"])
        manifest["fingerprint"]["width"], manifest["sources"], manifest["shard_size"]
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, StoreError):
            raise
        raise StoreError(f"{file} is damaged ({error!r})") from None
    return manifest


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest, indent=1)
    replace_atomically(out / MANIFEST, lambda temporary: temporary.write_text(text))
