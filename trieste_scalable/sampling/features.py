r"""Random feature maps :math:`\phi` with :math:`\mathbb{E}[\phi(x)^T\phi(x')] = k(x, x')`: the
prior half of a decoupled (pathwise) posterior sample (S-GP-TS eq. 4, Wilson et al. 2020).

A map holds no randomness: :meth:`FeatureMap.draw` turns a stateless seed into a tuple of unit
draws (frequencies, phases, hash priorities), and ``FeatureMap.__call__`` combines them with
the kernel's *current* hyperparameters. Draws are plain tensors passed to compiled functions, so
redrawing features every step or changing hyperparameters never retraces.

We do not reuse GPflux's ``RandomFourierFeaturesCosine``: it is a Keras layer that draws its
frequencies from the global TF RNG when built (so under ``tf.random.set_seed`` every new layer has
the same draws, the failure mode of Trieste's issue #610), and it covers only stationary kernels.

Supported kernels (:func:`feature_map_for`):

- SE and Matern-1/2, 3/2, 5/2: random Fourier features (Rahimi & Recht 2007),
  :math:`\phi_j(x) = \sqrt{2\sigma^2/F}\cos(\omega_j^T (x/\ell) + b_j)`, :math:`\omega_j` from the
  kernel's spectral density (Gaussian; for Matern-:math:`\nu` a Student-t with :math:`2\nu`
  degrees of freedom, drawn as :math:`g/\sqrt{\gamma}`, :math:`\gamma \sim \Gamma(\nu, \text{rate}
  = \nu)`; numpy's ``gamma`` takes the scale, not the rate);
- GPflow's zeroth-order ``ArcCosine``: :math:`\phi_j(x) = \sqrt{2\sigma^2/F}\,\Theta(\omega_j^T
  [\sqrt{w}\odot x; \sqrt{b}])` (Cho & Saul 2009);
- :class:`~trieste_scalable.kernels.Tanimoto` on binary fingerprints: MinHash (Broder 1997)
  sign features, the hash-collision idea behind Tripp et al.'s (2023) Tanimoto random features:
  :math:`h_j(x) = \arg\min_{i: x_i = 1} \pi_{ji}` for random permutations :math:`\pi_j` of the
  bits (at most 32,767), :math:`\phi_j(x) = \sqrt{\sigma^2/F}\, s_j(h_j(x))` with random signs
  :math:`s_j`. :math:`P(h_j(x) = h_j(x'))` is the Jaccard similarity and independent signs make
  the other terms vanish in expectation, so :math:`\mathbb{E}[\phi(x)^T\phi(x')] = k(x, x')`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, TypeVar

import gpflow
import tensorflow as tf

from ..kernels import Tanimoto
from ..numerics.binary_products import binary_products

Draws = tuple[tf.Tensor, ...]
"""Unit random draws of one feature map (shapes depend on the map)."""


class FeatureMap:
    """Random features for one kernel; see the module docstring.

    :param kernel: The kernel whose (current) hyperparameters scale the features.
    :param num_features: Number of features F.
    """

    max_rows: int | None = None
    """Largest chunk of inputs a call should get (None: any), for maps with big intermediates."""

    signs_only: bool = False
    """Whether the features are ``amplitude() * signs(draws, x)`` with signs in {-1, +1} (rows
    of zeros allowed) that do not depend on the kernel's hyperparameters: then the signs of a
    fixed candidate set can be computed once and kept bit-packed
    (:mod:`~trieste_scalable.sampling.feature_cache`)."""

    def __init__(self, kernel: Any, num_features: int):
        if num_features <= 0:
            raise ValueError(f"num_features must be positive, got {num_features}")
        self.kernel = kernel
        self.num_features = num_features

    def cross_covariance(
        self, x: tf.Tensor, centres: tf.Tensor, dtype: Optional[tf.DType] = None
    ) -> tf.Tensor:
        """The kernel between inputs [N, D] and centres [M, D], [N, M] (the canonical basis of a
        pathwise sample's update), in ``dtype`` (default ``x``'s; computed in ``centres``'s)."""
        return tf.cast(self.kernel(tf.cast(x, centres.dtype), centres), dtype or x.dtype)

    def draw(self, seed: tf.Tensor, input_dim: int, dtype: tf.DType) -> Draws:
        """Unit draws from the stateless ``seed`` [2] (int32/int64) for D = ``input_dim``."""
        raise NotImplementedError

    def __call__(self, draws: Draws, x: tf.Tensor) -> tf.Tensor:
        """Features of ``x`` [N, D]: [N, F]."""
        raise NotImplementedError

    def amplitude(self, dtype: tf.DType) -> tf.Tensor:
        """The features' scale [] (maps with ``signs_only``)."""
        raise NotImplementedError(f"{type(self).__name__} features are not signs")

    def signs(self, draws: Draws, x: tf.Tensor) -> tf.Tensor:
        """The features over their scale [N, F] (maps with ``signs_only``)."""
        raise NotImplementedError(f"{type(self).__name__} features are not signs")


FEATURE_MAPS: dict[type, type[FeatureMap]] = {}
"""The feature map of each kernel type, filled by :func:`register_feature_map` where each map is
defined (read by :func:`feature_map_for`)."""

MapT = TypeVar("MapT", bound=type[FeatureMap])


def register_feature_map(*kernel_types: type) -> Callable[[MapT], MapT]:
    """Class decorator: :func:`feature_map_for` builds the decorated map for kernels of
    ``kernel_types`` and their subclasses (the most specific registered type wins), as BoTorch's
    feature-map dispatcher does (``sampling/pathwise/features/generators.py``). A user's own map
    registers the same way."""

    def register(cls: MapT) -> MapT:
        for kernel_type in kernel_types:
            FEATURE_MAPS[kernel_type] = cls
        return cls

    return register


def _lookup(kernel_type: type, table: dict[type, Any]) -> Any:
    """The value in ``table`` of the first of ``kernel_type``'s classes (its method resolution
    order) that ``table`` has, else ``None``."""
    return next((table[cls] for cls in kernel_type.__mro__ if cls in table), None)


def feature_map_for(kernel: Any, num_features: int) -> FeatureMap:
    """The random feature map of ``kernel`` (:data:`FEATURE_MAPS`).

    :raise ValueError: For kernels without a registered feature map (sums, products, periodic,
        ...) or a map's unsupported settings (higher-order arc-cosine).
    """
    feature_map = _lookup(type(kernel), FEATURE_MAPS)
    if feature_map is None:
        supported = ", ".join(sorted(cls.__name__ for cls in FEATURE_MAPS))
        raise ValueError(
            "decoupled sampling needs random features for the kernel; supported: "
            f"{supported}; got {type(kernel).__name__}"
        )
    return feature_map(kernel, num_features)


_FOURIER_DEGREES: dict[type, Optional[float]] = {  # Matern smoothness nu (None: SE)
    gpflow.kernels.SquaredExponential: None,
    gpflow.kernels.Matern12: 0.5,
    gpflow.kernels.Matern32: 1.5,
    gpflow.kernels.Matern52: 2.5,
}


@register_feature_map(*_FOURIER_DEGREES)
class FourierFeatures(FeatureMap):
    """Random Fourier features for SE and Matern kernels (see module docstring)."""

    def draw(self, seed: tf.Tensor, input_dim: int, dtype: tf.DType) -> Draws:
        seeds = tf.random.experimental.stateless_split(seed, 3)
        shape = [input_dim, self.num_features]
        frequencies = tf.random.stateless_normal(shape, seeds[0], dtype=dtype)
        nu = _lookup(type(self.kernel), _FOURIER_DEGREES)
        if nu is not None:
            gamma = tf.random.stateless_gamma([self.num_features], seeds[1], alpha=nu, dtype=dtype)
            frequencies = frequencies / tf.sqrt(gamma / nu)  # rate nu: Gamma(nu, 1) / nu
        phases = tf.random.stateless_uniform(
            [self.num_features], seeds[2], maxval=2.0 * math.pi, dtype=dtype
        )
        return frequencies, phases

    def __call__(self, draws: Draws, x: tf.Tensor) -> tf.Tensor:
        frequencies, phases = draws
        scaled = x / tf.cast(self.kernel.lengthscales, x.dtype)
        amplitude = tf.sqrt(2.0 * tf.cast(self.kernel.variance, x.dtype) / self.num_features)
        return amplitude * _cosine(tf.matmul(scaled, frequencies) + phases)  # [N, F]


def _cosine(phase: tf.Tensor) -> tf.Tensor:
    """cos of ``phase``; in float64, reduced to [-pi, pi] in float64 and evaluated in float32.

    TensorFlow's CPU kernels vectorise cos for float32 only: float64 cos is about 10x slower and
    dominates candidate scoring. After the float64 range reduction the float32 evaluation has an
    absolute error below 1e-7, far below the O(F^-1/2) Monte Carlo error of the features.
    """
    if phase.dtype != tf.float64:
        return tf.cos(phase)
    turns = tf.round(phase / (2.0 * math.pi))
    reduced = tf.cast(phase - 2.0 * math.pi * turns, tf.float32)
    return tf.cast(tf.cos(reduced), tf.float64)


@register_feature_map(gpflow.kernels.ArcCosine)
class ArcCosineFeatures(FeatureMap):
    """Random step features for GPflow's zeroth-order ``ArcCosine`` kernel."""

    def __init__(self, kernel: gpflow.kernels.ArcCosine, num_features: int):
        if kernel.order != 0:
            raise ValueError(
                f"only order-0 ArcCosine kernels have features, got order {kernel.order}"
            )
        super().__init__(kernel, num_features)

    def draw(self, seed: tf.Tensor, input_dim: int, dtype: tf.DType) -> Draws:
        return (tf.random.stateless_normal([input_dim + 1, self.num_features], seed, dtype=dtype),)

    def __call__(self, draws: Draws, x: tf.Tensor) -> tf.Tensor:
        (weights,) = draws
        kernel = self.kernel
        scaled = x * tf.sqrt(tf.cast(kernel.weight_variances, x.dtype))
        bias = tf.sqrt(tf.cast(kernel.bias_variance, x.dtype)) * tf.ones_like(x[:, :1])
        projection = tf.matmul(tf.concat([scaled, bias], axis=-1), weights)  # [N, F]
        amplitude = tf.sqrt(2.0 * tf.cast(kernel.variance, x.dtype) / self.num_features)
        return amplitude * tf.cast(projection > 0, x.dtype)


@register_feature_map(Tanimoto)
class TanimotoFeatures(FeatureMap):
    """MinHash sign features for the Tanimoto kernel on binary inputs (see module docstring).

    Only the on-bits of each row are visited (gathered with ``top_k``), so a chunk costs O(N F K)
    time for K on-bits per row, not O(N F D), and O(N F) memory: the minimum over the on-bits is a
    running one, one on-bit at a time (an [N, K, F] gather reduced at once moved K times as much
    memory, and was slower). The keys are float32 (exact below 2^23 bits), not int16: TensorFlow's
    CPU minimum over int16 ran several times slower (measured:
    ``benchmarks/results/design_measurements.md``).
    """

    max_rows = 1024
    signs_only = True

    def draw(self, seed: tf.Tensor, input_dim: int, dtype: tf.DType) -> Draws:
        # Per feature f a random permutation of the bits and a random sign s_f(b) per bit, as
        # one table of keys 2 rank_f(b) + [s_f(b) > 0] laid out [D + 1, F] (float32, exact): the
        # on-bits of a row gather contiguous rows, the parity of a key is its bit's sign, and
        # the last row (2 D, above every key) is what padding gathers.
        seeds = tf.random.experimental.stateless_split(seed, 2)
        shape = [self.num_features, input_dim]
        order = tf.argsort(tf.random.stateless_uniform(shape, seeds[0]), axis=-1)  # [F, D]
        ranks = tf.transpose(tf.argsort(order, axis=-1))  # [D, F]
        positive = tf.random.stateless_uniform(shape, seeds[1], maxval=2, dtype=tf.int32)
        keys = tf.cast(2 * ranks + tf.transpose(positive), tf.float32)
        return (tf.concat([keys, tf.fill([1, self.num_features], 2.0 * input_dim)], axis=0),)

    def __call__(self, draws: Draws, x: tf.Tensor) -> tf.Tensor:
        return self.amplitude(x.dtype) * self.signs(draws, x)

    def cross_covariance(
        self, x: tf.Tensor, centres: tf.Tensor, dtype: Optional[tf.DType] = None
    ) -> tf.Tensor:
        """The exact kernel [N, M] in ``dtype`` (default ``x``'s), with the inner products of the
        binary rows formed exactly in float32 or bfloat16
        (:func:`~trieste_scalable.numerics.binary_products.binary_products`), then the
        ratio in ``dtype``:
        float32 scoring forms the whole kernel row in float32 (a relative rounding of about
        1e-7)."""
        x, centres = self.kernel.slice(x, centres)  # the kernel's active dimensions
        return self.kernel.from_counts(*binary_products(x, centres, dtype or x.dtype))

    def amplitude(self, dtype: tf.DType) -> tf.Tensor:
        """sqrt(sigma^2 / F) []."""
        return tf.sqrt(tf.cast(self.kernel.variance, dtype) / self.num_features)

    def signs(self, draws: Draws, x: tf.Tensor) -> tf.Tensor:
        """The random signs of each row's MinHash values [N, F] (a row of zeros for an empty
        fingerprint): sign f of a row is the sign of its on-bit of lowest rank under
        permutation f. Each key carries its bit's sign as its parity, so the running minimum of
        the keys over the on-bits gives the sign without looking the bit up through the
        permutation and the signs (two [F, N] gathers), which is faster. The parity is taken on
        int32 (a float ``floormod`` cost more than the gathers it replaced)."""
        (keys,) = draws  # [D + 1, F] (see draw)
        on = tf.cast(x > 0, tf.int32)
        most_bits = tf.maximum(tf.reduce_max(tf.reduce_sum(on, axis=-1)), 1)
        on_bits = tf.math.top_k(on, k=most_bits, sorted=False)  # [N, K]
        valid = on_bits.values > 0  # [N, K]
        padding = tf.shape(keys)[0] - 1  # the row above every key
        bits = tf.where(valid, on_bits.indices, padding)  # [N, K]
        lowest = tf.gather(keys, tf.fill([tf.shape(x)[0]], padding))  # [N, F]
        _, lowest = tf.while_loop(
            lambda k, _: k < most_bits,
            lambda k, low: (k + 1, tf.minimum(low, tf.gather(keys, bits[:, k]))),
            [0, lowest],
        )
        chosen = tf.cast(2 * tf.bitwise.bitwise_and(tf.cast(lowest, tf.int32), 1) - 1, x.dtype)
        nonempty = tf.cast(tf.reduce_any(valid, axis=-1), x.dtype)[:, None]
        return chosen * nonempty  # [N, F]
