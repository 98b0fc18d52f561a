"""Seconds an ask of a make-on-demand campaign takes at 10,000 and more evaluations, with products
made as before issue 81 (one core, each product's canonical SMILES read back to fingerprint it)
and as now (on every core, fingerprinted as made: ``trieste_scalable.spaces.product_workers``),
side by side in one run; and whether the two give the same fingerprints.

Each configuration runs in a process of its own (so each peak memory is its own): ``N`` random
distinct products of Walters' quinazoline space over his full reagent lists (2.19 x 10^10),
scored by QED, told to ours (the pool rule around GP-BUCB with screen's settings for a
make-on-demand space: ``make_on_demand.pool_optimizer``), then ``--asks`` batches of 100, each
scored and told. Printed: the median seconds an ask and the process's peak memory. The first
ask of each is left out of the median: it starts the worker processes and compiles.

    python benchmarks/evaluations_scale.py --evaluations 10000 30000
    python benchmarks/evaluations_scale.py --same-fingerprints 100000   # the check alone
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import make_on_demand  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.campaigns.algorithms.registry import algorithm  # noqa: E402
from trieste_scalable.chemistry.molecules import (  # noqa: E402
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
    fingerprint_width,
    fingerprints,
)
from trieste_scalable.spaces.reaction import ReactionLibrary  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402

SETTINGS = (DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH)
WAYS = ("before", "now")
INDUCING = algorithm("gp-bucb").default_inducing(library=True)
"""GP-BUCB's dictionary, as screen's."""


class LibraryBefore(ReactionLibrary):
    """Products and fingerprints as made before issue 81: in this process, each product's
    fingerprint from its canonical SMILES read back."""

    def fingerprints(self, indices: np.ndarray, settings: tuple) -> tuple[np.ndarray, np.ndarray]:
        from rdkit import Chem

        made = self.products(indices)
        kept = np.array([i for i, s in enumerate(made) if s is not None], dtype=np.int64)
        if not kept.size:
            return kept, np.zeros((0, -(-fingerprint_width(*settings[::2]) // 8)), np.uint8)
        molecules = [Chem.MolFromSmiles(made[i]) for i in kept]
        return kept, np.packbits(fingerprints(molecules, *settings, chirality=True), axis=1)


def library(way: str, space: str = "quinazoline") -> ReactionLibrary:
    reagents = make_on_demand.library_of(space).reagents
    if way == "before":
        return LibraryBefore(make_on_demand.SPACES[space][0], reagents, workers=1)
    return ReactionLibrary(make_on_demand.SPACES[space][0], reagents)


def one(way: str, evaluations: int, asks: int, seed: int) -> dict[str, Any]:
    """One configuration (module docstring), in this process."""
    made = library(way)
    space = MakeOnDemandSpace(made, SETTINGS)
    score = make_on_demand.objective_of("qed", "")

    def observe(points: Any) -> Dataset:
        smiles = made.products(np.rint(np.asarray(points)).astype(np.int64))
        return Dataset(tf.constant(points), tf.constant(-score(smiles)[:, None]))

    started = time.perf_counter()
    data = observe(space.sample(evaluations, seed=seed))
    ask_tell = make_on_demand.pool_optimizer(space, data, seed, INDUCING)
    setup = time.perf_counter() - started
    seconds = []
    for _ in range(asks):
        started = time.perf_counter()
        batch = ask_tell.ask()
        seconds.append(time.perf_counter() - started)
        ask_tell.tell(observe(batch))
    return {
        "seconds": seconds,
        "setup": setup,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def same_fingerprints(num: int, seed: int = 0) -> None:
    """Compares the two ways' fingerprints of ``num`` random tuples of the 10^6 subset."""
    tuples = make_on_demand.library_of("subset").random_tuples(num, np.random.default_rng(seed))
    (kept_before, before), (kept_now, now) = (
        library(way, "subset").fingerprints(tuples, SETTINGS) for way in WAYS
    )
    differ = int(np.sum(np.any(before != now, axis=1))) if before.shape == now.shape else -1
    print(
        f"fingerprints of {num:,} random tuples of the 10^6 subset: {len(kept_now):,} products "
        f"(before {len(kept_before):,}), rows that differ: {differ}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, nargs="*", default=[10_000])
    parser.add_argument("--asks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--same-fingerprints", type=int, default=20_000, metavar="N")
    parser.add_argument("--one", nargs=2, metavar=("WAY", "EVALUATIONS"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        result = one(options.one[0], int(options.one[1]), options.asks, options.seed)
        print(json.dumps(result))
        return
    same_fingerprints(options.same_fingerprints, options.seed)
    print(f"cores: {os.cpu_count()}; asks of 100 after N random products (QED), the first left out")
    print(f"{'N':>7s}  {'way':6s}  {'s an ask (median)':>17s}  {'each':28s}  {'peak GB':>7s}")
    for evaluations in options.evaluations:
        medians: dict[str, Optional[float]] = {}
        for way in WAYS:
            command = [sys.executable, __file__, "--one", way, str(evaluations)]
            command += ["--asks", str(options.asks), "--seed", str(options.seed)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                print(f"{evaluations:7d}  {way:6s}  failed: {done.stderr.strip().splitlines()[-1]}")
                medians[way] = None
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            medians[way] = float(np.median(result["seconds"][1:]))
            each = ", ".join(f"{s:.1f}" for s in result["seconds"])
            print(
                f"{evaluations:7d}  {way:6s}  {medians[way]:17.2f}  {each:28s}  "
                f"{result['peak_gb']:7.2f}",
                flush=True,
            )
        if medians["before"] and medians["now"]:
            print(f"{evaluations:7d}  ratio now / before: {medians['now'] / medians['before']:.2f}")


if __name__ == "__main__":
    main()
