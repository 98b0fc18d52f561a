"""Files written all or nothing, and their content hashes: what the cache, library stores and
campaign directories share (the package's one atomic write); and the one way the text files a
user gives (libraries, score tables) are opened (:func:`text_file`)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import os
import socket
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator

from .errors import UsageError


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@contextmanager
def text_file(path: Path, what: str) -> Iterator[IO[str]]:
    """``path`` opened for reading text, gunzipped if it ends in ``.gz``, UTF-8 with a leading
    byte-order mark skipped (Excel's "CSV UTF-8" writes one), newlines as they are (for
    ``csv``).

    :param what: What the file is, for the error (e.g. ``"score table"``).
    :raise UsageError: Naming ``what``, the file and the reason, on any failure to read it while
        the block reads it: missing, unreadable, not gzip, a truncated or damaged gzip stream,
        not UTF-8, a malformed CSV field.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8-sig") as handle:  # type: ignore[operator]
            yield handle
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error) as error:
        reason = str(error) or type(error).__name__
        if isinstance(error, EOFError):
            reason = f"truncated: {reason}"
        raise UsageError(f"cannot read {what} {path} ({reason})") from None


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` to a temporary file beside ``path``, then rename it to ``path`` (the temporary
    is removed on any error): cache entries, store files, and a campaign's files through
    :func:`~trieste_scalable.campaigns.directory.lock.write_atomically`. A process killed
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
