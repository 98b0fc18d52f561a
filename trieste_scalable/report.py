"""Campaign outputs a person reads: a CSV of every evaluation (appended batch by batch, so an
interrupted campaign loses nothing and can resume from it) and a PNG summary plot."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import tensorflow as tf
from trieste.data import Dataset

from .campaign import CampaignResult
from .problems import DiscreteProblem
from .problems.screening import ScreeningProblem


class EvaluationLog:
    """``evaluations.csv``: one row per evaluation with its batch (0 = initial design), candidate
    index, the candidate (SMILES for screening, coordinates otherwise), the observation and the
    noise-free value.

    :param path: The CSV file.
    :param problem: The problem whose candidates are logged.
    """

    def __init__(self, path: Path, problem: DiscreteProblem):
        self.path = path
        self.problem = problem

    def _header(self) -> list[str]:
        if isinstance(self.problem, ScreeningProblem):
            return ["batch", "index", "smiles", "observed", "score"]
        dim = self.problem.points.shape[1]
        return ["batch", "index"] + [f"x{i}" for i in range(dim)] + ["observed", "true"]

    def start(self, initial: Dataset) -> None:
        """Create the file with the initial design as batch 0."""
        with open(self.path, "w", newline="") as handle:
            csv.writer(handle).writerow(self._header())
        self.append(0, initial)

    def append(self, batch: int, data: Dataset) -> None:
        """Append one batch of observations and flush it to disk."""
        ids = self.problem.indices(data.query_points)
        observed = data.observations.numpy()[:, 0]
        true = self.problem.values[ids]
        with open(self.path, "a", newline="") as handle:
            writer = csv.writer(handle)
            for i, row_id in enumerate(ids):
                if isinstance(self.problem, ScreeningProblem):
                    what = [self.problem.labels[row_id]]
                    value = f"{-true[i]:.6g}"
                else:
                    what = [f"{v:.6g}" for v in self.problem.points[row_id]]
                    value = f"{true[i]:.6g}"
                writer.writerow([batch, int(row_id), *what, f"{observed[i]:.10g}", value])

    def read(self) -> tuple[Dataset, np.ndarray]:
        """The logged evaluations as a dataset, and the batch of each row.

        :raise ValueError: If the file is missing, malformed or names unknown candidates.
        """
        if not self.path.is_file():
            raise ValueError(f"nothing to resume: {self.path} does not exist")
        with open(self.path, newline="") as handle:
            rows = list(csv.DictReader(handle))
        if not rows or "index" not in rows[0] or "observed" not in rows[0]:
            raise ValueError(f"{self.path} is not an evaluation log of this tool")
        ids = np.array([int(row["index"]) for row in rows])
        if ids.min() < 0 or ids.max() >= len(self.problem.points):
            raise ValueError(f"{self.path} names candidates outside this problem's library")
        observed = np.array([float(row["observed"]) for row in rows])
        batches = np.array([int(row["batch"]) for row in rows])
        points = tf.constant(self.problem.points[ids])
        return Dataset(points, tf.constant(observed[:, None], dtype=points.dtype)), batches


def plot_summary(path: Path, problem: DiscreteProblem, result: CampaignResult, title: str) -> None:
    """Best true value so far (and recall, for screening), batch size and model size."""
    import matplotlib

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
