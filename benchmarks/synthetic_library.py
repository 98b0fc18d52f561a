"""Libraries of any size to measure screening with: real fingerprints perturbed, and an oracle
that scores any row.

Row ``i`` of a synthetic library is base fingerprint ``i mod n`` (e.g. the shipped MOSES
molecules) with ``flips`` of its on-bits turned off and as many off-bits turned on, chosen by
keys that depend only on ``i`` (so any row can be recomputed, in any chunk, on any worker): the
bits turned on are drawn in proportion to each bit's frequency in the base library (Gumbel top-k).
Every row keeps its base's number of on-bits, so the bit-density histogram is the base's; two
rows of different bases are as similar as their bases, so the histogram of Tanimoto
similarities between random pairs is the base's too (pairs of one base, a fraction 1/n of all
pairs, are similar by construction). ``benchmarks/sharded_scale.py`` shows both histograms.

The oracle is one sample of a Tanimoto-kernel GP drawn with MinHash random features
(:class:`~trieste_scalable.sampling.features.TanimotoFeatures`): ``f(x) = sqrt(s2 / F)
sum_j w_j sign_j(x)``, ``w ~ N(0, I)``, fixed by its seed, so recall can be measured at any
size.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from trieste_scalable.kernels import Tanimoto
from trieste_scalable.sampling.features import TanimotoFeatures

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _uniform(keys: np.ndarray) -> np.ndarray:
    """Uniform numbers in (0, 1) from uint64 keys (splitmix64's finaliser), elementwise."""
    with np.errstate(over="ignore"):
        z = keys * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) / 2.0**53


def perturbed_rows(
    base: np.ndarray, rows: np.ndarray, frequency: np.ndarray, flips: int, seed: int = 0
) -> np.ndarray:
    """Rows ``rows`` [C] of the synthetic library over ``base`` (packed [n, W]), packed [C, W].

    :param frequency: Each bit's share of the base rows that have it [D] (the bits turned on are
        drawn in proportion to it).
    :param flips: On-bits turned off (at most a row's on-bits) and off-bits turned on per row.
    """
    width = len(frequency)
    bits = np.unpackbits(base[rows % len(base)], axis=1, count=width).astype(bool)  # [C, D]
    keys = rows.astype(np.uint64)[:, None] * np.uint64(2 * width + 1) + np.uint64(seed) * _GOLDEN
    off_key = np.where(bits, _uniform(keys + np.arange(width, dtype=np.uint64)), np.inf)
    gumbel = -np.log(-np.log(_uniform(keys + np.uint64(width) + np.arange(width, dtype=np.uint64))))
    on_key = np.where(bits, -np.inf, np.log(np.maximum(frequency, 1e-12)) + gumbel)
    counts = bits.sum(axis=1)
    off = np.argpartition(off_key, flips, axis=1)[:, :flips]  # on-bits of the smallest keys
    on = np.argpartition(-on_key, flips, axis=1)[:, :flips]  # off-bits of the largest keys
    keep = np.arange(flips)[None, :] < np.minimum(counts, flips)[:, None]  # no more than it has
    out = bits.copy()
    row = np.broadcast_to(np.arange(len(rows))[:, None], off.shape)
    out[row[keep], off[keep]] = False
    out[row[keep], on[keep]] = True
    return np.packbits(out, axis=1)


class TanimotoOracle:
    """A Tanimoto-kernel GP sample (random MinHash features) scoring packed fingerprints.

    :param width: Fingerprint bits D.
    :param variance: The kernel's variance.
    :param num_features: Features F.
    :param seed: Fixes the sample.
    """

    def __init__(self, width: int, variance: float = 1.0, num_features: int = 1000, seed: int = 0):
        self.width = width
        self._features = TanimotoFeatures(Tanimoto(variance, binary_inputs=True), num_features)
        self._draws = self._features.draw(tf.constant([seed, 1]), width, tf.float64)
        rng = np.random.default_rng([seed, 2])
        self._weights = tf.constant(rng.standard_normal((num_features, 1)))
        self._compiled = tf.function(self._values, autograph=False)

    def _values(self, x: tf.Tensor) -> tf.Tensor:
        return tf.matmul(self._features(self._draws, x), self._weights)[:, 0]

    def __call__(self, packed: np.ndarray, chunk_size: int = 4096) -> np.ndarray:
        """The sample's values at packed rows [N, W] (in chunks) [N]."""
        values = np.empty(len(packed))
        for start in range(0, len(packed), chunk_size):
            part = np.unpackbits(packed[start : start + chunk_size], axis=1, count=self.width)
            values[start : start + len(part)] = self._compiled(tf.constant(part, tf.float64))
        return values


def synthetic_chunk_map(base: np.ndarray, width: int, flips: int, seed: int = 0) -> Any:
    """A :data:`~.store_build.ChunkMap` that makes the synthetic rows named ``synthetic-<i>`` (the
    lines of the library file :func:`~.store_build.build_store` reads): stores of any size from the
    shipped molecules, with every store feature (shards, hashes, resuming, deduplication)."""
    frequency = np.unpackbits(base, axis=1, count=width).mean(axis=0)

    def chunk_map(chunks: Sequence[Sequence[str]], settings: tuple) -> Any:
        parts = []
        for chunk in chunks:
            rows = np.array([int(name.rsplit("-", 1)[1]) for name in chunk], dtype=np.int64)
            packed = perturbed_rows(base, rows, frequency, flips, seed)
            parts.append((np.zeros(0, np.int64), packed))
        return lambda: parts

    return chunk_map
