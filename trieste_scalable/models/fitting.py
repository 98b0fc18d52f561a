"""Hyperparameter fits a user can trust: multi-start MAP with progress and degeneracy checks.

A single L-BFGS-B run from the previous optimum (what a refit every step does) can fall into a
degenerate optimum on noisy data, e.g. a lengthscale far below the spacing of the data (every
point explained as noise) or a signal variance far below the noise, and then stay there: at
such points the gradient with respect to the other parameters vanishes. Measured on 20 noisy
points (noise std half the function's spread), GPflow's ``GPR`` with Trieste's LogNormal priors
fitted from one start ends at lengthscale 0.002 and signal variance 0.0003 (noise 0.06), and
every later warm-started refit keeps that lengthscale. :func:`fit_hyperparameters` therefore

1. scores several starts before optimising (as Trieste's ``GaussianProcessRegression`` does with
   ``num_kernel_samples``): the current values, the values the model was built with, and draws
   from the parameters' priors where they have priors;
2. runs L-BFGS-B from the best start, and from the next ones while a result is worse than its
   start, not finite, or degenerate (:func:`degeneracy`);
3. keeps the first sound result; if every run was degenerate, refits within bounds (the
   caller's ``bounded``: the lengthscales held at the larger of their last good values and the
   degeneracy floor, the variance, noise and mean fitted), so that e.g. a model built with a
   noise far too small still learns its noise; else restores the previous values (the last
   good fit) and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.utilities import positive

from ..numerics.linalg import CholeskyError


@dataclass(frozen=True)
class FitSchedule:
    """When ``optimize`` refits the hyperparameters: at every call while the data hold fewer
    than ``refit_below`` evaluations (early fits move most, and are cheap), then once the number
    of unique inputs has grown by the factor ``growth`` since the last fit (a geometric
    schedule: O(log n) fits in a run, each warm-started). The default refits at 100, 125, 157,
    ... unique inputs: 9 fits between 100 and 600 instead of one per batch.
    ``FitSchedule(1.0)`` refits at every call.

    The early refits count evaluations, not unique inputs: sequential BKB with fitted
    hyperparameters on a noisy problem re-evaluated the same 41 points for hundreds of steps,
    and counted in unique inputs every one of those steps refitted (``benchmarks/fit_cost.py``).

    :param growth: Factor >= 1.
    :param refit_below: Evaluations below which every call refits (>= 0).
    """

    growth: float = 1.25
    refit_below: int = 100

    def __post_init__(self) -> None:
        if not (np.isfinite(self.growth) and self.growth >= 1.0):
            raise ValueError(f"the refit growth factor must be >= 1, got {self.growth}")
        if self.refit_below < 0:
            raise ValueError(f"refit_below must be >= 0, got {self.refit_below}")

    def due(self, size: int, size_at_last_fit: int, evaluations: int) -> bool:
        """Whether data of ``size`` unique inputs and ``evaluations`` evaluations call for a
        refit after one at ``size_at_last_fit`` unique inputs (0: none yet)."""
        return (
            size_at_last_fit == 0
            or evaluations < self.refit_below
            or size >= self.growth * size_at_last_fit
        )


@dataclass(frozen=True)
class FitOutcome:
    """What one :func:`fit_hyperparameters` call did.

    :ivar accepted: Whether new hyperparameters were kept.
    :ivar attempts: L-BFGS-B runs made.
    :ivar reason: Why the last rejected run was rejected ("" if none was).
    :ivar result: SciPy's result of the accepted run.
    """

    accepted: bool
    attempts: int
    reason: str = ""
    result: Any = None


NOISE_FLOOR = 1e-12
"""The lower bound of the noise variance's positive transform: a model's noise stays above it."""


def noise_parameter(noise_variance: float, dtype: tf.DType) -> gpflow.Parameter:
    r"""The noise variance :math:`\lambda` as a parameter in ``dtype`` that stays above
    :data:`NOISE_FLOOR`.

    :raise ValueError: If ``noise_variance`` is not finite or not above the floor.
    """
    if not (np.isfinite(noise_variance) and noise_variance > NOISE_FLOOR):
        raise ValueError(
            f"noise_variance must be finite and above {NOISE_FLOOR:g} (the models' floor), "
            f"got {noise_variance}"
        )
    with gpflow.config.as_context(gpflow.config.Config(float=dtype)):
        # positive() builds its shift in the default float: build it in the model's dtype
        return gpflow.Parameter(noise_variance, transform=positive(NOISE_FLOOR), dtype=dtype)


MIN_LENGTHSCALE_SPACING = 0.1
"""A lengthscale below this fraction of the data's spacing is degenerate (:func:`degeneracy`);
a bounded refit holds lengthscales at least this high."""


def degeneracy(
    kernel: gpflow.kernels.Kernel, noise: float, spacing: float, extent: float
) -> Optional[str]:
    """Why these hyperparameters are degenerate for optimisation, or ``None``.

    - a lengthscale below a tenth of the typical spacing of the data (neighbouring inputs then
      have a correlation below exp(-50): nothing is interpolated, every point is its own);
    - every lengthscale above 1,000 times the extent of the data (a flat function);
    - a signal variance below 1 % of the noise variance (everything is noise).

    :param spacing: Median distance of an input to its nearest other input.
    :param extent: Largest range of the inputs over their dimensions.
    """
    lengthscales = getattr(kernel, "lengthscales", None)
    if lengthscales is not None and spacing > 0:
        values = np.atleast_1d(lengthscales.numpy())
        if values.min() < MIN_LENGTHSCALE_SPACING * spacing:
            return f"lengthscale {values.min():.3g} < a tenth of the data spacing {spacing:.3g}"
        # every one: a single large ARD lengthscale marks an irrelevant dimension, not a flat fit
        if values.min() > 1e3 * extent:
            return f"every lengthscale > 1000 x the extent of the data {extent:.3g}"
    variance = getattr(kernel, "variance", None)
    if variance is not None and float(variance.numpy()) < 0.01 * noise:
        return f"signal variance {float(variance.numpy()):.3g} < 1% of the noise {noise:.3g}"
    return None


def bounded_start(
    kernel: gpflow.kernels.Kernel,
    noise: gpflow.Parameter,
    observed_variance: float,
    spacing: float,
    fitted: Sequence[gpflow.Parameter],
) -> list[gpflow.Parameter]:
    """The start of a bounded refit (``bounded`` of :func:`fit_hyperparameters`): the kernel's
    lengthscales held at the larger of their current (last good) values and the floor of
    :func:`degeneracy`, the signal variance and ``noise`` (when fitted) at equal shares of the
    observations' variance (left as they are if it is 0), so that neither starts collapsed;
    returns the ``fitted`` parameters other than the lengthscales."""
    held = getattr(kernel, "lengthscales", None)
    if held is not None:
        held.assign(np.maximum(held.numpy(), MIN_LENGTHSCALE_SPACING * spacing))
    for share in (getattr(kernel, "variance", None), noise):
        if share is not None and share.trainable and observed_variance > 0:
            share.assign(0.5 * observed_variance)
    return [p for p in fitted if p is not held]


def input_scales(inputs: np.ndarray, max_points: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Median nearest-neighbour distance (on at most ``max_points`` inputs) and the largest
    per-dimension range of ``inputs`` [n, D]."""
    extent = float(np.max(np.ptp(inputs, axis=0))) if inputs.shape[0] else 0.0
    if inputs.shape[0] < 2:
        return 0.0, extent
    if inputs.shape[0] > max_points:
        pick = np.random.default_rng(seed).choice(inputs.shape[0], max_points, replace=False)
        inputs = inputs[pick]
    squared = np.sum(inputs**2, axis=1)
    distances = squared[:, None] + squared[None, :] - 2.0 * inputs @ inputs.T
    np.fill_diagonal(distances, np.inf)
    return float(np.median(np.sqrt(np.maximum(distances.min(axis=1), 0.0)))), extent


