"""The state of a DTC (Nystrom) posterior, shared by :mod:`.dtc` (which builds and reads it) and
:mod:`.hallucination` (which conditions it within a batch)."""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class DTCPosterior(NamedTuple):
    """Precomputed DTC posterior at the start of a batch (all tensors share one dtype).

    A ``NamedTuple`` of tensors, so compiled functions take it as one argument without retracing
    when the dictionary changes inside its capacity.

    :ivar inducing: Padded dictionary [M, D].
    :ivar mask: 1.0 for real dictionary rows, 0.0 for padding [M].
    :ivar chol_kss: Cholesky factor of the masked :math:`K_S` [M, M].
    :ivar chol_v: Cholesky factor of :math:`V` [M, M].
    :ivar weights: :math:`w = V^{-1} Z^T (\\mathrm{ysum} - n c)` [M].
    :ivar noise: Regulariser :math:`\\lambda` (the model's noise variance) [].
    :ivar mean: Constant prior mean :math:`c` [].
    """

    inducing: tf.Tensor
    mask: tf.Tensor
    chol_kss: tf.Tensor
    chol_v: tf.Tensor
    weights: tf.Tensor
    noise: tf.Tensor
    mean: tf.Tensor

    @property
    def size(self) -> int:
        """Number of real dictionary rows."""
        return int(tf.reduce_sum(self.mask))

    @property
    def capacity(self) -> int:
        return int(self.inducing.shape[0])
