"""Recall of the top 1 % of a 100,000-molecule library against evaluations, per rule.

Run: ``.venv/bin/python benchmarks/screening.py`` (``--algorithms ts,random --budget 1000`` for a
shorter run). Library ``moses-100k`` (shipped), objective ``celecoxib-mpo`` (noise-free), Morgan
bit fingerprints (radius 2, 1,024 bits), Tanimoto kernel, 100 random initial molecules, batches
of 100, 5,000 evaluations in all: the same settings as ``trieste-scalable screen`` uses. Prints
recall of the top 1 % and 10 % and wall time per rule, and the ratio of each rule's top-1 %
finds to random search's; writes ``benchmarks/out/screening.png``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from trieste_scalable.acquisition import ConfidenceWidth  # noqa: E402
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.campaigns.candidates.library_models import screening_regulariser  # noqa: E402
from trieste_scalable.campaigns.run.runner import run_campaign  # noqa: E402
from trieste_scalable.kernels import Tanimoto  # noqa: E402
from trieste_scalable.problems.screening import screening_problem  # noqa: E402

OUT = Path(__file__).parent / "out"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default="moses-100k")
    parser.add_argument("--algorithms", default="ts,bbkb,mini-ucb,random")
    parser.add_argument("--budget", type=int, default=4900, help="after 100 initial molecules")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true", help="a progress bar per rule")
    parser.add_argument(
        "--redraw-features-every", type=int, help="ts: redraw the sign features every N batches"
    )
    parser.add_argument("--inducing", type=int, help="ts: inducing points (default: build's)")
    args = parser.parse_args()
    start = time.perf_counter()
    problem = screening_problem(args.library, "celecoxib-mpo", "bits", 2, 1024)
    print(
        f"library {args.library}: {len(problem.points)} unique fingerprints, featurised and "
        f"scored in {time.perf_counter() - start:.0f} s (cached afterwards)"
    )
    initial = problem.initial_data(100, args.seed)
    curves = {}
    for algorithm in args.algorithms.split(","):
        scale = float(np.var(initial.observations.numpy()))
        model, rule = build(
            algorithm,
            initial,
            kernel=Tanimoto(variance=scale, binary_inputs=True),
            noise_variance=screening_regulariser(algorithm, scale),
            width=ConfidenceWidth("constant", beta=2.0),
            batch_size=100,
            max_batch_size=100,
            fit_hyperparameters=False,
            seed=args.seed,
            screening=True,
            selector="random",
            redraw_features_every=args.redraw_features_every,
            num_inducing=args.inducing,
        )
        start = time.perf_counter()
        result = run_campaign(
            problem, model, rule, initial, args.budget, args.seed, progress=args.progress
        )
        seconds = time.perf_counter() - start
        ids = problem.indices(result.dataset.query_points)
        curves[algorithm] = problem.recall_curve(ids, 0.01)
        unique = np.unique(ids).size
        print(
            f"{algorithm:9s}: recall top 1% {problem.recall(ids, 0.01):.3f}, top 10% "
            f"{problem.recall(ids, 0.1):.3f}; {unique} distinct molecules in {ids.size} "
            f"evaluations; {seconds:.0f} s ({seconds / len(result.batch_sizes):.1f} s/batch)",
            flush=True,
        )
    if "random" in curves:
        for algorithm, curve in curves.items():
            print(
                f"{algorithm:9s}: top-1% finds / random search's = "
                f"{curve[-1] / max(curves['random'][-1], 1e-12):.1f}x"
            )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6, 4))
    for algorithm, curve in curves.items():
        axis.plot(np.arange(1, curve.size + 1), curve, label=algorithm)
    axis.set(
        xlabel="evaluations (incl. 100 initial)",
        ylabel="recall of the top 1 %",
        title=f"celecoxib-mpo on {args.library}",
    )
    axis.legend()
    OUT.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(OUT / "screening.png", dpi=120)
    print(f"wrote {OUT / 'screening.png'}")


if __name__ == "__main__":
    main()
