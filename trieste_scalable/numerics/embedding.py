r"""The inducing-point core that every sparse posterior here shares: the Nystrom (DTC) posterior
of BKB/BBKB (:mod:`trieste_scalable.numerics.dtc`), the ELBO-optimal SVGP of S-GP-TS
(:mod:`trieste_scalable.numerics.svgp`) and the SGPR evidence
(:mod:`trieste_scalable.numerics.evidence`) are three readings of one factorisation.

With inducing points :math:`S` (``M`` rows, ``mask == 1`` for real ones, the rest padding),
:math:`L_S L_S^T = K_S` and the embedding :math:`z(x) = L_S^{-1} k_S(x)` (so
:math:`z(x)^T z(x') = k_S(x)^T K_S^{-1} k_S(x')`, the Nystrom kernel), unique inputs :math:`x_i`
with counts :math:`n_i`, sums of observations :math:`\mathrm{ysum}_i` and constant prior mean
:math:`c`:

.. math::
    V = \sum_i n_i z_i z_i^T + \lambda I, \qquad
    b = \sum_i z_i (\mathrm{ysum}_i - n_i c), \qquad w = V^{-1} b

(BBKB eq. 4 / BKB eq. 3 in ridge-leverage form; Titsias 2009 eq. 10 for the optimal q, whose
whitened mean is :math:`w` and covariance :math:`\lambda V^{-1}`). Padded rows have their kernel
rows zeroed and an identity block in :math:`K_S`, so they add an exact zero to every embedding
and a :math:`\lambda` diagonal block to :math:`V`: a set of inducing points can grow inside a
fixed capacity without retracing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .linalg import solve_lower

Kernel = Any
"""A GPflow-style kernel: ``kernel(X, X2)`` gives [N, N2] and ``kernel(X, full_cov=False)`` [N]."""


def prepares_rows(kernel: Kernel) -> bool:
    """Whether ``kernel`` forms its rows against a fixed second side from that side made once
    (``kernel.prepare(X2)``, then ``kernel.K_prepared(X, prepared)``): the Tanimoto kernel on 0/1
    rows (:class:`~trieste_scalable.kernels.Tanimoto`)."""
    return bool(getattr(kernel, "binary_inputs", False)) and hasattr(kernel, "K_prepared")


@check_shapes("inducing: [M, D]", "mask: [M]", "return: [M, M]")
def masked_gram(kernel: Kernel, inducing: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """:math:`K_S` with padded rows/columns replaced by those of the identity."""
    gram = kernel(inducing, inducing)
    outer = mask[:, None] * mask[None, :]
    return gram * outer + tf.linalg.diag(1.0 - mask)


@check_shapes("sets: [S, B, D]", "return: [SB, D]")
def rows_of(sets: tf.Tensor) -> tf.Tensor:
    """The rows of a batch of sets, set after set."""
    return tf.reshape(sets, [-1, tf.shape(sets)[-1]])


@check_shapes("features: [SB, R]", "sets: [S, B, D]", "return: [S, B, R]")
def per_set(features: tf.Tensor, sets: tf.Tensor) -> tf.Tensor:
    """Row features computed on :func:`rows_of` ``sets``, grouped back by set."""
    shape = tf.shape(sets)
    return tf.reshape(features, [shape[0], shape[1], tf.shape(features)[-1]])


@check_shapes(
    "x: [N, D]",
    "inducing: [M, D]",
    "mask: [M]",
    "chol_kss: [M, M]",
    "return: [N, M]",
)
def embed(
    kernel: Kernel, x: tf.Tensor, inducing: tf.Tensor, mask: tf.Tensor, chol_kss: tf.Tensor
) -> tf.Tensor:
    """Nystrom embedding :math:`z(x) = L_S^{-1} k_S(x)` of each row of ``x``."""
    kxs = kernel(x, inducing) * mask[None, :]  # [N, M]
    return tf.transpose(solve_lower(chol_kss, tf.transpose(kxs)))


class DataFactor(NamedTuple):
    """The data's side of the core (module docstring), for one set of inducing points.

    :ivar embedding: :math:`z(x_i)` of the unique inputs [n, M].
    :ivar precision: :math:`V` [M, M].
    :ivar chol_v: Cholesky factor of :math:`V` [M, M].
    :ivar projected: :math:`b` [M].
    :ivar weights: :math:`w = V^{-1} b` [M].
    """

    embedding: tf.Tensor
    precision: tf.Tensor
    chol_v: tf.Tensor
    projected: tf.Tensor
    weights: tf.Tensor


@check_shapes(
    "x: [N, D]",
    "counts: [N]",
    "sums: [N]",
    "inducing: [M, D]",
    "mask: [M]",
    "chol_kss: [M, M]",
    "return[0]: [M, M]",
    "return[1]: [M, 2]",
)
def data_terms(
    kernel: Kernel,
    x: tf.Tensor,
    counts: tf.Tensor,
    sums: tf.Tensor,
    inducing: tf.Tensor,
    mask: tf.Tensor,
    chol_kss: tf.Tensor,
) -> tuple[tf.Tensor, tf.Tensor]:
    r"""One chunk of unique inputs' share of :math:`Z^T N Z` [M, M] and of :math:`Z^T s` and
    :math:`Z^T n` (the columns of [M, 2]; ``sums`` :math:`s`, ``counts`` :math:`n`): summed
    over the chunks of the inputs, :math:`V - \lambda I` and, as
    :math:`Z^T s - c\,Z^T n`, :math:`b` of :func:`factor_data`, without the embedding of all
    n inputs at once."""
    z = embed(kernel, x, inducing, mask, chol_kss)  # [N, M]
    gram = tf.matmul(z * counts[:, None], z, transpose_a=True)
    return gram, tf.matmul(z, tf.stack([sums, counts], axis=1), transpose_a=True)


@check_shapes(
    "unique_inputs: [n, D]",
    "counts: [n]",
    "sums: [n]",
    "inducing: [M, D]",
    "mask: [M]",
    "chol_kss: [M, M]",
)
def factor_data(
    kernel: Kernel,
    unique_inputs: tf.Tensor,
    counts: tf.Tensor,
    sums: tf.Tensor,
    inducing: tf.Tensor,
    mask: tf.Tensor,
    chol_kss: tf.Tensor,
    noise: tf.Tensor,
    mean: tf.Tensor,
) -> DataFactor:
    """:math:`V`, its Cholesky factor, :math:`b` and :math:`w` from replicated data, O(n M^2)
    (repeats cost nothing: they only enter through the counts and sums)."""
    z = embed(kernel, unique_inputs, inducing, mask, chol_kss)  # [n, M]
    eye = tf.eye(tf.shape(inducing)[0], dtype=z.dtype)
    v = tf.matmul(z * counts[:, None], z, transpose_a=True) + noise * eye
    chol_v = tf.linalg.cholesky(v)
    projected = tf.linalg.matvec(z, sums - counts * mean, transpose_a=True)
    weights = tf.linalg.cholesky_solve(chol_v, projected[:, None])[:, 0]
    return DataFactor(z, v, chol_v, projected, weights)
