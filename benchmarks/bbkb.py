"""BBKB / BKB / GP-BUCB against Trieste's Fantasizer-KB batch UCB, measured side by side.

Run: ``.venv/bin/python benchmarks/bbkb.py`` (about 15 minutes on 2 CPU cores; ``--quick`` for a
smaller version). Prints tables and ratios and writes ``benchmarks/out/bbkb.png``.

Parts:

A. Same problem, same initial data, same kernel and noise (fixed, as in the papers), same
   width (beta = 2, i.e. Trieste's ``NegativeLowerConfidenceBound(2)``): wall time per batch,
   cumulative regret (normalised by uniform random), distinct points per batch.
B. Time of one batch at t = 2,000 evaluations, both models built on the same 2,000 evaluations.
C. Scale: BBKB on 20,000 candidates in d = 8 for 10,000 evaluations: amortised time per
   evaluation over t, batch sizes, dictionary size / t; in two lambda regimes.

Times exclude the objective (evaluations are instantaneous) and include model updates.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from common import FixedGPR  # noqa: E402
from trieste.acquisition import Fantasizer, NegativeLowerConfidenceBound  # noqa: E402
from trieste.acquisition.rule import EfficientGlobalOptimization  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.acquisition import ConfidenceWidth  # noqa: E402
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.campaigns.engine.loop import CampaignResult  # noqa: E402
from trieste_scalable.campaigns.run.runner import run_campaign  # noqa: E402
from trieste_scalable.problems import DiscreteProblem, rkhs_problem  # noqa: E402

OUT = Path(__file__).parent / "out"
LENGTHSCALE = 1.0
KERNEL_VARIANCE = 0.05
NOISE_STD = 0.05


def kernel() -> gpflow.kernels.Kernel:
    return gpflow.kernels.SquaredExponential(variance=KERNEL_VARIANCE, lengthscales=LENGTHSCALE)


def fantasizer(data: Dataset, noise: float, batch: int):  # type: ignore[no-untyped-def]
    mean = gpflow.mean_functions.Constant(float(tf.reduce_mean(data.observations)))
    gpr = gpflow.models.GPR(data.astuple(), kernel(), noise_variance=noise, mean_function=mean)
    model = FixedGPR(gpr)
    rule = EfficientGlobalOptimization(
        Fantasizer(NegativeLowerConfidenceBound(2.0)), num_query_points=batch
    )
    return model, rule


def ours(name: str, data: Dataset, noise: float, width: ConfidenceWidth):  # type: ignore[no-untyped-def]
    distinct = name.endswith("-distinct")
    return build(
        name.removesuffix("-distinct"),
        data,
        lengthscale=LENGTHSCALE,
        kernel_variance=KERNEL_VARIANCE,
        noise_variance=noise,
        width=width,
        batch_size=20,
        max_batch_size=None,
        fit_hyperparameters=False,
        seed=0,
        allow_repeats=not distinct,
    )


def summarise(problem: DiscreteProblem, result: CampaignResult, seconds: float) -> dict:
    regret = problem.regret(result.dataset.query_points[result.num_initial :])
    uniform = problem.values.mean() - problem.minimum
    sizes = np.array(result.batch_sizes)
    return {
        "seconds": seconds,
        "batches": len(sizes),
        "s_per_batch": float(np.mean(result.batch_seconds)),
        "s_per_eval": float(np.sum(result.batch_seconds) / sizes.sum()),
        "mean_batch": float(sizes.mean()),
        "distinct_frac": float(np.sum(result.distinct_per_batch) / sizes.sum()),
        "regret_ratio": float(regret.mean() / uniform),
        "best_regret": float(regret.min()),
        "dictionary": result.model_sizes[-1],
    }


def part_a(problem: DiscreteProblem, budget: int, noise: float) -> dict[str, dict]:
    print(
        f"\n== A. {budget} evaluations on {len(problem.points)} candidates, d=8, "
        f"lambda={noise}, beta=2, same initial data =="
    )
    initial = problem.initial_data(20, seed=0)
    width = ConfidenceWidth("constant", beta=2.0)
    rows = {}
    for name in ["trieste-fantasizer-kb", "bbkb", "bbkb-distinct", "bbkb-local", "bkb", "gp-bucb"]:
        if name == "trieste-fantasizer-kb":
            model, rule = fantasizer(initial, noise, 20)
        else:
            model, rule = ours(name, initial, noise, width)
        start = time.perf_counter()
        result = run_campaign(problem, model, rule, initial, budget, seed=0, progress=False)
        rows[name] = summarise(problem, result, time.perf_counter() - start)
        print(
            f"{name:>22}: " + ", ".join(f"{k}={v:.4g}" for k, v in rows[name].items()), flush=True
        )
    base = rows["trieste-fantasizer-kb"]
    for name, row in rows.items():
        if name != "trieste-fantasizer-kb":
            print(
                f"{name:>22}: {base['s_per_batch'] / row['s_per_batch']:.1f}x faster per batch, "
                f"{base['s_per_eval'] / row['s_per_eval']:.1f}x per evaluation, "
                f"regret {row['regret_ratio'] / base['regret_ratio']:.2f}x Trieste's"
            )
    return rows


def part_b(problem: DiscreteProblem, t: int, noise: float) -> None:
    print(f"\n== B. one batch at t={t} (both models on the same {t} evaluations) ==")
    initial = problem.initial_data(20, seed=1)
    width = ConfidenceWidth("constant", beta=2.0)
    model, rule = ours("bbkb", initial, noise, width)
    result = run_campaign(problem, model, rule, initial, t - 20, seed=1, progress=False)
    data = result.dataset
    timings = {}
    for name in ["trieste-fantasizer-kb", "bbkb"]:
        if name == "trieste-fantasizer-kb":
            model, rule = fantasizer(data, noise, 20)
        else:
            model, rule = ours("bbkb", data, noise, width)
        start = time.perf_counter()
        model.update(data)  # what every step pays: resparsify / refactorise
        batch = rule.acquire_single(problem.search_space, model, data)
        if callable(batch):
            batch = batch(None)[1]
        seconds = time.perf_counter() - start
        distinct = np.unique(batch.numpy(), axis=0).shape[0]
        timings[name] = (seconds, int(batch.shape[0]), distinct)
        print(
            f"{name:>22}: {seconds:.2f}s for a batch of {batch.shape[0]} "
            f"({distinct} distinct), {seconds / batch.shape[0]:.3f}s per point",
            flush=True,
        )
    (ft, fb, _), (bt, bb, _) = timings["trieste-fantasizer-kb"], timings["bbkb"]
    print(
        f"BBKB vs Fantasizer-KB at t={t}: {ft / bt:.1f}x faster per batch, "
        f"{(ft / fb) / (bt / bb):.1f}x faster per point"
    )


def part_c(regimes: list[tuple[str, float, ConfidenceWidth, int]]) -> dict:
    problem = rkhs_problem(20_000, 8, lengthscale=LENGTHSCALE, noise_std=NOISE_STD)
    print("\n== C. BBKB (Global) over 20,000 candidates in d=8 ==")
    curves = {}
    for label, noise, width, budget in regimes:
        initial = problem.initial_data(10, seed=2)
        model, rule = ours("bbkb", initial, noise, width)
        start = time.perf_counter()
        result = run_campaign(problem, model, rule, initial, budget, seed=2, progress=False)
        total = time.perf_counter() - start
        row = summarise(problem, result, total)
        ends = np.cumsum(result.batch_sizes)
        cum_seconds = np.cumsum(result.batch_seconds)
        print(
            f"{label}, T={budget}: {total:.0f}s in all, "
            + ", ".join(f"{k}={v:.4g}" for k, v in row.items())
        )
        window = budget // 5
        for lo in range(0, budget, window):
            mask = (ends > lo) & (ends <= lo + window)
            secs = np.sum(np.array(result.batch_seconds)[mask])
            evals = np.sum(np.array(result.batch_sizes)[mask])
            dict_t = result.model_sizes[int(np.flatnonzero(mask)[-1])] / (lo + window)
            print(
                f"   t in ({lo}, {lo + window}]: {1000 * secs / max(evals, 1):.2f} ms/eval, "
                f"mean batch {evals / max(mask.sum(), 1):.1f}, dictionary/t {dict_t:.3f}"
            )
        curves[label] = (
            ends,
            np.array(result.batch_sizes),
            np.array(result.model_sizes),
            cum_seconds,
        )
    return curves


def plot(rows: dict, curves: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(exist_ok=True)
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
    names = list(rows)
    axes[0].bar(names, [rows[n]["s_per_batch"] for n in names])
    axes[0].set(ylabel="seconds per batch (part A)", yscale="log")
    axes[0].tick_params(axis="x", rotation=30)
    for label, (ends, sizes, dictionary, seconds) in curves.items():
        axes[1].plot(ends, sizes, label=label)
        axes[2].plot(ends, dictionary, label=label)
        axes[3].plot(ends, seconds, label=label)
    axes[1].set(xlabel="t", ylabel="batch size (part C)")
    axes[2].set(xlabel="t", ylabel="dictionary size")
    axes[3].set(xlabel="t", ylabel="cumulative seconds")
    axes[3].legend()
    fig.tight_layout()
    fig.savefig(OUT / "bbkb.png", dpi=100)
    print(f"\nwrote {OUT / 'bbkb.png'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="abc", help="which parts to run, e.g. 'ab'")
    args = parser.parse_args()
    tf.random.set_seed(0)
    noise = KERNEL_VARIANCE  # lambda / kappa^2 = 1: the theorems' regime
    small_noise = NOISE_STD**2  # lambda = xi^2: the Bayesian regime
    problem = rkhs_problem(10_000, 8, lengthscale=LENGTHSCALE, noise_std=NOISE_STD, seed=1)
    rows: dict = {}
    for lam in (noise, small_noise):
        if "a" in args.parts:
            rows = part_a(problem, 200 if args.quick else 600, lam)
        if "b" in args.parts:
            part_b(problem, 500 if args.quick else 2000, lam)
    if "c" not in args.parts:
        return
    big = 2000 if args.quick else 10_000
    regimes = [
        ("lambda=kappa^2, beta=2", noise, ConfidenceWidth("constant", beta=2.0), big),
        (
            "lambda=kappa^2, theory width",
            noise,
            ConfidenceWidth("theory", noise_std=NOISE_STD, delta=1e-4),
            big,
        ),
        ("lambda=xi^2, beta=2", small_noise, ConfidenceWidth("constant", beta=2.0), big // 4),
    ]
    curves = part_c(regimes)
    plot(rows, curves)


if __name__ == "__main__":
    main()
