"""The reaper of a driver's local Ray cluster (:mod:`~trieste_scalable.cluster.connection`):
``python -m trieste_scalable.cluster.reaper DRIVER_PID``, its standard input the read end of a pipe
only the driver holds.

Every :data:`POLL_SECONDS` it adds the driver's descendants still running to its list (each
process known by its pid and start time, so a reused pid is never taken for it); when its input
closes (the driver ended, however), it sends SIGTERM to each listed process still running, then
SIGKILL to those left after :data:`GRACE_SECONDS`, and exits. Standard library only: it must
start in a fraction of a second and hold no memory to speak of.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

POLL_SECONDS = 0.5
"""How often the driver's descendants are listed."""

GRACE_SECONDS = 3.0
"""How long the processes have between SIGTERM and SIGKILL."""

Process = tuple[int, str]
"""A process: its pid and its start time (``/proc/PID/stat`` field 22)."""


def _table() -> dict[int, tuple[int, str]]:
    """Every running process: pid -> (parent pid, start time); zombies (ended, not yet waited
    for by their parent) are not running."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if fields[0] != "Z":
            table[int(entry.name)] = (int(fields[1]), fields[19])
    return table


def descendants(root: int, table: dict[int, tuple[int, str]]) -> set[Process]:
    """The processes below ``root`` in ``table``."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = set(), list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.add((pid, table[pid][1]))
        stack.extend(children.get(pid, []))
    return found


def _running(processes: set[Process]) -> set[Process]:
    table = _table()
    return {(pid, start) for pid, start in processes if table.get(pid, (0, ""))[1] == start}


def reap(processes: set[Process]) -> None:
    """SIGTERM to each of ``processes`` still running, SIGKILL to those left after the grace."""
    for sent, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, 0.0)):
        for pid, _ in _running(processes):
            try:
                os.kill(pid, sent)
            except OSError:
                pass  # ended meanwhile, or not ours to signal
        deadline = time.monotonic() + wait
        while _running(processes) and time.monotonic() < deadline:
            time.sleep(0.1)


def main(driver: int) -> None:
    """Watch ``driver`` until standard input closes, then reap what it left.

    :raise SystemExit: If ``driver`` is not the process that started this one (reaping the
        descendants of any other, e.g. of init, would stop unrelated processes)."""
    if os.getppid() != driver:
        raise SystemExit(f"reaper: process {driver} did not start this reaper; nothing done")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the driver
    me, seen = os.getpid(), set()
    while True:
        seen |= {p for p in descendants(driver, _table()) if p[0] != me}
        ready, _, _ = select.select([sys.stdin], [], [], POLL_SECONDS)
        if ready and not os.read(sys.stdin.fileno(), 1):
            break  # end of input: the driver has ended
    reap(seen)


if __name__ == "__main__":
    main(int(sys.argv[1]))