def fit_hyperparameters(
    loss: Callable[[], tf.Tensor],
    parameters: Sequence[gpflow.Parameter],
    initial: Sequence[np.ndarray],
    check: Callable[[], Optional[str]],
    *,
    max_iterations: int,
    num_prior_samples: int,
    max_attempts: int,
    seed: int,
    bounded: Optional[Callable[[], Sequence[gpflow.Parameter]]] = None,
) -> FitOutcome:
    """Multi-start MAP fit of ``parameters`` (module docstring); on rejection the values they
    had on entry are restored.

    :param loss: Negative log marginal likelihood (or bound) plus negative log priors.
    :param parameters: The trainable parameters.
    :param initial: Constrained values of ``parameters`` the model was built with.
    :param check: Returns why the current values are degenerate, or ``None``.
    :param num_prior_samples: Draws from the priors scored as starts (parameters with priors).
    :param max_attempts: Most L-BFGS-B runs.
    :param seed: Seed of the prior draws.
    :param bounded: Called on the previous values when every run was degenerate: holds some
        parameters (assigning them their bounds) and returns the others, which are then fitted
        once more from there.
    """
    saved = [p.numpy() for p in parameters]
    starts = _starts(parameters, saved, initial, num_prior_samples, seed)
    scored = sorted((loss_at(loss, parameters, s), k) for k, s in enumerate(starts))
    variables = [v for p in parameters for v in p.trainable_variables]
    reason, attempts = "", 0
    for start_loss, k in scored[:max_attempts]:
        if not np.isfinite(start_loss):
            break
        _assign(parameters, starts[k])
        attempts += 1
        try:
            result, end = _minimize(loss, variables, max_iterations)
        except (CholeskyError, tf.errors.InvalidArgumentError) as error:
            reason = f"failed ({str(error).splitlines()[0]})"
            continue
        # L-BFGS-B may stop on a point worse than its start (float32 gradients of a bound with
        # rounding noise): check progress instead of trusting its success flag.
        if not np.isfinite(end) or end > start_loss:
            reason = f"ended at a loss {end:.6g} worse than its start {start_loss:.6g}"
            continue
        degenerate = check()
        if degenerate is not None:
            reason = f"found a degenerate optimum ({degenerate})"
            continue
        return FitOutcome(True, attempts, reason, result)
    _assign(parameters, saved)
    if bounded is not None and reason.startswith("found a degenerate"):
        refit = _bounded_refit(loss, bounded, check, max_iterations)
        if refit is not None:
            return FitOutcome(True, attempts + 1, f"{reason}; refitted within bounds", refit)
        _assign(parameters, saved)
    return FitOutcome(False, attempts, reason or "had no start with a finite loss")


