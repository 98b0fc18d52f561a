r"""Monotone transforms of observations fitted to them, applied before a GP sees them and undone
where a value is read: the identity (standardised), a log of the gap to the worst value, the
Yeo-Johnson power transform and a Gaussian copula of the ranks (HEBO, Cowen-Rivers et al. 2022,
section 4.1; BoTorch's ``Standardize``, ``Log``, ``Power``). Values are Trieste's (lower is
better); every transform is increasing, so the best stays the best, and each ends standardised
(mean 0, standard deviation 1 over the values it was fitted to).

- ``identity``: :math:`z = (y - \bar y) / s`.
- ``log``: :math:`z = -\log(y_{\max} - y + \delta)`, standardised, with :math:`\delta` half the
  smallest positive gap to the worst value. In the user's units (higher better) this is the log
  of the distance above the worst, :math:`\log p` for a probability ``p`` near 0: it spreads
  the many values near the worst and compresses the few spikes.
- ``power``: Yeo-Johnson (Yeo and Johnson 2000) of the standardised values, its power
  :math:`\lambda` of highest Gaussian likelihood (as ``scipy.stats.yeojohnson``), standardised:

  .. math::
      \psi(u, \lambda) = \begin{cases}
        ((u + 1)^\lambda - 1) / \lambda & u \ge 0, \lambda \ne 0 \\
        \log(u + 1) & u \ge 0, \lambda = 0 \\
        -((1 - u)^{2 - \lambda} - 1) / (2 - \lambda) & u < 0, \lambda \ne 2 \\
        -\log(1 - u) & u < 0, \lambda = 2
      \end{cases}

- ``rank``: :math:`z = \Phi^{-1}((r - 1/2) / N)` for the (tie-averaged) rank :math:`r` of each
  value among the ``N``; between and beyond the values it interpolates linearly (extending the
  end segments), both ways.

``auto`` picks, among identity, log and power, the transform of highest Gaussian likelihood of
the values it was fitted to, its Jacobian counted (:func:`log_likelihood`; Box and Cox's model
comparison), less half the log of the number of values for power's fitted exponent (the
Bayesian information criterion: power nests the identity, so it must earn its parameter). Where
one value makes up more than :data:`POINT_MASS` of them (a hit call's zeros), power is not
weighed: a point mass has no density, and power's exponent buys likelihood by steepening its
slope there (on Walters' quinazoline subset with a hit call, ``power`` scored 6.0 a point
against ``log``'s 2.7 that way: ``benchmarks/auto_transform.py``). The copula has no smooth
Jacobian, so ``auto`` never picks it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Optional, Protocol

import tensorflow as tf

from .host_tensors import host_tensor

TensorType = Any
"""A tensor or an array (numerics import nothing of Trieste's, whose alias this is)."""

TRANSFORMS = ("auto", "identity", "log", "power", "rank")
"""What :func:`fit_outcome_transform` takes."""

POINT_MASS = 0.05
"""The share of the values one value may make up for ``auto`` to weigh power (module
docstring)."""

_POWER_RANGE = (-3.0, 5.0)
"""The powers Yeo-Johnson's fit searches. scipy's optimiser is unbounded: on a sparse probability
(negated) it goes to 14.4, where one point's transformed value dwarfs the rest; ``log`` is the
transform for such values, and ``auto`` picks it there."""


class OutcomeTransform(Protocol):
    """A fitted increasing transform of values [N, 1] and its inverse."""

    name: str
    """Its kind (:data:`TRANSFORMS`, ``auto`` aside)."""

    def forward(self, values: TensorType) -> tf.Tensor:
        """Transformed ``values``, same shape."""

    def inverse(self, values: TensorType) -> tf.Tensor:
        """The values whose transforms are ``values``, same shape."""

    def log_jacobian(self, values: TensorType) -> tf.Tensor:
        """The sum over ``values`` of the log derivative of :meth:`forward` []."""


@dataclass(frozen=True)
class Affine:
    """:math:`z = (g(y) - \\text{centre}) / \\text{scale}` after a warp ``g`` (here none)."""

    centre: float
    scale: float
    name = "identity"
    """The kind :func:`fit_outcome_transform` fits it as."""

    def forward(self, values: TensorType) -> tf.Tensor:
        return (self._warp(values) - self.centre) / self.scale

    def inverse(self, values: TensorType) -> tf.Tensor:
        return self._unwarp(tf.convert_to_tensor(values) * self.scale + self.centre)

    def log_jacobian(self, values: TensorType) -> tf.Tensor:
        size = tf.cast(tf.size(values), tf.float64)
        return tf.reduce_sum(self._log_slope(values)) - size * math.log(self.scale)

    def _warp(self, values: TensorType) -> tf.Tensor:
        return tf.cast(values, tf.float64)

    def _unwarp(self, values: TensorType) -> tf.Tensor:
        return tf.cast(values, tf.float64)

    def _log_slope(self, values: TensorType) -> tf.Tensor:
        return tf.zeros_like(tf.cast(values, tf.float64))


@dataclass(frozen=True)
class LogGap(Affine):
    """``log``: :math:`g(y) = -\\log(\\text{worst} - y + \\text{offset})` (module docstring)."""

    worst: float = 0.0
    offset: float = 1.0
    name = "log"

    def _warp(self, values: TensorType) -> tf.Tensor:
        return -tf.math.log(self.worst - tf.cast(values, tf.float64) + self.offset)

    def _unwarp(self, values: TensorType) -> tf.Tensor:
        return self.worst + self.offset - tf.exp(-tf.cast(values, tf.float64))

    def _log_slope(self, values: TensorType) -> tf.Tensor:
        return -tf.math.log(self.worst - tf.cast(values, tf.float64) + self.offset)


@dataclass(frozen=True)
class YeoJohnson(Affine):
    """``power``: :math:`g(y) = \\psi((y - m) / s, \\lambda)` (module docstring)."""

    mean: float = 0.0
    spread: float = 1.0
    power: float = 1.0
    name = "power"

    def _warp(self, values: TensorType) -> tf.Tensor:
        return yeo_johnson((tf.cast(values, tf.float64) - self.mean) / self.spread, self.power)

    def _unwarp(self, values: TensorType) -> tf.Tensor:
        z, lam = tf.cast(values, tf.float64), self.power
        positive, other = z >= 0, 2 - lam
        up = tf.math.expm1(tf.math.log1p(lam * z) / lam) if lam != 0 else tf.math.expm1(z)
        down = (
            -tf.math.expm1(tf.math.log1p(-other * z) / other) if other != 0 else -tf.math.expm1(-z)
        )
        # outside the transform's range (beyond its asymptote) the inverse is its limit
        up = tf.where(tf.math.is_nan(up), tf.constant(math.inf, tf.float64), up)
        down = tf.where(tf.math.is_nan(down), tf.constant(-math.inf, tf.float64), down)
        return tf.where(positive, up, down) * self.spread + self.mean

    def _log_slope(self, values: TensorType) -> tf.Tensor:
        u = (tf.cast(values, tf.float64) - self.mean) / self.spread
        signed = tf.sign(u) * tf.math.log1p(tf.abs(u))
        return (self.power - 1) * signed - math.log(self.spread)


@dataclass(frozen=True)
class GaussianCopula(Affine):
    """``rank``: the normal scores of the ranks, interpolated (module docstring)."""

    knots: tuple[float, ...] = ()
    """The distinct fitted values, increasing."""
    scores: tuple[float, ...] = ()
    """Their normal scores."""
    name = "rank"

    def _warp(self, values: TensorType) -> tf.Tensor:
        return _interpolate(tf.cast(values, tf.float64), self.knots, self.scores)

    def _unwarp(self, values: TensorType) -> tf.Tensor:
        return _interpolate(tf.cast(values, tf.float64), self.scores, self.knots)

    def log_jacobian(self, values: TensorType) -> tf.Tensor:
        raise NotImplementedError("the copula has no smooth Jacobian: auto never compares it")


def yeo_johnson(values: TensorType, power: float | tf.Tensor) -> tf.Tensor:
    """:math:`\\psi(u, \\lambda)` of the module docstring, elementwise (``power`` a number or a
    scalar tensor: the power's search compiles it)."""
    u = tf.cast(values, tf.float64)
    power = host_tensor(power, tf.float64)  # tf.cast would make a number float32 first
    positive = u >= 0
    zero = tf.zeros_like(u)
    a, b = tf.math.log1p(tf.maximum(u, zero)), tf.math.log1p(tf.maximum(-u, zero))
    other = 2 - power
    up = tf.where(power != 0, tf.math.expm1(power * a) / power, a)
    down = tf.where(other != 0, -tf.math.expm1(other * b) / other, -b)
    return tf.where(positive, up, down)


def data_units(
    transform: Optional[OutcomeTransform], mean: TensorType, variance: TensorType
) -> tuple[tf.Tensor, tf.Tensor]:
    """A Gaussian prediction in ``transform``'s units (mean and variance [N, 1]) in the data's:
    the median (the transform undone at the mean) and half the width of the central 68 %
    interval (undone at the mean plus and less one standard deviation); the mean and standard
    deviation where there is no transform."""
    mean = tf.convert_to_tensor(mean)
    spread = tf.sqrt(tf.maximum(tf.convert_to_tensor(variance), 0.0))
    if transform is None:
        return mean, spread
    inverse = transform.inverse
    half_width = (inverse(mean + spread) - inverse(mean - spread)) / 2
    return tf.cast(inverse(mean), mean.dtype), tf.cast(half_width, mean.dtype)


def log_likelihood(transform: OutcomeTransform, values: TensorType) -> float:
    """The Gaussian log likelihood of ``values`` [N, 1] under ``transform``: its transformed
    values' (mean 0, variance 1 by construction of the fit) plus the log Jacobian."""
    z = transform.forward(values)
    size = tf.cast(tf.size(z), tf.float64)
    variance = tf.math.reduce_variance(z)
    gaussian = -0.5 * size * (math.log(2 * math.pi) + tf.math.log(variance) + 1.0)
    return float(gaussian + transform.log_jacobian(values))


def fit_outcome_transform(kind: str, values: TensorType) -> OutcomeTransform:
    """The transform ``kind`` (:data:`TRANSFORMS`) fitted to ``values`` [N, 1] (module
    docstring).

    :raise ValueError: On an unknown kind, no values, or a value that is not finite.
    """
    y = tf.reshape(tf.cast(values, tf.float64), [-1])
    if kind not in TRANSFORMS:
        raise ValueError(f"unknown outcome transform {kind!r}: choose from {', '.join(TRANSFORMS)}")
    if not int(tf.size(y)):
        raise ValueError("an outcome transform needs at least one value to fit")
    if not bool(tf.reduce_all(tf.math.is_finite(y))):
        raise ValueError("an outcome transform is fitted to finite values only")
    if kind == "auto":
        penalty = {"identity": 0.0, "log": 0.0}
        _, _, repeats = tf.unique_with_counts(y)
        if int(tf.reduce_max(repeats)) <= POINT_MASS * int(tf.size(y)):
            penalty["power"] = 0.5 * math.log(int(tf.size(y)))
        scored = [
            (log_likelihood(fitted, y) - cost, fitted)
            for name, cost in penalty.items()
            for fitted in [fit_outcome_transform(name, y)]
        ]
        return max(scored, key=lambda pair: pair[0])[1]
    if kind == "identity":
        return _standardised(Affine(0.0, 1.0), y)
    if kind == "log":
        worst = float(tf.reduce_max(y))
        gaps = worst - y
        positive = tf.boolean_mask(gaps, gaps > 0)
        offset = 0.5 * float(tf.reduce_min(positive)) if int(tf.size(positive)) else 1.0
        return _standardised(LogGap(0.0, 1.0, worst, offset), y)
    if kind == "power":
        mean, spread = float(tf.reduce_mean(y)), _spread(y)
        u = (y - mean) / spread
        power = _best_power(u)
        return _standardised(YeoJohnson(0.0, 1.0, mean, spread, power), y)
    knots, scores = _normal_scores(y)
    return _standardised(GaussianCopula(0.0, 1.0, knots, scores), y)


def _standardised(transform: Affine, y: tf.Tensor) -> Affine:
    """``transform`` with the centre and scale that standardise its warp of ``y``."""
    warped = transform._warp(y)
    return replace(transform, centre=float(tf.reduce_mean(warped)), scale=_spread(warped))


def _spread(values: tf.Tensor) -> float:
    """The standard deviation of ``values``, 1 where they are all equal."""
    spread = float(tf.math.reduce_std(values))
    return spread if spread > 0 else 1.0


def _profile(u: tf.Tensor, power: float) -> float:
    """Yeo-Johnson's profile log likelihood of ``power`` at ``u`` [N] (scipy's
    ``yeojohnson_llf``). Compiled: a search calls it about 90 times a fit, and eagerly each call
    made TensorFlow convert a handful of Python numbers, a leak of each (:mod:`.host_tensors`)."""
    return float(_compiled_profile(u, host_tensor(power, tf.float64)))


@tf.function(
    input_signature=[tf.TensorSpec([None], tf.float64), tf.TensorSpec([], tf.float64)],
    autograph=False,
)
def _compiled_profile(u: tf.Tensor, power: tf.Tensor) -> tf.Tensor:
    z = yeo_johnson(u, power)
    size = tf.cast(tf.size(u), tf.float64)
    variance = tf.maximum(tf.math.reduce_variance(z), 1e-300)
    jacobian = (power - 1) * tf.reduce_sum(tf.sign(u) * tf.math.log1p(tf.abs(u)))
    return -0.5 * size * tf.math.log(variance) + jacobian


def _best_power(u: tf.Tensor) -> float:
    """The power of highest profile likelihood in :data:`_POWER_RANGE`: a grid of 33, then a
    golden-section search of the grid's best bracket to 1e-6."""
    low, high = _POWER_RANGE
    grid = [low + (high - low) * k / 32 for k in range(33)]
    best = max(range(33), key=lambda k: _profile(u, grid[k]))
    a, b = grid[max(best - 1, 0)], grid[min(best + 1, 32)]
    ratio = (math.sqrt(5) - 1) / 2
    while b - a > 1e-6:
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if _profile(u, c) >= _profile(u, d):
            b = d
        else:
            a = c
    return (a + b) / 2


def _normal_scores(y: tf.Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The distinct values of ``y``, increasing, and the normal scores of their tie-averaged
    ranks, :math:`\\Phi^{-1}((r - 1/2) / N)`."""
    knots, index, counts = tf.unique_with_counts(tf.sort(y))
    del index
    ends = tf.cumsum(tf.cast(counts, tf.float64))
    ranks = ends - (tf.cast(counts, tf.float64) - 1) / 2  # the mean rank of each tie
    size = tf.cast(tf.size(y), tf.float64)
    scores = tf.math.ndtri((ranks - 0.5) / size)
    return tuple(knots.numpy().tolist()), tuple(scores.numpy().tolist())


def _interpolate(x: tf.Tensor, knots: tuple[float, ...], values: tuple[float, ...]) -> tf.Tensor:
    """The piecewise-linear function through (``knots``, ``values``) at ``x``, extending its end
    segments (a constant where there is one knot)."""
    if len(knots) == 1:
        return tf.fill(tf.shape(x), tf.constant(values[0], tf.float64))
    k = tf.constant(knots, tf.float64)
    v = tf.constant(values, tf.float64)
    flat = tf.reshape(x, [-1])
    right = tf.clip_by_value(tf.searchsorted(k, flat, side="right"), 1, len(knots) - 1)
    x0, x1 = tf.gather(k, right - 1), tf.gather(k, right)
    y0, y1 = tf.gather(v, right - 1), tf.gather(v, right)
    return tf.reshape(y0 + (flat - x0) * (y1 - y0) / (x1 - x0), tf.shape(x))
