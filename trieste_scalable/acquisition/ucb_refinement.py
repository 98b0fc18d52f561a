"""Refinement of a UCB-family pick in a continuous (``Box``) search space: the best candidate of
the random pool is improved by L-BFGS-B on its lower confidence bound under the in-batch
posterior, :math:`\\tilde\\mu(x) - \\tilde\\alpha\\tilde\\sigma_t(x)` (Trieste minimises), as
Trieste's continuous optimiser refines its acquisition functions' best samples.

The batch logic is unchanged: the lazy argmin and the batch-start statistics of the stopping rule
count the pool point the refinement started from (a point of the pool's spacing away); the
refined point is what is hallucinated and returned. It keeps its start where it is not better.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import tensorflow as tf
from trieste.space import Box

from .protocols import InBatchPosteriorLike

_VARIANCE_FLOOR = 1e-12
"""Added under the square root so that the bound's gradient stays finite at a hallucinated
point (where the in-batch variance is zero)."""


def lower_bound(posterior: InBatchPosteriorLike, x: tf.Tensor, alpha: float) -> tf.Tensor:
    """:math:`\\tilde\\mu(x) - \\tilde\\alpha\\tilde\\sigma_t(x)` [N] at ``x`` [N, D]."""
    mean, variance = posterior.marginals(x)
    return mean - alpha * tf.sqrt(tf.maximum(variance, 0.0) + _VARIANCE_FLOOR)


def refine_pick(
    posterior: InBatchPosteriorLike,
    start: tf.Tensor,
    alpha: float,
    space: Box,
    max_iterations: int,
) -> tf.Tensor:
    """The point [1, D] that L-BFGS-B reaches from ``start`` [1, D] within ``space`` on the
    lower bound, or ``start`` if that is not lower (or ``max_iterations`` is 0)."""
    if max_iterations == 0:
        return start
    dtype = start.dtype
    values: list[float] = []  # L-BFGS-B's first evaluation is at the start

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        x = tf.constant(flat[None], dtype=dtype)
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = lower_bound(posterior, x, alpha)[0]
        values.append(float(value))
        return values[-1], tape.gradient(value, x).numpy()[0].astype(np.float64)

    begin = start.numpy()[0].astype(np.float64)
    result = scipy.optimize.minimize(
        objective,
        begin,
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(space.lower.numpy(), space.upper.numpy())),
        options={"maxiter": max_iterations},
    )
    if not (np.all(np.isfinite(result.x)) and result.fun < values[0]):
        return start
    return tf.constant(result.x[None], dtype=dtype)
