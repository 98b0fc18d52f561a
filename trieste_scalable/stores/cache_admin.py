"""``trieste-scalable cache``: the cache directory's entries by library and kind, with their
sizes and last use, and pruning by library, age or total size, never removing an entry that a
running process holds.

Entries (:func:`~trieste_scalable.stores.cache.cached`) are ``NAME-DIGEST.npy`` files with
a ``NAME-DIGEST.sha256`` sidecar that records the library they were computed for (entries
written before it did are listed as ``(unrecorded)``) and whose modification time is their last
use; featurising's chunk results (``chunks/``) are shared by every library whose SMILES they
hold. An entry is **held** while a process has it open or memory-mapped (a campaign maps its
fingerprints, labels and sign features for its whole run): read from ``/proc`` on Linux; where
there is no ``/proc`` nothing is pruned.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from ..errors import UsageError

UNRECORDED = "(unrecorded)"
SHARED = "(chunks: any library)"
TEMPORARY = "(temporary)"


@dataclass(frozen=True)
class Entry:
    """One cache entry: its files, kind (the computation), library, bytes and last use."""

    files: tuple[Path, ...]
    kind: str
    library: str
    size: int
    last_use: float


def entries(directory: Path) -> list[Entry]:
    """Every entry in ``directory``, least recently used first."""
    found: list[Entry] = []
    if not directory.is_dir():
        return found
    for path in directory.glob("*.npy"):
        if ".tmp" in path.name:
            continue
        sidecar = path.with_suffix(".sha256")
        lines = sidecar.read_text().split("\n") if sidecar.is_file() else []
        library = lines[1] if len(lines) > 1 and lines[1] else UNRECORDED
        files = (path, sidecar) if sidecar.is_file() else (path,)
        found.append(_entry(files, path.stem.rsplit("-", 1)[0], library))
    for path in (directory / "chunks").glob("*.npz"):
        if ".tmp" not in path.name:
            found.append(_entry((path,), "chunk:" + path.stem.rsplit("-", 1)[0], SHARED))
    for path in [*directory.glob("*.tmp*"), *(directory / "chunks").glob("*.tmp*")]:
        found.append(_entry((path,), "temporary", TEMPORARY))
    return sorted(found, key=lambda entry: entry.last_use)


def _entry(files: tuple[Path, ...], kind: str, library: str) -> Entry:
    stats = [f.stat() for f in files]
    size = sum(s.st_size for s in stats)
    return Entry(files, kind, library, size, max(s.st_mtime for s in stats))


def held_files(directory: Path) -> Optional[set[Path]]:
    """The files under ``directory`` that a running process has open or memory-mapped
    (``None`` where this cannot be known: no ``/proc``)."""
    proc = Path("/proc")
    if not (proc / "self" / "maps").exists():
        return None
    root = str(directory.resolve())
    held: set[Path] = set()
    for process in proc.iterdir():
        if not process.name.isdigit():
            continue
        try:
            for line in (process / "maps").read_text().splitlines():
                mapped = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
                if mapped.startswith(root):
                    held.add(Path(mapped.removesuffix(" (deleted)")))
            for fd in (process / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith(root):
                    held.add(Path(target))
        except OSError:
            continue  # ended meanwhile, or another user's
    return held


def select(
    found: Iterable[Entry],
    older_than_days: Optional[float] = None,
    max_size: Optional[int] = None,
    now: Optional[float] = None,
) -> list[Entry]:
    """Which of ``found`` to prune: those last used more than ``older_than_days`` ago; then,
    with ``max_size``, the least recently used others until what is left of ``found`` takes at
    most ``max_size`` bytes. With neither, all of them."""
    found = sorted(found, key=lambda entry: entry.last_use)
    now = time.time() if now is None else now
    if older_than_days is not None:
        chosen = [e for e in found if now - e.last_use > older_than_days * 86400]
    else:
        chosen = [] if max_size is not None else list(found)
    if max_size is None:
        return chosen
    left = sum(entry.size for entry in found) - sum(entry.size for entry in chosen)
    for entry in found:  # least recently used first
        if left <= max_size:
            break
        if entry not in chosen:
            chosen.append(entry)
            left -= entry.size
    return chosen


def remove(
    chosen: Iterable[Entry], held: set[Path], dry_run: bool = False
) -> tuple[list[Entry], list[Entry]]:
    """Remove the entries none of whose files is in ``held`` (with ``dry_run``, only say
    which): (removed, kept because held)."""
    removed, kept = [], []
    for entry in chosen:
        if is_held(entry, held):
            kept.append(entry)
            continue
        for path in [] if dry_run else entry.files:
            path.unlink(missing_ok=True)
        removed.append(entry)
    return removed, kept


def parse_size(text: str) -> int:
    """Bytes of ``"500M"``, ``"10G"``, ``"2.5T"`` or a plain number.

    :raise UsageError: On anything else."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)B?\s*", text.upper())
    if not match:
        raise UsageError(f"a size is a number of bytes with K, M, G or T, got {text!r}")
    return int(float(match[1]) * 1024 ** "_KMGT".index(match[2] or "_"))


def human(size: float) -> str:
    """``size`` bytes as people read them (``"1.5 KB"``, ``"17.0 GB"``)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError


def listing(found: list[Entry], held: Optional[set[Path]]) -> str:
    """A table of ``found`` by library and kind: entries, bytes, last use, how many held."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for entry in found:
        groups.setdefault((entry.library, entry.kind), []).append(entry)
    rows = [("library", "kind", "entries", "size", "last use", "held")]
    for (library, kind), group in sorted(groups.items()):
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(max(e.last_use for e in group)))
        in_use = "?" if held is None else str(sum(is_held(e, held) for e in group))
        size = human(sum(e.size for e in group))
        rows.append((library, kind, str(len(group)), size, last, in_use))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def is_held(entry: Entry, held: set[Path]) -> bool:
    """Whether a process holds one of the entry's files."""
    return any(path.resolve() in held for path in entry.files)
