"""Exclusive use of a campaign directory: one campaign (or one ``--resume``) at a time.

The lock is an advisory ``flock`` on ``<logdir>/.lock``, held for the whole campaign. The
operating system releases it when the process ends in any way (SIGKILL included), so a crashed
campaign never leaves a stale lock behind and ``--resume`` works at once. The file stays (it is
not a campaign: a rerun is not blocked by it) and names its last holder, so a second campaign
can say who holds the directory.
"""

from __future__ import annotations

import datetime
import os
import socket
import sys
from pathlib import Path
from typing import IO, Optional

from ...errors import CampaignError
from ...files import replace_atomically

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"


class CampaignLock:
    """Holds ``<directory>/.lock`` exclusively until ``release`` (or process exit).

    :param directory: The campaign directory (must exist).
    """

    def __init__(self, directory: Path):
        self.path = Path(directory) / LOCK_NAME
        self._handle: Optional[IO[str]] = None

    def acquire(self) -> None:
        """Take the lock, or fail at once.

        :raise CampaignError: Naming the holder, if another process holds the directory.
        """
        handle = open(self.path, "a+")
        if fcntl is not None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = handle.read().strip() or "a process that has not written its name yet"
                handle.close()
                raise CampaignError(
                    f"{self.path.parent} is in use by another campaign ({holder}): wait for it "
                    "to finish or choose another --logdir"
                ) from None
        handle.seek(0)
        handle.truncate()
        started = datetime.datetime.now().isoformat(timespec="seconds")
        command = " ".join(sys.argv[:1] + sys.argv[1:4])
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}, since {started}: {command}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing releases the flock
            self._handle = None

    def __enter__(self) -> CampaignLock:
        self.acquire()
        return self

    def __exit__(self, *args: object) -> None:
        self.release()


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` all or nothing: a temporary file, fsync-ed, then renamed
    (:func:`~trieste_scalable.files.replace_atomically`, which also removes the
    temporaries of writers that were killed)."""

    def write(temporary: Path) -> None:
        with open(temporary, "w", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    replace_atomically(path, write)
