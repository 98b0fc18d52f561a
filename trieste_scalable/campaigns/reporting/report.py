"""The report of a command-line campaign, the same for every campaign: a text summary on stdout
and ``summary.png``, both read from the whole log (resumed runs included)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ...problems import DiscreteProblem
from ...problems.campaign_problem import CampaignProblem, MoleculeProblem
from ...problems.top_k import TOP_K, top_k_curve
from ..directory.records import EvaluationLog, LoggedEvaluations
from ..engine.loop import CampaignResult
from .molecule_pictures import Found, write_best_molecules
from .screening_summary import plot_screening

_log = logging.getLogger(__name__)


def report(
    log: EvaluationLog,
    problem: CampaignProblem,
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
    _log.info(
        f"done in {seconds:.1f}s: {int(told.sum())} evaluations told, {int((~told).sum())} "
        f"failed, in {_count(int(np.unique(logged.batches[after]).size), 'batch')}{busy}"
    )
    if result.exhausted:
        _log.info(
            f"the campaign ended before its budget, after {len(result.evaluations)} evaluations "
            "in this run: every candidate the rule can reach has been evaluated"
        )
    known = problem.values.size > 0 and bool(np.all(np.isfinite(problem.values)))
    if isinstance(problem, MoleculeProblem):
        if problem.values_known:
            found = problem.metrics(logged.ids[told])
            _log.info(
                f"recall of the library's top 1%: {found['recall_top1pct']:.3f}, "
                f"top 10%: {found['recall_top10pct']:.3f}; of its top {TOP_K}: "
                f"{found[f'top{TOP_K}_smiles']:.2f} found (SMILES), "
                f"{found[f'top{TOP_K}_scores']:.2f} (scores)"
            )
        elif found := problem.metrics(logged.ids[told]):
            _log.info(_grouped(found))
        _log.info("best molecules found (score, SMILES):")
        observed, ids = logged.observed[told], logged.ids[told]
        for n in np.argsort(observed)[:5]:
            name = problem.candidate_name(int(ids[n]))
            _log.info(
                f"  {log.score(int(ids[n]), observed[n]):.4g}  {problem.labels[ids[n]]}"
                f"{'  ' + name if name else ''}"
            )
    elif isinstance(problem, DiscreteProblem) and known and after.any():
        regret = problem.values[logged.ids[after]] - problem.minimum
        uniform = float(problem.values.mean() - problem.minimum)
        _log.info(
            f"best true value {problem.minimum + regret.min():.4f} (optimum "
            f"{problem.minimum:.4f}); cumulative regret / uniform random = "
            f"{regret.mean() / uniform:.3f}"
        )
    summary = "summary.png"
    if isinstance(problem, MoleculeProblem):
        summary = _molecule_pictures(log, problem, logged, title)
    elif isinstance(problem, DiscreteProblem) and not plot_summary(
        logdir / summary, problem, logged, result, title
    ):
        summary = "no summary.png: matplotlib is not installed (the [plots] extra)"
    _log.info(
        f"wrote {logdir}/evaluations.csv, {summary}; watch with: tensorboard --logdir {logdir}"
    )


def _count(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless one (``1 batch``, ``3 batches``)."""
    return f"{number} {noun}{'' if number == 1 else 'es' if noun.endswith('ch') else 's'}"


def _molecule_pictures(
    log: EvaluationLog, problem: MoleculeProblem, logged: LoggedEvaluations, title: str
) -> str:
    """A screen's ``summary.png`` (:mod:`.screening_summary`) and ``best_molecules.png``
    (:mod:`.molecule_pictures`); what to add to the line that names the summary."""
    told = np.flatnonzero(~logged.failed)  # in the order told
    ids, batches = logged.ids[told], logged.batches[told]
    scores = np.array([log.score(int(i), y) for i, y in zip(ids, logged.observed[told])])
    higher, library, found = problem.higher_is_better, None, None
    if problem.values_known:
        library = np.array([problem.user_value(v) for v in problem.values])
        found = top_k_curve(problem.values, ids)
    logdir = log.path.parent
    labels = [problem.labels[int(i)] for i in ids]
    names = [problem.candidate_name(int(i)) for i in ids]
    found_molecules = [
        Found(s, float(v), int(b), name=name)
        for s, v, b, name in zip(labels, scores, batches, names)
    ]
    pictured = write_best_molecules(logdir, found_molecules, higher, len(ids))
    also = f", {pictured.name}" if pictured else ""
    args = (scores, batches, higher, title, library, found, logged.batches)
    if not plot_screening(logdir / "summary.png", *args):
        return f"no summary.png: matplotlib is not installed (the [plots] extra){also}"
    return f"summary.png{also}"


def plot_summary(
    path: Path,
    problem: DiscreteProblem,
    logged: LoggedEvaluations,
    result: CampaignResult,
    title: str,
) -> bool:
    """Best value so far, evaluations per batch and the model's size per acquisition (this
    run's) of a campaign over a synthetic problem (a screen's: :mod:`.screening_summary`);
    ``False`` (nothing written) without matplotlib, the ``plots`` extra."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    told = ~logged.failed
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    count = np.arange(1, told.sum() + 1)
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
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _grouped(metrics: dict[str, float]) -> str:
    """``a/x``, ``a/y``, ``b`` as ``a: x 1, y 2; b: 3``."""
    groups: dict[str, list[str]] = {}
    for name, value in metrics.items():
        head, _, tail = name.partition("/")
        groups.setdefault(head.replace("_", " "), []).append(f"{tail} {value:g}".strip())
    return "; ".join(f"{head}: {', '.join(values)}" for head, values in groups.items())
