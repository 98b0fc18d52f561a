"""Files written all or nothing, and their content hashes: what the cache, library stores and
campaign directories share (the package's one atomic write)."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path
from typing import Callable


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` to a temporary file beside ``path``, then rename it to ``path`` (the temporary
    is removed on any error): cache entries, store files, and a campaign's files through
    :func:`~trieste_scalable.campaigns.logdir.write_atomically`. A process killed
    mid-write leaves its temporary (a cache entry of 10^8 fingerprints is 13 GB): those of
    ``path`` that processes of this host no longer running left are removed first; those of
    other hosts sharing the directory are left to them."""
    host = socket.gethostname().replace(".", "-")
    for stale in path.parent.glob(f"{path.stem}.{host}.*.tmp{path.suffix}"):
        pid = stale.name[len(f"{path.stem}.{host}.") :].split(".", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            stale.unlink(missing_ok=True)
    temporary = path.with_suffix(f".{host}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(temporary)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
