"""The variance the data cannot rule out: the remedy of ``variance_optimism`` for UCB rules whose
hyperparameters are fitted on their own clustered, noisy data (``docs/fitting.md``), and the
noise share that scales it and :class:`~trieste_scalable.acquisition.ExplorationShare`."""

from __future__ import annotations

import math
from typing import Callable

import gpflow
import numpy as np
import tensorflow as tf

from .fitting import loss_at


def noise_share(signal: float, noise: float) -> float:
    r""":math:`\rho = \sigma_n^2 / (\sigma_f^2 + \sigma_n^2)`, the share of an observation's
    variance a fit calls noise, in [0, 1] (1 where the variances are not finite and positive).

    Fits on a UCB rule's clustered data go wrong by calling the signal noise (``docs/fitting.md``):
    that needs a noise the fit can move and a noise comparable with the signal. Where the noise is
    known and small (Trieste's ``build_gpr`` default, a hundredth of the variance: :math:`\rho
    \approx 0.01`) the remedies scaled by :math:`\rho` (the variance's optimism,
    :class:`~trieste_scalable.acquisition.ExplorationShare`) all but stand aside."""
    if not (math.isfinite(signal) and math.isfinite(noise)) or signal + noise <= 0:
        return 1.0
    return min(1.0, max(0.0, noise / (signal + noise)))


def credible_upper_variance(
    loss: Callable[[], tf.Tensor], variance: gpflow.Parameter, z: float, step: float = 0.2
) -> float:
    """The signal variance at the upper end of its Laplace interval: :math:`\\exp(u + z s)`, with
    :math:`u` the log of the fitted variance and :math:`s = (\\partial^2 L / \\partial u^2)^{-1/2}`
    the standard deviation of :math:`u` under the posterior with the other hyperparameters held
    at their fit (from a central second difference of ``loss`` with step ``step`` in
    :math:`u`; :math:`s = 1` where the loss is not convex there, i.e. flat in the variance).
    ``variance`` is left at its fitted value.

    Why: fitted on a UCB rule's clustered, noisy data the likelihood is nearly flat in the
    signal variance and its maximum falls far below the truth (0.012 where a fit on uniform
    data says 0.050); a bound built with the variance the data cannot rule out at ``z``
    standard deviations keeps exploring (``docs/fitting.md``).

    :param loss: Negative log posterior of the hyperparameters (as fitted).
    :param variance: The kernel's (positive) variance parameter, at its fitted value.
    :param z: Standard deviations above the fit (> 0).
    """
    fitted = variance.numpy()
    u = float(np.log(fitted))
    around = [loss_at(loss, [variance], [np.exp(u + d)]) for d in (-step, 0.0, step)]
    variance.assign(fitted)
    curvature = (around[0] + around[2] - 2.0 * around[1]) / step**2
    spread = 1.0 / np.sqrt(curvature) if np.isfinite(curvature) and curvature > 0 else 1.0
    return float(np.exp(u + z * min(spread, 1.0)))
