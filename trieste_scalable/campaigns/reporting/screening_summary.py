"""``summary.png`` of a screening campaign, panels a chemist reads (MolPAL's measures): the
running mean of the best N scores, the scores of each batch against the library's (where the
library's are known), the share of the library's top-k found (where known), and the batch sizes
where they vary (adaptive batches)."""

from __future__ import annotations

import heapq
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ...problems.top_k import TOP_K

BEST_N = (1, 10, 100)


def plot_screening(
    path: Path,
    scores: np.ndarray,
    batches: np.ndarray,
    higher_is_better: bool,
    title: str,
    library: Optional[np.ndarray] = None,
    top_found: Optional[np.ndarray] = None,
    proposed: Optional[np.ndarray] = None,
) -> bool:
    """Write the panels (module docstring); ``False`` (nothing written) without matplotlib.

    :param scores: The evaluations' scores in the user's units, in the order told [N].
    :param batches: Their batches [N] (0 the initial design).
    :param library: The library's scores [A], where known.
    :param top_found: Of the library's top ``TOP_K``, the share found
        after each evaluation [N], where known.
    :param proposed: The batch of every evaluation, failed ones included (default
        ``batches``): the batch sizes.
    """
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    proposed = batches if proposed is None else proposed
    numbers, sizes = np.unique(proposed[proposed > 0], return_counts=True)
    varying = sizes.size > 1 and len(set(sizes[:-1].tolist())) > 1  # the last may be cut
    panels = 2 + (top_found is not None) + varying
    fig, grid = plt.subplots(1, panels, figsize=(4.4 * panels, 3.6), squeeze=False)
    axes = list(grid[0])
    direction = "higher" if higher_is_better else "lower"
    _best_n(axes.pop(0), scores, higher_is_better, direction)
    _batches(axes.pop(0), scores, batches, library, direction)
    if top_found is not None:
        axis = axes.pop(0)
        axis.plot(np.arange(1, len(top_found) + 1), top_found)
        axis.set(xlabel="evaluations told", ylabel=f"share of the library's top {TOP_K} found")
        axis.set_ylim(0, 1)
    if varying:
        axis = axes.pop(0)
        axis.bar(numbers, sizes)
        axis.set(xlabel="batch", ylabel="evaluations in the batch")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _best_n(axis: Any, scores: np.ndarray, higher: bool, direction: str) -> None:
    """The running mean of the best N scores, for each N of :data:`BEST_N` reached."""
    oriented = -scores if higher else scores  # lower is better here
    for n in BEST_N:
        if len(scores) < n:
            break
        means = running_best_mean(oriented, n)
        axis.plot(np.arange(n, len(scores) + 1), -means if higher else means, label=f"best {n}")
    axis.set(xlabel="evaluations told", ylabel=f"mean of the best N ({direction} is better)")
    axis.legend()


def running_best_mean(values: np.ndarray, n: int) -> np.ndarray:
    """The mean of the ``n`` lowest of ``values[:m]`` for m = n, ..., N [N - n + 1] (a heap of
    the n lowest: N log n, where sorting each prefix would be N² log N)."""
    heap = [-v for v in values[:n].tolist()]  # a max-heap of the n lowest, negated
    heapq.heapify(heap)
    total, means = float(np.sum(values[:n])), [float(np.mean(values[:n]))]
    for value in values[n:].tolist():
        if value < -heap[0]:
            total += value + heapq.heapreplace(heap, -value)
        means.append(total / n)
    return np.asarray(means)


def _batches(
    axis: Any,
    scores: np.ndarray,
    batches: np.ndarray,
    library: Optional[np.ndarray],
    direction: str,
) -> None:
    """Each batch's scores as a box, the library's first where known."""
    numbers = np.unique(batches)
    groups = [scores[batches == b] for b in numbers]
    names = [str(int(b)) for b in numbers]
    if library is not None:
        groups, names = [library[np.isfinite(library)], *groups], ["library", *names]
    axis.boxplot(groups, showfliers=False)
    axis.set_xticks(np.arange(1, len(names) + 1), names, rotation=90 if len(names) > 12 else 0)
    axis.set(xlabel="batch (0: initial design)", ylabel=f"score ({direction} is better)")
