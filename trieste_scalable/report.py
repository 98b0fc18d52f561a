"""Campaign outputs a person reads: a CSV of every evaluation and a PNG summary plot."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .campaign import CampaignResult
from .problems import DiscreteProblem


def write_evaluations_csv(path: Path, problem: DiscreteProblem, result: CampaignResult) -> None:
    """One row per evaluation: batch (0 = initial design), inputs, observation, true value."""
    x = result.dataset.query_points.numpy()
    y = result.dataset.observations.numpy()[:, 0]
    true = problem.minimum + problem.regret(result.dataset.query_points)
    batches = np.concatenate(
        [np.zeros(result.num_initial, dtype=int)]
        + [np.full(size, i + 1) for i, size in enumerate(result.batch_sizes)]
    )
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["batch"] + [f"x{i}" for i in range(x.shape[1])] + ["observed", "true"])
        for row in zip(batches, x, y, true):
            writer.writerow(
                [row[0], *(f"{v:.6g}" for v in row[1]), f"{row[2]:.6g}", f"{row[3]:.6g}"]
            )


def plot_summary(path: Path, problem: DiscreteProblem, result: CampaignResult, title: str) -> None:
    """Best true value so far, batch size and dictionary size against evaluations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evaluated = result.dataset.query_points[result.num_initial :]
    true = problem.minimum + problem.regret(evaluated)
    ends = np.cumsum(result.batch_sizes)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    axes[0].plot(np.arange(1, len(true) + 1), np.minimum.accumulate(true), label="best so far")
    axes[0].axhline(problem.minimum, color="k", ls="--", lw=0.8, label="optimum")
    axes[0].set(xlabel="evaluations", ylabel="true objective (lower is better)")
    axes[0].legend()
    axes[1].step(ends, result.batch_sizes, where="post")
    axes[1].set(xlabel="evaluations", ylabel="batch size")
    axes[2].plot(ends, result.dictionary_sizes)
    axes[2].set(xlabel="evaluations", ylabel="dictionary size")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
