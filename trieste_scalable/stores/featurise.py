"""Featurising a library in chunks on every core: each chunk of SMILES is parsed, fingerprinted
(bit-packed) or scored in a worker process, so at most one chunk of RDKit molecules per core is
alive at a time (a library's ``Mol`` objects never are) and fingerprints take one bit each (128
bytes a molecule at 1,024 bits, against 1,024 as unpacked bytes).

The workers are started with ``spawn`` (the driver may hold TensorFlow's threads, which ``fork``
does not copy safely) and import only this module's light dependencies; small libraries are
done in-process. Each chunk's result is cached on disk under a hash of its SMILES and settings
(:func:`chunk_dir`), so an interrupted featurisation of millions of molecules resumes where it
stopped, and a library that shares whole chunks with one featurised before (a prefix of it, or
the same file with molecules appended) computes only its new chunks.
"""

from __future__ import annotations

import functools
import hashlib
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..chemistry.molecules import OBJECTIVES, fingerprint_width, fingerprints
from ..errors import UsageError
from ..files import replace_atomically
from .cache import CACHE_VERSION, cache_dir, touch

ChunkTask = Callable[[Sequence[str], tuple], tuple[np.ndarray, ...]]

CHUNK_SIZE = 2_000


def fingerprint_library(
    smiles: Sequence[str],
    kind: str = "bits",
    radius: int = 2,
    size: int = 1024,
    skip_invalid: bool = False,
    processes: Optional[int] = None,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The indices of the parsed SMILES [N] and their bit-packed fingerprints [N, W] (uint8,
    ``W = ceil(width / 8)``; :func:`~trieste_scalable.numerics.bits.unpack_bits` restores them).

    :raise UsageError: Listing the first unparseable SMILES, unless ``skip_invalid``; or if
        none parses.
    """
    parts = map_chunks(fingerprint_chunk, smiles, (kind, radius, size), processes, progress)
    offsets = np.cumsum([0] + [CHUNK_SIZE] * (len(parts) - 1))
    bad = [int(o + i) for o, (failed, _) in zip(offsets, parts) for i in failed.tolist()]
    if bad and not skip_invalid:
        shown = ", ".join(f"#{i + 1} {smiles[i]!r}" for i in bad[:5])
        raise UsageError(
            f"{len(bad)} SMILES could not be parsed (first: {shown}); fix them or pass "
            "--skip-invalid to leave them out"
        )
    kept = np.setdiff1d(np.arange(len(smiles)), np.array(bad, dtype=np.int64))
    if kept.size == 0:
        raise UsageError("no SMILES in the library could be parsed")
    return kept, np.concatenate([packed for _, packed in parts])


def score_library(
    smiles: Sequence[str],
    objective: str,
    processes: Optional[int] = None,
    progress: bool = False,
) -> np.ndarray:
    """A built-in property (``OBJECTIVES``) of every SMILES [N] (all must
    parse)."""
    parts = map_chunks(_score_chunk, smiles, (objective,), processes, progress)
    return np.concatenate([values for (values,) in parts])


def map_chunks(
    task: ChunkTask,
    smiles: Sequence[str],
    settings: tuple,
    processes: Optional[int] = None,
    progress: bool = False,
) -> list[tuple[np.ndarray, ...]]:
    """``task(chunk, settings)`` for each chunk of ``CHUNK_SIZE`` SMILES, in order, read
    from the chunk cache, or computed (and cached) on ``processes`` worker processes (default:
    every core; in-process for a single chunk). Worker processes start only for chunks not in
    the cache (starting them costs seconds: each imports the package)."""
    directory = chunk_dir()
    chunks = [smiles[i : i + CHUNK_SIZE] for i in range(0, len(smiles), CHUNK_SIZE)]
    results = [_stored(task, directory, chunk, settings) for chunk in chunks]
    missing = [i for i, result in enumerate(results) if result is None]
    processes = min(processes or os.cpu_count() or 1, len(missing))
    cached_task = functools.partial(_cached, task, directory)
    if processes <= 1:
        computed = [cached_task(chunks[i], settings) for i in missing]
    else:
        from tqdm.auto import tqdm

        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(processes, mp_context=context) as pool:
            mapped = pool.map(cached_task, [chunks[i] for i in missing], [settings] * len(missing))
            bar = tqdm(mapped, total=len(missing), unit="chunk", disable=not progress)
            computed = list(bar)
    for i, result in zip(missing, computed):
        results[i] = result
    return [result for result in results if result is not None]


def chunk_dir() -> Path:
    """Where chunk results are cached: ``chunks/`` in the cache directory."""
    return cache_dir() / "chunks"


def _entry(
    task: ChunkTask, directory: Path, chunk: Sequence[str], settings: tuple
) -> tuple[Path, str]:
    """The cache path of ``task(chunk, settings)`` and its whole key's hash."""
    key = f"{CACHE_VERSION}|{task.__name__}|{settings!r}|" + "\n".join(chunk)
    key_hash = hashlib.sha256(key.encode()).hexdigest()
    return directory / f"{task.__name__}-{key_hash[:24]}.npz", key_hash


def _stored(
    task: ChunkTask, directory: Path, chunk: Sequence[str], settings: tuple
) -> Optional[tuple[np.ndarray, ...]]:
    """``task(chunk, settings)`` from ``directory``; ``None`` where it is not there, unreadable,
    or another chunk's entry copied into its place."""
    path, key_hash = _entry(task, directory, chunk, settings)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["key"]) == key_hash:
                touch(path)  # its last use, for `trieste-scalable cache`
                return tuple(stored[f"arr_{i}"] for i in range(len(stored.files) - 1))
    except (OSError, ValueError, EOFError, KeyError):
        pass  # damaged: recomputed
    return None


def _cached(
    task: ChunkTask, directory: Path, chunk: Sequence[str], settings: tuple
) -> tuple[np.ndarray, ...]:
    """``task(chunk, settings)`` from ``directory``, or computed and stored there atomically with
    its whole key's hash (an unreadable entry, or another chunk's copied into its place, is
    recomputed)."""
    stored = _stored(task, directory, chunk, settings)
    if stored is not None:
        return stored
    result = task(chunk, settings)
    path, key_hash = _entry(task, directory, chunk, settings)
    if path.exists() and not path.is_file():
        return result  # something else in the entry's place: left alone, not cached
    directory.mkdir(parents=True, exist_ok=True)
    replace_atomically(path, lambda temporary: np.savez(temporary, *result, key=key_hash))
    return result


def _parsed(smiles: Sequence[str]) -> tuple[list, list[int]]:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # stubs miss it
    molecules = [Chem.MolFromSmiles(s) for s in smiles]
    return molecules, [i for i, m in enumerate(molecules) if m is None]


def fingerprint_chunk(smiles: Sequence[str], settings: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The unparseable positions [K] and packed fingerprints [n - K, W] of a chunk."""
    kind, radius, size = settings
    molecules, failed = _parsed(smiles)
    valid = [m for m in molecules if m is not None]
    bad = np.array(failed, dtype=np.int64)
    if not valid:
        width = fingerprint_width(kind, size)
        return bad, np.zeros((0, math.ceil(width / 8)), dtype=np.uint8)
    return bad, np.packbits(fingerprints(valid, kind, radius, size), axis=1)


def _score_chunk(smiles: Sequence[str], settings: tuple) -> tuple[np.ndarray]:
    (objective,) = settings
    molecules, failed = _parsed(smiles)
    if failed:
        raise ValueError(f"cannot score unparseable SMILES {smiles[failed[0]]!r}")
    return (OBJECTIVES[objective](molecules),)
