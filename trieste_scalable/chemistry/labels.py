"""Labels of millions of candidates (their SMILES) held compactly.

A Python ``str`` costs about 50 bytes more than its characters, and a list or object array 8
more a pointer: for 1.9 M MOSES SMILES (~45 characters each) that is ~200 MB, more than the
bit-packed fingerprints themselves. :class:`Labels` holds them as one UTF-8 buffer and an offset
array instead (characters + 8 bytes each) and decodes a label when it is read.
"""

from __future__ import annotations

from typing import Iterator, Optional, Sequence, overload

import numpy as np

_PART = 2**16
"""Labels encoded at a time: the Python objects of a part are the only transient memory."""


class Labels(Sequence[str]):
    """Read-only strings ``strings[index]`` (every string by default), in order.

    :param strings: The strings.
    :param index: Which of them to keep, in this order [K].
    """

    def __init__(self, strings: Sequence[str], index: Optional[np.ndarray] = None):
        chosen = range(len(strings)) if index is None else index
        self._buffer = bytearray()
        self._offsets = np.zeros(len(chosen) + 1, dtype=np.int64)
        for first in range(0, len(chosen), _PART):
            self._extend([strings[int(i)] for i in chosen[first : first + _PART]], first)

    @classmethod
    def mapped(cls, buffer: np.ndarray, offsets: np.ndarray) -> Labels:
        """Labels over UTF-8 bytes held elsewhere, e.g. memory-mapped from files (a library
        store's, :meth:`~.store.LibraryStore.labels`): only the labels read are paged in.

        :param buffer: The labels' bytes back to back (uint8).
        :param offsets: Where each label starts in ``buffer``, then where the last ends [K + 1].
        :raise ValueError: If the offsets do not run from 0 to the buffer's end (their order is
            not checked: that would read every page of them).
        """
        if offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(buffer):
            raise ValueError(f"offsets must run from 0 to the buffer's {len(buffer)} bytes")
        labels = cls([])
        labels._buffer, labels._offsets = buffer, offsets  # type: ignore[assignment]
        return labels

    def _extend(self, strings: Sequence[str], first: int) -> None:
        """Append ``strings``, the labels from number ``first`` on, ``_PART`` at a time."""
        for start in range(0, len(strings), _PART):
            encoded = [string.encode() for string in strings[start : start + _PART]]
            ends = np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)))
            at = first + start
            self._offsets[at + 1 : at + 1 + len(encoded)] = self._offsets[at] + ends
            self._buffer += b"".join(encoded)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int | np.integer) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | np.integer | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(len(self)))]
        return self._get(index)

    def _get(self, index: int | np.integer) -> str:
        i = int(index)
        if not -len(self) <= i < len(self):
            raise IndexError(f"label {i} of {len(self)}")
        i %= len(self)
        return bytes(self._buffer[self._offsets[i] : self._offsets[i + 1]]).decode()

    def __iter__(self) -> Iterator[str]:
        return (self._get(i) for i in range(len(self)))

    def joined(self) -> Iterator[bytes]:
        """The labels' UTF-8 bytes joined by newlines, in parts of ``_PART`` labels: what
        hashing every label reads, without a Python string per label (10^8 labels: seconds,
        not minutes)."""
        buffer = np.frombuffer(self._buffer, np.uint8)  # a bytearray or a mapped array
        for first in range(0, len(self), _PART):
            last = min(first + _PART, len(self))
            start = int(self._offsets[first])
            starts = self._offsets[first + 1 : last] - start  # of each label but the first
            part = np.insert(buffer[start : int(self._offsets[last])], starts, ord("\n"))
            yield (b"\n" if first else b"") + part.tobytes()

    @property
    def nbytes(self) -> int:
        """Bytes held (buffer and offsets)."""
        return len(self._buffer) + self._offsets.nbytes
