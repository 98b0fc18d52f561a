"""NystromGPR: the DTC (Nystrom) GP of BKB and BBKB as a Trieste model."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Optional

import gpflow
import numpy as np
import tensorflow as tf
from trieste import logging
from trieste.data import Dataset
from typing_extensions import Unpack

from ..numerics import dtc, dtc_terms
from ..numerics.bits import PackedRows, Rows, take_rows
from ..numerics.dtc import CompiledDTC
from ..numerics.dtc_terms import DataTerms
from ..numerics.host_tensors import host_tensor
from ..numerics.linalg import chunked_map, lower_root_of_inverse
from .base import ModelOptions
from .conditioning import FantasyPredictions
from .data import ReplicatedData
from .dictionary import DictionaryPolicy, RidgeLeverageSampler
from .fit_objectives import Objective
from .in_batch import InBatchPosterior
from .inducing_view import InducingVariables, InducingView
from .live import dynamic_variable
from .summed_terms import SummedTerms, summed_terms


class NystromGPR(InducingView, FantasyPredictions[dtc.DTCPosterior]):
    r"""GP regression with the DTC (Nystrom) posterior over a resampled dictionary (BKB/BBKB).

    The posterior (:mod:`trieste_scalable.numerics.dtc`, eqs. 1-3) conditions on every
    evaluation, with repeated inputs stored once with a count, so memory grows with the number of
    unique inputs. ``predict`` reports Trieste's Bayesian units: the latent variance is
    :math:`\lambda\tilde\sigma^2`, where :math:`\lambda` is ``noise_variance`` (the papers'
    regulariser) and :math:`\tilde\sigma^2` the ridge-leverage variance the papers use.

    Every ``update`` is a batch boundary: the dictionary is resampled by ``dictionary`` (by
    default ridge-leverage sampling with :math:`\bar q = 2`) from the variances of the batch that
    just ended (BBKB Algorithm 1, lines 11-15), then the posterior is refactorised. The data's
    sums over the dictionary's embedding are kept: an update that appends evaluations over the
    same dictionary and kernel embeds only those (:mod:`.summed_terms`), so with a policy that
    keeps its draw (:meth:`~.DictionaryPolicy.inputs_drawn_among`) its cost does not grow with
    the evaluations.
    ``ExactDictionary()`` keeps every point and makes the model an exact GP (as GP-BUCB needs).

    It is a Trieste ``FastUpdateModel``: predictions given additional (e.g. fantasized) data
    update :math:`V` by rank-one updates, O(N m^2) for N additional points (the dictionary is
    kept; an exact one takes the points in, so it stays exact), so Trieste's ``Fantasizer``
    runs on it without copying and updating the model.

    ``optimize`` maximises Titsias' SGPR bound with the dictionary as inducing points over the
    trainable kernel parameters and the noise variance, unless ``fit_hyperparameters=False`` (the
    papers' setting).

    The prior mean is a constant (see :class:`~.ReplicatedGPBase`); the papers assume zero mean,
    ``prior_mean=0.0``.

    Given ``packed_width``, the datasets' query points are packed bits, one bit an entry, and the
    model keeps its evaluated inputs so: everything that reads them all (the factorisation, the
    dictionary's draw, the batch-start variances) unpacks a chunk of ``chunk_size`` rows at a
    time, so memory grows by D / 8 bytes an evaluation (768 at 6,144 bits), not 8 D (49 KB).
    ``predict`` takes packed query points too (a Trieste rule predicting at the evaluated
    points). Fits read the inputs whole: they are unpacked for a fit (at most a GiB).
    """

    _log_name = "nystrom"
    _compiled_type = CompiledDTC
    _posterior_type = dtc.DTCPosterior

    def __init__(
        self,
        kernel: gpflow.kernels.Kernel,
        noise_variance: float,
        dataset: Optional[Dataset] = None,
        *,
        dictionary: Optional[DictionaryPolicy] = None,
        jitter: float = 1e-10,
        packed_width: Optional[int] = None,
        **options: Unpack[ModelOptions],
    ):
        """
        :param kernel: Any GPflow kernel (its parameters fix the model's dtype).
        :param noise_variance: :math:`\\lambda > 0`, the regulariser/noise variance.
        :param dataset: Optional initial data (equivalent to calling :meth:`update`).
        :param dictionary: Dictionary policy; default ``RidgeLeverageSampler(2.0)``.
        :param jitter: First relative jitter tried on the dictionary's kernel matrix.
        :param packed_width: D, where datasets' query points are packed bits (uint8
            [N, ceil(D / 8)]: a make-on-demand campaign's fingerprints,
            :meth:`~trieste_scalable.spaces.featurised.FeatureRows.of`), kept so (class
            docstring); ``None``: dense query points.
        :param options: The fitting and prediction options of :class:`~.ReplicatedGPBase`
            (``fit_hyperparameters``, ``fit_schedule``, ``exact_fit_limit``, ``chunk_size``, ...).
        """
        super().__init__(kernel, noise_variance, **options)
        if packed_width is not None and not (isinstance(packed_width, int) and packed_width > 0):
            raise ValueError(f"packed_width must be a positive integer, got {packed_width!r}")
        self._packed_width = packed_width
        self._policy = dictionary if dictionary is not None else RidgeLeverageSampler(2.0)
        self._jitter = jitter
        self._dictionary_index = np.zeros([0], dtype=np.int64)
        self._drawn: Optional[tuple] = None  # the key of the last draw (_draw_key)
        self._summed: Optional[SummedTerms] = None  # the data's terms over the dictionary
        self._used_jitter = jitter
        self._resparsification_seconds = 0.0
        # whether the dictionary holds every input, as compiled fantasies read it (live: a
        # ridge-leverage draw may keep every point at one update and not at the next)
        self._exact_variable = dynamic_variable(tf.constant(False))
        if dataset is not None:
            self.update(dataset)

    # ----------------------------------------------------------------- properties
    @property
    def dictionary(self) -> tf.Tensor:
        """The current dictionary (inducing inputs) [m, D]."""
        if self._data is None:
            return tf.zeros([0, 0], dtype=self._dtype)
        return self._inputs_at(self._data, self._dictionary_index)

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
    def _exact(self) -> bool:
        """Whether the dictionary holds every evaluated input (the posterior is exact)."""
        size, index = self._require_data().counts.size, self._dictionary_index
        return self._policy.is_exact(index.size, size)

    def _inducing_variables(self) -> InducingVariables:
        """The DTC posterior (eqs. 1-2) as a whitened SVGP posterior, as Trieste's
        ``SparseVariational`` states it: the dictionary [m, D], :math:`w` [m, 1] (net of the
        mean function) and a lower-triangular root [1, m, m] of :math:`\\lambda V^{-1}`; so
        Trieste's samplers and our batch Thompson sampling run on this model. Padding (the
        trailing rows) is block-diagonal in :math:`V`, so slicing it off is exact."""
        post = self._require_posterior()
        m = tf.cast(tf.reduce_sum(post.mask), tf.int32)
        chol_v = post.chol_v[:m, :m]
        root = lower_root_of_inverse(tf.matmul(chol_v, chol_v, transpose_b=True))
        q_sqrt = tf.sqrt(post.noise) * root
        return InducingVariables(post.inducing[:m], post.weights[:m, None], q_sqrt[None])

    # ----------------------------------------------------------------- template methods
    def _absorb(self, data: ReplicatedData, extends: bool) -> None:
        """Resample the dictionary from the batch-start variances of the batch that just ended
        (BBKB Algorithm 1, lines 11-15, counting that batch first, so points first picked in it
        can enter the dictionary), then refactorise."""
        start = time.perf_counter()
        x = self._rows(data)
        if not self._policy.reads_variances:
            batch_start = np.zeros(data.counts.size)
        elif self._posterior is None:  # the prior's (eq. 3 with an empty dictionary)
            batch_start = (self._prior_diagonal(x) / self._noise).numpy()
        else:
            batch_start = self._marginals(self._posterior, x)[1].numpy()
        key = self._draw_key(data)
        if key is not None and key == self._drawn and extends:
            index = self._dictionary_index  # the same draw: skipped
        else:
            index = np.sort(self._policy.choose(x, data.counts, batch_start, self.compiled))
        self._factorise(data, index, extends)
        self._drawn = key
        self._exact_variable.assign(self._exact)
        self._resparsification_seconds = time.perf_counter() - start

    def _draw_key(self, data: ReplicatedData) -> Optional[tuple]:
        """What the policy's draw depends on when it draws among the first inputs only
        (:meth:`~.DictionaryPolicy.inputs_drawn_among`): how many, and the kernel's
        parameters; ``None`` where it draws at every update."""
        among = self._policy.inputs_drawn_among(data.counts.size)
        return None if among is None else (among, self._kernel_state())

    def _kernel_state(self) -> tuple[bytes, ...]:
        """The kernel's parameters' values, as bytes (what a draw or the data's terms read)."""
        return tuple(np.asarray(p.numpy()).tobytes() for p in self._kernel.parameters)

    def _refactorise(self) -> None:
        self._factorise(self._require_data(), self._dictionary_index, extends=True)

    def _sparse_objective(self) -> Objective:
        post = self._require_posterior()
        return self._sgpr_objective(post.inducing, post.mask, self._evidence_jitter())

    def _latent_marginals(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        post = self._require_posterior()
        mean, s2 = self.compiled.marginals(post, x)
        return mean, post.noise * s2

    def _latent_set_covariance(self, sets: tf.Tensor) -> tf.Tensor:
        post = self._require_posterior()
        return post.noise * self.compiled.set_covariance(post, sets)

    def _latent_cross_covariance(self, x: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
        post = self._require_posterior()
        return post.noise * self.compiled.cross_covariance(post, x, x2)

    def _log_extra(self) -> None:
        post = self._require_posterior()
        logging.scalar("nystrom/dictionary_size", post.size)
        logging.scalar("nystrom/effective_dimension", self.effective_dimension)
        logging.scalar("nystrom/resparsification_seconds", self._resparsification_seconds)

    # ----------------------------------------------------------------- rules' API
    def batch_posterior(self, regulariser: Optional[float] = None) -> InBatchPosterior:
        """A fresh in-batch posterior at the current batch start, for hallucinating a batch.

        :param regulariser: The papers' :math:`\\lambda` (mean and variances of eqs. 1-3 over
            the current dictionary); default the noise variance (the Bayesian posterior).
        """
        return InBatchPosterior(
            self.compiled,
            self._regularised(regulariser),
            self._exact,
            self._chunk_size,
            self._policy.draws_at_random,
        )

    def information_gain(self, regulariser: Optional[float] = None) -> float:
        r"""DTC :math:`\log\det(I + K_X/\lambda)` over all evaluations, i.e.
        :math:`\log\det V - M \log\lambda` (exact when the dictionary is exact), with
        :math:`\lambda` the ``regulariser`` (default the noise variance)."""
        post = self._regularised(regulariser)
        log_det_v = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(post.chol_v)))
        return float(log_det_v - post.capacity * tf.math.log(post.noise))

    def prior_variance(self) -> float:
        """:math:`\\kappa^2`: the kernel's mean prior variance :math:`k(x, x)` over the
        evaluated inputs (the kernel variance of a stationary kernel)."""
        return float(tf.reduce_mean(self._prior_diagonal(self._rows(self._require_data()))))

    def _prior_diagonal(self, x: Rows) -> tf.Tensor:
        """:math:`k(x, x)` [N] at ``x`` [N, D], a chunk at a time."""
        return chunked_map(lambda c: self._kernel(c, full_cov=False), x, self._chunk_size)[0]

    def _regularised(self, regulariser: Optional[float]) -> dtc.DTCPosterior:
        """The current posterior, refactorised with :math:`\\lambda` = ``regulariser``."""
        post = self._require_posterior()
        if regulariser is None or regulariser == float(post.noise):
            return post
        if not (np.isfinite(regulariser) and regulariser > 0):
            raise ValueError(f"the regulariser must be finite and > 0, got {regulariser}")
        terms = self._summed.terms  # type: ignore[union-attr]  # set with the posterior
        return dtc.with_regulariser(post, terms, host_tensor(regulariser, self._dtype))

    def _factorise(self, data: ReplicatedData, index: np.ndarray, extends: bool) -> None:
        """Condition on ``data`` over the dictionary ``index``; the data's terms are the last
        factorisation's plus what changed where ``data`` ``extends`` that one's and the
        dictionary and kernel are the same (:mod:`.summed_terms`). Nothing changes if this
        raises."""
        ops, chunk = self.compiled, self._chunk_size
        capacity = max(index.size, 1)
        inducing, mask, chol_kss, used = dtc.factor_dictionary(
            ops, self._inputs_at(data, index), capacity, self._jitter
        )

        def sum_terms(rows: Rows, counts: tf.Tensor, sums: tf.Tensor) -> DataTerms:
            return dtc_terms.sum_terms(
                ops.data_terms, rows, counts, sums, inducing, mask, chol_kss, chunk
            )

        key = (index.tobytes(), capacity, self._kernel_state())
        rows = self._rows(data)
        summed = summed_terms(self._summed, extends, key, data, rows, sum_terms)
        noise, mean = tf.convert_to_tensor(self._noise), self._prior_mean()
        posterior = dtc.posterior_of(inducing, mask, chol_kss, summed.terms, noise, mean)
        self._data, self._dictionary_index, self._summed = data, index, summed
        self._posterior, self._used_jitter = posterior, used

    def _rows(self, data: ReplicatedData) -> Rows:
        """The unique inputs [n, D] as the numerics read them: packed rows (unpacked a chunk at
        a time) where the datasets' query points are packed bits."""
        if self._packed_width is None:
            return data.input_tensor
        return PackedRows(data.input_tensor, self._packed_width, self._dtype)

    def _inputs_at(self, data: ReplicatedData, index: np.ndarray) -> tf.Tensor:
        """The unique inputs at ``index`` [K], dense [K, D] (the dictionary's)."""
        return take_rows(self._rows(data), index)

    def _dense_data(self, data: ReplicatedData) -> ReplicatedData:
        """``data`` with its inputs unpacked, for a fit (which reads them whole).

        :raise MemoryError: If that takes more than a GiB (fit fewer evaluations, or set
            ``fit_hyperparameters=False`` past them).
        """
        if self._packed_width is None:
            return data
        return replace(data, inputs=self._rows(data).dense().numpy(), source=None)

    def _data_tensors(self) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        inputs, *rest = super()._data_tensors()
        if self._packed_width is not None:
            inputs = self._dense_data(self._require_data()).input_tensor
        return (inputs, *rest)  # type: ignore[return-value]

    def _marginals(self, post: dtc.DTCPosterior, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, var = chunked_map(
            lambda chunk: self.compiled.marginals(post, chunk), x, self._chunk_size
        )
        return mean, var

    def _evidence_jitter(self) -> float:
        """Absolute jitter on :math:`K_S` in the bound: the relative one the factorisation
        needed (at least 1e-8) times the dictionary's mean prior variance."""
        dictionary = self._inputs_at(self._require_data(), self._dictionary_index)
        scale = float(np.mean(self._kernel(dictionary, full_cov=False)))
        return max(self._used_jitter, 1e-8) * scale

    # ----------------------------------------------------------------- FastUpdateModel
    def conditional_predict_f(
        self, query_points: tf.Tensor, additional_data: Dataset
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Latent mean and variance [..., M, 1] at ``query_points`` [M, D] given also
        ``additional_data`` ([..., N, D], [..., N, 1]; one posterior per leading index)."""
        x = self._flatten(query_points)

        def marginals(post: dtc.DTCPosterior) -> tuple[tf.Tensor, tf.Tensor]:
            mean, s2 = chunked_map(lambda c: self.compiled.marginals(post, c), x, self._chunk_size)
            return mean[:, None], post.noise * s2[:, None]

        return self._conditional(additional_data, marginals)

    def conditional_predict_joint(
        self, query_points: tf.Tensor, additional_data: Dataset
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Latent mean [..., M, 1] and covariance [..., 1, M, M] of ``query_points`` [M, D] given
        also ``additional_data`` ([..., N, D], [..., N, 1])."""
        x = self._flatten(query_points)

        def joint(post: dtc.DTCPosterior) -> tuple[tf.Tensor, tf.Tensor]:
            mean = self.compiled.marginals(post, x)[0]
            return mean[:, None], post.noise * self.compiled.covariance(post, x)[None]

        return self._conditional(additional_data, joint)

    def _conditional(
        self,
        additional: Dataset,
        predict: Callable[[dtc.DTCPosterior], tuple[tf.Tensor, tf.Tensor]],
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """``predict`` (mean, second moment; centred) under the posterior conditioned on each
        leading index of ``additional`` (graph-safe: Trieste calls this inside ``map_fn``)."""
        post = self._require_posterior()
        ops = self.compiled
        x = self._check_points(additional.query_points)
        y = host_tensor(additional.observations, self._dtype)
        tf.debugging.assert_all_finite(y, "additional observations must be finite")
        points = tf.reshape(x, tf.concat([[-1], tf.shape(x)[-2:]], axis=0))  # [F, K, D]
        residuals = tf.reshape(y, [tf.shape(points)[0], -1]) - self._centre_tensor() - post.mean

        def one(args: tuple[tf.Tensor, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
            mean, second = tf.cond(
                self._exact_variable,
                lambda: predict(ops.condition_extending(post, *args)),
                lambda: predict(ops.condition(post, *args)),
            )
            return mean + self._centre_tensor(), second

        spec = tf.TensorSpec(None, self._dtype)
        mean, second = tf.map_fn(one, (points, residuals), fn_output_signature=(spec, spec))
        leading = tf.shape(x)[:-2]
        return (
            tf.reshape(mean, tf.concat([leading, tf.shape(mean)[1:]], axis=0)),
            tf.reshape(second, tf.concat([leading, tf.shape(second)[1:]], axis=0)),
        )

    def _repr_extra(self) -> str:
        return f"dictionary={self._policy!r}, "
