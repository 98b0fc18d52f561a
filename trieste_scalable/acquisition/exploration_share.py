r"""A decaying share of uniformly random points beside any rule's batch, so that hyperparameters
fitted on the data a UCB rule collects stay honest (issue 25; ``docs/fitting.md``).

Why. A UCB rule whose kernel and noise are refitted (MAP) on its own data collects points where
it exploits; on a noisy problem that clustered data is best explained by a small signal variance
and a large noise, the narrow bounds that follow keep the rule exploiting, and the fit never
sees the data that would correct it (measured on a 22^3 grid, noise std half the function's
range: GP-UCB's kernel variance ends at 0.007 against 0.057 fitted on uniform random data, for
Trieste's batch UCB as for ours). Adaptive sampling biases the fit; points chosen at random do
not (Ha, Nguyen, Zhang & van den Hengel, "Provably efficient Bayesian optimization with
unbiased Gaussian process hyperparameter estimation", 2023, add random points for this reason
and keep a sublinear regret bound).

What. :class:`ExplorationShare` asks the wrapped rule for its batch of :math:`B` points and
appends :math:`K \sim \mathrm{Binomial}(B, \rho\,\min(1, c / (2\sqrt n)))` candidates drawn
uniformly from the search space, where :math:`n` counts the evaluations so far and
:math:`\rho = \sigma_n^2 / (\sigma_f^2 + \sigma_n^2)` is the share of an observation's variance
the model's current fit calls noise: an exploration probability :math:`\epsilon_n =
\rho\,c/(2\sqrt n)`, so at most about :math:`c\sqrt T` of :math:`T` evaluations are random (e.g.
:math:`c = 3`: 73 of 600, fewer than 12 %). The random points add at most
:math:`c\sqrt T \Delta_{\max}` to the cumulative regret, which keeps the rule's
:math:`\tilde O(\sqrt{T\gamma_T})` bound sublinear; the rule's own points keep their guarantee
only as far as the fitted hyperparameters are right, which is what the random points are for.

Why :math:`\rho`. The fits go wrong by calling the signal noise; that needs a noise the fit can
move, and a noise comparable with the signal. Where the noise is known and small (fixed at
:math:`\sigma_f^2/100`, Trieste's ``build_gpr`` default: :math:`\rho \approx 0.01`) the rule
explores almost never and keeps its own regret; where the fit calls most of the data noise,
rightly or not, it explores at nearly the full rate. Ungated, on issue 13's problems (noise
not fitted, 150 evaluations, where no fit collapses; ``benchmarks/fitting.py --remedies``) our
UCB rules with both remedies scored 1.22-1.25x Trieste's regret on one of the two, with about
26 of the 150 points random at c = 3. A model that does not expose a kernel variance and a
noise gets :math:`\rho = 1`.

The draws are seeded by ``(seed, n)``: no state, so a resumed campaign draws what it would have.
Random points are not hallucinated into the wrapped rule's batch (they are random; conditioning
on them would only narrow the bounds near them).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import numpy as np
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.models import ProbabilisticModel
from trieste.space import DiscreteSearchSpace, SearchSpace
from trieste.types import Tag, TensorType

from ..models.variance_optimism import noise_share
from ..numerics.bits import take_rows
from .candidates import candidate_rows, num_candidates
from .wrapped_rule import WrapsRule, transformed


class ExplorationShare(WrapsRule, AcquisitionRule[Any, SearchSpace, ProbabilisticModel]):
    """Any rule's batch plus a decaying share of uniformly random points (module docstring).

    :param rule: The rule whose batches are extended (any Trieste rule, stateful or not; its
        state passes through untouched).
    :param rate: :math:`c`: the exploration probability after :math:`n` evaluations is
        :math:`\\rho\\min(1, c/(2\\sqrt n))`, :math:`\\rho` the fit's noise share (module
        docstring): at most about :math:`c\\sqrt T` random points in :math:`T`.
    :param seed: Seed of the draws (with :math:`n`).
    :raise ValueError: If ``rate`` is not finite and positive.
    """

    def __init__(self, rule: AcquisitionRule, rate: float = 3.0, seed: int = 0):
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"the exploration rate must be finite and > 0, got {rate}")
        self._rule, self._rate, self._seed = rule, rate, seed

    def probability(self, num_evaluations: int, noise_share: float = 1.0) -> float:
        """:math:`\\epsilon_n = \\rho\\,\\min(1, c/(2\\sqrt n))` (:math:`\\rho` before any
        evaluation), :math:`\\rho` = ``noise_share`` in [0, 1]."""
        return noise_share * min(1.0, self._rate / (2.0 * math.sqrt(max(num_evaluations, 1))))

    def acquire(
        self,
        search_space: SearchSpace,
        models: Mapping[Tag, ProbabilisticModel],
        datasets: Optional[Mapping[Tag, Dataset]] = None,
    ) -> Any:
        """The wrapped rule's points [B, D] followed by the random ones [K, D] (inside its
        ``State`` function if it returns one; ``datasets`` count the evaluations n)."""
        num_evaluations = sum(int(d.query_points.shape[0]) for d in (datasets or {}).values())
        share = min((noise_share_of(model) for model in models.values()), default=1.0)
        result = self._rule.acquire(search_space, models, datasets)
        return transformed(
            result, lambda points: self._extend(points, search_space, num_evaluations, share)
        )

    def filter_datasets(
        self, models: Mapping[Tag, ProbabilisticModel], datasets: Mapping[Tag, Dataset]
    ) -> Any:
        return self._rule.filter_datasets(models, datasets)

    def _extend(
        self, points: TensorType, search_space: SearchSpace, n: int, share: float
    ) -> TensorType:
        """``points`` [B, D] followed by the random ones [K, D]."""
        rng = np.random.default_rng([self._seed, n])
        count = int(rng.binomial(int(points.shape[0]), self.probability(n, share)))
        if count == 0:
            return points
        if isinstance(search_space, DiscreteSearchSpace):
            index = rng.integers(num_candidates(search_space), size=count)
            drawn = take_rows(candidate_rows(search_space), index)
        else:
            drawn = search_space.sample(count, seed=int(rng.integers(2**31 - 1)))
        return tf.concat([points, tf.cast(drawn, points.dtype)], axis=0)

    def __repr__(self) -> str:
        return f"ExplorationShare({self._rule!r}, rate={self._rate})"


def noise_share_of(model: ProbabilisticModel) -> float:
    """:func:`~trieste_scalable.models.variance_optimism.noise_share` of ``model``'s kernel
    ``variance`` and ``get_observation_noise``; 1 where the model exposes neither (any Trieste
    or GPflow model with a stationary kernel does)."""
    try:
        signal = float(np.max(model.get_kernel().variance.numpy()))  # type: ignore[attr-defined]
        noise = float(model.get_observation_noise())  # type: ignore[attr-defined]
    except (AttributeError, NotImplementedError):
        return 1.0
    return noise_share(signal, noise)
