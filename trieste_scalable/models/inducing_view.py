"""The whitened inducing-point view of a sparse posterior that Trieste's samplers read
(``get_inducing_variables``, ``get_mean_function``, ``trajectory_sampler``), shared by
:class:`~trieste_scalable.models.AdaptiveSVGP` and :class:`~trieste_scalable.models.NystromGPR`
(whose DTC posterior, eqs. 1-2, is an SVGP posterior with the optimal q: whitened mean
:math:`w`, covariance :math:`\\lambda V^{-1}`)."""

from __future__ import annotations

from typing import Any, Callable, Optional

import gpflow
import tensorflow as tf
from trieste.models.gpflow.sampler import DecoupledTrajectorySampler
from trieste.models.interfaces import (
    HasTrajectorySampler,
    SupportsGetInducingVariables,
    SupportsGetKernel,
    SupportsGetMeanFunction,
    TrajectorySampler,
)


class WhitenedInducingView(
    SupportsGetKernel, SupportsGetInducingVariables, SupportsGetMeanFunction, HasTrajectorySampler
):
    """Mixin for a model with ``prior_mean``, ``_dtype`` and ``get_inducing_variables``.

    :cvar num_rff_features: Random Fourier features of Trieste's decoupled sampler.
    """

    num_rff_features = 1000
    _mean_function: Optional[gpflow.mean_functions.Constant] = None
    _dtype: tf.DType
    prior_mean: Optional[float]

    def get_mean_function(self) -> Callable[[tf.Tensor], tf.Tensor]:
        """The constant prior mean as a GPflow mean function (the same object every call, so
        compiled consumers do not retrace)."""
        mean = tf.constant(self.prior_mean or 0.0, dtype=self._dtype)
        if self._mean_function is None:
            # GPflow builds the parameter in its default float: build it in the model's dtype
            with gpflow.config.as_context(gpflow.config.Config(float=self._dtype)):
                self._mean_function = gpflow.mean_functions.Constant(mean)
            gpflow.set_trainable(self._mean_function, False)
        else:
            self._mean_function.c.assign(mean)
        return self._mean_function

    def trajectory_sampler(self) -> TrajectorySampler[Any]:
        """Trieste's decoupled sampler over this model, so Trieste's own Thompson-sampling rules
        work with it (our :class:`~trieste_scalable.acquisition.BatchThompsonSampling` does not
        need it)."""
        return DecoupledTrajectorySampler(self, self.num_rff_features)
