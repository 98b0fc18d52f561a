"""MolPAL's two measures of a screen (Graff, Shakhnovich & Coley, Chem. Sci. 2021): of the
library's true top-k, the share whose molecules were evaluated ("SMILES") and the share of
their scores matched by the k best evaluated scores ("scores", robust to ties at the cut-off:
docking scores have 0.1 kcal/mol resolution, so many molecules share the k-th score)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

TOP_K = 100
"""The k of the metrics a screening campaign reports (MolPAL's for its 10k-50k libraries)."""


@dataclass(frozen=True)
class TopKFound:
    """Shares in [0, 1] of the true top-k found (module docstring)."""

    smiles: float
    scores: float


def top_k_found(values: np.ndarray, evaluated: np.ndarray, k: int = TOP_K) -> TopKFound:
    """Both measures for the candidates ``evaluated`` (indices [N], repeats and unscored ones
    allowed) of a library whose values (lower is better; NaN for no score) are ``values`` [A].

    The true top-k are the k lowest values (ties broken by index, as a stable sort does);
    the scores measure compares the multiset of the k lowest evaluated values with theirs.
    """
    top = true_top(values, k)
    k = top.size
    if k == 0:
        return TopKFound(0.0, 0.0)
    found = np.unique(evaluated.astype(np.int64))
    smiles = np.isin(top, found).sum() / k
    mine = values[found]
    best = np.sort(mine[np.isfinite(mine)])[:k]
    missed = Counter(values[top].tolist())
    missed.subtract(best.tolist())
    scores = (k - sum(max(count, 0) for count in missed.values())) / k
    return TopKFound(float(smiles), float(scores))


def true_top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` lowest of ``values`` [A] (NaN unscored, never among them; ties
    broken by index, as a stable sort does) [min(k, scored)]."""
    scored = np.flatnonzero(np.isfinite(values))
    return scored[np.argsort(values[scored], kind="stable")[:k]]


def top_k_curve(values: np.ndarray, evaluated: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """The share of the true top ``k`` of ``values`` (:func:`true_top`) found after each of the
    ``evaluated`` candidates [N], in order; a repeat of a candidate is not a new find (MolPAL's
    "SMILES" measure along the campaign) [N]."""
    top = true_top(values, k)
    new = np.zeros(len(evaluated), dtype=bool)
    new[np.unique(evaluated, return_index=True)[1]] = True
    return np.cumsum(new & np.isin(evaluated, top)) / max(top.size, 1)
