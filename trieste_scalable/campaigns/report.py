"""The campaign summary a person looks at: a PNG plot (the evaluation log is
:mod:`trieste_scalable.campaigns.evaluation_log`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..problems import DiscreteProblem
from ..problems.screening import ScreeningProblem
from .campaign import CampaignResult


def plot_summary(path: Path, problem: DiscreteProblem, result: CampaignResult, title: str) -> bool:
    """Best true value so far (and recall, for screening), batch size and model size; ``False``
    (nothing written) without matplotlib, the ``plots`` extra."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evaluated = result.dataset.query_points[result.num_initial :]
    true = problem.minimum + problem.regret(evaluated)
    ends = np.cumsum(result.batch_sizes)
    screening = isinstance(problem, ScreeningProblem)
    fig, axes = plt.subplots(1, 4 if screening else 3, figsize=(17 if screening else 13, 3.6))
    sign = -1.0 if screening else 1.0  # screening reports scores (higher is better)
    axes[0].plot(np.arange(1, len(true) + 1), sign * np.minimum.accumulate(true), label="best")
    axes[0].axhline(sign * problem.minimum, color="k", ls="--", lw=0.8, label="library optimum")
    label = "best score so far (higher is better)" if screening else "best true value (lower)"
    axes[0].set(xlabel="evaluations", ylabel=label)
    axes[0].legend()
    axes[1].step(ends, result.batch_sizes, where="post")
    axes[1].set(xlabel="evaluations", ylabel="batch size")
    axes[2].plot(ends, result.model_sizes)
    axes[2].set(xlabel="evaluations", ylabel="dictionary / inducing / unique points")
    if isinstance(problem, ScreeningProblem):
        ids = problem.indices(result.dataset.query_points)  # initial design included
        for fraction in (0.01, 0.1):
            axes[3].plot(
                np.arange(1, ids.size + 1),
                problem.recall_curve(ids, fraction),
                label=f"top {fraction:.0%}",
            )
        axes[3].set(xlabel="evaluations (with the initial design)", ylabel="recall")
        axes[3].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
