"""Seconds per compiled ``predict_joint`` over a batch of candidate sets, ours against Trieste's
``GaussianProcessRegression`` doing the same job, side by side in one run.

Trieste's batch acquisition functions (BatchEI, batch MC-EI, the Monte-Carlo ones through
``reparam_sampler``) score thousands of candidate batches [S, B, D] per optimiser call; this is
that call alone. Same data for every model: 300 evaluations of a smooth function in [0, 1]^3,
each model from its builder with Trieste's kernel, no fit; S = 5,000 sets of B = 3 and of
B = 10 points.

Run: ``.venv/bin/python benchmarks/predict_joint.py`` (about a minute on 2 CPU cores). Prints the
median of five calls after a first (tracing) one, and the ratio to Trieste's GPR.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.data import Dataset  # noqa: E402
from trieste.models.gpflow import GaussianProcessRegression, build_gpr  # noqa: E402
from trieste.space import Box  # noqa: E402

from trieste_scalable.models import (  # noqa: E402
    ExactDictionary,
    build_adaptive_svgp,
    build_nystrom_gpr,
    build_replicated_gpr,
)

MODELS: dict[str, Callable[[Dataset, Box], Any]] = {
    "trieste GPR": lambda data, space: GaussianProcessRegression(build_gpr(data, space)),
    "NystromGPR (exact dictionary)": lambda data, space: build_nystrom_gpr(
        data, space, dictionary=ExactDictionary()
    ),
    "NystromGPR (sampled dictionary)": build_nystrom_gpr,
    "ReplicatedGPR": build_replicated_gpr,
    "AdaptiveSVGP (100 inducing)": lambda data, space: build_adaptive_svgp(
        data, space, inducing=100
    ),
}


def median_seconds(function: Callable[[tf.Tensor], Any], x: tf.Tensor) -> float:
    function(x)  # traced here
    times = []
    for _ in range(5):
        start = time.perf_counter()
        mean, cov = function(x)
        cov.numpy()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    rng = np.random.default_rng(0)
    space = Box([0.0] * 3, [1.0] * 3)
    x = rng.uniform(size=(300, 3))
    y = np.sin(5.0 * x[:, :1]) + np.cos(3.0 * x[:, 1:2]) + 0.05 * rng.normal(size=(300, 1))
    data = Dataset(tf.constant(x), tf.constant(y))
    print(f"{'model':34s} {'B':>3s} {'seconds':>9s} {'/ trieste':>10s}")
    for batch in (3, 10):
        sets = tf.constant(rng.uniform(size=(5000, batch, 3)))
        reference = None
        for name, build in MODELS.items():
            model = build(data, space)
            seconds = median_seconds(tf.function(model.predict_joint), sets)
            reference = reference or seconds
            print(f"{name:34s} {batch:3d} {seconds:9.4f} {seconds / reference:10.2f}")


if __name__ == "__main__":
    main()
