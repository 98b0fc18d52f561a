"""Wall time per step of each rule over its model, fitted, on one noisy problem: for comparing
two versions of the package (run it in a checkout of each; nothing else is compared).

Run: ``.venv/bin/python benchmarks/per_step.py [RULE ...]`` (about 5 minutes on 2 CPU cores
for all of bbkb, gp-bucb, mini-ucb, ts). The problem
and settings are those of ``benchmarks/fitting.py`` part B (the 22^3 grid, noise std half the
function's spread, 20 initial points, seed 0, 150 evaluations, batches of at most 10): every
rule over our model built by our builders and fitted at every step. Prints, per rule, the
seconds of the first step (building and first fit included), the mean of the later steps and
the number of steps.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from fitting import problems, runs  # noqa: E402

from trieste_scalable.campaigns.run.runner import run_campaign  # noqa: E402


def main() -> None:
    problem = problems()[0]
    initial = problem.initial_data(20, 0)
    only = sys.argv[1:]
    for name, make in runs(problem, initial, 0, remedies=False).items():
        if only and name not in only:
            continue
        tf.random.set_seed(0)
        start = time.perf_counter()
        model, rule = make()
        built = time.perf_counter() - start
        result = run_campaign(problem, model, rule, initial, 150, 0, progress=False)
        steps = np.asarray(result.batch_seconds)
        print(
            f"{name:>9}: build {built:6.2f} s, first step {steps[0]:6.2f} s, later steps "
            f"{steps[1:].mean():6.3f} s (mean of {steps.size - 1})",
            flush=True,
        )


if __name__ == "__main__":
    main()
