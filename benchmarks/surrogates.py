"""Objectives learnt from MolPAL's Enamine10k docking table (10,449 Vina scores against thymidylate
kinase, PDB 4UNN, shipped with the package), for benchmarks that need an objective a Tanimoto
kernel does not make trivial, built here from shipped data (nothing downloaded). Only numpy and
RDKit: Walters' Thompson sampling imports this module in its own Python
(``walters_ts_driver.py``).

- :func:`docking`: ridge regression on Morgan counts (radius 2, 2,048 bits), its prediction
  negated (higher is better).
- :func:`activity`: a classifier's probability of activity, the kind of objective a medicinal
  chemist screens with (issue 83): L2-regularised logistic regression on the same counts, an
  "active" being a molecule in the table's best 1 % (the 105 most negative scores), fitted by
  Newton's method. Near 0 almost everywhere, as such probabilities are.
- :func:`hits`: the classifier's hit call, its probability where it calls a molecule active
  (at least :data:`HIT_THRESHOLD`, 0.5) and 0 elsewhere: over Walters' 10^6 quinazoline subset,
  5,351 products (0.5 %) are hits. No gradient leads to the hits, only exploration does.
- :func:`rare_hits`: the same at :data:`RARE_HIT_THRESHOLD` (0.75): 981 products (0.1 %), a
  needle a random draw of 2,000 misses with probability 0.14.
"""

from __future__ import annotations

import csv
import gzip
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

DOCKING_TABLE = (
    Path(__file__).resolve().parents[1] / "trieste_scalable/data/enamine10k/4unn_scores.csv.gz"
)
RIDGE = 10.0
"""The docking surrogate's ridge penalty (on unscaled counts)."""
ACTIVE_SHARE, LOGISTIC_PENALTY = 0.01, 10.0
HIT_THRESHOLD = 0.5
RARE_HIT_THRESHOLD = 0.75
"""The least probability :func:`hits` calls a hit (the 99.9th percentile over the subset)."""
"""The share of the table called active, and the classifier's L2 penalty (on unscaled counts)."""


def counts(molecules: list) -> np.ndarray:
    """Morgan counts, radius 2, 2,048 bits [N, 2048] of RDKit molecules."""
    from rdkit.Chem import rdFingerprintGenerator

    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    return np.stack([generator.GetCountFingerprintAsNumPy(m) for m in molecules]).astype(float)


@lru_cache(maxsize=1)
def _table() -> tuple[np.ndarray, np.ndarray]:
    """The table's counts [N, 2048] and scores [N] (kcal/mol, lower better)."""
    from rdkit import Chem

    with gzip.open(DOCKING_TABLE, "rt") as handle:
        rows = [r for r in csv.DictReader(handle) if r["score"]]
    molecules = [Chem.MolFromSmiles(r["smiles"]) for r in rows]
    kept = [i for i, m in enumerate(molecules) if m is not None]
    x = counts([molecules[i] for i in kept])
    return x, np.array([float(rows[i]["score"]) for i in kept])


@lru_cache(maxsize=1)
def docking_weights() -> tuple[np.ndarray, float]:
    """The docking surrogate's weights [2048] and intercept."""
    x, y = _table()
    mean = y.mean()
    weights = np.linalg.solve(x.T @ x + RIDGE * np.eye(x.shape[1]), x.T @ (y - mean))
    return weights, float(mean)


@lru_cache(maxsize=1)
def activity_weights() -> tuple[np.ndarray, float]:
    """The classifier's weights [2048] and intercept (Newton's method to a step below 1e-10;
    minutes, so kept in the package's cache directory, ``$TRIESTE_SCALABLE_CACHE`` or
    ``~/.cache/trieste-scalable``)."""
    folder = Path(os.environ.get("TRIESTE_SCALABLE_CACHE", Path.home() / ".cache/trieste-scalable"))
    path = folder / f"activity-classifier-{ACTIVE_SHARE}-{LOGISTIC_PENALTY}.npy"
    if path.is_file():
        theta = np.load(path)
        return theta[:-1], float(theta[-1])
    theta = _fit_classifier()
    folder.mkdir(parents=True, exist_ok=True)
    np.save(path, theta)
    return theta[:-1], float(theta[-1])


def _fit_classifier() -> np.ndarray:
    """The classifier's weights and intercept [2049]."""
    x, y = _table()
    active = (y <= np.quantile(y, ACTIVE_SHARE)).astype(float)
    design = np.hstack([x, np.ones((len(x), 1))])
    penalty = LOGISTIC_PENALTY * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # the intercept is not penalised
    theta = np.zeros(design.shape[1])
    theta[-1] = np.log(active.mean() / (1 - active.mean()))
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(design @ theta)))
        gradient = design.T @ (p - active) + penalty @ theta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta


def docking(molecules: list) -> np.ndarray:
    """The docking surrogate's scores [N] (higher better) of RDKit molecules."""
    weights, mean = docking_weights()
    return -(counts(molecules) @ weights + mean)


def activity(molecules: list) -> np.ndarray:
    """The classifier's probabilities of activity [N] of RDKit molecules."""
    weights, intercept = activity_weights()
    return 1.0 / (1.0 + np.exp(-(counts(molecules) @ weights + intercept)))


def hits(molecules: list) -> np.ndarray:
    """The hit calls [N] of RDKit molecules (module docstring)."""
    return hit_call(activity(molecules))


def rare_hits(molecules: list) -> np.ndarray:
    """The rare hit calls [N] of RDKit molecules (module docstring)."""
    return hit_call(activity(molecules), RARE_HIT_THRESHOLD)


def hit_call(probability: np.ndarray, threshold: float = HIT_THRESHOLD) -> np.ndarray:
    """The classifier's ``probability`` where it is at least ``threshold``, 0 elsewhere."""
    return np.where(probability >= threshold, probability, 0.0)
