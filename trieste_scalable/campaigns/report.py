"""The report of a command-line campaign, the same for every campaign: a text summary on stdout
and ``summary.png``, both read from the whole log (resumed runs included)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from ..problems import DiscreteProblem
from ..problems.screening import ScreeningProblem
from ..problems.top_k import TOP_K, top_k_found
from .engine import CampaignResult
from .records import EvaluationLog, LoggedEvaluations


def report(
    log: EvaluationLog,
    problem: DiscreteProblem,
    result: CampaignResult,
    title: str,
    seconds: float,
    on_workers: bool,
) -> None:
    """Print the summary of the campaign of ``log`` and write ``summary.png`` beside it (with
    ``on_workers``, how busy this run kept its workers)."""
    logdir, logged = log.path.parent, log.read()
    told = ~logged.failed
    after = logged.batches > 0
    busy = f"; its {result.num_workers} workers {result.utilisation:.0%} busy" if on_workers else ""
    print(
        f"done in {seconds:.1f}s: {int(told.sum())} evaluations told, {int((~told).sum())} "
        f"failed, in {int(np.unique(logged.batches[after]).size)} batches{busy}"
    )
    known = bool(np.all(np.isfinite(problem.values)))
    if isinstance(problem, ScreeningProblem):
        if problem.values_known:
            ids = logged.ids[told]
            found = top_k_found(problem.values, ids)
            print(
                f"recall of the library's top 1%: {problem.recall(ids, 0.01):.3f}, "
                f"top 10%: {problem.recall(ids, 0.1):.3f}; of its top {TOP_K}: "
                f"{found.smiles:.2f} found (SMILES), {found.scores:.2f} (scores)"
            )
        print("best molecules found (score, SMILES):")
        observed, ids = logged.observed[told], logged.ids[told]
        for n in np.argsort(observed)[:5]:
            print(f"  {log.score(int(ids[n]), observed[n]):.4g}  {problem.labels[ids[n]]}")
    elif known and after.any():
        regret = problem.values[logged.ids[after]] - problem.minimum
        uniform = float(problem.values.mean() - problem.minimum)
        print(
            f"best true value {problem.minimum + regret.min():.4f} (optimum "
            f"{problem.minimum:.4f}); cumulative regret / uniform random = "
            f"{regret.mean() / uniform:.3f}"
        )
    summary = "summary.png"
    if not plot_summary(logdir / summary, problem, logged, log.score, result, title):
        summary = "no summary.png: matplotlib is not installed (the [plots] extra)"
    print(
        f"wrote {logdir}/evaluations.csv and {summary}; watch with: tensorboard --logdir {logdir}"
    )


def plot_summary(
    path: Path,
    problem: DiscreteProblem,
    logged: LoggedEvaluations,
    score: Callable[[int, float], float],
    result: CampaignResult,
    title: str,
) -> bool:
    """Best value so far (screening: of ``score``, the log's value column), recall where the
    library's values are known, evaluations per batch and the model's size per acquisition (this
    run's); ``False`` (nothing written) without matplotlib, the ``plots`` extra."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    told = ~logged.failed
    screening = isinstance(problem, ScreeningProblem)
    recall = isinstance(problem, ScreeningProblem) and problem.values_known
    fig, axes = plt.subplots(1, 4 if recall else 3, figsize=(17 if recall else 13, 3.6))
    count = np.arange(1, told.sum() + 1)
    if screening:  # the log's score column: the user's own units and direction
        scores = [score(int(i), y) for i, y in zip(logged.ids[told], logged.observed[told])]
        higher = problem.higher_is_better
        best = np.maximum.accumulate if higher else np.minimum.accumulate
        axes[0].plot(count, best(scores) if scores else [], label="best")
        direction = "higher" if higher else "lower"
        axes[0].set(xlabel="evaluations told", ylabel=f"best score so far ({direction} is better)")
    else:
        true = problem.values[logged.ids[told]]
        axes[0].plot(count, np.minimum.accumulate(true), label="best")
        axes[0].axhline(problem.minimum, color="k", ls="--", lw=0.8, label="optimum")
        axes[0].set(xlabel="evaluations told", ylabel="best true value (lower is better)")
    axes[0].legend()
    batches, sizes = np.unique(logged.batches[logged.batches > 0], return_counts=True)
    axes[1].step(batches, sizes, where="post")
    axes[1].set(xlabel="batch", ylabel="evaluations in the batch")
    axes[2].plot(np.arange(1, len(result.model_sizes) + 1), result.model_sizes)
    axes[2].set(xlabel="acquisition (this run)", ylabel="dictionary / inducing / unique points")
    if recall:
        assert isinstance(problem, ScreeningProblem)
        ids = logged.ids[told]
        for fraction in (0.01, 0.1):
            axes[3].plot(count, problem.recall_curve(ids, fraction), label=f"top {fraction:.0%}")
        axes[3].set(xlabel="evaluations told (with the initial design)", ylabel="recall")
        axes[3].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
