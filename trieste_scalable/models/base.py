"""What the package's GP models share: the data, kept as unique inputs with counts and centred,
and the Trieste model protocol over them (``update``, ``optimize``, ``log``), as a template whose
subclasses condition on the data (``_absorb``, ``_refactorise``). The prediction surface is
:class:`~.prediction.LatentPredictions`; fitting is a composed
:class:`~.fitter.HyperparameterFitter`."""

from __future__ import annotations

import logging
from abc import abstractmethod
from typing import Any, Callable, Generic, Optional, TypedDict, TypeVar

import gpflow
import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.models.interfaces import SupportsGetKernel, TrainableProbabilisticModel

from ..numerics.outcome_transforms import TRANSFORMS, OutcomeTransform, data_units
from ..numerics.sizes import CHUNK_SIZE
from .data import ReplicatedData, aggregate, validate_dataset
from .fit_objectives import FitObjectives
from .fitter import HyperparameterFitter
from .fitting import FitSchedule, noise_parameter
from .live import LiveConstantMean, LiveTuple, dynamic_variable
from .prediction import LatentPredictions
from .summaries import write_model_summaries
from .transform_refits import FittedTransform, fitted_transform

_log = logging.getLogger(__name__)

PosteriorT = TypeVar("PosteriorT")
"""The posterior a model keeps (a NamedTuple of tensors its compiled functions take)."""


class ModelOptions(TypedDict, total=False):
    """The fitting and prediction options of :class:`ReplicatedGPBase`, which every model here
    takes as keywords (typed ``**options`` of the subclasses; see the base's parameters)."""

    prior_mean: Optional[float]
    fit_hyperparameters: bool
    max_optimizer_iterations: int
    chunk_size: int
    fit_schedule: Optional[FitSchedule]
    num_prior_samples: int
    fit_noise_variance: bool
    fit_prior_mean: bool
    exact_fit_limit: int
    variance_optimism: float
    outcome_transform: str