def _starts(
    parameters: Sequence[gpflow.Parameter],
    current: list[np.ndarray],
    initial: Sequence[np.ndarray],
    num_prior_samples: int,
    seed: int,
) -> list[list[np.ndarray]]:
    """The fit's candidate starts: the ``current`` values, the ``initial`` ones, and (where some
    parameter has a prior) ``num_prior_samples`` draws of the parameters with priors."""
    starts = [current, [np.asarray(v) for v in initial]]
    if any(p.prior is not None for p in parameters):
        for i in range(num_prior_samples):
            starts.append(
                [
                    _prior_draw(p, seed + 7919 * i) if p.prior is not None else value
                    for p, value in zip(parameters, current)
                ]
            )
    return starts


def _bounded_refit(
    loss: Callable[[], tf.Tensor],
    bounded: Callable[[], Sequence[gpflow.Parameter]],
    check: Callable[[], Optional[str]],
    max_iterations: int,
) -> Any:
    """One L-BFGS-B run of the parameters ``bounded`` leaves free; SciPy's result if it ended
    finite, no worse than its start and not degenerate, else ``None``."""
    free = bounded()
    start = loss_at(loss, free, [p.numpy() for p in free])
    variables = [v for p in free for v in p.trainable_variables]
    if not (np.isfinite(start) and variables):
        return None
    try:
        result, end = _minimize(loss, variables, max_iterations)
    except (CholeskyError, tf.errors.InvalidArgumentError):
        return None
    return result if np.isfinite(end) and end <= start and check() is None else None


def _minimize(
    loss: Callable[[], tf.Tensor], variables: Sequence[tf.Variable], max_iterations: int
) -> tuple[Any, float]:
    """One L-BFGS-B run of ``variables``: SciPy's result and the loss where it ended."""
    result = gpflow.optimizers.Scipy().minimize(
        loss, variables, compile=False, options={"maxiter": max_iterations}
    )
    return result, float(loss())


def _prior_draw(parameter: gpflow.Parameter, seed: int) -> np.ndarray:
    prior = parameter.prior
    assert prior is not None
    shape = parameter.shape if prior.batch_shape == [] else []  # scalar prior, vector parameter
    # a stateless seed pair: the same draws whatever ran before (an int seed would depend on
    # TensorFlow's global random state)
    return prior.sample(shape, seed=tf.constant([seed, 0], tf.int32)).numpy()


def loss_at(
    loss: Callable[[], tf.Tensor], parameters: Sequence[gpflow.Parameter], values: list
) -> float:
    """``loss`` with ``parameters`` assigned ``values`` (left so), or inf where it cannot be
    computed or is not finite."""
    try:
        _assign(parameters, values)
        value = float(loss())
    except (CholeskyError, tf.errors.InvalidArgumentError, ValueError):
        return np.inf
    return value if np.isfinite(value) else np.inf


def _assign(parameters: Sequence[gpflow.Parameter], values: Sequence[np.ndarray]) -> None:
    for parameter, value in zip(parameters, values):
        parameter.assign(value)
