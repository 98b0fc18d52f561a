"""Vendors' catalogs of many reactions: ``screen --space``'s search (the pool rule around GP-BUCB
over a :class:`~trieste_scalable.spaces.catalog_space.CatalogSpace`) against SynthonBench's
reference baselines (PyPI ``synthonbench``, MIT; its presets), side by side in one run, on the
same space, objective and budget.

Run: ``.venv/bin/python benchmarks/synthon_spaces.py --objective qed --evaluations 2000 --seeds 5``
(SynthonBench: ``pip install --no-deps synthonbench``; without it only ours runs), and
``--union`` for the sample with Walters' quinazoline and amide spaces (2.2 x 10^10 products, 12
reactions; one seed, ours only: seconds a batch, peak memory, where the picks went).
``--ours ours,ours-plain,ours-log`` runs variants of ours side by side (:func:`run_ours`: without
the products similar to the best, with an outcome transform).

The space: Chemspace's synthon sample, shipped (10 reactions, 995,916 products), enumerated once
so that the true top 100 molecules are known (``benchmarks/synthon_truth.py``: its objectives,
``similarity``, ``qed`` and ``docking``, a docking surrogate trained on MolPAL's 4UNN scores).
Every run evaluates ``--evaluations`` products, initial design included: ours 100 random
products then batches of 100 (``screen``'s defaults, its dictionary of 1,000 past 1,000
evaluations), each run in its own process so its peak memory is its own. SynthonBench's methods
run through its ``GlobalSynthonTask`` and ``run_optimizer``, its oracle a lookup of the same
truth; a tuple without a compound scores the objective's minimum there.

Printed per run: the share of the true top 100 molecules found (one molecule one hit, whichever
tuple made it), SynthonBench's call-reduction factor of it (DCRF: the evaluations random picks
need to find as many, over the evaluations made; 1 is random's), the evaluations after which 90
were found (nan: never), seconds a run. Then the mean share of each method, ours over the best
baseline's, and evaluations to 90, ours over the best baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
from synthon_truth import OBJECTIVES, reactions, scores, truth  # noqa: E402

BASELINES = ("ga", "bb", "salsa", "ts", "mcts", "random_pw")
"""SynthonBench's methods compared: ``ga`` its strongest, the bandits, MCTS, product-weighted
random."""


def run_ours(objective: str, evaluations: int, seed: int, union: bool, variant: str) -> dict:
    """One campaign of ours over the sample (or the union), in this process. ``variant``: ``ours``
    (``screen``'s defaults), then ``-plain`` for pools without the products RDKit's fingerprint
    search finds similar to the best (``--pool-similar 0``), and ``-<transform>`` for an outcome
    transform (``screen --transform``): e.g. ``ours-plain-log``."""
    from make_on_demand import pool_campaign

    from trieste_scalable.chemistry.molecules import (
        DEFAULT_FINGERPRINT,
        DEFAULT_RADIUS,
        DEFAULT_WIDTH,
    )
    from trieste_scalable.spaces.catalog_problem import CatalogRows
    from trieste_scalable.spaces.catalog_space import CatalogSpace
    from trieste_scalable.spaces.similar_products import SimilarProducts

    libraries = reactions() + (_walters() if union else [])
    catalog = CatalogSpace(libraries, (DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH))

    def score(smiles: list) -> np.ndarray:
        return scores(smiles)[objective]

    words = variant.split("-")[1:]
    similar = "plain" not in words
    transforms = [w for w in words if w != "plain"]
    pool = {"similar": SimilarProducts(catalog)} if similar else {}
    transform = transforms[0] if transforms else "none"
    points, seconds = pool_campaign(
        catalog, catalog.products, score, evaluations, seed, 1000, transform, **pool
    )
    spread = Counter(catalog.reaction_ids[int(r)] for r in points[:, 0])
    return {
        "flat": CatalogRows(catalog).indices(points).tolist(),
        "seconds_a_batch": float(np.median(seconds)),
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "spread": dict(spread),
        "best100_mean": float(np.mean(np.sort(score(catalog.products(points)))[::-1][:100])),
    }


def _walters() -> list:
    """Walters' quinazoline and amide spaces over his full reagent lists, each file read once
    (the two share the amines and the acids, as a user building the catalog would)."""
    from make_on_demand import SPACES, reagent_files

    from trieste_scalable.spaces.reaction import ReactionLibrary
    from trieste_scalable.spaces.reagents import read_reagents

    read: dict[Path, Any] = {}

    def once(path: Path) -> Any:
        if path not in read:
            read[path] = read_reagents(path)
        return read[path]

    return [
        ReactionLibrary(SPACES[name][0], [once(f) for f in reagent_files(name)])
        for name in ("quinazoline", "amide")
    ]


@lru_cache(maxsize=1)
def _synthonbench_space() -> tuple[Any, list[dict[int, int]], np.ndarray]:
    """SynthonBench's space of the sample (its ids are integers), each reaction's map from
    (component, synthon id) to our index, and each reaction's first flat index."""
    from synthonbench.space import Synthon, SynthonSpace

    rows, maps, starts = [], [], [0]
    for library in reactions():
        maps.append([{int(n): i for i, n in enumerate(c.names)} for c in library.reagents])
        for k, component in enumerate(library.reagents):
            for name, smiles in zip(component.names, component.smiles):
                rows.append(Synthon(int(name), k + 1, library.reaction, smiles))
        starts.append(starts[-1] + library.size)
    return SynthonSpace(rows), maps, np.array(starts[:-1])


def run_baseline(method: str, objective: str, evaluations: int, seed: int) -> dict:
    """One run of a SynthonBench method with its preset, its oracle a lookup of the truth."""
    from synthonbench.presets import build_with_preset
    from synthonbench.runner import run_optimizer
    from synthonbench.task import GlobalSynthonTask

    values = truth()[objective]
    floor = float(values[np.isfinite(values)].min())
    space, maps, starts = _synthonbench_space()
    order = {library.reaction: r for r, library in enumerate(reactions())}
    evaluated: list[int] = []  # the oracle is called once a charged evaluation, in order

    def flat(reaction: str, ids: tuple[int, ...]) -> int:
        r = order[reaction]
        local = [maps[r][k][i] for k, i in enumerate(ids)]
        return int(starts[r] + np.ravel_multi_index(local, reactions()[r].counts))

    def oracle(reaction: str, ids: Any) -> float:
        index = flat(reaction, tuple(int(i) for i in ids))
        evaluated.append(index)
        value = float(values[index])
        return value if np.isfinite(value) else floor

    task = GlobalSynthonTask(space, oracle, budget=evaluations, seed=seed)
    optimizer = build_with_preset(method, space=space, seed=seed)
    run_optimizer(optimizer, task, method=method)
    return {"flat": evaluated}


def summary(flat: list[int], objective: str, evaluations: int) -> dict:
    """Share of the true top 100 molecules among the first ``evaluations``, SynthonBench's DCRF
    of it, and the evaluations after which 90 were found."""
    found = truth()
    values, molecule = found[objective], found["molecule"]
    distinct = np.flatnonzero(molecule == np.arange(len(molecule)))  # one product a molecule
    top = set(distinct[np.argsort(-values[distinct], kind="stable")[:100]].tolist())
    seen: set[int] = set()
    curve = []
    for index in flat[:evaluations]:
        if molecule[index] in top:
            seen.add(int(molecule[index]))
        curve.append(len(seen))
    reached = np.flatnonzero(np.array(curve) >= 90)
    share = len(seen) / 100
    return {
        "share": share,
        "dcrf": share * 100 / (100 / len(distinct) * len(flat[:evaluations])),
        "to_90": float(reached[0] + 1) if reached.size else float("nan"),
    }


def _in_process(args: argparse.Namespace, method: str, seed: int, evaluations: int = 0) -> dict:
    """A run in a fresh process (its own peak memory), its result as JSON."""
    command = [sys.executable, __file__, "--one", method, "--seed", str(seed)]
    command += ["--objective", args.objective]
    command += ["--evaluations", str(evaluations or args.evaluations)]
    command += ["--union"] * args.union
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{method} seed {seed} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objective", choices=OBJECTIVES, default="qed")
    parser.add_argument("--evaluations", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--baselines", default=",".join(BASELINES))
    parser.add_argument(
        "--baseline-evaluations",
        type=int,
        default=0,
        help="run the best baseline again to this many evaluations, for when it finds 90",
    )
    parser.add_argument("--union", action="store_true", help="ours over the 12-reaction union")
    parser.add_argument(
        "--ours",
        default="ours",
        help="our variants, comma-separated (run_ours): e.g. ours,ours-similar,ours-log",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        if args.one.startswith("ours"):
            run = run_ours(args.objective, args.evaluations, args.seed, args.union, args.one)
        else:
            run = run_baseline(args.one, args.objective, args.evaluations, args.seed)
        print(json.dumps(run))
        return
    if args.union:
        union(args)
        return
    methods = args.ours.split(",")
    try:
        import synthonbench  # noqa: F401

        methods += [m for m in args.baselines.split(",") if m]
    except ImportError:
        print("synthonbench is not installed (pip install --no-deps synthonbench): ours only")
    truth()
    print(f"Chemspace sample: 995,916 products, {args.objective}, {args.evaluations} evaluations")
    print("seed  method      top-100 share   DCRF  evals to 90  seconds  s/batch  peak GB")
    rows: dict[str, list[dict]] = {m: [] for m in methods}
    for seed in range(args.seeds):
        for method in methods:
            run = _in_process(args, method, seed)
            found = summary(run["flat"], args.objective, args.evaluations)
            rows[method].append(found)
            cost = ""
            if method.startswith("ours"):
                cost = f"  {run['seconds_a_batch']:7.1f}  {run['peak_gb']:7.2f}"
            print(
                f"{seed:4d}  {method:10s}  {found['share']:13.2f}  {found['dcrf']:5.0f}  "
                f"{found['to_90']:11.0f}  {run['seconds']:7.0f}{cost}",
                flush=True,
            )
    ratios(rows, args)


def ratios(rows: dict[str, list[dict]], args: argparse.Namespace) -> None:
    """Mean share by method; ours over the best baseline's; evaluations to 90 (the best
    baseline's from runs of ``--baseline-evaluations``; a run that never found 90 counts as its
    length: then a bound)."""
    mean = {m: float(np.mean([r["share"] for r in found])) for m, found in rows.items()}
    print("mean top-100 share: " + ", ".join(f"{m} {v:.3f}" for m, v in mean.items()))
    baselines = {m: v for m, v in mean.items() if not m.startswith("ours")}
    if not baselines:
        return
    best = max(baselines, key=baselines.__getitem__)
    print(f"ours / best baseline ({best}): {mean['ours'] / max(mean[best], 1e-9):.2f}")
    lengths = {"ours": args.evaluations, best: args.evaluations}
    if args.baseline_evaluations > args.evaluations:
        lengths[best] = args.baseline_evaluations
        for seed, found in enumerate(rows[best]):
            longer = _in_process(args, best, seed, args.baseline_evaluations)
            found["to_90"] = summary(longer["flat"], args.objective, lengths[best])["to_90"]
            print(f"{seed:4d}  {best} to {lengths[best]}: 90 found after {found['to_90']:.0f}")
    to_90 = {}
    for method in ("ours", best):
        values = np.array([r["to_90"] for r in rows[method]])
        never = int(np.isnan(values).sum())
        length = lengths[method]
        to_90[method] = (float(np.mean(np.where(np.isnan(values), length, values))), never)
    (ours, ours_never), (theirs, never) = to_90["ours"], to_90[best]
    bound = "<=" if never and not ours_never else ("~" if ours_never else "")
    print(
        f"evaluations to 90: ours {'>=' * bool(ours_never)}{ours:.0f}, {best} "
        f"{'>=' * bool(never)}{theirs:.0f} ({never} of its runs never found 90), ratio "
        f"{bound}{ours / theirs:.2f}"
    )


def union(args: argparse.Namespace) -> None:
    """Ours over the sample alone and over the union, one seed each: cost and spread."""
    print(f"{args.objective}, {args.evaluations} evaluations, seed {args.seed}")
    print("space                  s/batch  peak GB  best-100 mean  evaluations by reaction")
    for name, with_union in (("sample (9.96e5)", False), ("union (2.2e10)", True)):
        args.union = with_union
        run = _in_process(args, "ours", args.seed)
        spread = ", ".join(f"{r} {n}" for r, n in sorted(run["spread"].items()))
        print(
            f"{name:22s} {run['seconds_a_batch']:7.1f}  {run['peak_gb']:7.2f}  "
            f"{run['best100_mean']:13.4f}  {spread}",
            flush=True,
        )


if __name__ == "__main__":
    main()
