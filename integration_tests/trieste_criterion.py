"""Trieste's own integration criterion (``tests/integration/test_ask_tell_optimization.py`` and
``test_bayesian_optimization.py`` in Trieste's repository, read, not copied) applied to the
rules of the README's table, over our models built as Trieste builds its GPR: Matern-5/2 with
Trieste's priors, the noise variance fixed at 1e-7, 5 initial points.

On ScaledBranin the best point must lie within 5 % (relative, per coordinate) of one of its
minimisers and its value within ``rtol`` 0.5 % of the minimum; on SimpleQuadratic within 0.05
(absolute) and 5 %. Step counts are Trieste's for rules of the same kind (EGO's 20 for the
sequential ones, LocalPenalization's 10 for the batch ones); SimpleQuadratic gets at most 5,
as in Trieste. ``reload`` pickles the optimizer's state and rebuilds it from the record after
every ask, as Trieste's ``reload_state`` cases do.

Shared by ``test_trieste_criterion.py`` and ``benchmarks/trieste_criterion.py``.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np
import tensorflow as tf
from trieste.acquisition import LocalPenalization, NegativeLowerConfidenceBound
from trieste.acquisition.rule import EfficientGlobalOptimization
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.bayesian_optimizer import BayesianOptimizer
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression, build_gpr
from trieste.objectives import ScaledBranin, SimpleQuadratic
from trieste.objectives.utils import mk_observer
from trieste.observer import OBJECTIVE

from trieste_scalable.acquisition import (
    BBKB,
    BKB,
    GPBUCB,
    BatchThompsonSampling,
    MiniGPEI,
    MiniGPUCB,
)
from trieste_scalable.models import (
    ExactDictionary,
    build_adaptive_svgp,
    build_nystrom_gpr,
    build_replicated_gpr,
)

NOISE_VARIANCE = 1e-7
"""Trieste's likelihood variance in these tests (noise-free objectives)."""


@dataclass(frozen=True)
class Case:
    """A rule of the README's table with its Trieste step count and model builder."""

    steps: int
    rule: Callable[[], Any]
    model: Callable[[Dataset], Any]


def _space() -> Any:
    return ScaledBranin.search_space


def _nystrom(data: Dataset) -> Any:
    return build_nystrom_gpr(data, _space(), likelihood_variance=NOISE_VARIANCE)


def _exact(data: Dataset) -> Any:
    return build_nystrom_gpr(
        data, _space(), likelihood_variance=NOISE_VARIANCE, dictionary=ExactDictionary()
    )


def _replicated(data: Dataset) -> Any:
    return build_replicated_gpr(data, _space(), likelihood_variance=NOISE_VARIANCE)


def _svgp(data: Dataset) -> Any:
    return build_adaptive_svgp(data, _space(), likelihood_variance=NOISE_VARIANCE)


def _trieste_gpr(data: Dataset) -> Any:
    return GaussianProcessRegression(build_gpr(data, _space(), likelihood_variance=NOISE_VARIANCE))


def _local_penalization() -> Any:
    return EfficientGlobalOptimization(
        LocalPenalization(_space()).using(OBJECTIVE), num_query_points=3
    )


def _trieste_ucb() -> Any:
    return EfficientGlobalOptimization(NegativeLowerConfidenceBound(2.0))


TRIESTE_CASES: dict[str, Case] = {
    "Trieste EGO": Case(20, EfficientGlobalOptimization, _trieste_gpr),
    "Trieste UCB (beta 2)": Case(20, _trieste_ucb, _trieste_gpr),
    "Trieste LocalPenalization": Case(10, _local_penalization, _trieste_gpr),
}
"""Trieste's own rules over its GPR, the references the rates are read beside (its UCB with
the width of BKB's and MINI-GP-UCB's default, :math:`\\beta = 2`, beside those two)."""

CASES: dict[str, Case] = {
    "BKB": Case(20, BKB, _nystrom),
    "BBKB": Case(10, BBKB, _nystrom),
    "GP-BUCB": Case(10, GPBUCB, _exact),
    "MINI-GP-UCB": Case(20, MiniGPUCB, _replicated),
    "MINI-GP-EI": Case(20, MiniGPEI, _replicated),
    "batch TS": Case(10, lambda: BatchThompsonSampling(3), _svgp),
}


@dataclass(frozen=True)
class Outcome:
    """One run: whether it met the criterion, its best value and its batch sizes."""

    passed: bool
    best_value: float
    batch_sizes: tuple[int, ...]


def run_case(
    name: str,
    problem: Literal["branin", "quadratic"],
    seed: int,
    loop: Literal["ask_tell", "reload", "bayesian_optimizer"] = "ask_tell",
) -> Outcome:
    """One run of ``CASES[name]`` on ``problem`` from ``seed``, judged by Trieste's criterion."""
    case = {**CASES, **TRIESTE_CASES}[name]
    tf.random.set_seed(seed)
    np.random.seed(seed)
    objective = ScaledBranin if problem == "branin" else SimpleQuadratic
    steps = case.steps if problem == "branin" else min(case.steps, 5)
    space = _space()
    observer = mk_observer(objective.objective)
    data = observer(space.sample(5))
    model = case.model(data)
    sizes: list[int] = []
    if loop == "bayesian_optimizer":

        def record(datasets: Any, models: Any, state: Any) -> bool:
            sizes.append(int(datasets["OBJECTIVE"].query_points.shape[0]))
            return False

        result = BayesianOptimizer(observer, space).optimize(
            steps, data, model, case.rule(), track_state=False, early_stop_callback=record
        )
        final = result.try_get_final_dataset()
        growth = np.diff([5] + sizes + [int(final.query_points.shape[0])])
        sizes = [int(size) for size in growth if size]  # the callback also sees the start
    else:
        optimizer = AskTellOptimizer(space, data, model, case.rule())
        for _ in range(steps):
            points = optimizer.ask()
            sizes.append(int(points.shape[0]))
            if loop == "reload":
                state = pickle.loads(pickle.dumps(optimizer.to_state()))
                optimizer = AskTellOptimizer.from_record(state.record, space, case.rule())
            optimizer.tell(observer(points))
        final = optimizer.to_result().try_get_final_dataset()
    best = int(tf.argmin(final.observations[:, 0]))
    x, y = final.query_points[best].numpy(), float(final.observations[best, 0])
    minimisers, minimum = objective.minimizers.numpy(), float(objective.minimum[0])
    if problem == "branin":
        near = np.all(np.abs((x - minimisers) / minimisers) < 0.05, axis=-1)
        close = abs(y - minimum) <= 0.005 * abs(minimum)
    else:
        near = np.all(np.abs(x - minimisers) < 0.05, axis=-1)
        close = abs(y - minimum) <= 0.05 * abs(minimum)
    return Outcome(bool(np.any(near) and close), y, tuple(int(s) for s in sizes))
