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

Building (:mod:`.store_build`) is resumable shard by shard: files are written under temporary
names and renamed, then the shard is added to the manifest (written atomically). After a kill,
shards the manifest lists stay (their hashes are checked), anything else is removed and rebuilt;
a shard is never written twice into the store. A shard whose files no longer match its hash is
an error naming it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Optional, Sequence

import numpy as np

from ..chemistry.labels import Labels
from ..chemistry.molecules import FINGERPRINTS, fingerprint_width
from ..errors import UsageError
from ..files import file_hash, replace_atomically
from ..numerics.rows import index_keys, row_hashes
from .cache import cached

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SHARD_SIZE = 1_000_000
SHARD_FILES = ("bits.npy", "ids.npy", "smi", "invalid.smi")


class StoreError(UsageError):
    """A store that is missing, damaged or not the one asked for (the message names the file):
    the library the user named cannot be used (exit code 2)."""


@dataclass(frozen=True)
class Shard:
    """One shard, memory-mapped: ``bits`` [n, W] and ``ids`` [n] are read as used."""

    name: str
    bits: np.ndarray
    ids: np.ndarray
    path: Path


class LibraryStore:
    """A built store (module docstring), its manifest checked on opening.

    :raise StoreError: If the manifest is missing, of another format or damaged, or does not
        describe the shards on disk (:func:`check_shards`).
    :raise UsageError: If it holds no molecules (as for an empty SMILES file).
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        if not self.manifest.get("complete"):
            raise StoreError(f"{self.path} is not complete: run `featurise` again to finish it")
        check_shards(self.path, self.manifest)
        if self.num_rows == 0:
            raise UsageError(f"library {str(self.path)!r} contains no molecules")
        self._verified: dict[str, str] = {}  # shard name: content hash computed from its files

    @property
    def num_rows(self) -> int:
        return sum(int(s["rows"]) for s in self.manifest["shards"])

    @property
    def fingerprint(self) -> dict[str, Any]:
        """``kind``, ``radius``, ``size`` and ``width`` (columns once unpacked)."""
        return dict(self.manifest["fingerprint"])

    @property
    def content_hash(self) -> str:
        """One hash of every shard's content hash, in order, each computed from the shard's
        files (:meth:`verify`, once per shard and instance), never taken from the manifest: the
        key of the store's cache entries, so a store whose manifest was edited (shards swapped,
        hashes copied) never reads another store's entries."""
        self.verify([s["name"] for s in self.manifest["shards"] if s["name"] not in self._verified])
        hashes = "".join(self._verified[s["name"]] for s in self.manifest["shards"])
        return hashlib.sha256(hashes.encode()).hexdigest()

    def shards(self, copy_on_write: bool = False) -> Iterator[Shard]:
        """The shards, in order, memory-mapped read-only (or copy-on-write: writable arrays,
        which ``shared_tensor`` shares with TensorFlow without a copy;
        nothing is written back)."""
        for shard in self.manifest["shards"]:
            name = shard["name"]
            bits = load_shard_array(self.path, name, "bits", "c" if copy_on_write else "r")
            ids = load_shard_array(self.path, name, "ids", "r")
            yield Shard(name, bits, ids, self.path)

    def verify(self, names: Optional[Sequence[str]] = None) -> None:
        """Check every shard's files (or those of ``names``) against its content hash.

        :raise StoreError: Naming the first shard that does not match.
        """
        for shard in self.manifest["shards"]:
            if names is not None and shard["name"] not in names:
                continue
            computed = shard_hash(self.path, shard["name"])
            if computed != shard["sha256"]:
                raise StoreError(
                    f"{self.path}: shard {shard['name']} does not match its hash in {MANIFEST} "
                    "(damaged or edited): rebuild it with `featurise`"
                )
            self._verified[shard["name"]] = computed

    def packed(self) -> np.ndarray:
        """Every shard's packed fingerprints in one array [N, W], memory-mapped copy-on-write
        from one file in the cache directory (:func:`~.cache.cached`: written once per
        store, a shard at a time, and checked against its hash when read). Its pages are read
        as rows are used and can be dropped under memory pressure, so a process holding the
        library holds little of it; TensorFlow shares the array
        (``shared_tensor``) and nothing is written back. The file takes
        as much disk as the shards' fingerprints."""
        shape = (self.num_rows, -(-int(self.fingerprint["width"]) // 8))
        return cached(
            "store-packed",
            f"store|{self.content_hash}",
            lambda: np.concatenate([shard.bits for shard in self.shards()]),
            lambda value: value.shape == shape and value.dtype == np.uint8,
            mmap="c",
            write=lambda path: _write_npy(path, shape, np.uint8, (s.bits for s in self.shards())),
        )

    def index_keys(self) -> np.ndarray:
        """The keys of an index of every row (``index_keys`` [2, N]:
        the rows' 64-bit hashes sorted, and their order), memory-mapped from the cache; the
        hashes are computed a shard at a time from the shards' own memory maps, so that the
        index (``RowIndex``) reads none of :meth:`packed`'s pages."""
        return cached(
            "store-index-keys",
            f"store|{self.content_hash}",
            lambda: index_keys(np.concatenate([row_hashes(s.bits) for s in self.shards()])),
            lambda value: value.shape == (2, self.num_rows) and value.dtype == np.uint64,
            mmap=True,
        )

    def labels(self) -> Labels:
        """Every shard's SMILES, in row order, memory-mapped from two cache entries written once
        per store a shard at a time: their UTF-8 bytes back to back and where each starts. A
        process then holds only the labels it reads (10^8 SMILES in memory: ~5 GB)."""
        key, rows = f"store|{self.content_hash}", self.num_rows
        offsets = cached(
            "store-label-offsets",
            key,
            lambda: np.concatenate([[0], *self._label_parts(ends=True)]),
            lambda value: value.shape == (rows + 1,) and value.dtype == np.int64,
            mmap=True,
            write=lambda path: _write_npy(
                path, (rows + 1,), np.int64, [np.zeros(1, np.int64), *self._label_parts(True)]
            ),
        )
        size = int(offsets[-1])
        smiles = cached(
            "store-smiles",
            key,
            lambda: np.concatenate(list(self._label_parts(ends=False))),
            lambda value: value.shape == (size,) and value.dtype == np.uint8,
            mmap=True,
            write=lambda path: _write_npy(path, (size,), np.uint8, self._label_parts(False)),
        )
        return Labels.mapped(smiles, offsets)

    def _label_parts(self, ends: bool) -> Iterator[np.ndarray]:
        """Per shard, read one at a time: where each of its SMILES ends in the store's bytes
        (``ends``, int64 [n]) or the bytes themselves without the newlines (uint8).

        :raise StoreError: If a shard's ``.smi`` does not hold one line per row."""
        done = 0
        for shard in self.manifest["shards"]:
            text = np.fromfile(self.path / f"{shard['name']}.smi", dtype=np.uint8)
            newlines = np.flatnonzero(text == ord("\n"))
            if len(newlines) != int(shard["rows"]) or (len(text) and text[-1] != ord("\n")):
                raise StoreError(f"{self.path}: shard {shard['name']} has not one SMILES a row")
            lengths = np.diff(newlines, prepend=-1) - 1
            if ends:
                yield done + np.cumsum(lengths)
            else:
                yield np.delete(text, newlines)
            done += int(lengths.sum())


def _write_npy(
    path: Path, shape: tuple[int, ...], dtype: type, parts: Iterable[np.ndarray]
) -> None:
    """Write ``parts`` back to back as one ``.npy`` array of ``shape`` (along its first axis),
    16 MiB at a time (a memory-mapped shard is read as it is written).

    :raise StoreError: If the parts do not fill ``shape``."""
    with open(path, "wb") as out:
        descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
        np.lib.format.write_array_header_1_0(
            out, dict(descr=descr, fortran_order=False, shape=shape)
        )
        written = 0
        for part in parts:
            if part.shape[1:] != shape[1:]:
                raise StoreError(f"{path}: a part of shape {part.shape} for an array of {shape}")
            step = max(1, 2**24 // max(1, part[:1].nbytes))  # rows a block: 16 MiB
            for first in range(0, len(part), step):
                out.write(np.ascontiguousarray(part[first : first + step], dtype).tobytes())
            written += len(part)
    if written != shape[0]:
        raise StoreError(f"{path}: {written} rows written for an array of {shape[0]}")


def is_store(path: Path | str) -> bool:
    """Whether ``path`` is a library store's directory (it has a manifest)."""
    return (Path(path) / MANIFEST).is_file()


def check_shards(path: Path, manifest: dict[str, Any]) -> None:
    """Check a complete store's manifest against its shards on disk without reading their
    contents: the shards listed are ``shard-00000, shard-00001, ...`` in order, each with its
    four files, and every shard file in the directory is listed; each shard's fingerprints are
    ``rows`` rows of the fingerprint's width and its ids continue the previous shard's; the
    width is the fingerprint settings' own; ``library_sha256`` combines the shards' hashes.

    :raise StoreError: Naming the manifest, the field and the shard.
    """
    file = path / MANIFEST
    settings = manifest["fingerprint"]
    kind, size, width = settings.get("kind"), settings.get("size"), settings["width"]
    if kind not in FINGERPRINTS or not isinstance(size, int) or size < 1:
        raise StoreError(f"{file}: field fingerprint {settings} is not a fingerprint setting")
    if width != fingerprint_width(kind, size):
        raise StoreError(
            f"{file}: field fingerprint has width {width}, but {kind} fingerprints of {size} "
            f"bits have {fingerprint_width(kind, size)} columns (edited?)"
        )
    listed = [str(shard["name"]) for shard in manifest["shards"]]
    for number, name in enumerate(listed):
        if name != f"shard-{number:05d}":
            raise StoreError(
                f"{file}: field shards lists {name} at position {number}: a store's shards are "
                "listed in order, shard-00000 first (edited?)"
            )
    on_disk = {p.name.split(".")[0] for p in path.glob("shard-*") if ".tmp" not in p.name}
    unlisted = sorted(on_disk - set(listed))
    if unlisted:
        raise StoreError(
            f"{file}: field shards does not list {', '.join(unlisted)}, whose files are in "
            f"{path} (a shard dropped from the manifest?): rebuild the store with `featurise`"
        )
    start, row_bytes = 0, -(-int(width) // 8)
    for shard in manifest["shards"]:
        name, rows = shard["name"], int(shard["rows"])
        for suffix in SHARD_FILES:
            if not (path / f"{name}.{suffix}").is_file():
                raise StoreError(f"{path}: shard {name} is missing its {suffix}")
        bits, ids = (load_shard_array(path, name, part, "r") for part in ("bits", "ids"))
        if bits.shape != (rows, row_bytes) or bits.dtype != np.uint8:
            raise StoreError(
                f"{file}: field shards says {name} holds {rows} rows of {width} bits "
                f"({row_bytes} bytes), but its bits.npy is {bits.dtype} of shape {bits.shape}"
            )
        expected = (start, start + rows - 1)
        if ids.shape != (rows,) or (rows and (int(ids[0]), int(ids[-1])) != expected):
            raise StoreError(
                f"{file}: field shards says {name} holds rows {expected[0]}..{expected[1]}, "
                "but its ids.npy does not (shards reordered or edited?)"
            )
        start += rows
    hashes = "".join(str(shard["sha256"]) for shard in manifest["shards"])
    if manifest.get("library_sha256") != hashlib.sha256(hashes.encode()).hexdigest():
        raise StoreError(
            f"{file}: field library_sha256 is not the hash of the shards' hashes (edited?)"
        )


def load_shard_array(path: Path, name: str, part: str, mode: Literal["r", "c"]) -> np.ndarray:
    """Shard ``name``'s ``part`` (``bits`` or ``ids``) of the store at ``path``, memory-mapped.

    :raise StoreError: Naming the store, the shard and the file if it cannot be read (emptied,
        truncated, not an array).
    """
    try:
        return np.load(path / f"{name}.{part}.npy", mmap_mode=mode)
    except (OSError, ValueError, EOFError) as error:
        reason = str(error) or type(error).__name__
        raise StoreError(
            f"{path}: shard {name}'s {part}.npy cannot be read ({reason}): rebuild the store "
            "with `featurise`"
        ) from None


def shard_hash(out: Path, name: str) -> str:
    """The content hash of shard ``name``'s files in ``out`` ("" if one is missing)."""
    digest = hashlib.sha256()
    for suffix in SHARD_FILES:
        path = out / f"{name}.{suffix}"
        if not path.is_file():
            return ""
        digest.update(bytes.fromhex(file_hash(path)))
    return digest.hexdigest()


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the store at ``path``, its fields checked.

    :raise StoreError: If it is missing, of another format or damaged.
    """
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


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically."""
    text = json.dumps(manifest, indent=1)
    replace_atomically(out / MANIFEST, lambda temporary: temporary.write_text(text))
