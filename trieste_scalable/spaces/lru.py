"""The one bounded cache of the make-on-demand spaces: products by reagent tuple
(:class:`~.reaction.ReactionLibrary`) and their fingerprints
(:class:`~.search_space.MakeOnDemandSpace`), so memory grows with the tuples asked about, never with
the space's size."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, Optional, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """At most ``size`` values by key, the least recently read or written dropped first."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> Optional[V]:
        """The value of ``key`` (now the most recent), or ``None``."""
        if key not in self._values:
            return None
        self._values.move_to_end(key)
        return self._values[key]

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, dropping the least recent beyond ``size``."""
        self._values[key] = value
        self._values.move_to_end(key)
        while len(self._values) > self.size:
            self._values.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)
