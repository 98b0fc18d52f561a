"""The screening rules at 50,000 molecules: MolPAL's protocol (1 % at random, then five batches
of 1 %: 3,000 evaluations) on 50,000 MOSES molecules with a computed property, each rule run
exactly as ``trieste-scalable screen`` runs it, in a process of its own (its peak RSS), side by
side in one invocation: whole-campaign seconds (featurisation excluded: cached before), seconds
of the slowest batch, peak memory, and the share of the library's top 100 / 500 / 1,000 found.

Configurations (``--configs``):

- ``exact``: ``gp-bucb`` over an exact GP (``--inducing`` as large as the evaluations), the
  former default;
- ``default``: ``screen``'s defaults (``gp-bucb`` over at most 1,000 evaluated molecules);
- ``dictionary-N``: the default with ``--inducing N``;
- ``store``: ``featurise`` with its defaults, then ``screen --library STORE`` with its defaults;
- ``actors``: the same with ``--scoring-actors 2`` (a local Ray cluster; the peak memory is
  the driver's, the actors' not counted);
- ``ts``: batch Thompson sampling (the former default on stores).

    python benchmarks/library_scale_rules.py                                   # 1 seed
    python benchmarks/library_scale_rules.py --objective logp --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SIZE, INITIAL, BATCH = 50_000, 500, 500
CONFIGS: dict[str, dict[str, Any]] = {
    "exact": dict(inducing=INITIAL + 5 * BATCH),
    "default": {},
    "dictionary-500": dict(inducing=500),
    "dictionary-2000": dict(inducing=2000),
    "store": dict(store=True),
    "actors": dict(store=True, scoring_actors=2),
    "ts": dict(algorithm="ts"),
}


def one(settings: dict[str, Any]) -> None:
    """Run one campaign (in a child process) and print its figures as JSON."""
    from trieste_scalable.campaigns.screen import screen

    start = time.perf_counter()
    done = screen(quiet=True, initial=INITIAL, budget=5 * BATCH, batch_size=BATCH, **settings)
    result = done.campaign
    print(
        json.dumps(
            dict(
                seconds=time.perf_counter() - start,
                campaign=result.wall_seconds,
                slowest_batch=max(a.seconds for a in result.acquisitions),
                rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            )
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=["exact", "default", "store", "ts"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--objective", default="celecoxib-mpo")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(json.loads(args.one))
    from trieste_scalable.chemistry.molecules import load_smiles
    from trieste_scalable.problems.screening import screening_problem
    from trieste_scalable.stores.store_build import build_store

    work = Path(tempfile.mkdtemp(prefix="library-scale-rules-"))
    library = work / "moses50k.smi"
    library.write_text("\n".join(load_smiles("moses-100k")[:SIZE]) + "\n")
    truth = screening_problem(str(library), args.objective)  # cached for the runs
    order = np.argsort(np.asarray(truth.values))  # minimised values: the best first
    store = None
    if {"store", "actors"} & set(args.configs):
        store = build_store([library], work / "store")  # featurise's defaults
        screening_problem(str(store.path), args.objective)
    print(f"{SIZE} MOSES molecules, {args.objective}, 1 % + 5 x 1 %; seeds {args.seeds}")
    print("| rule | top-100 | top-500 | top-1,000 | campaign s | slowest batch s | peak GB |")
    print("|---|---|---|---|---|---|---|")
    baseline = None
    for name in args.configs:
        settings = dict(CONFIGS[name])
        source = str(store.path) if settings.pop("store", False) and store else str(library)
        rows = []
        for seed in args.seeds:
            logdir = work / f"{name}-{seed}"
            settings |= dict(library=source, objective=args.objective, seed=seed)
            settings["logdir"] = str(logdir)
            child = subprocess.run(
                [sys.executable, __file__, "--one", json.dumps(settings)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            figures = json.loads(child.stdout.strip().splitlines()[-1])
            with open(logdir / "evaluations.csv", newline="") as handle:
                found = {int(row["index"]) for row in csv.DictReader(handle)}
            recall = [len(found & set(order[:k].tolist())) / k for k in (100, 500, 1000)]
            rows.append(recall + [figures["campaign"], figures["slowest_batch"], figures["rss"]])
        mean = np.mean(rows, axis=0)
        baseline = baseline if baseline is not None else mean[3]
        print(
            f"| {name} | {mean[0]:.3f} | {mean[1]:.3f} | {mean[2]:.3f} | {mean[3]:.0f} "
            f"({mean[3] / baseline:.2f}x {args.configs[0]}) | {mean[4]:.0f} | {mean[5] / 1e9:.1f} |"
        )


if __name__ == "__main__":
    main()