class ReplicatedGPBase(
    LatentPredictions,
    FitObjectives,
    TrainableProbabilisticModel,
    SupportsGetKernel,
    Generic[PosteriorT],
):
    """Base of the package's GP models (see the subclasses for the posterior they use).

    Observations are centred before anything is summed: the model keeps a *centre* (one of the
    observations, or the given prior mean) and stores the sufficient statistics of
    ``y - centre``, each difference formed per observation (exact by Sterbenz's lemma when the
    observations share a large offset). The numerics then see small numbers only, so the
    evidence, the weights and the fitted hyperparameters are the same for outputs offset by
    10^12 as without the offset; the centre is added back to predicted means.

    Every model takes these keyword options after its own arguments.

    :param kernel: Any GPflow kernel (its parameters fix the model's dtype).
    :param noise_variance: :math:`\\lambda > 0`, the noise variance (the papers' regulariser).
    :param prior_mean: Constant prior mean; ``None`` starts it at the mean of the first
        dataset's observations (the initial design). It is not re-centred on later data (they
        concentrate near the optimum, which would make unexplored regions look falsely
        promising); it is fitted with the other hyperparameters if ``fit_prior_mean``.

    :param fit_hyperparameters: Whether :meth:`optimize` fits the trainable hyperparameters.
    :param max_optimizer_iterations: L-BFGS-B iterations per :meth:`optimize`.
    :param chunk_size: Query points per compiled call; bounds memory in predictions.
    :param fit_schedule: When :meth:`optimize` refits (default
        :class:`~.fitting.FitSchedule`: every call during the first 100 evaluations, then at
        25 % growth of the unique inputs).
    :param num_prior_samples: Draws from the priors scored as starts of each fit (parameters
        with priors only; the current values and those the model was built with are always
        scored).
    :param fit_noise_variance: Whether fits include the noise variance (keep it fixed when it
        is known: fitted on little noisy data it can absorb the signal).
    :param fit_prior_mean: Whether fits include the constant prior mean, as GPflow's ``GPR``
        built by Trieste's ``build_gpr`` does (a mean fixed at the initial design's level
        biases every later fit when that level is off).
    :param exact_fit_limit: Sparse models: up to this many unique inputs, fits maximise the exact
        log likelihood (O(n^3), a second at n = 1,000 on two cores); beyond, the SGPR bound, which
        is biased towards noise when the inducing points do not cover the data.
    :param variance_optimism: After each fit, the signal variance is set this many times the
        fit's noise share standard deviations of its (Laplace) posterior above the fit: for UCB
        rules on noisy problems (``docs/fitting.md``); 0 (the default) keeps the MAP fit.
    :param outcome_transform: ``"none"`` (the default), or a transform of
        :data:`~trieste_scalable.numerics.outcome_transforms.TRANSFORMS` fitted to all the
        observations and refitted as they grow by 5 % or one is worse than those it was fitted to
        (:mod:`~.transform_refits`), applied before the model conditions on them (and so
        before any fit): predictions are then in the transform's units (standardised,
        increasing in the observations, so a rule's picks compare as in the data's);
        :meth:`predict_in_data_units` undoes it.
    """

    _log_name = "model"
    _compiled_type: Callable[[gpflow.kernels.Kernel, tf.DType], Any]
    """Builds the compiled numerics (deep copies and pickles drop and rebuild them)."""
    _posterior_type: type[PosteriorT]  # type: ignore[misc]
    """The posterior's ``NamedTuple`` type (held in a :class:`~.live.LiveTuple`)."""

    def __init__(
        self,
        kernel: gpflow.kernels.Kernel,
        noise_variance: float,
        *,
        prior_mean: Optional[float] = None,
        fit_hyperparameters: bool = True,
        max_optimizer_iterations: int = 100,
        chunk_size: int = CHUNK_SIZE,
        fit_schedule: Optional[FitSchedule] = None,
        num_prior_samples: int = 10,
        fit_noise_variance: bool = True,
        fit_prior_mean: bool = True,
        exact_fit_limit: int = 1000,
        variance_optimism: float = 0.0,
        outcome_transform: str = "none",
    ):
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        if outcome_transform != "none" and outcome_transform not in TRANSFORMS:
            choices = ", ".join(("none", *TRANSFORMS))
            raise ValueError(f"unknown outcome_transform {outcome_transform!r}: one of {choices}")
        self._outcome_kind = outcome_transform
        self._fitted_transform: Optional[FittedTransform] = None
        self._kernel = kernel
        parameters = list(kernel.parameters)
        self._dtype: tf.DType = tf.as_dtype(
            parameters[0].dtype if parameters else gpflow.default_float()
        )
        self._noise = noise_parameter(noise_variance, self._dtype)
        if prior_mean is not None and not np.isfinite(prior_mean):
            raise ValueError(f"prior_mean must be finite, got {prior_mean}")
        self._centre: Optional[float] = prior_mean  # fixed by the first update if None
        # the centre as compiled predictions read it (live: see .live)
        self._centre_variable = dynamic_variable(tf.constant(prior_mean or 0.0, self._dtype))
        # the prior mean relative to the centre, read live by the fits' objectives
        self._mean = gpflow.Parameter(0.0, dtype=self._dtype, trainable=fit_prior_mean)
        gpflow.set_trainable(self._noise, fit_noise_variance)
        self.fitter = HyperparameterFitter(
            fit_hyperparameters,
            max_optimizer_iterations,
            fit_schedule or FitSchedule(),
            num_prior_samples,
            variance_optimism,
        )
        """When and how :meth:`optimize` fits (its options, and what every fit did)."""
        self._chunk_size = chunk_size
        self._exact_fit_limit = exact_fit_limit
        self._data: Optional[ReplicatedData] = None
        self._live_posterior: LiveTuple[PosteriorT] = LiveTuple(self._posterior_type)
        self._ops: Any = None
        # the values the model was built with: always one of the fits' starts
        self._initial_values = [p.numpy() for p in self._hyperparameters()]
        self._data_version = 0  # successful updates that changed the data
        self._packed_width: Optional[int] = None
        """D where datasets' query points are packed bits (uint8 [N, ceil(D / 8)]), which the
        subclasses that read them unpack a chunk at a time; ``None`` for dense query points."""

    # ----------------------------------------------------------------- template methods
    @abstractmethod
    def _absorb(self, data: ReplicatedData, extends: bool) -> None:
        """Condition on ``data`` (all evaluations so far), which ``extends`` the last update's
        (:meth:`~.ReplicatedData.extends`) or not; must only assign once it succeeded."""

    @abstractmethod
    def _refactorise(self) -> None:
        """Recompute the posterior for the current data after a hyperparameter change."""

    def _log_extra(self) -> None:
        """Subclass-specific TensorBoard scalars (inside an active writer context)."""

    # ----------------------------------------------------------------- properties
    @property
    def _posterior(self) -> Optional[PosteriorT]:
        """The posterior, read live from variables (``None`` before the first update): a
        function compiled before an update reads the updated posterior (see :mod:`.live`)."""
        live = self._live_posterior
        return live.read() if live.is_set else None

    @_posterior.setter
    def _posterior(self, posterior: PosteriorT) -> None:
        self._live_posterior.assign(posterior)

    @property
    def dtype(self) -> tf.DType:
        return self._dtype

    @property
    def num_unique_points(self) -> int:
        return 0 if self._data is None else int(self._data.counts.size)

    @property
    def data(self) -> Optional[ReplicatedData]:
        """The sufficient statistics the model conditions on."""
        return self._data

    @property
    def compiled(self) -> Any:
        """This model's compiled numerics (built on first use, rebuilt after a copy)."""
        if self._ops is None:
            self._ops = self._compiled_type(self._kernel, self._dtype)
        return self._ops

    def get_kernel(self) -> gpflow.kernels.Kernel:
        return self._kernel

    def get_observation_noise(self) -> tf.Tensor:
        return tf.convert_to_tensor(self._noise)

    def get_mean_function(self) -> gpflow.mean_functions.MeanFunction:
        """The constant prior mean as a GPflow mean function that reads it live (the same object
        every call, so compiled consumers do not retrace)."""
        if "_mean_function" not in self.__dict__:
            self._mean_function = LiveConstantMean(self._centre_variable, self._mean)
        return self._mean_function

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_ops"] = None  # compiled functions cannot be copied; rebuilt on demand
        return state

    # ----------------------------------------------------------------- Trieste protocol
    def update(self, dataset: Dataset) -> None:
        """Condition on ``dataset`` (all evaluations so far).

        Validation happens before anything changes: on NaN/inf observations, wrong shapes or
        dtypes, or an empty dataset this raises and the model is left as it was.
        """
        width = self._packed_width  # packed query points: their bytes a row checked below
        input_dim = None if self._data is None or width is not None else self._data.inputs.shape[1]
        x, y = validate_dataset(dataset, self._dtype, input_dim, width is not None)
        if width is not None and x.shape[1] != -(-width // 8):
            raise ValueError(
                f"packed query points of {width} bits take {-(-width // 8)} bytes a row, "
                f"got {x.shape[1]}"
            )
        fitted = fitted_transform(self._outcome_kind, self._fitted_transform, y)
        transform = None if fitted is None else fitted.transform
        if transform is not None:
            y = transform.forward(y).numpy().astype(y.dtype)
        centre, mean = self._centre, float(self._mean.numpy())
        if centre is None:  # the first dataset's mean, as centre + a small remainder
            centre = float(y[0, 0])
            mean = float(np.mean(y - y[0, 0]))
            # the mean is the last of _hyperparameters(): its built-with value is this one
            self._initial_values[-1] = np.asarray(mean, dtype=self._mean.dtype.as_numpy_dtype)
        # x views the dataset's tensor (not a variable's, which may change): the model shares it
        query_points = dataset.query_points
        source = None if isinstance(query_points, tf.Variable) else query_points
        data = aggregate(x, y - np.asarray(centre, dtype=y.dtype), source)
        if self._data is not None and data.same_as(self._data):
            return  # e.g. Trieste's loop updating a model built with the same data: no-op
        previous = (self._centre, self._mean.numpy())
        extends = self._data is not None and data.extends(self._data)
        other = self._data is not None and not extends
        self._centre = centre
        self._mean.assign(mean)
        try:
            self._absorb(data, extends)
        except Exception:
            self._centre = previous[0]
            self._mean.assign(previous[1])
            raise
        if transform is not None and self._outcome_kind == "auto":
            if self.outcome_transform is None or self.outcome_transform.name != transform.name:
                _log.info(f"outcome transform: auto picks {transform.name}")
        self._fitted_transform = fitted
        self._centre_variable.assign(tf.constant(centre, self._dtype))
        if other:
            self.fitter.start_over()  # other data, not more: a trust region's local points
        self._data_version += 1

    def predict_in_data_units(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The observations' predictive median [N, 1] and half the width of its central 68 %
        interval [N, 1] (the mean and standard deviation where there is no transform), in the
        units of the observations the model was given
        (:func:`~trieste_scalable.numerics.outcome_transforms.data_units` of ``predict_y``)."""
        return data_units(self.outcome_transform, *self.predict_y(query_points))

    @property
    def outcome_transform(self) -> Optional[OutcomeTransform]:
        """The transform of the last :meth:`update`'s observations (``None``: none), refitted
        on the schedule of :mod:`~trieste_scalable.models.transform_refits`."""
        fitted = self._fitted_transform
        return None if fitted is None else fitted.transform

    @property
    def prior_mean(self) -> Optional[float]:
        """The constant prior mean (``None`` until the first dataset fixes it)."""
        return None if self._centre is None else self._centre + float(self._mean.numpy())

    def optimize(self, dataset: Dataset) -> Optional[Any]:
        """Fit the trainable hyperparameters: MAP (the objective of ``_objective`` plus the
        log priors of parameters that have one), multi-start, checked for progress and
        degeneracy (:func:`~trieste_scalable.models.fitting.fit_hyperparameters`), when the
        model's :class:`~trieste_scalable.models.fitting.FitSchedule` says a refit is due.

        ``dataset`` must be the one last passed to :meth:`update` (Trieste always does this).
        Nothing is refitted on data already fitted: a model built with its initial data and
        handed to a Trieste loop (which updates and optimizes it again) conditions and fits
        once; :meth:`update` with the data the model holds is a no-op too.
        A fit that fails, ends worse than it started or is degenerate is undone (the last good
        hyperparameters stay) with a warning, and counted in :attr:`fit_rejections`.
        """
        data = self._data
        if data is None or not self.fitter.due(data, self._data_version):
            return None  # nothing to fit, or no new data since the last fit
        outcome = self.fitter.fit(
            self._objective(),
            self._hyperparameters(),
            built_with=self._initial_values,
            kernel=self._kernel,
            noise=self._noise,
            data=self._dense_data(data),
            data_version=self._data_version,
        )
        if outcome is None:
            return None  # nothing trainable
        self._refactorise()
        return outcome.result if outcome.accepted else None

    @property
    def fit_rejections(self) -> int:
        """Fits that failed, ended worse than they started or were degenerate, and were undone."""
        return self.fitter.rejections

    def _hyperparameters(self) -> list[gpflow.Parameter]:
        """The kernel's parameters, the noise variance and the prior mean, in a fixed order."""
        return list(self._kernel.parameters) + [self._noise, self._mean]

    def log(self, dataset: Optional[Dataset] = None) -> None:
        """Log unique points, noise, kernel parameters and the subclass's own summaries."""
        write_model_summaries(self, self._log_name, self._log_extra)

    # ----------------------------------------------------------------- helpers
    def _require_data(self) -> ReplicatedData:
        if self._data is None:
            raise ValueError(f"{type(self).__name__} has no data yet: call update(dataset) first")
        return self._data

    def _require_posterior(self) -> PosteriorT:
        self._require_data()
        assert self._posterior is not None
        return self._posterior

    def _prior_mean(self) -> tf.Tensor:
        """The constant prior mean relative to the centre (the data are stored centred)."""
        return tf.convert_to_tensor(self._mean)

    def _centre_tensor(self) -> tf.Tensor:
        return tf.convert_to_tensor(self._centre_variable)

    def _input_dim(self) -> int:
        if self._packed_width is not None:
            return self._packed_width
        return int(self._require_data().inputs.shape[1])

    def _dense_data(self, data: ReplicatedData) -> ReplicatedData:
        """``data`` with dense inputs (the fits read them whole)."""
        return data

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(kernel={self._kernel.name}, "
            f"noise_variance={float(self._noise.numpy()):g}, {self._repr_extra()}"
            f"fit_hyperparameters={self.fitter.enabled})"
        )

    def _repr_extra(self) -> str:
        """Settings of the subclass shown by ``repr``, each followed by ``", "``."""
        return ""
