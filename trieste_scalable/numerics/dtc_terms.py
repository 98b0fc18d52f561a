r"""What the DTC posterior reads of the data: sums over the unique inputs' embeddings :math:`z`
(:mod:`.embedding`) that are linear in the inputs, so they are summed a chunk of inputs at a
time and, when evaluations are added, added to
(:class:`~trieste_scalable.models.summed_terms.SummedTerms`):

.. math::
    G = Z^T N Z, \qquad g_s = Z^T s, \qquad g_n = Z^T n,

for counts :math:`n` and sums :math:`s` of the observations at each unique input. Then
:math:`V = G + \lambda I` and :math:`b = Z^T (s - n c) = g_s - c\,g_n` for any regulariser
:math:`\lambda` and prior mean :math:`c` (BBKB eqs. 1-2), so neither needs the data again.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import tensorflow as tf

from .bits import Rows

ChunkTerms = Callable[..., tuple[tf.Tensor, tf.Tensor]]
"""A compiled :func:`~.embedding.data_terms`: one chunk's :math:`Z^T N Z` and :math:`Z^T [s, n]`
(``CompiledDTC.data_terms``)."""


class DataTerms(NamedTuple):
    """The data's sums over the dictionary's embedding (module docstring).

    :ivar gram: :math:`G = Z^T N Z` [M, M].
    :ivar summed: :math:`g_s = Z^T s` [M].
    :ivar counted: :math:`g_n = Z^T n` [M].
    """

    gram: tf.Tensor
    summed: tf.Tensor
    counted: tf.Tensor

    def plus(self, other: DataTerms) -> DataTerms:
        """The terms of these evaluations and ``other``'s together (the sums are linear)."""
        return DataTerms(*(mine + theirs for mine, theirs in zip(self, other)))


def sum_terms(
    chunk_terms: ChunkTerms,
    unique_inputs: Rows,
    counts: tf.Tensor,
    sums: tf.Tensor,
    inducing: tf.Tensor,
    mask: tf.Tensor,
    chol_kss: tf.Tensor,
    chunk_size: int,
) -> DataTerms:
    """The terms of ``unique_inputs`` [n, D] (dense or packed) with ``counts`` and ``sums`` [n]
    (eager), summed over chunks of ``chunk_size`` rows, so memory holds one chunk's rows and
    embedding (at 100,000 evaluations and M = 1,000 the whole embedding alone is 800 MB)."""
    size = tf.shape(inducing)[0]
    gram = tf.zeros([size, size], inducing.dtype)
    projected = tf.zeros([size, 2], inducing.dtype)
    for start in range(0, len(unique_inputs), chunk_size):
        part = slice(start, start + chunk_size)
        terms = chunk_terms(unique_inputs[part], counts[part], sums[part], inducing, mask, chol_kss)
        gram, projected = gram + terms[0], projected + terms[1]
    return DataTerms(gram, projected[:, 0], projected[:, 1])


def factor_terms(
    terms: DataTerms, noise: tf.Tensor, mean: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """The Cholesky factor of :math:`V = G + \\lambda I` [M, M] and :math:`w = V^{-1} b` [M],
    :math:`b = g_s - c\\,g_n`, for the regulariser ``noise`` and the prior mean ``mean``."""
    gram = terms.gram
    chol_v = tf.linalg.cholesky(gram + noise * tf.eye(tf.shape(gram)[0], dtype=gram.dtype))
    projected = terms.summed - mean * terms.counted
    return chol_v, tf.linalg.cholesky_solve(chol_v, projected[:, None])[:, 0]
