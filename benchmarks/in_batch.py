"""Seconds per batch of the hallucinating rules with fixed hyperparameters (no fit), so that the
in-batch machinery (batch-start scoring, lazy argmin, hallucinated rank-one updates, stopping)
is timed alone: for comparing two versions of the package (run it in a checkout of each).

Run: ``.venv/bin/python benchmarks/in_batch.py`` (under a minute on 2 CPU cores). 20,000
candidates in [0, 1]^3, 300 noisy evaluations, SE kernel (lengthscale 0.2), lambda = 1, a
constant width (beta = 2); short batches (C = 4) and long ones (C = 30). Prints the first call
(tracing included) and the median of five more.
"""

from __future__ import annotations

import os
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.data import Dataset  # noqa: E402
from trieste.space import DiscreteSearchSpace  # noqa: E402

from trieste_scalable.acquisition import BBKB, GPBUCB, ConfidenceWidth  # noqa: E402
from trieste_scalable.models import ExactDictionary, NystromGPR, RidgeLeverageSampler  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(20_000, 3))))
    x = tf.constant(rng.uniform(size=(300, 3)))
    noise = 0.1 * tf.constant(rng.normal(size=(300, 1)))
    data = Dataset(x, tf.sin(5.0 * x[:, :1]) + noise)
    width = ConfidenceWidth("constant", beta=2.0)
    for threshold in (4.0, 30.0):
        for name, policy, rule in (
            (
                "bbkb",
                RidgeLeverageSampler(2.0, seed=0),
                BBKB(ratio_threshold=threshold, width=width),
            ),
            ("gp-bucb", ExactDictionary(), GPBUCB(threshold, width=width)),
        ):
            kernel = gpflow.kernels.SquaredExponential(lengthscales=0.2)
            model = NystromGPR(kernel, 1.0, data, dictionary=policy, fit_hyperparameters=False)
            times, size = [], 0
            for _ in range(6):
                start = time.perf_counter()
                size = int(rule.acquire_single(space, model, data)(None)[1].shape[0])
                times.append(time.perf_counter() - start)
            print(
                f"{name:>8} C={threshold:<4g} batch {size:3d}: first {times[0]:.3f} s, "
                f"then {np.median(times[1:]):.3f} s (median of 5)",
                flush=True,
            )


if __name__ == "__main__":
    main()
