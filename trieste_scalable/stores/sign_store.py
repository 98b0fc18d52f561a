"""Batch Thompson sampling's sign features of a screening library, kept in the cache directory
(a :class:`~trieste_scalable.sampling.feature_cache.SignStore`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from .cache import CACHE_LIBRARY, cached, for_library

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LibrarySignStore:
    """Batch TS's sign features of a screening library, kept in the cache directory beside its
    fingerprints (:func:`~trieste_scalable.stores.cache.cached`: checked on reading,
    written atomically), so a resumed campaign, or another on the same library and seed,
    does not hash the library again (a
    :class:`~trieste_scalable.sampling.feature_cache.SignStore`).

    :param directory: Where; by default the cache directory of the process that reads or writes
        (scoring actors are given the driver's: on a cluster, the same path on each node).
    """

    directory: Optional[str] = None
    library: str = ""
    """The library whose entries they are (``trieste-scalable cache``; default: the caller's
    :data:`~trieste_scalable.stores.cache.CACHE_LIBRARY`)."""

    def __call__(
        self, key: str, shape: tuple[int, ...], compute: Callable[[], np.ndarray]
    ) -> np.ndarray:
        """The entry of ``key``, or ``compute()``'s, kept; where it cannot be kept (a directory
        that cannot be made or written, e.g. the driver's path on a node without it), computed
        with a warning: keeping the signs saves time, scoring never depends on it."""
        computed: list[np.ndarray] = []

        def once() -> np.ndarray:
            if not computed:
                computed.append(compute())
            return computed[0]

        directory = None if self.directory is None else Path(self.directory)
        try:
            # memory-mapped: read into the caller's arrays from file pages, no second copy
            with for_library(self.library or CACHE_LIBRARY.get()):
                return cached(
                    "sign-features", key, once, valid=_fits(shape), mmap=True, directory=directory
                )
        except OSError as error:
            _log.warning(f"sign features not kept ({error}); computed here")
            return once()


def _fits(shape: tuple[int, ...]) -> Callable[[np.ndarray], bool]:
    return lambda value: value.shape == shape and value.dtype == np.uint8
