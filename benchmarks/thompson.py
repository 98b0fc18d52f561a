"""Batch Thompson sampling (ours) against Trieste's discrete TS path, measured side by side.

Run: ``.venv/bin/python benchmarks/thompson.py`` (``--parts ab`` for the timing parts only,
``--quick`` for a smaller regret study). Prints tables and ratios; part C writes
``benchmarks/out/thompson_regret.png``.

A. Same model (Trieste's ``SparseVariational``, M = 500 inducing points, Matern-5/2, fitted on
   1,000 noisy Hartmann6 evaluations), same 10,000 candidates in [0, 1]^6, B = 10: Trieste's
   ``DiscreteThompsonSampling(N, B, ThompsonSamplerFromTrajectory())`` against our
   ``BatchThompsonSampling(B)``: seconds per batch and distinct points per batch, with and
   without ``tf.random.set_seed``. Both use 1,000 random features.
B. Ours alone, N = 10^5 and 10^6 candidates, B = 100, M = 500: seconds per batch and the peak
   resident memory of the whole process (each size in a fresh subprocess).
C. The paper's synthetic study (S-GP-TS Sec. 6.1): noisy Shekel4 (noise variance 0.1) and
   Hartmann6 (0.5), B = 100, m = 250 / 500, k-means vs greedy inducing points, a few seeds;
   simple regret of the model-mean recommendation over the evaluated points, and of the best
   evaluated point, against random search.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_probability as tfp  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402
from trieste.acquisition.rule import DiscreteThompsonSampling  # noqa: E402
from trieste.acquisition.sampler import ThompsonSamplerFromTrajectory  # noqa: E402
from trieste.data import Dataset  # noqa: E402
from trieste.models.gpflow import SparseVariational, build_svgp  # noqa: E402
from trieste.models.optimizer import BatchOptimizer  # noqa: E402
from trieste.objectives import Hartmann6, Shekel4  # noqa: E402
from trieste.space import DiscreteSearchSpace  # noqa: E402

from trieste_scalable.acquisition import BatchThompsonSampling  # noqa: E402
from trieste_scalable.models import AdaptiveSVGP  # noqa: E402

OUT = Path(__file__).parent / "out"


def hartmann_data(num: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.uniform(size=(num, 6)))
    y = Hartmann6.objective(x) + np.sqrt(0.5) * rng.normal(size=(num, 1))
    return Dataset(x, y)


def trieste_svgp(data: Dataset, num_inducing: int) -> SparseVariational:
    svgp = build_svgp(
        data, Hartmann6.search_space, likelihood_variance=0.5, num_inducing_points=num_inducing
    )
    optimizer = BatchOptimizer(tf_keras.optimizers.Adam(0.1), max_iter=200, batch_size=1000)
    model = SparseVariational(svgp, optimizer=optimizer, num_rff_features=1000)
    model.optimize(data)
    return model


def time_batches(rule, space, model, data, repeats: int, global_seed: bool):  # type: ignore[no-untyped-def]
    times, distinct = [], []
    state = None
    for _ in range(repeats):
        if global_seed:
            tf.random.set_seed(42)
        start = time.perf_counter()
        out = rule.acquire_single(space, model, dataset=data)
        if callable(out):
            state, out = out(state)
        times.append(time.perf_counter() - start)
        distinct.append(int(np.unique(out.numpy(), axis=0).shape[0]))
    return times, distinct


def part_a(repeats: int) -> None:
    print("\n== A: one batch, N = 10,000 candidates, B = 10, same SparseVariational (M = 500)")
    data = hartmann_data(1000, seed=0)
    model = trieste_svgp(data, 500)
    space = DiscreteSearchSpace(tf.constant(np.random.default_rng(1).uniform(size=(10_000, 6))))
    rules = {
        "trieste DiscreteThompsonSampling": lambda: DiscreteThompsonSampling(
            10_000, 10, thompson_sampler=ThompsonSamplerFromTrajectory()
        ),
        "ours BatchThompsonSampling": lambda: BatchThompsonSampling(10, num_features=1000),
    }
    rows = {}
    for seeded in (False, True):
        for name, make in rules.items():
            times, distinct = time_batches(make(), space, model, data, repeats, seeded)
            rows[(name, seeded)] = (times, distinct)
            print(
                f"{name:34s} global seed={seeded!s:5s} first {times[0]:7.3f} s, "
                f"later mean {np.mean(times[1:]):7.3f} s; distinct per batch {distinct}"
            )
    for seeded in (False, True):
        base = rows[("trieste DiscreteThompsonSampling", seeded)][0]
        mine = rows[("ours BatchThompsonSampling", seeded)][0]
        print(
            f"speed-up (global seed={seeded}): first batch {base[0] / mine[0]:.1f}x, "
            f"later batches {np.mean(base[1:]) / np.mean(mine[1:]):.1f}x"
        )


SCALE_SCRIPT = """
import json, os, resource, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, gpflow
sys.path.insert(0, {benchmarks!r})
from thompson import hartmann_data
from trieste.space import DiscreteSearchSpace
from trieste_scalable.acquisition import BatchThompsonSampling
from trieste_scalable.models import AdaptiveSVGP
data = hartmann_data(2000, seed=0)
kernel = gpflow.kernels.Matern52(variance=0.3, lengthscales=[0.5] * 6)
model = AdaptiveSVGP(kernel, 0.5, data, inducing=500, max_optimizer_iterations=50)
space = DiscreteSearchSpace(tf.constant(np.random.default_rng(1).uniform(size=({num}, 6))))
rule = BatchThompsonSampling(100, num_features=1000, chunk_size=8192)
times = []
state = None
for _ in range(3):
    start = time.perf_counter()
    state, batch = rule.acquire_single(space, model, dataset=data)(state)
    times.append(time.perf_counter() - start)
