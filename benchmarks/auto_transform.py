"""What ``--transform auto`` picks on each benchmark objective, and by how much (issue 83).

For each objective, random products of Walters' 10^6 quinazoline subset (as a campaign's first
products are, and as its told scores grow) are scored, negated (Trieste minimises, as the model
sees them) and ``auto`` is fitted: printed are its pick at 100, 500 and 2,000 products (over
``--seeds`` draws: the picks, each with the log likelihoods per point of identity, log and
power, BIC penalty included, that decided it). Also MolPAL's Enamine10k docking table (lower is
better, as ``screen`` is told) and its hit call (``molpal_enamine.py --objective hits``).

    python benchmarks/auto_transform.py
"""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import make_on_demand  # noqa: E402
import molpal_enamine  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from trieste_scalable.numerics.outcome_transforms import (  # noqa: E402
    fit_outcome_transform,
    log_likelihood,
)

SIZES = (100, 500, 2000)
CANDIDATES = {"identity": 0.0, "log": 0.0, "power": 1.0}
"""The candidates ``auto`` weighs, each with its parameters counted by BIC."""


def subset_sampler(objective: str) -> Callable[[int, np.random.Generator], np.ndarray]:
    """Draws the minimised scores [n] of n random products of the subset."""
    library = make_on_demand.library_of("subset")
    if objective in ("activity", "hits", "rare_hits"):  # the enumerated truth, cached
        scores = make_on_demand.truth("subset", objective)
        return lambda n, rng: -scores[rng.choice(len(scores), n, replace=False)]
    reaction = make_on_demand.SPACES["subset"][0]
    score = make_on_demand.objective_of(objective, make_on_demand.QUERIES[reaction])

    def draw(n: int, rng: np.random.Generator) -> np.ndarray:
        tuples = np.stack([rng.integers(0, c, n) for c in library.counts], axis=1)
        made = [s for s in library.products(tuples) if s is not None]
        return -score(made)

    return draw


def table_sampler(hits: bool) -> Callable[[int, np.random.Generator], np.ndarray]:
    """Draws n of MolPAL's 4UNN scores (lower better), or of its hit call."""
    values = np.array([float(v) for _, v in molpal_enamine.table_rows()])
    if hits:
        values = np.where(values <= np.quantile(values, molpal_enamine.HIT_SHARE), values, 0.0)
    return lambda n, rng: values[rng.choice(len(values), n, replace=False)]


def scores_per_point(values: np.ndarray) -> dict[str, float]:
    """Each candidate's log likelihood per point, less its BIC penalty, as ``auto`` weighs."""
    y = tf.constant(values[:, None], tf.float64)
    return {
        name: (log_likelihood(fit_outcome_transform(name, y), y) - 0.5 * k * math.log(len(values)))
        / len(values)
        for name, k in CANDIDATES.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    options = parser.parse_args()
    samplers = {f"subset {name}": subset_sampler(name) for name in make_on_demand.OBJECTIVES} | {
        "Enamine10k 4UNN": table_sampler(False),
        "Enamine10k hits": table_sampler(True),
    }
    print(f"{'objective':28s} {'n':>5s}  picks ({options.seeds} draws)   "
          "per point (seed 0): identity, log, power")  # fmt: skip
    for label, draw in samplers.items():
        for size in SIZES:
            picks, first = Counter(), {}
            for seed in range(options.seeds):
                values = draw(size, np.random.default_rng(seed))
                if np.ptp(values) == 0:  # any transform of equal scores is the same
                    picks["(all equal)"] += 1
                    continue
                y = tf.constant(values[:, None], tf.float64)
                picks[fit_outcome_transform("auto", y).name] += 1
                first = first or scores_per_point(values)
            shown = ", ".join(f"{name} {count}" for name, count in picks.most_common())
            detail = ", ".join(f"{v:.2f}" for v in first.values())
            print(f"{label:28s} {size:5d}  {shown:22s} {detail}", flush=True)


if __name__ == "__main__":
    main()
