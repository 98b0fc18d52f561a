"""NystromGPR: the DTC (Nystrom) GP of BKB and BBKB as a Trieste model."""

from __future__ import annotations

import time
import warnings
from typing import Any, Optional

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.utilities import positive
from trieste import logging
from trieste.data import Dataset
from trieste.models.interfaces import (
    SupportsGetKernel,
    SupportsGetObservationNoise,
    SupportsPredictJoint,
    SupportsPredictY,
    TrainableProbabilisticModel,
)
from trieste.models.utils import write_summary_kernel_parameters

from ..numerics import dtc
from ..numerics.compiled import CompiledDTC
from ..numerics.linalg import CholeskyError, capacity_for, chunked_map, jittered_cholesky
from .data import ReplicatedData, aggregate, validate_dataset
from .dictionary import DictionaryPolicy, RidgeLeverageSampler
from .in_batch import InBatchPosterior


class NystromGPR(
    TrainableProbabilisticModel,
    SupportsPredictJoint,
    SupportsPredictY,
    SupportsGetKernel,
    SupportsGetObservationNoise,
):
    r"""GP regression with the DTC (Nystrom) posterior over a resampled dictionary (BKB/BBKB).

    The posterior (spec bbkb.md eqs. 1-3) conditions on every evaluation, with repeated inputs
    stored once with a count, so memory grows with the number of unique inputs. ``predict``
    reports Trieste's Bayesian units: the latent variance is :math:`\lambda\tilde\sigma^2`, where
    :math:`\lambda` is ``noise_variance`` (the papers' regulariser) and :math:`\tilde\sigma^2` the
    ridge-leverage variance the papers use.

    Every ``update`` is a batch boundary: the dictionary is resampled by ``dictionary`` (by
    default ridge-leverage sampling with :math:`\bar q = 2`) from the variances of the batch that
    just ended (BBKB Algorithm 1, lines 11-15), then the posterior is refactorised.
    ``ExactDictionary()`` keeps every point and makes the model an exact GP (as GP-BUCB needs).

    ``optimize`` maximises Titsias' SGPR bound with the dictionary as inducing points over the
    trainable kernel parameters and the noise variance, unless ``fit_hyperparameters=False`` (the
    papers' setting).

    The prior mean is a constant: by default the mean of the observations of the first dataset
    the model sees (the initial design), then held fixed. Later data concentrate near the
    optimum, so re-centring on them would make unexplored regions look falsely promising. The
    papers assume zero mean; pass ``prior_mean=0.0`` for that.
    """

    def __init__(
        self,
        kernel: gpflow.kernels.Kernel,
        noise_variance: float,
        dataset: Optional[Dataset] = None,
        *,
        dictionary: Optional[DictionaryPolicy] = None,
        fit_hyperparameters: bool = True,
        max_optimizer_iterations: int = 100,
        prior_mean: Optional[float] = None,
        chunk_size: int = 2048,
        jitter: float = 1e-10,
        jit_compile: bool = False,
    ):
        """
        :param kernel: Any GPflow kernel (its parameters fix the model's dtype).
        :param noise_variance: :math:`\\lambda > 0`, the regulariser/noise variance.
        :param dataset: Optional initial data (equivalent to calling :meth:`update`).
        :param dictionary: Dictionary policy; default ``RidgeLeverageSampler(2.0)``.
        :param fit_hyperparameters: Whether :meth:`optimize` fits the hyperparameters.
        :param max_optimizer_iterations: L-BFGS-B iterations per :meth:`optimize`.
        :param prior_mean: Constant prior mean; ``None`` takes the mean of the first dataset.
        :param chunk_size: Candidates per compiled call; bounds memory in predictions.
        :param jitter: First relative jitter tried on the dictionary's kernel matrix.
        :param jit_compile: Compile candidate scoring with XLA.
        """
        if not noise_variance > 0:
            raise ValueError(f"noise_variance must be positive, got {noise_variance}")
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self._kernel = kernel
        self._dtype = _kernel_dtype(kernel)
        self._noise = gpflow.Parameter(noise_variance, transform=positive(1e-12), dtype=self._dtype)
        self._policy = dictionary if dictionary is not None else RidgeLeverageSampler(2.0)
        self._fit = fit_hyperparameters
        self._max_iter = max_optimizer_iterations
        self._mean = prior_mean
        self._chunk_size = chunk_size
        self._jitter = jitter
        self._jit_compile = jit_compile
        self._ops: Optional[CompiledDTC] = None
        self._data: Optional[ReplicatedData] = None
        self._dictionary_index = np.zeros([0], dtype=np.int64)
        self._posterior: Optional[dtc.DTCPosterior] = None
        self._used_jitter = jitter
        self._resparsification_seconds = 0.0
        if dataset is not None:
            self.update(dataset)

    # ----------------------------------------------------------------- properties
    @property
    def dtype(self) -> tf.DType:
        return self._dtype

    @property
    def dictionary_policy(self) -> DictionaryPolicy:
        return self._policy

    @property
    def dictionary(self) -> tf.Tensor:
        """The current dictionary (inducing inputs) [m, D]."""
        if self._data is None:
            return tf.zeros([0, 0], dtype=self._dtype)
        return tf.constant(self._data.inputs[self._dictionary_index])

    @property
    def num_unique_points(self) -> int:
        return 0 if self._data is None else int(self._data.counts.size)

    @property
    def effective_dimension(self) -> float:
        r"""DTC estimate of :math:`d_{eff} = \mathrm{tr}(K (K + \lambda I)^{-1})`:
        :math:`\mathrm{tr}(Z^T N Z V^{-1}) = M - \lambda\,\mathrm{tr}(V^{-1})` (padding cancels)."""
        post = self._require_posterior()
        inv_chol = tf.linalg.triangular_solve(
            post.chol_v, tf.eye(post.capacity, dtype=self._dtype), lower=True
        )
        return float(post.capacity - post.noise * tf.reduce_sum(inv_chol**2))

    @property
    def last_resparsification_seconds(self) -> float:
        return self._resparsification_seconds

    def get_kernel(self) -> gpflow.kernels.Kernel:
        return self._kernel

    def get_observation_noise(self) -> tf.Tensor:
        return tf.convert_to_tensor(self._noise)

    # ----------------------------------------------------------------- Trieste protocol
    def update(self, dataset: Dataset) -> None:
        """Absorb ``dataset`` (all evaluations so far) and resample the dictionary.

        Validation happens before anything changes: on NaN/inf observations, wrong shapes or
        dtypes, or an empty dataset this raises and the model is left as it was.
        """
        input_dim = None if self._data is None else self._data.inputs.shape[1]
        x, y = validate_dataset(dataset, self._dtype, input_dim)
        start = time.perf_counter()
        data = aggregate(x, y)
        previous = self._posterior or self._prior(x.shape[1], data)
        batch_start = self._marginals(previous, tf.constant(data.inputs))[1].numpy()
        index = np.sort(self._policy.select(data.counts, batch_start))
        posterior, used = self._factorise(data, index)
        if self._mean is None:
            self._mean = float(self._prior_mean(data))
        self._data, self._dictionary_index = data, index
        self._posterior, self._used_jitter = posterior, used
        self._resparsification_seconds = time.perf_counter() - start

    def optimize(self, dataset: Dataset) -> Optional[Any]:
        """Fit the trainable hyperparameters by the SGPR evidence (dictionary = inducing points).

        ``dataset`` must be the one last passed to :meth:`update` (Trieste always does this).
        If the fit fails numerically, the previous hyperparameters are restored with a warning.
        """
        if not self._fit or self._data is None:
            return None
        variables = list(self._kernel.trainable_variables) + list(self._noise.trainable_variables)
        if not variables:
            return None
        saved = [v.numpy() for v in variables]
        args = self._evidence_arguments()
        try:
            result = gpflow.optimizers.Scipy().minimize(
                lambda: -self._evidence(*args),
                variables,
                compile=False,
                options={"maxiter": self._max_iter},
            )
            self._posterior, self._used_jitter = self._factorise(self._data, self._dictionary_index)
        except (CholeskyError, tf.errors.InvalidArgumentError) as error:
            for variable, value in zip(variables, saved):
                variable.assign(value)
            self._posterior, self._used_jitter = self._factorise(self._data, self._dictionary_index)
            warnings.warn(
                f"hyperparameter fit failed ({error}); previous values restored", stacklevel=2
            )
            return None
        return result

    @inherit_check_shapes
    def predict(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        flat = self._flatten(query_points)
        post = self._require_posterior()
        mean, s2 = self._marginals(post, flat)
        shape = tf.concat([tf.shape(query_points)[:-1], [1]], axis=0)
        return tf.reshape(mean, shape), tf.reshape(post.noise * s2, shape)

    @inherit_check_shapes
    def predict_y(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, var = self.predict(query_points)
        return mean, var + self.get_observation_noise()

    @inherit_check_shapes
    def predict_joint(self, query_points: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        post = self._require_posterior()
        x = self._check_points(query_points)
        batch_shape = tf.shape(x)[:-2]
        flat = tf.reshape(x, [-1, x.shape[-2], x.shape[-1]])
        cov = tf.map_fn(lambda pts: post.noise * self.compiled.covariance(post, pts), flat)
        mean = tf.map_fn(lambda pts: self._marginals(post, pts)[0], flat)
        num = tf.shape(x)[-2]
        mean = tf.reshape(mean, tf.concat([batch_shape, [num, 1]], axis=0))
        cov = tf.reshape(cov, tf.concat([batch_shape, [1, num, num]], axis=0))
        return mean, cov

    @inherit_check_shapes
    def sample(self, query_points: tf.Tensor, num_samples: int) -> tf.Tensor:
        mean, cov = self.predict_joint(query_points)  # [..., N, 1], [..., 1, N, N]
        chol, _ = jittered_cholesky(cov[..., 0, :, :], 1e-12)
        draws = tf.random.normal(
            tf.concat([tf.shape(mean)[:-2], [num_samples, tf.shape(mean)[-2]]], axis=0),
            dtype=self._dtype,
        )  # [..., S, N]
        samples = mean[..., None, :, 0] + tf.linalg.matvec(chol[..., None, :, :], draws)
        return samples[..., None]

    def log(self, dataset: Optional[Dataset] = None) -> None:
        """Log dictionary size, d_eff estimate, resparsification time and hyperparameters."""
        writer = logging.get_tensorboard_writer()
        if writer is None or self._posterior is None:
            return
        with writer.as_default(step=logging.get_step_number()):
            logging.scalar("nystrom/dictionary_size", self._posterior.size)
            logging.scalar("nystrom/unique_points", self.num_unique_points)
            logging.scalar("nystrom/effective_dimension", self.effective_dimension)
            logging.scalar("nystrom/resparsification_seconds", self._resparsification_seconds)
            logging.scalar("nystrom/noise_variance", self._noise.numpy())
            write_summary_kernel_parameters(self._kernel)

    # ----------------------------------------------------------------- rules' API
    def batch_posterior(self) -> InBatchPosterior:
        """A fresh in-batch posterior at the current batch start, for hallucinating a batch."""
        return InBatchPosterior(
            self.compiled, self._require_posterior(), self._policy.exact, self._chunk_size
        )

    def information_gain(self) -> float:
        r"""DTC :math:`\log\det(I + K_X/\lambda)` over all evaluations, i.e.
        :math:`\log\det V - M \log\lambda` (exact when the dictionary is exact)."""
        post = self._require_posterior()
        log_det_v = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(post.chol_v)))
        return float(log_det_v - post.capacity * tf.math.log(post.noise))

    @property
    def compiled(self) -> CompiledDTC:
        """This model's compiled numerics (built on first use, rebuilt after a copy)."""
        if self._ops is None:
            self._ops = CompiledDTC(self._kernel, self._dtype, self._jit_compile)
        return self._ops

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_ops"] = None  # compiled functions cannot be copied; rebuilt on demand
        return state

    # ----------------------------------------------------------------- internals
    def _prior(self, input_dim: int, data: ReplicatedData) -> dtc.DTCPosterior:
        return dtc.prior_posterior(
            input_dim, 1, tf.convert_to_tensor(self._noise), self._prior_mean(data)
        )

    def _prior_mean(self, data: ReplicatedData) -> tf.Tensor:
        """The constant prior mean, fixed by the first dataset unless given."""
        if self._mean is None:
            return tf.constant(data.sums.sum() / data.counts.sum(), dtype=self._dtype)
        return tf.constant(self._mean, dtype=self._dtype)

    def _factorise(self, data: ReplicatedData, index: np.ndarray) -> tuple[dtc.DTCPosterior, float]:
        return dtc.build_posterior(
            self.compiled,
            tf.constant(data.inputs[index]),
            capacity_for(index.size, bucket=self._jit_compile),
            tf.constant(data.inputs),
            tf.constant(data.counts),
            tf.constant(data.sums),
            tf.convert_to_tensor(self._noise),
            self._prior_mean(data),
            self._jitter,
        )

    def _require_posterior(self) -> dtc.DTCPosterior:
        if self._posterior is None:
            raise ValueError("NystromGPR has no data yet: call update(dataset) first")
        return self._posterior

    def _marginals(self, post: dtc.DTCPosterior, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, var = chunked_map(
            lambda chunk: self.compiled.marginals(post, chunk), x, self._chunk_size
        )
        return mean, var

    def _evidence_arguments(self) -> tuple[tf.Tensor, ...]:
        data, post = self._data, self._require_posterior()
        assert data is not None
        scale = float(
            np.mean(self._kernel(tf.constant(data.inputs[self._dictionary_index]), full_cov=False))
        )
        return (
            post.inducing,
            post.mask,
            tf.constant(data.inputs),
            tf.constant(data.counts),
            tf.constant(data.sums),
            tf.constant(data.sum_squares, dtype=self._dtype),
            post.mean,
            tf.constant(max(self._used_jitter, 1e-8) * scale, dtype=self._dtype),
        )

    def _evidence(self, *args: tf.Tensor) -> tf.Tensor:
        """SGPR bound; ``args`` from :meth:`_evidence_arguments` (the noise is read live)."""
        *head, mean, jitter = args
        noise = tf.convert_to_tensor(self._noise)
        return self.compiled.evidence(*head, noise, mean, jitter)

    def _check_points(self, query_points: tf.Tensor) -> tf.Tensor:
        x = tf.convert_to_tensor(query_points)
        if x.dtype != self._dtype:
            raise TypeError(f"query_points must have dtype {self._dtype.name}, got {x.dtype}")
        if self._data is not None and x.shape[-1] != self._data.inputs.shape[1]:
            raise ValueError(
                f"query_points must have {self._data.inputs.shape[1]} columns, got {x.shape[-1]}"
            )
        return x

    def _flatten(self, query_points: tf.Tensor) -> tf.Tensor:
        x = self._check_points(query_points)
        return tf.reshape(x, [-1, x.shape[-1]])

    def __repr__(self) -> str:
        return (
            f"NystromGPR(kernel={self._kernel.name}, "
            f"noise_variance={float(self._noise.numpy()):g}, "
            f"dictionary={self._policy!r}, fit_hyperparameters={self._fit})"
        )


def _kernel_dtype(kernel: gpflow.kernels.Kernel) -> tf.DType:
    parameters = list(kernel.parameters)
    return parameters[0].dtype if parameters else gpflow.default_float()
