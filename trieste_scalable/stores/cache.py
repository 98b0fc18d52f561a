"""The on-disk cache: fingerprints, scores, sign features and canonical SMILES computed once per
library and kept as ``.npy`` entries with checksummed sidecars (:func:`cached`), each recorded as
some library's for ``trieste-scalable cache`` (:func:`for_library`,
:mod:`~trieste_scalable.stores.cache_admin`)."""

from __future__ import annotations

import hashlib
import logging
import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterator, Literal, Optional

import numpy as np

from ..chemistry.molecules import BUILTIN_LIBRARIES, MOSES_FULL
from ..files import file_hash, replace_atomically

_log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """``$TRIESTE_SCALABLE_CACHE``, else ``$XDG_CACHE_HOME/trieste-scalable`` or
    ``~/.cache/trieste-scalable``."""
    if "TRIESTE_SCALABLE_CACHE" in os.environ:
        return Path(os.environ["TRIESTE_SCALABLE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    return Path(base) / "trieste-scalable"


CACHE_VERSION = 3  # part of every cache key: bump it when a cached computation changes

CACHE_LIBRARY: ContextVar[str] = ContextVar("CACHE_LIBRARY", default="")
"""The library that cache entries written now belong to, recorded with them for
``trieste-scalable cache`` (set around a campaign or a store's build with :func:`for_library`)."""


@contextmanager
def for_library(library: str) -> Iterator[None]:
    """Cache entries written inside belong to ``library`` (a name, a file or a store)."""
    token = CACHE_LIBRARY.set(library)
    try:
        yield
    finally:
        CACHE_LIBRARY.reset(token)


def library_label(library: str) -> str:
    """How cache entries name ``library``: a built-in library's name, else the absolute path of
    its file or store."""
    if library in BUILTIN_LIBRARIES or library == MOSES_FULL:
        return library
    return str(Path(library).resolve())


def touch(path: Path) -> None:
    """Mark a cache entry used now (nothing if its file cannot be touched, e.g. read-only)."""
    try:
        os.utime(path)
    except OSError:
        pass


def cached(
    name: str,
    key: str,
    compute: Callable[[], np.ndarray],
    valid: Callable[[np.ndarray], bool] = lambda value: True,
    mmap: bool | Literal["c"] = False,
    write: Optional[Callable[[Path], object]] = None,
    directory: Optional[Path] = None,
) -> np.ndarray:
    """``compute()``, stored in the cache directory (or ``directory``) under ``name`` and a hash
    of ``key``;
    read-only and memory-mapped from the cache file with ``mmap`` (pages are read as used),
    copy-on-write with ``mmap="c"`` (a writable array; nothing is written back). ``write``, if
    given, writes the entry's ``.npy`` file itself (e.g. an array larger than memory, a part at a
    time) in place of saving ``compute()``, which is then called only where the cache cannot be.

    Each entry ``NAME-DIGEST.npy`` has a sidecar ``NAME-DIGEST.sha256`` holding the whole key's
    hash and the entry's content hash, written after it, then the library it was computed for
    (:data:`CACHE_LIBRARY`); the sidecar's modification time is the entry's last use. An entry
    that cannot be read (empty, truncated, not an array), that ``valid`` rejects (a wrong shape
    for this library) or whose content is not what was written under this key (another
    library's entry copied into its place, a missing or foreign sidecar) is reported,
    recomputed and rewritten: the cache never pairs the wrong fingerprints with the wrong
    scores. Writes are atomic (temporary + rename).
    """
    mode = ("r" if mmap is True else mmap) or None
    key_hash = hashlib.sha256(f"{CACHE_VERSION}|{key}".encode()).hexdigest()
    path = (directory or cache_dir()) / f"{name}-{key_hash[:20]}.npy"
    checksum = path.with_suffix(".sha256")
    if path.is_file():
        try:
            if _read_text(checksum).split("\n")[0] != f"{key_hash} {file_hash(path)}":
                raise ValueError("its content is not what was written under this key")
            value = np.load(path, allow_pickle=False, mmap_mode=mode)
            if valid(value):
                touch(checksum)  # its last use, for `trieste-scalable cache`
                return value
            problem = f"shape {value.shape} does not fit this library"
        except (OSError, ValueError, EOFError) as error:
            problem = str(error) or type(error).__name__
        _log.warning(f"cache entry {path} is damaged ({problem}); recomputing it")
    elif path.exists():  # a directory or other non-file in the entry's place: left alone
        _log.warning(f"cache entry {path} is not a file; computing without the cache")
        return compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    if write is None:
        value = compute()
        replace_atomically(path, lambda temporary: np.save(temporary, value))
    else:
        replace_atomically(path, write)
    content = f"{key_hash} {file_hash(path)}\n{CACHE_LIBRARY.get()}"
    replace_atomically(checksum, lambda temporary: temporary.write_text(content))
    return np.load(path, mmap_mode=mode) if mode or write else value


def _read_text(path: Path) -> str:
    """The file's text ("" if it is missing or not a file)."""
    return path.read_text() if path.is_file() else ""