print(json.dumps(dict(times=times, distinct=rule.last_statistics["distinct_points"],
                      peak_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2)))
"""


def part_b(sizes: list[int]) -> None:
    print("\n== B: ours alone, B = 100, M = 500, F = 1,000 (fresh process per size)")
    for num in sizes:
        script = SCALE_SCRIPT.format(benchmarks=str(Path(__file__).parent), num=num)
        output = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout
        result = json.loads(output.strip().splitlines()[-1])
        times = result["times"]
        print(
            f"N = {num:>9,d}: first batch {times[0]:6.2f} s, later {np.mean(times[1:]):6.2f} s; "
            f"distinct {result['distinct']}; peak RSS {result['peak_gib']:.2f} GiB"
        )


def run_ts(problem, noise_variance, inducing, selector, seed, steps, batch):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    dim = int(problem.search_space.dimension)

    def noisy(x: tf.Tensor) -> tf.Tensor:
        clean = problem.objective(x)
        return clean + np.sqrt(noise_variance) * rng.normal(size=clean.shape)

    x = problem.search_space.sample(batch, seed=seed)
    data = Dataset(x, noisy(x))
    variance, lengthscale = float(np.var(data.observations)), 0.2 * np.sqrt(dim)
    kernel = gpflow.kernels.Matern52(variance=variance, lengthscales=[lengthscale] * dim)
    # LogNormal(log(initial value), 1) priors on the kernel parameters, as Trieste's build_svgp
    # sets them (our models' fits are MAP); the noise variance is known and kept fixed, as in
    # build_svgp (non-trainable likelihood by default).
    kernel.lengthscales.prior = tfp.distributions.LogNormal(
        tf.math.log(tf.constant([lengthscale] * dim, tf.float64)), tf.constant(1.0, tf.float64)
    )
    kernel.variance.prior = tfp.distributions.LogNormal(
        tf.constant(np.log(variance), tf.float64), tf.constant(1.0, tf.float64)
    )
    model = AdaptiveSVGP(
        kernel,
        noise_variance,
        inducing=inducing,
        selector=selector,
        fit_noise_variance=False,
        max_optimizer_iterations=50,
        seed=seed,
    )
    rule = BatchThompsonSampling(batch, pool_size=500 * dim, seed=seed)
    recommended, best, state, seconds = [], [], None, 0.0
    for _ in range(steps + 1):
        start = time.perf_counter()
        model.update(data)
        model.optimize(data)
        mean, _ = model.predict(data.query_points)
        seconds += time.perf_counter() - start
        values = problem.objective(data.query_points).numpy()[:, 0]
        recommended.append(values[int(np.argmin(mean))] - float(problem.minimum))
        best.append(values.min() - float(problem.minimum))
        if len(recommended) > steps:
            break
        start = time.perf_counter()
        state, points = rule.acquire_single(problem.search_space, model, dataset=data)(state)
        seconds += time.perf_counter() - start
        data = data + Dataset(points, noisy(points))
    return np.array(recommended), np.array(best), seconds


def random_search(problem, seed, steps, batch):  # type: ignore[no-untyped-def]
    values = problem.objective(problem.search_space.sample(batch * (steps + 1), seed=1000 + seed))
    values = values.numpy()[:, 0] - float(problem.minimum)
    return np.array([values[: batch * (t + 1)].min() for t in range(steps + 1)])


def part_c(seeds: int, steps: int) -> None:
    print(
        f"\n== C: S-GP-TS synthetic study, B = 100, {steps} steps after 100 random points, "
        f"{seeds} seeds (regret = f(x) - f*, noiseless)"
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = [("Shekel4", Shekel4, 0.1), ("Hartmann6", Hartmann6, 0.5)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for axis, (label, problem, noise) in zip(axes, problems):
        evaluations = 100 * np.arange(1, steps + 2)
        rand = np.mean([random_search(problem, s, steps, 100) for s in range(seeds)], axis=0)
        axis.plot(evaluations, rand, "k--", label="random search (best point)")
        print(
            f"{label}: random search best-point regret at {evaluations[-1]} evaluations "
            f"{rand[-1]:.3f}"
        )
        for inducing in (250, 500):
            for selector in ("kmeans", "greedy"):
                runs = [
                    run_ts(problem, noise, inducing, selector, s, steps, 100) for s in range(seeds)
                ]
                rec = np.mean([r[0] for r in runs], axis=0)
                best = np.mean([r[1] for r in runs], axis=0)
                secs = np.mean([r[2] for r in runs])
                axis.plot(evaluations, rec, label=f"S-GP-TS m={inducing} {selector}")
                print(
                    f"{label}: m={inducing} {selector:6s} recommendation regret "
                    f"{rec[-1]:.3f} (best point {best[-1]:.3f}); after 500 evals "
                    f"{rec[min(4, steps)]:.3f}; {secs:.0f} s per run"
                )
        axis.set(
            title=f"{label} (noise variance {noise})",
            xlabel="evaluations",
            ylabel="simple regret of recommendation",
            yscale="log",
        )
        axis.legend(fontsize=7)
    OUT.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(OUT / "thompson_regret.png", dpi=120)
    print(f"wrote {OUT / 'thompson_regret.png'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="abc")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None, help="part C seeds (default 3)")
    parser.add_argument("--steps", type=int, default=None, help="part C steps (default 10)")
    args = parser.parse_args()
    if "a" in args.parts:
        part_a(repeats=3)
    if "b" in args.parts:
        part_b([100_000, 1_000_000])
    if "c" in args.parts:
        seeds = args.seeds or (1 if args.quick else 3)
        part_c(seeds=seeds, steps=args.steps or (4 if args.quick else 10))


if __name__ == "__main__":
    main()
