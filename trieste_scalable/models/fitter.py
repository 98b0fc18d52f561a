"""The fitting a model composes: its options, when a refit is due, the MAP loss, and the record
of what each fit did (the steps of one fit: :func:`~.fitting.fit_hyperparameters`).

Kept apart from the models as GPflow keeps its training loops (``gpflow.optimizers``) apart
from ``GPModel``: a model hands its objective, parameters and degeneracy check to
:meth:`HyperparameterFitter.fit` and refactorises afterwards.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf

from .data import ReplicatedData
from .fit_objectives import Objective
from .fitting import (
    NOISE_FLOOR,
    FitOutcome,
    FitSchedule,
    bounded_start,
    degeneracy,
    fit_hyperparameters,
    input_scales,
)
from .variance_optimism import credible_upper_variance, noise_share


@dataclass
class HyperparameterFitter:
    """When and how a model fits its trainable hyperparameters.

    :param enabled: Whether fits run at all (the models' ``fit_hyperparameters``).
    :param max_iterations: L-BFGS-B iterations per run.
    :param schedule: When a refit is due (default :class:`~.fitting.FitSchedule`: every call
        during the first 100 evaluations, then at 25 % growth of the unique inputs).
    :param num_prior_samples: Draws from the priors scored as starts of each fit.
    :param variance_optimism: After each accepted fit, the signal variance is set
        ``variance_optimism`` times the fit's noise share (:func:`~.variance_optimism.noise_share`)
        standard deviations of its Laplace posterior above the fit
        (:func:`~.variance_optimism.credible_upper_variance`); 0 keeps the fit (MAP).
    :ivar outcomes: What every fit did, in order.
    :ivar rejections: Fits that failed, ended worse than they started or were degenerate, and
        were undone.
    """

    enabled: bool = True
    max_iterations: int = 100
    schedule: FitSchedule = field(default_factory=FitSchedule)
    num_prior_samples: int = 10
    variance_optimism: float = 0.0
    outcomes: list[FitOutcome] = field(default_factory=list)
    rejections: int = 0
    _size_at_last_fit: int = 0
    _fitted_version: int = -1
    _fitted_variance: Optional[np.ndarray] = None  # the fit's variance, before optimism
    _losses: dict = field(default_factory=dict, repr=False, compare=False)  # see _compiled_loss

    def __post_init__(self) -> None:
        if not (np.isfinite(self.variance_optimism) and self.variance_optimism >= 0):
            raise ValueError(
                f"variance_optimism must be finite and >= 0, got {self.variance_optimism}"
            )

    def __getstate__(self) -> dict:
        """Copies and pickles drop the compiled losses (they hold the model's variables)."""
        return {**self.__dict__, "_losses": {}}

    def due(self, data: ReplicatedData, data_version: int) -> bool:
        """Whether ``data``, at ``data_version`` (the model's count of updates that changed its
        data), call for a fit: never twice on the same data, then as the schedule says."""
        if not self.enabled or self._fitted_version == data_version:
            return False
        return self.schedule.due(data.counts.size, self._size_at_last_fit, data.num_evaluations)

    def start_over(self) -> None:
        """The data were replaced, not extended (a trust region's local points): the schedule
        counts growth from zero again."""
        self._size_at_last_fit = 0

    def fit(
        self,
        objective: Objective,
        hyperparameters: Sequence[gpflow.Parameter],
        built_with: Sequence[np.ndarray],
        kernel: gpflow.kernels.Kernel,
        noise: gpflow.Parameter,
        data: ReplicatedData,
        data_version: int,
    ) -> Optional[FitOutcome]:
        """Maximise ``objective`` plus the log priors of the trainable ``hyperparameters`` (MAP,
        as GPflow's models train), from the current values, ``built_with`` (one per
        hyperparameter) and prior draws, checked for degeneracy against the inputs' scales, with
        a bounded refit when every run is degenerate (:func:`~.fitting.fit_hyperparameters`); a
        rejected fit restores the previous values and warns. ``data`` (at ``data_version``) are
        the data fitted. ``None`` if nothing is trainable."""
        pairs = [(p, v) for p, v in zip(hyperparameters, built_with) if p.trainable]
        if not pairs:
            return None
        self._fitted_version = data_version
        variance = getattr(kernel, "variance", None)
        raised = self._restore_fitted_variance(variance)
        parameters = [p for p, _ in pairs]
        spacing, extent = input_scales(data.inputs)
        shares = data.variance if data.variance > 2 * NOISE_FLOOR else 0.0  # 0: left as they are

        compiled = self._compiled_loss(objective.function, parameters)

        def loss() -> tf.Tensor:
            return compiled(*objective.arguments)

        def check() -> Optional[str]:
            return degeneracy(kernel, float(noise.numpy()), spacing, extent)

        outcome = fit_hyperparameters(
            loss,
            parameters,
            [v for _, v in pairs],
            check,
            max_iterations=self.max_iterations,
            num_prior_samples=self.num_prior_samples,
            max_attempts=3,
            seed=len(self.outcomes),
            bounded=lambda: bounded_start(kernel, noise, shares, spacing, parameters),
        )
        self.outcomes.append(outcome)
        if outcome.accepted:
            self._size_at_last_fit = data.counts.size
            self._raise_variance(loss, variance, noise)
            if outcome.reason:  # every free run was degenerate: say the fit was bounded
                warnings.warn(f"hyperparameter fit {outcome.reason}", stacklevel=3)
        else:
            if raised is not None and variance is not None:
                variance.assign(raised)  # the model keeps what it had
            self.rejections += 1
            warnings.warn(
                f"hyperparameter fit {outcome.reason}; previous values restored", stacklevel=3
            )
        return outcome

    def _restore_fitted_variance(self, variance: Optional[gpflow.Parameter]) -> Optional[Any]:
        """Start from the last fit's kernel variance, not from the raised value (raising
        compounds otherwise: where the loss is flat in the variance, L-BFGS-B stops near its
        start); the raised value, or ``None`` if nothing was raised."""
        if self._fitted_variance is None or variance is None:
            return None
        raised = variance.numpy()
        variance.assign(self._fitted_variance)
        return raised

    def _raise_variance(
        self,
        loss: Callable[[], tf.Tensor],
        variance: Optional[gpflow.Parameter],
        noise: gpflow.Parameter,
    ) -> None:
        """After an accepted fit, with ``variance_optimism``: keep the fitted kernel variance
        and raise it to its credible upper value (:mod:`.variance_optimism`)."""
        if self.variance_optimism > 0 and variance is not None and variance.trainable:
            self._fitted_variance = variance.numpy()
            rho = noise_share(float(np.max(self._fitted_variance)), float(noise.numpy()))
            z = self.variance_optimism * rho
            variance.assign(credible_upper_variance(loss, variance, z))

    def _compiled_loss(
        self, function: Callable[..., tf.Tensor], parameters: Sequence[gpflow.Parameter]
    ) -> Callable[..., tf.Tensor]:
        """The MAP loss, ``-(function(*data) + log priors of parameters)``, compiled once per
        objective function and set of parameters and reused by every later fit (the data are
        arguments with relaxed shapes, so growing data retraces at most once).

        Why not GPflow's ``Scipy(compile=True)``: it compiles a new function at every
        ``minimize``, i.e. every fit; uncompiled, the priors, transforms and tape cost about
        three times the loss itself at a few hundred points, which made every refit of
        sequential BKB cost seconds (``benchmarks/fit_cost.py``).
        """
        key = (function, tuple(id(p) for p in parameters))
        if key not in self._losses:
            dtype = parameters[0].dtype

            @tf.function(reduce_retracing=True)
            def loss(*data: tf.Tensor) -> tf.Tensor:
                priors = [tf.cast(p.log_prior_density(), dtype) for p in parameters]
                return -(function(*data) + tf.add_n(priors))

            self._losses[key] = loss
        return self._losses[key]

    def tracing_count(self) -> int:
        """Traces of the compiled losses so far (tests assert growing data retrace at most
        once per loss)."""
        return sum(loss.experimental_get_tracing_count() for loss in self._losses.values())
