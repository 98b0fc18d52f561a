"""A campaign over a built-in synthetic problem (``trieste-scalable optimize``): the problem,
its GP's fixed hyperparameters and the rule of an :class:`~.spec.campaign.OptimizeSpec`."""

from __future__ import annotations

import logging
from typing import Any

from .engine.loop import CampaignResult
from .spec.campaign import OptimizeSpec

_log = logging.getLogger(__name__)


def run_optimize(spec: OptimizeSpec) -> CampaignResult:
    """Start or resume the campaign of a resolved specification
    (:func:`~.spec.defaults.resolved`).

    :raise UsageError: On more evaluations than random search has candidates, or a bad campaign
        directory.
    """
    from ..problems import get_problem
    from .algorithms.builders import build
    from .run.session import run_session

    problem = get_problem(spec.problem, spec.num_candidates, seed=spec.seed)
    spec.check_counts(len(problem.points))
    _log.info(
        f"{spec.algorithm} on {problem.name}: {len(problem.points)} candidates in "
        f"d={problem.points.shape[1]}, budget {spec.budget}; logs in {spec.logdir}"
    )

    def models(data: Any, remaining: int) -> tuple[Any, Any]:
        return build(
            spec.rule,
            data,
            lengthscale=spec.lengthscale,
            kernel_variance=spec.kernel_variance,
            noise_variance=spec.noise_variance,
            width=spec.confidence_width(),
            batch_size=spec.batch,
            max_batch_size=spec.max_batch_size,
            fixed_batches=spec.batch_policy == "fixed",
            fit_hyperparameters=spec.fit,
            seed=spec.seed,
            budget=remaining,
            num_inducing=spec.inducing,
            ratio_threshold=spec.ratio_threshold,
            regulariser=spec.regulariser,
            exploration_rate=spec.exploration_rate,
            variance_optimism=spec.variance_optimism,
        )

    return run_session(problem, spec, models)
