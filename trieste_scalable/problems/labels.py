"""Labels of millions of candidates (their SMILES) held compactly.

A Python ``str`` costs about 50 bytes more than its characters, and a list or object array 8
more a pointer: for 1.9 M MOSES SMILES (~45 characters each) that is ~200 MB, more than the
bit-packed fingerprints themselves. :class:`Labels` holds them as one UTF-8 buffer and an offset
array instead (characters + 8 bytes each) and decodes a label when it is read.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Sequence, overload

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
    def from_parts(cls, parts: Iterable[Sequence[str]], total: int) -> Labels:
        """The strings of ``parts`` in order, ``total`` of them, one part in memory at a time as
        Python strings (e.g. a library store's shards: 10^7 SMILES as a list of ``str`` take
        about 1 GB)."""
        labels = cls([])
        labels._offsets = np.zeros(total + 1, dtype=np.int64)
        done = 0
        for part in parts:
            labels._extend(part, done)
            done += len(part)
        if done != total:
            raise ValueError(f"expected {total} labels, got {done}")
        return labels

    def _extend(self, strings: Sequence[str], first: int) -> None:
        """Append ``strings``, the labels from number ``first`` on, :data:`_PART` at a time."""
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
        return self._buffer[self._offsets[i] : self._offsets[i + 1]].decode()

    def __iter__(self) -> Iterator[str]:
        return (self._get(i) for i in range(len(self)))

    @property
    def nbytes(self) -> int:
        """Bytes held (buffer and offsets)."""
        return len(self._buffer) + self._offsets.nbytes
