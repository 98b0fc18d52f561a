"""ReplicatedGPR: the exact GP of MINI-META over unique inputs with replication counts."""

from __future__ import annotations

from typing import Optional

import gpflow
import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.data import Dataset
from typing_extensions import Unpack

from ..numerics import replicated
from ..numerics.linalg import cholesky_with_jitter, jittered_cholesky
from ..numerics.replicated import CompiledReplicated
from .base import ModelOptions
from .conditioning import GaussianConditioning
from .data import ReplicatedData
from .fit_objectives import Objective
from .inducing_view import InducingVariables, InducingView


class ReplicatedGPR(InducingView, GaussianConditioning[replicated.ReplicatedPosterior]):
    r"""Exact GP regression whose cost depends on the number of unique inputs, not evaluations.

    Repeated evaluations of one input are kept as a count :math:`n_i`, the average
    :math:`\bar y_i` and the within-replicate sum of squares. Prediction uses the heteroscedastic
    GP on the averages with noise :math:`\lambda/n_i`, which is identical to GPflow's ``GPR`` on
    the full duplicated data (tested). ``optimize`` maximises the exact full-data log
    marginal likelihood, so the noise variance is identifiable from the replicates; the
    likelihood of the group means only would drive it to its floor.

    ``update`` recognises a MINI-META epoch, B more evaluations of one input (repeated or new),
    and updates the Cholesky factor in O(q^2) (a rank-one downdate of one diagonal entry of
    :math:`K_U + \lambda\,\mathrm{diag}(1/n)`, or one appended row); anything else is
    refactorised from scratch in O(q^3). Memory is O(q^2) for q unique inputs.

    For Trieste's acquisition functions it is also a ``FastUpdateModel`` (exact fantasies,
    :mod:`.conditioning`) and has a decoupled ``trajectory_sampler`` over its unique inputs
    (the exact posterior of f there, unwhitened: :mod:`.inducing_view`).

    :param kernel: Any GPflow kernel.
    :param noise_variance: :math:`\lambda > 0`.
    :param dataset: Optional initial data (equivalent to calling ``update``).
    """

    _log_name = "replicated"
    _compiled_type = CompiledReplicated
    _posterior_type = replicated.ReplicatedPosterior
    whiten = False

    def __init__(
        self,
        kernel: gpflow.kernels.Kernel,
        noise_variance: float,
        dataset: Optional[Dataset] = None,
        *,
        jitter: float = 0.0,
        **options: Unpack[ModelOptions],
    ):
        """
        :param jitter: First relative jitter tried when factorising from scratch.
        :param options: The fitting and prediction options of :class:`~.ReplicatedGPBase`
            (``fit_hyperparameters``, ``fit_schedule``, ``chunk_size``, ...).
        """
        super().__init__(kernel, noise_variance, **options)
        self._jitter = jitter
        self.last_update_was_incremental = False
        if dataset is not None:
            self.update(dataset)

    # ----------------------------------------------------------------- public extras
    def information_gain(self) -> float:
        r""":math:`\log\det(I + K_t/\lambda)` over all evaluations (exact)."""
        data = self._require_data()
        return float(
            self.compiled.information_gain(
                data.input_tensor, tf.constant(data.counts), self.get_observation_noise()
            )
        )

    def log_marginal_likelihood(self) -> tf.Tensor:
        """Exact log likelihood of every evaluation (what ``optimize`` maximises)."""
        return self._objective()()

    def _inducing_variables(self) -> InducingVariables:
        """The unique inputs [q, D], the posterior mean of f there net of the prior mean
        [q, 1] and a root [1, q, q] of its posterior covariance (jittered: the covariance is
        singular where the kernel matrix is)."""
        post = self._require_posterior()
        mean, covariance = self.compiled.at_inputs(post)
        if tf.executing_eagerly():
            root, _ = jittered_cholesky(covariance, 1e-10)
        else:
            scale = tf.reduce_mean(tf.linalg.diag_part(covariance))
            root = cholesky_with_jitter(covariance, 1e-8 * scale)
        return InducingVariables(post.inputs, mean[:, None], root[None])

    # ----------------------------------------------------------------- template methods
    def _absorb(self, data: ReplicatedData, extends: bool) -> None:
        epoch = self._epoch_index(data) if extends else None
        chol = self._factorise(data) if epoch is None else self._epoch_update(data, epoch)
        self._install(data, chol)
        self.last_update_was_incremental = epoch is not None

    def _refactorise(self) -> None:
        data = self._require_data()
        self._install(data, self._factorise(data))

    def _install(self, data: ReplicatedData, chol: tf.Tensor) -> None:
        """Condition on ``data`` given the Cholesky factor of its :math:`M` (assigns last)."""
        mean = self._prior_mean()
        alpha = self.compiled.weights(chol, tf.constant(data.means), mean)
        self._posterior = replicated.ReplicatedPosterior(data.input_tensor, chol, alpha, mean)
        self._data = data

    def _objective(self) -> Objective:
        return self._exact_objective()

    def _latent_marginals(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self.compiled.marginals(self._require_posterior(), x)

    def _latent_set_covariance(self, sets: tf.Tensor) -> tf.Tensor:
        return self.compiled.set_covariance(self._require_posterior(), sets)

    def _latent_cross_covariance(self, x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
        return self.compiled.cross_covariance(self._require_posterior(), x, x2)

    def _log_extra(self) -> None:
        data = self._require_data()
        logging.scalar("replicated/max_count", float(data.counts.max()))

    # ----------------------------------------------------------------- internals
    def _factorise(self, data: ReplicatedData) -> tf.Tensor:
        gram = self.compiled.noisy_gram(
            data.input_tensor, tf.constant(data.counts), self.get_observation_noise()
        )
        chol, _ = jittered_cholesky(gram, self._jitter)
        return chol

    def _epoch_index(self, data: ReplicatedData) -> Optional[int]:
        """The one input whose count grew, if ``data``, which extend the old data
        (:meth:`~.ReplicatedData.extends`: the old inputs first, no count smaller), are the old
        data plus one epoch."""
        old = self._data
        if old is None or self._posterior is None:
            return None
        q_old, q_new = old.counts.size, data.counts.size
        if q_new not in (q_old, q_old + 1):
            return None
        grew = np.flatnonzero(data.counts[:q_old] != old.counts)
        if q_new == q_old + 1:
            return q_old if grew.size == 0 else None
        return int(grew[0]) if grew.size == 1 else None

    def _epoch_update(self, data: ReplicatedData, index: int) -> tf.Tensor:
        """O(q^2) factor update for more evaluations at ``data.inputs[index]``."""
        assert self._posterior is not None and self._data is not None
        noise = self.get_observation_noise()
        chol = self._posterior.chol
        if index == self._data.counts.size:  # a new input: append a row
            x = tf.constant(data.inputs[index : index + 1])
            return self.compiled.append_input(
                self._data.input_tensor, chol, x, noise / data.counts[index]
            )
        # lambda/n_i -> lambda/n_i': M loses delta * e_i e_i^T (a rank-one downdate)
        delta = noise * (1.0 / self._data.counts[index] - 1.0 / data.counts[index])
        vector = tf.sqrt(delta) * tf.one_hot(index, data.counts.size, dtype=self._dtype)
        return self.compiled.downdate(chol, vector)
