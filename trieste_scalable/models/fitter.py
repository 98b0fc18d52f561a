"""The fitting a model composes: its options, when a refit is due, the MAP loss, and the record
of what each fit did (the steps of one fit: :func:`~.fitting.fit_hyperparameters`).

Kept apart from the models as GPflow keeps its training loops (``gpflow.optimizers``) apart
from ``GPModel``: a model hands its objective, parameters and degeneracy check to
:meth:`HyperparameterFitter.fit` and refactorises afterwards.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf

from .data import ReplicatedData
from .fitting import (
    NOISE_FLOOR,
    FitOutcome,
    FitSchedule,
    bounded_start,
    credible_upper_variance,
    degeneracy,
    fit_hyperparameters,
    input_scales,
)


@dataclass
class HyperparameterFitter:
    """When and how a model fits its trainable hyperparameters.

    :param enabled: Whether fits run at all (the models' ``fit_hyperparameters``).
    :param max_iterations: L-BFGS-B iterations per run.
    :param schedule: When a refit is due (default: whenever the data changed).
    :param num_prior_samples: Draws from the priors scored as starts of each fit.
    :param variance_optimism: After each accepted fit, the signal variance is set this many
        standard deviations of its Laplace posterior above the fit
        (:func:`~.fitting.credible_upper_variance`); 0 keeps the fit (MAP).
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

    def due(self, size: int, data_version: int) -> bool:
        """Whether data of ``size`` unique inputs, at ``data_version`` (the model's count of
        updates that changed its data), call for a fit: never twice on the same data, then as
        the schedule says."""
        if not self.enabled or self._fitted_version == data_version:
            return False
        return self.schedule.due(size, self._size_at_last_fit)

    def start_over(self) -> None:
        """The data were replaced, not extended (a trust region's local points): the schedule
        counts growth from zero again."""
        self._size_at_last_fit = 0

    def fit(
        self,
        objective: Callable[[], tf.Tensor],
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
        variance, raised = getattr(kernel, "variance", None), None
        if self._fitted_variance is not None and variance is not None:
            # start from the last fit, not from the raised value: raising compounds otherwise
            # (where the loss is flat in the variance, L-BFGS-B stops near its start)
            raised = variance.numpy()
            variance.assign(self._fitted_variance)
        parameters = [p for p, _ in pairs]
        dtype = parameters[0].dtype
        spacing, extent = input_scales(data.inputs)
        shares = data.variance if data.variance > 2 * NOISE_FLOOR else 0.0  # 0: left as they are

        def loss() -> tf.Tensor:
            priors = [tf.cast(p.log_prior_density(), dtype) for p in parameters]
            return -(objective() + tf.add_n(priors))

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
            if self.variance_optimism > 0 and variance is not None and variance.trainable:
                self._fitted_variance = variance.numpy()
                variance.assign(credible_upper_variance(loss, variance, self.variance_optimism))
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
