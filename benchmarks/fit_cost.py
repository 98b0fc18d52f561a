"""What fitting costs sequential BKB: seconds per evaluation with fitted hyperparameters (the
default ``FitSchedule``) against the same model with its hyperparameters held fixed.

Run: ``.venv/bin/python benchmarks/fit_cost.py [--budget 300] [--seeds 2] [--skip 100]``
(about 10 minutes on 2 CPU cores).

Problem: a smooth random function on 4,000 random points in [0, 1]^4 (15 bumps), noise std half
its range, 20 random initial points a seed: the Trieste user's path of issue 25 (Trieste's
``build_gpr`` start, LogNormal priors, the noise fitted). For each seed BKB runs first with
fitted hyperparameters ("fitted"; and with ``variance_optimism=2``, the command line's ``--fit``
default, "fitted+optimism"), then with ``fit_hyperparameters=False`` from the fitted run's final
hyperparameters ("fixed"), so both runs keep dictionaries of a like size. Each acquisition of
sequential BKB is one evaluation, the tell (and so the fit) before it included; the figure is
the mean seconds per evaluation after the first ``--skip`` evaluations, and its ratio to
"fixed".
"""

from __future__ import annotations

import argparse
import copy
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.acquisition import BKB  # noqa: E402
from trieste_scalable.campaigns.run.runner import run_campaign  # noqa: E402
from trieste_scalable.models import NystromGPR, build_nystrom_gpr  # noqa: E402
from trieste_scalable.problems import DiscreteProblem, rkhs_problem  # noqa: E402


def problem() -> DiscreteProblem:
    smooth = rkhs_problem(4000, 4, 15, noise_std=0.0)
    return DiscreteProblem(
        "rkhs4d noise 0.5", smooth.points, smooth.values, 0.5 * np.ptp(smooth.values)
    )


def run(
    task: DiscreteProblem, model: NystromGPR, initial: Dataset, seed: int, budget: int, skip: int
) -> tuple:
    """Seconds per evaluation after ``skip`` evaluations, the regret / uniform, fits done."""
    tf.random.set_seed(seed)
    result = run_campaign(
        task, model, BKB(width="constant", seed=seed), initial, budget, seed, progress=False
    )
    seconds = np.array([a.seconds for a in result.acquisitions])
    regret = task.regret(result.dataset.query_points[result.num_initial :])
    uniform = float(task.values.mean() - task.minimum)
    return float(seconds[skip:].mean()), float(regret.mean()) / uniform, len(model.fitter.outcomes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--skip", type=int, default=100)
    args = parser.parse_args()
    task = problem()
    print(
        f"== sequential BKB on {task.name}, {args.budget} evaluations: "
        f"s/evaluation after {args.skip} =="
    )
    table: dict[str, list[float]] = {}
    for seed in range(args.seeds):
        initial = task.initial_data(20, seed)
        rows = {}
        for label, optimism in (("fitted", 0.0), ("fitted+optimism", 2.0)):
            model = build_nystrom_gpr(
                initial, task.search_space, trainable_likelihood=True, variance_optimism=optimism
            )
            rows[label] = run(task, model, initial, seed, args.budget, args.skip)
            if label == "fitted":
                kernel = copy.deepcopy(model.get_kernel())
                noise = float(model.get_observation_noise())
        fixed = NystromGPR(kernel, noise, initial, fit_hyperparameters=False)
        rows["fixed"] = run(task, fixed, initial, seed, args.budget, args.skip)
        for label, (seconds, regret, fits) in rows.items():
            table.setdefault(label, []).append(seconds)
            print(
                f"seed {seed} {label:>16}: {seconds:.3f} s/evaluation, "
                f"regret {regret:.3f}, {fits} fits",
                flush=True,
            )
    base = np.mean(table["fixed"])
    print(f"-- means over {args.seeds} seeds:")
    for label, values in table.items():
        print(
            f"   {label:>16}: {np.mean(values):.3f} s/evaluation "
            f"= {np.mean(values) / base:.2f}x fixed"
        )


if __name__ == "__main__":
    main()
