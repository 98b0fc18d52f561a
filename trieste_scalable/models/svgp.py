"""AdaptiveSVGP: the sparse variational GP of S-GP-TS as a Trieste model."""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Optional, Union

import gpflow
import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.data import Dataset
from typing_extensions import Unpack

from ..numerics import svgp
from ..numerics.linalg import jittered_cholesky, pad_rows
from ..numerics.svgp import CompiledSVGP
from .base import ModelOptions
from .conditioning import GaussianConditioning
from .data import ReplicatedData
from .fit_objectives import Objective
from .inducing import InducingPointSelector, InducingSchedule, selector_named
from .inducing_view import InducingVariables, InducingView


class _Unprojected(NamedTuple):
    """New inducing points whose q is not computed yet, and the posterior to project it from
    (the arguments of ``CompiledSVGP.project``)."""

    source: svgp.WhitenedPosterior
    inducing: tf.Tensor
    mask: tf.Tensor
    chol_kzz: tf.Tensor
    jitter: tf.Tensor


class AdaptiveSVGP(InducingView, GaussianConditioning[svgp.WhitenedPosterior]):
    r"""SVGP with a whitened, full-covariance q(u) whose inducing points are re-selected at every
    ``update`` and whose number may follow a schedule m(n) (S-GP-TS §3.2 and §6).

    - ``update(dataset)`` re-selects the inducing points from the unique evaluated inputs
      (k-means, greedy conditional variance or a random subsample), then warm-starts q by
      projecting the current posterior onto them (Trieste's ``SparseVariational`` recipe), keeping
      the hyperparameters. Like Trieste's SVGP, ``update`` does not train: predictions are those of
      the previous fit until ``optimize``.
    - ``optimize(dataset)`` fits the kernel parameters and the noise variance by L-BFGS-B on
      Titsias' collapsed bound, which *is* the SVGP ELBO maximised over q (Titsias 2009,
      "fast path"), then sets q to that maximiser in closed form: one natural-gradient step of size
      one, which Adam on q (the paper's recipe, up to 10,000 iterations) only approaches. Every
      function involved is compiled once with dynamic shapes, so neither new data nor a growing m
      retraces anything.

    Repeated inputs are stored once with a count, so costs are O(n m^2) in the number n of unique
    inputs.

    :param kernel: A GPflow kernel; :class:`~trieste_scalable.acquisition.BatchThompsonSampling`
        needs one with random features (SE, Matern, ArcCosine order 0, Tanimoto).
    :param noise_variance: Initial Gaussian noise variance.
    :param dataset: Optional initial data (then ``optimize`` is run once as well).
    :param inducing: A schedule or a fixed number of inducing points.
    :param selector: ``"kmeans"``, ``"greedy"``, ``"random"`` or an
        :class:`~trieste_scalable.models.inducing.InducingPointSelector`.
    :param jitter: First relative jitter tried on :math:`K_{ZZ}` (escalated on failure).
    :param num_rff_features: Features of ``trajectory_sampler`` (Trieste's sampler).
    :param seed: Seed of the selector, when ``selector`` is a name.
    :param options: The fitting and prediction options of
        :class:`~trieste_scalable.models.base.ReplicatedGPBase` (``fit_hyperparameters``,
        ``fit_noise_variance``: keep a known noise fixed, fitted on little data it can collapse
        and the mean then chases the noise; ``exact_fit_limit``, ``chunk_size``, ...).
    """

    _log_name = "svgp"
    _compiled_type = CompiledSVGP
    _posterior_type = svgp.WhitenedPosterior

    def __init__(
        self,
        kernel: gpflow.kernels.Kernel,
        noise_variance: float,
        dataset: Optional[Dataset] = None,
        *,
        inducing: Union[InducingSchedule, int] = 500,
        selector: Union[str, InducingPointSelector] = "kmeans",
        jitter: float = 1e-6,
        num_rff_features: int = 1000,
        seed: int = 0,
        **options: Unpack[ModelOptions],
    ):
        super().__init__(kernel, noise_variance, **options)
        self._schedule = (
            inducing if isinstance(inducing, InducingSchedule) else InducingSchedule.fixed(inducing)
        )
        self._selector = selector_named(selector, seed) if isinstance(selector, str) else selector
        self._jitter = jitter
        self.num_rff_features = num_rff_features
        # projected only if used before optimize sets the optimal q (Trieste's loop never uses
        # it: update is always followed by optimize)
        self._unprojected: Optional[_Unprojected] = None
        self._absolute_jitter = 0.0
        self._q_is_optimal = False
        self._selection_seconds = 0.0
        if dataset is not None:
            self.update(dataset)
            self.optimize(dataset)

    # ----------------------------------------------------------------- properties
    @property
    def schedule(self) -> InducingSchedule:
        return self._schedule

    @property
    def num_inducing(self) -> int:
        """The number m of (real) inducing points in use."""
        current = self._unprojected or self._posterior
        return 0 if current is None else int(tf.reduce_sum(current.mask))

    @property
    def posterior(self) -> svgp.WhitenedPosterior:
        """The current whitened posterior (padded to its capacity).

        After an ``update`` without ``optimize`` the warm start (the last q projected onto the
        new inducing points) is computed by the first eager use; until then, and in code
        compiled before it, predictions are those of the previous fit, as in Trieste's SVGP."""
        self._require_data()
        if self._unprojected is not None and tf.executing_eagerly():
            new = self._unprojected
            q_mu, q_sqrt = self.compiled.project(*new)
            self._posterior = svgp.WhitenedPosterior(
                new.inducing, new.mask, new.chol_kzz, q_mu, q_sqrt, self._prior_mean()
            )
            self._unprojected = None
        assert self._posterior is not None
        return self._posterior

    def elbo(self) -> float:
        """The SVGP ELBO of all evaluations under the current q (uncollapsed)."""
        post, noise = self.posterior, self.get_observation_noise()
        return float(self.compiled.elbo(post, *self._data_tensors(), noise))

    # ----------------------------------------------------------------- Trieste protocols
    def _inducing_variables(self) -> InducingVariables:
        """Real inducing points [m, D], whitened q_mu [m, 1] (net of the mean function) and
        q_sqrt [1, m, m]. Padding (the trailing rows) is block-diagonal with identity covariance,
        so slicing it off is exact."""
        post = self.posterior
        m = tf.cast(tf.reduce_sum(post.mask), tf.int32)
        return InducingVariables(post.inducing[:m], post.q_mu[:m, None], post.q_sqrt[None, :m, :m])

    def optimize(self, dataset: Dataset) -> Optional[Any]:
        """Fit hyperparameters on the collapsed bound (if enabled), then set q to its optimum."""
        result = super().optimize(dataset)
        if self._data is not None and not self._q_is_optimal:
            self._refactorise()
        return result

    # ----------------------------------------------------------------- template methods
    def _absorb(self, data: ReplicatedData, extends: bool) -> None:
        start = time.perf_counter()
        size = self._schedule.size(data.counts.size)
        inducing = self._selector.select(data.inputs, size, self.compiled.greedy_selection)
        padded, mask, chol, jitter = self._factor(inducing)
        if self._posterior is None:  # the prior: q = N(0, I)
            capacity = int(mask.shape[0])
            q_mu = tf.zeros([capacity], dtype=self._dtype)
            q_sqrt = tf.eye(capacity, dtype=self._dtype)
            mean = self._prior_mean()
            self._posterior = svgp.WhitenedPosterior(padded, mask, chol, q_mu, q_sqrt, mean)
        else:  # project the last computed q when (if) it is used
            source = self._posterior if self._unprojected is None else self._unprojected.source
            self._unprojected = _Unprojected(source, padded, mask, chol, jitter)
        self._data, self._absolute_jitter, self._q_is_optimal = data, float(jitter), False
        self._selection_seconds = time.perf_counter() - start

    def _refactorise(self) -> None:
        padded, mask, chol, jitter = self._factor(self._inducing_points().numpy())
        q_mu, q_sqrt = self.compiled.optimal_q(
            padded,
            mask,
            chol,
            *self._data_tensors()[:3],
            self.get_observation_noise(),
            self._prior_mean(),
        )
        self._posterior = svgp.WhitenedPosterior(
            padded, mask, chol, q_mu, q_sqrt, self._prior_mean()
        )
        self._unprojected = None
        self._absolute_jitter, self._q_is_optimal = float(jitter), True

    def _sparse_objective(self) -> Objective:
        return self._sgpr_objective(*self._padded_inducing(), self._absolute_jitter)

    def _latent_marginals(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self.compiled.marginals(self.posterior, x)

    def _latent_set_covariance(self, sets: tf.Tensor) -> tf.Tensor:
        return self.compiled.set_covariance(self.posterior, sets)

    def _latent_cross_covariance(self, x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
        return self.compiled.cross_covariance(self.posterior, x, x2)

    def _log_extra(self) -> None:
        logging.scalar("svgp/inducing_points", self.num_inducing)
        logging.scalar("svgp/elbo", self.elbo())
        logging.scalar("svgp/selection_seconds", self._selection_seconds)

    # ----------------------------------------------------------------- helpers
    def _padded_inducing(self) -> tuple[tf.Tensor, tf.Tensor]:
        """The current padded inducing points [M, D] and mask [M] (projected or not)."""
        current = self._unprojected or self._posterior
        assert current is not None
        return current.inducing, current.mask

    def _inducing_points(self) -> tf.Tensor:
        """The real inducing points in use [m, D]."""
        return self._padded_inducing()[0][: self.num_inducing]

    def _factor(self, inducing: np.ndarray) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """Padded points, mask, Cholesky factor of the masked K_ZZ and the absolute jitter used."""
        size = inducing.shape[0]
        capacity = max(size, 1)
        padded = pad_rows(tf.constant(inducing, dtype=self._dtype), capacity)
        mask = pad_rows(tf.ones([size], dtype=self._dtype), capacity)
        gram = self.compiled.masked_gram(padded, mask)
        chol, relative = jittered_cholesky(gram, self._jitter)
        scale = float(tf.reduce_mean(tf.linalg.diag_part(gram)))
        return padded, mask, chol, tf.constant(relative * scale, dtype=self._dtype)

    def _repr_extra(self) -> str:
        return f"inducing={self._schedule!r}, selector={self._selector!r}, "
