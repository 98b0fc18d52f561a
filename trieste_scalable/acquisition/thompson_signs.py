"""The sign features batch Thompson sampling scores a discrete space with, when its feature map
has ``signs_only`` (the Tanimoto kernel's MinHash features): their draws, one per generation of
the rule, and the candidates' packed features under each draw, computed once
(:class:`~trieste_scalable.sampling.feature_cache.SignCache`)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import tensorflow as tf

from ..sampling.feature_cache import PackedSigns, SignCache, SignStore
from ..sampling.features import Draws
from ..sampling.scoring import ChunkedSampleScorer


class SignFeatures:
    """A rule's sign features: the same draws until the next generation (drawn once), a new
    generation every ``redraw_every`` batches (never if ``None``).

    :param seed: The rule's seed (the draws' seeds are apart from its batch seeds).
    :param redraw_every: Batches per generation.
    :param store: Where the candidates' features under the first generation's draws are kept
        across processes (:class:`~trieste_scalable.sampling.feature_cache.SignStore`): a
        campaign resumed, or another on the same library with the same seed, reads them instead
        of hashing the library again. Later generations are not kept (an entry per generation
        would grow without bound).
    """

    def __init__(self, seed: int, redraw_every: Optional[int], store: Optional[SignStore] = None):
        self._seed, self._every, self._store = seed, redraw_every, store
        self._draws: dict[tuple[Any, ...], Draws] = {}  # the last generation's only
        self.caches: dict[int, SignCache] = {}
        """The candidates' packed features, by scorer."""

    def fresh(self) -> SignFeatures:
        """The same settings, nothing drawn or computed (a copy of a rule shares nothing)."""
        return SignFeatures(self._seed, self._every, self._store)

    def generation(self, num_batches: int) -> int:
        """The generation of the draws the ``num_batches``-th batch uses."""
        return num_batches // self._every if self._every else 0

    def draws(
        self, scorer: ChunkedSampleScorer, generation: int, input_dim: int, dtype: tf.DType
    ) -> Draws:
        """The draws of ``generation`` for ``scorer``'s feature map."""
        key = (id(scorer), generation, input_dim, dtype)
        if key not in self._draws:
            seeds = tf.constant(_sign_seeds(self._seed, generation))
            self._draws = {key: scorer.features.draw(seeds, input_dim, dtype)}
        return self._draws[key]

    def of_candidates(
        self,
        scorer: ChunkedSampleScorer,
        draws: Draws,
        candidates: Any,
        dtype: tf.DType,
        generation: int,
    ) -> PackedSigns:
        """The packed sign features of ``candidates`` [N, D] under ``draws`` (of
        ``generation``), computed on the first call for them."""
        cache = self.caches.setdefault(
            id(scorer), SignCache(scorer.features, scorer.feature_chunk_size)
        )
        store = self._store if generation == 0 else None
        return cache(draws, candidates, dtype, generation, store)


def _sign_seeds(seed: int, generation: int) -> np.ndarray:
    """Seeds of a rule's ``generation``-th draw of sign features, apart from its batch seeds."""
    key = [seed, 0, 7] + ([generation] if generation else [])  # the first as before redraws
    return np.random.default_rng(key).integers(2**31, size=2)
