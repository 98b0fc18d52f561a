"""Labels of millions of candidates (their SMILES) held compactly.

A Python ``str`` costs about 50 bytes more than its characters, and a list or object array 8
more a pointer: for 1.9 M MOSES SMILES (~45 characters each) that is ~200 MB, more than the
bit-packed fingerprints themselves. :class:`Labels` holds them as one UTF-8 buffer and an offset
array instead (characters + 8 bytes each) and decodes a label when it is read.
"""

from __future__ import annotations

from typing import Iterator, Optional, Sequence

import numpy as np


class Labels:
    """Read-only strings ``strings[index]`` (every string by default), in order.

    :param strings: The strings.
    :param index: Which of them to keep, in this order [K].
    """

    def __init__(self, strings: Sequence[str], index: Optional[np.ndarray] = None):
        chosen = range(len(strings)) if index is None else index
        encoded = [strings[int(i)].encode() for i in chosen]
        self._offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=self._offsets[1:])
        self._buffer = b"".join(encoded)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: int | np.integer) -> str:
        i = int(index)
        if not -len(self) <= i < len(self):
            raise IndexError(f"label {i} of {len(self)}")
        i %= len(self)
        return self._buffer[self._offsets[i] : self._offsets[i + 1]].decode()

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    @property
    def nbytes(self) -> int:
        """Bytes held (buffer and offsets)."""
        return len(self._buffer) + self._offsets.nbytes
