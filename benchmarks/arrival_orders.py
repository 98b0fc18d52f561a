"""How much an asynchronous campaign's result depends on the order its results arrive in: the
campaigns of ``integration_tests/test_distributed.py::
test_asynchronous_and_synchronous_thompson_sampling_find_as_good_points`` (Thompson sampling over
AdaptiveSVGP, 60 evaluations of a bowl on 400 candidates in 2-D, 6 Ray workers), asynchronous with
the evaluations' log-normal delays drawn with 8 seeds at each mean latency given, and in whole
batches; the mean regret of each. A small latency stands for a loaded machine (acquisitions slow
against evaluations), a large one for slow evaluations. Results: ``results/arrival_orders.txt``.

Run from the repository root (about a minute a latency on 2 cores)::

    PYTHONPATH=. .venv/bin/python benchmarks/arrival_orders.py [LATENCY ...]

(default 0.005 0.05 0.5).
"""

from __future__ import annotations

import sys

import numpy as np
import ray

from integration_tests.objectives import bowl
from integration_tests.test_distributed import _mean_regret, problem


def main(latencies: list[float]) -> None:
    ray.init("local", num_cpus=8, include_dashboard=False, log_to_driver=False)
    space, data = problem(4)
    first = _mean_regret(space, data, whole=False, seed=0, latency=0.05)
    print(f"random search {np.mean([bowl(p) for p in space.points.numpy()]):.3f}")
    print(f"the first campaign (tracing as it asks): {first:.3f}")
    for latency in latencies:
        regrets = [_mean_regret(space, data, False, seed, latency) for seed in range(1, 9)]
        print(
            f"asynchronous, mean latency {latency:g} s: {' '.join(f'{r:.3f}' for r in regrets)}"
            f" (mean {np.mean(regrets):.3f}, max {np.max(regrets):.3f})"
        )
    whole = [_mean_regret(space, data, True, seed, 0.05) for seed in (1, 2)]
    print(f"whole batches, mean latency 0.05 s: {' '.join(f'{r:.3f}' for r in whole)}")


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [0.005, 0.05, 0.5])
