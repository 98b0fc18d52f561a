"""The inducing-point view of a posterior that Trieste's samplers read
(``get_inducing_variables``, ``trajectory_sampler``), shared by every model of the package:
:class:`~trieste_scalable.models.AdaptiveSVGP` (its whitened q),
:class:`~trieste_scalable.models.NystromGPR` (whose DTC posterior, eqs. 1-2, is an SVGP posterior
with the optimal q: whitened mean :math:`w`, covariance :math:`\\lambda V^{-1}`) and
:class:`~trieste_scalable.models.ReplicatedGPR` (the exact posterior of f at its unique inputs,
unwhitened: the data are observed only there, so conditioning on f there is exact).

Trieste's ``DecoupledTrajectorySampler`` keeps the inducing points it was built with (its
canonical features are :math:`k(x, Z)`) and re-reads the rest at every ``update_trajectory``.
So :meth:`InducingView.get_inducing_variables` returns variables with dynamic shapes, refreshed
at every eager call: a trajectory updated after a model update sees the new, possibly larger,
inducing set.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, NamedTuple

import tensorflow as tf
from trieste.models.gpflow.sampler import DecoupledTrajectorySampler
from trieste.models.interfaces import (
    HasTrajectorySampler,
    SupportsGetInducingVariables,
    SupportsGetKernel,
    SupportsGetMeanFunction,
    TrajectorySampler,
)

from .live import LiveTuple


class InducingVariables(NamedTuple):
    """A single-output posterior as inducing variables (Trieste's layout).

    :ivar inducing: Inducing points [M, D].
    :ivar q_mu: Mean of u (whitened: of v) net of the mean function [M, 1].
    :ivar q_sqrt: Lower-triangular root of the covariance of u (or v) [1, M, M].
    """

    inducing: tf.Tensor
    q_mu: tf.Tensor
    q_sqrt: tf.Tensor


class InducingView(
    SupportsGetKernel, SupportsGetInducingVariables, SupportsGetMeanFunction, HasTrajectorySampler
):
    """Mixin for a model that can state its posterior as inducing variables.

    :cvar num_rff_features: Random Fourier features of Trieste's decoupled sampler.
    :cvar whiten: Whether ``_inducing_variables`` is whitened.
    """

    num_rff_features = 1000
    whiten = True

    @abstractmethod
    def _inducing_variables(self) -> InducingVariables:
        """The current posterior as inducing variables (graph-safe)."""

    def get_inducing_variables(self) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, bool]:
        """Inducing points [M, D], q_mu [M, 1], q_sqrt [1, M, M] and whether they are whitened,
        as Trieste's ``SparseVariational`` returns them. Called eagerly, the three are variables
        holding the current values (see the module docstring)."""
        current = self._inducing_variables()
        if not tf.executing_eagerly():
            return (*current, self.whiten)
        live: LiveTuple[InducingVariables] = self.__dict__.setdefault(
            "_live_inducing_variables", LiveTuple(InducingVariables)
        )
        live.assign(current)
        inducing, q_mu, q_sqrt = live.variables()
        return inducing, q_mu, q_sqrt, self.whiten

    def trajectory_sampler(self) -> TrajectorySampler[Any]:
        """Trieste's decoupled sampler over this model, so Trieste's own Thompson-sampling rules
        work with it (our :class:`~trieste_scalable.acquisition.BatchThompsonSampling` does not
        need it)."""
        return DecoupledTrajectorySampler(self, self.num_rff_features)
