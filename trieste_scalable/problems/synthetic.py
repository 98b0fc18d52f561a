"""Built-in noisy problems on finite candidate sets (Trieste minimises: lower is better).

The BBKB paper's data sets (Abalone, Cadata, NAS-bench-101) cannot be downloaded at run time, so
the built-in problems are synthetic stand-ins of the same shape: a few thousand to tens of
thousands of candidates in d = 2..8, a smooth objective scaled to [0, 1] and Gaussian noise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from trieste.data import Dataset
from trieste.objectives import Hartmann6, Shekel4
from trieste.space import DiscreteSearchSpace

from ..errors import UsageError
from ..numerics.bits import PackedRows
from ..numerics.rows import RowIndex


@dataclass(frozen=True)
class DiscreteProblem:
    """A noisy minimisation problem over a finite candidate set.

    :ivar name: Short name.
    :ivar points: Candidates [A, D] (bit-packed for screening problems).
    :ivar values: Noise-free objective at every candidate [A] (for regret and recall).
    :ivar noise_std: Standard deviation of the Gaussian observation noise.
    """

    name: str
    points: np.ndarray | PackedRows
    values: np.ndarray
    noise_std: float
    _index: RowIndex = field(init=False, repr=False, compare=False)

    @property
    def search_space(self) -> DiscreteSearchSpace:
        return DiscreteSearchSpace(tf.constant(self.points))

    @property
    def values_known(self) -> bool:
        """Whether every candidate's value is known up front, so regret can be scored."""
        return bool(np.all(np.isfinite(self.values)))

    @property
    def minimum(self) -> float:
        return float(self.values.min())

    def __post_init__(self) -> None:
        assert isinstance(self.points, np.ndarray)  # packed points: ScreeningProblem's own index
        object.__setattr__(self, "_index", RowIndex(self.points))  # lookup table (frozen class)

    def indices(self, query_points: tf.Tensor | np.ndarray) -> np.ndarray:
        """Candidate index of each query point [N] (vectorised).

        :raise ValueError: If a query point is not a candidate.
        """
        return self._index(np.asarray(query_points))

    def initial_ids(self, rng: np.random.Generator, num: int) -> np.ndarray:
        """``num`` distinct candidates drawn uniformly: a campaign's random initial design."""
        return rng.choice(len(self.points), num, replace=False)

    def observer(self, seed: int) -> Callable[[tf.Tensor], Dataset]:
        """A Trieste observer returning noisy values; its noise comes from its own generator."""
        rng = np.random.default_rng(seed)

        def observe(query_points: tf.Tensor) -> Dataset:
            ids = self.indices(query_points)
            y = (self.values[ids] + self.noise_std * rng.normal(size=ids.size))[:, None]
            return Dataset(query_points, tf.constant(y, dtype=query_points.dtype))

        return observe

    higher_is_better = False
    """The direction of :meth:`user_value` (class-wide here: these problems are minimised)."""

    def user_value(self, value: float) -> float:
        """A value of ``values`` (Trieste's, minimised) in the user's units and direction: the
        one place where a campaign's reports convert (screening problems negate it where higher
        is better)."""
        return float(value)

    def objective(self, seed: int) -> Callable[[int], float]:
        """The noisy value of a candidate by its index (what in-process campaigns evaluate); its
        noise comes from its own generator."""
        rng = np.random.default_rng(seed)

        def observe(index: int) -> float:
            return float(self.values[index] + self.noise_std * rng.normal())

        return observe

    def regret(self, query_points: tf.Tensor) -> np.ndarray:
        """Instantaneous (noise-free) regret of each evaluated point [N]."""
        return self.values[self.indices(query_points)] - self.minimum

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        """Problem-specific progress measures of the evaluated candidate indices (none here)."""
        return {}

    def content_hash(self, legacy: bool = False) -> str:
        """SHA-256 of the candidates and their values: a resumed campaign checks it, so a
        changed candidate set cannot silently re-label logged evaluations. ``legacy``: the hash
        campaigns wrote before 2026-11-26 (see :func:`values_bytes`)."""
        digest = hashlib.sha256(np.ascontiguousarray(self.points).tobytes())
        digest.update(values_bytes(self.values, legacy))
        return digest.hexdigest()

    def identity_columns(self) -> list[str]:
        """Names of the log columns that identify a candidate: its coordinates."""
        return [f"x{i}" for i in range(self.points.shape[1])]

    def identity(self, index: int) -> list[str]:
        """The identifying columns of candidate ``index`` as logged."""
        return [f"{v:.6g}" for v in self.points[index]]

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        """Whether each logged identity [N][C] is that of candidate ``index`` [N] (coordinates
        to the logged precision)."""
        try:
            coordinates = np.array(logged, dtype=np.float64).reshape(len(index), -1)
        except ValueError:
            return np.zeros(len(index), dtype=bool)
        if coordinates.shape[1] != self.points.shape[1]:
            return np.zeros(len(index), dtype=bool)
        return np.all(np.isclose(coordinates, self.points[index], rtol=1e-5, atol=1e-8), axis=1)

    def initial_data(self, num_points: int, seed: int) -> Dataset:
        """``num_points`` distinct candidates chosen uniformly, observed with noise."""
        rng = np.random.default_rng(seed)
        ids = rng.choice(len(self.points), size=num_points, replace=False)
        return self.observer(seed + 1)(tf.constant(self.points[ids]))


def values_bytes(values: np.ndarray, legacy: bool = False) -> bytes:
    """The bytes of a problem's values [N] that its content hash covers: rounded to float32.
    Values computed in float64 differ in their last bits between machines (BLAS kernels and SIMD
    math functions are chosen per CPU: a campaign's hash from an AMD EPYC did not match on an
    Intel Xeon), and rounding to float32 keeps the hash the same unless a value lies within a
    few float64 ulps of a float32 rounding boundary. ``legacy``: all float64 bits, as campaigns
    logged before 2026-11-26 hashed them (still accepted on resume where they match)."""
    return np.ascontiguousarray(values if legacy else values.astype(np.float32)).tobytes()


def rkhs_problem(
    num_points: int = 20_000,
    dim: int = 8,
    num_centres: int = 40,
    lengthscale: float = 0.3,
    noise_std: float = 0.05,
    seed: int = 0,
) -> DiscreteProblem:
    """A random function of the squared-exponential RKHS on uniform random candidates.

    :math:`f(x) = \\sum_k a_k \\exp(-\\|x - c_k\\|^2 / (2\\ell^2))` with random centres and
    weights, rescaled so that :math:`f \\in [0, 1]` on the candidates (minimum 0).
    """
    rng = np.random.default_rng(seed)
    points = rng.uniform(size=(num_points, dim))
    values = _rkhs_values(points, num_centres, lengthscale, rng)
    return DiscreteProblem(f"rkhs{dim}d", points, values, noise_std)


def _rkhs_values(
    points: np.ndarray, num_centres: int, lengthscale: float, rng: np.random.Generator
) -> np.ndarray:
    """A random sum of squared-exponential bumps at ``points``, rescaled to [0, 1]."""
    centres = rng.uniform(size=(num_centres, points.shape[1]))
    weights = rng.normal(size=num_centres)
    sq_dist = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    raw = np.exp(-sq_dist / (2 * lengthscale**2)) @ weights
    return (raw - raw.min()) / (raw.max() - raw.min())


def grid_problem(
    points_per_dim: int = 22,
    dim: int = 3,
    num_centres: int = 15,
    lengthscale: float = 0.25,
    noise_std: float = 0.1,
    seed: int = 0,
) -> DiscreteProblem:
    """An RKHS function (as :func:`rkhs_problem`) on a regular grid of ``points_per_dim**dim``
    points in [0, 1]^dim: the MINI-META paper's synthetic setting uses a 22^3 grid."""
    axes = [np.linspace(0.0, 1.0, points_per_dim)] * dim
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, dim)
    values = _rkhs_values(points, num_centres, lengthscale, np.random.default_rng(seed))
    return DiscreteProblem(f"grid{points_per_dim}^{dim}", points, values, noise_std)


def _trieste_problem(
    name: str,
    fn: Callable[[tf.Tensor], tf.Tensor],
    dim: int,
    num_points: int,
    noise_std: float,
    seed: int,
) -> DiscreteProblem:
    points = np.random.default_rng(seed).uniform(size=(num_points, dim))
    values = fn(tf.constant(points)).numpy()[:, 0]
    return DiscreteProblem(name, points, values, noise_std)


def get_problem(name: str, num_points: Optional[int] = None, seed: int = 0) -> DiscreteProblem:
    """A built-in problem by name: ``rkhs8`` (default 20,000 points), ``rkhs3`` (3,000),
    ``grid3`` (a 22^3 grid, noise std 0.1),
    ``hartmann6`` (10,000, noise 0.5 std as in S-GP-TS) or ``shekel4`` (10,000)."""
    if name == "rkhs8":
        return rkhs_problem(num_points or 20_000, 8, seed=seed)
    if name == "rkhs3":
        return rkhs_problem(num_points or 3_000, 3, num_centres=15, noise_std=0.1, seed=seed)
    if name == "grid3":
        return grid_problem(22, 3, seed=seed)
    if name == "hartmann6":
        return _trieste_problem(name, Hartmann6.objective, 6, num_points or 10_000, 0.5**0.5, seed)
    if name == "shekel4":
        return _trieste_problem(name, Shekel4.objective, 4, num_points or 10_000, 0.1**0.5, seed)
    raise UsageError(f"unknown problem {name!r}: choose from rkhs8, rkhs3, hartmann6, shekel4")
