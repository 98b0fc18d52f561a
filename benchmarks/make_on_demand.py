"""Make-on-demand spaces: the pool rule around GP-BUCB against Walters' reagent Thompson sampling,
side by side in one run, at the same total numbers of evaluations (warm-up included).

Run: ``.venv/bin/python benchmarks/make_on_demand.py --space subset --objective similarity
--evaluations 2000 --seeds 5 --walters-ts DIR --walters-python PY --walters-evaluations 6000``,
where ``DIR`` is a checkout of GitHub ``PatWalters/TS`` and ``PY`` a Python with what it imports
(RDKit, pandas, sqlitedict, useful_rdkit_utils); without them only this package's rule runs.
Reagent TS runs to ``--walters-evaluations`` (its first ``--evaluations`` are what a run of that
length evaluates), so that the evaluations it needs to find 90 of the true top 100 are known;
``--longer N`` runs ours on to ``N`` for the same reason. His search draws from an unseeded
generator (``np.random.default_rng()`` in ``ThompsonSampler.search``), so a seed repeats his
warm-up but not his search: rerun, his figures vary. On ``quinazoline`` (2.19 x 10^10),
``--evaluations 10000 --walters-evaluations 60000 --seeds 1``: ours at 10,000 (its best-100 mean
printed every 2,000) against reagent TS at 60,000, its warm-up of 3 evaluations a reagent included.

Spaces (Walters' reagent files, shipped in ``trieste_scalable/data/reagents``): ``subset``, his
quinazoline reaction over the 100-reagent lists (10^6 products, enumerated once here so that its
true top 100 is known: cached under the cache directory); ``quinazoline``, over the full lists
(2.19 x 10^10); ``amide``, 13,842 x 4,214. Objectives (maximised): ``similarity``, his
``FPEvaluator`` (Morgan Tanimoto to his query molecule); ``qed``, RDKit's drug-likeness, which
a Tanimoto kernel does not make a near-copy of the kernel; ``docking``, a docking-score surrogate,
and ``activity``, a classifier's probability of activity, zero almost everywhere (issue 83), and
``hits`` and ``rare_hits``, its hit calls (0 below a probability of 0.5, of 0.75), all learnt
from MolPAL's 4UNN table (``surrogates.py``). ``--transforms none,log`` runs ours once with each
outcome transform (``screen --transform``).

Ours: 100 random products, then batches of 100 of ``MakeOnDemandPoolRule`` around this package's
library default (GP-BUCB, fixed batches, Tanimoto kernel on the campaigns' default fingerprint,
the noise-free screen's regulariser, an exact GP up to ``--inducing`` evaluations and a Nystrom GP
over that many after, as ``screen``'s). Printed per run: the share of the true top 100 found (on
``subset``), the mean true score of the best 100 found, seconds a batch and peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any, Callable, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.ask_tell_optimization import AskTellOptimizer  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.acquisition import ConfidenceWidth  # noqa: E402
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.campaigns.algorithms.registry import algorithm  # noqa: E402
from trieste_scalable.campaigns.candidates.library_models import screening_regulariser  # noqa: E402
from trieste_scalable.chemistry.molecules import DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH  # noqa: E402
from trieste_scalable.kernels import Tanimoto  # noqa: E402
from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel  # noqa: E402
from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule  # noqa: E402
from trieste_scalable.spaces.reaction import (  # noqa: E402
    AMIDE,
    QUINAZOLINE,
    REAGENTS,
    ReactionLibrary,
)
from trieste_scalable.spaces.reagents import read_reagents  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402
from trieste_scalable.stores.cache import cache_dir  # noqa: E402

SPACES = {
    "subset": (QUINAZOLINE, ("aminobenzoic_100", "primary_amines_100", "carboxylic_acids_100")),
    "quinazoline": (QUINAZOLINE, ("aminobenzoic_ok", "primary_amines_ok", "carboxylic_acids_ok")),
    "amide": (AMIDE, ("primary_amines_ok", "carboxylic_acids_ok")),
}
QUERIES = {  # Walters' examples/quinazoline_fp_sim.json and amide_fp_sim.json
    QUINAZOLINE: "CCc1cccc2c(=O)n(C3CNC3)c([C@@H](C)N)nc12",
    AMIDE: "COC(=O)[C@@H](O)CC(=O)Nc1nncc2ccccc12",
}
BATCH, INITIAL = 100, 100
SURROGATES = ("docking", "activity", "hits", "rare_hits")
OBJECTIVES = ("similarity", "qed", "docking", "activity", "hits", "rare_hits")
"""``surrogates.py``'s objectives, learnt from MolPAL's 4UNN table."""


def reagent_files(space: str) -> list[Path]:
    return [REAGENTS / f"{name}.smi.gz" for name in SPACES[space][1]]


def library_of(space: str) -> ReactionLibrary:
    return ReactionLibrary(SPACES[space][0], [read_reagents(p) for p in reagent_files(space)])


def objective_of(name: str, query: str) -> Callable[[list[str]], np.ndarray]:
    """Scores (higher is better) of canonical SMILES."""
    import surrogates
    from rdkit import Chem, DataStructs
    from rdkit.Chem import QED, rdFingerprintGenerator

    generator = rdFingerprintGenerator.GetMorganGenerator()
    reference = generator.GetFingerprint(Chem.MolFromSmiles(query))

    def score(smiles: list[str]) -> np.ndarray:
        molecules = [Chem.MolFromSmiles(s) for s in smiles]
        if name == "qed":
            return np.array([QED.qed(m) for m in molecules])
        if name in SURROGATES:
            return getattr(surrogates, name)(molecules)
        found = [generator.GetFingerprint(m) for m in molecules]
        return np.array(DataStructs.BulkTanimotoSimilarity(reference, found))

    return score


def _truth_chunk(job: tuple[str, str, int, int]) -> np.ndarray:
    space, objective, start, stop = job
    library = library_of(space)
    tuples = np.stack(np.unravel_index(np.arange(start, stop), library.counts), axis=1)
    made = library.products(tuples)
    scores = np.full(len(made), -np.inf)
    ok = [i for i, s in enumerate(made) if s is not None]
    scores[ok] = objective_of(objective, QUERIES[SPACES[space][0]])([made[i] for i in ok])
    return scores


def truth(space: str, objective: str) -> np.ndarray:
    """Every product's score [size] by flat index (C order of the tuples), cached."""
    path = cache_dir() / f"combinatorial-truth-{space}-{objective}.npy"
    if path.is_file():
        return np.load(path)
    if objective in ("hits", "rare_hits"):  # a function of the classifier's probabilities
        import surrogates

        threshold = {"hits": surrogates.HIT_THRESHOLD, "rare_hits": surrogates.RARE_HIT_THRESHOLD}
        return surrogates.hit_call(truth(space, "activity"), threshold[objective])
    size = library_of(space).size
    chunk = 20_000
    jobs = [(space, objective, s, min(s + chunk, size)) for s in range(0, size, chunk)]
    started = time.perf_counter()
    with Pool(os.cpu_count() or 1) as pool:
        scores = np.concatenate(pool.map(_truth_chunk, jobs))
    print(f"enumerated {size:,} products in {time.perf_counter() - started:.0f} s (cached: {path})")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, scores)
    return scores


def run_ours(
    space_name: str, objective: str, evaluations: int, seed: int, inducing: int, **pool: Any
) -> dict:
    """One run of ours; ``inducing`` is GP-BUCB's dictionary (exact up to that many evaluations,
    then a Nystrom GP over that many; 0: exact throughout)."""
    library = library_of(space_name)
    space = MakeOnDemandSpace(library, (DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH))
    score = objective_of(objective, QUERIES[SPACES[space_name][0]])
    points, seconds = pool_campaign(
        space, library.products, score, evaluations, seed, inducing, **pool
    )
    return {
        "flat": np.ravel_multi_index(points.T, library.counts).tolist(),
        "names": [library.name(p) for p in points],
        "smiles": library.products(points),
        "seconds_a_batch": float(np.median(seconds)),
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def pool_campaign(
    space: Any,
    products: Callable[[np.ndarray], list],
    score: Callable[[list], np.ndarray],
    evaluations: int,
    seed: int,
    inducing: int,
    transform: str = "none",
    **pool: Any,
) -> tuple[np.ndarray, list[float]]:
    """The points [evaluations, D] a campaign of ours evaluates over ``space`` (a make-on-demand
    space or a catalog; ``products`` makes their SMILES, ``score`` scores them, higher better):
    ``INITIAL`` random products, then batches of ``BATCH``; and the seconds of each ask.
    ``transform``: the model's outcome transform (``screen --transform``)."""

    def observe(points: tf.Tensor) -> Dataset:  # the points asked for make products
        made = products(np.rint(points.numpy()).astype(np.int64))
        return Dataset(points, tf.constant(-score(made)[:, None]))  # Trieste minimises

    ask_tell = pool_optimizer(
        space, observe(space.sample(INITIAL, seed=seed)), seed, inducing, transform, **pool
    )
    seconds = []
    while int(ask_tell.dataset.query_points.shape[0]) < evaluations:
        started = time.perf_counter()
        batch = ask_tell.ask()
        seconds.append(time.perf_counter() - started)
        ask_tell.tell(observe(batch))
    points = np.rint(ask_tell.dataset.query_points.numpy()).astype(np.int64)[:evaluations]
    return points, seconds


def pool_optimizer(
    space: Any, data: Dataset, seed: int, inducing: int, transform: str = "none", **pool: Any
) -> AskTellOptimizer:
    """Ours told ``data`` (points of ``space``, Trieste's minimised scores): the pool rule
    around GP-BUCB with screen's settings for a make-on-demand space (module docstring)."""
    scale = 1.0 if transform != "none" else float(np.var(data.observations.numpy())) or 1.0
    rows = FeatureRows.of(space, packed=True)
    inner, rule = build(  # built from the rows the model keeps: one copy, shared
        "gp-bucb",
        rows.dataset(data),
        kernel=Tanimoto(variance=scale, binary_inputs=True),
        noise_variance=screening_regulariser("gp-bucb", scale),
        width=ConfidenceWidth("constant", beta=pool.get("beta", 2.0)),
        batch_size=BATCH,
        max_batch_size=BATCH,
        fixed_batches=True,
        fit_hyperparameters=False,
        screening=True,
        seed=seed,
        dictionary_size=inducing or None,
        outcome_transform=transform,
        packed_width=space.width,
    )
    pool_rule = MakeOnDemandPoolRule(rule, seed=seed, flat_pool=BATCH, **pool)
    return AskTellOptimizer(space, data, FeaturisedModel(inner, rows), pool_rule)


def run_walters(args: argparse.Namespace, seed: int) -> Optional[dict]:
    if not args.walters_ts:
        return None
    reaction = SPACES[args.space][0]
    command = [
        args.walters_python,
        str(Path(__file__).parent / "walters_ts_driver.py"),
        *("--ts-dir", args.walters_ts, "--reaction", reaction, "--objective", args.objective),
        *("--query", QUERIES[reaction]),
        *("--evaluations", str(args.walters_evaluations or args.evaluations)),
        *("--seed", str(seed), "--reagents", *map(str, reagent_files(args.space))),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:  # e.g. a hit call whose warm-up found no hit: his sampler's spread is 0
        reason = done.stderr.strip().splitlines()[-1]
        return {"names": [], "evaluations": 0, "best100_mean": 0.0, "failed": reason, "seconds": 0}
    result = json.loads(done.stdout)
    result["seconds"] = time.perf_counter() - started
    return result


def flat_of(names: list[str], library: ReactionLibrary) -> np.ndarray:
    """Flat indices of products named by their reagents' names (``A_B_C``)."""
    lookup = [{name: i for i, name in enumerate(r.names)} for r in library.reagents]
    rows = [
        [table.get(part, -1) for table, part in zip(lookup, name.split("_"))]
        for name in names
        if name.count("_") == len(lookup) - 1
    ]
    rows = [row for row in rows if min(row) >= 0]
    return np.ravel_multi_index(np.array(rows).T, library.counts) if rows else np.zeros(0, int)


def summary(flat: np.ndarray, scores: Optional[np.ndarray], evaluations: int) -> dict:
    """On ``subset``: the share of the true top 100 among the first ``evaluations`` of ``flat``
    (evaluated products' flat indices, in order), the mean true score of the best 100 of them,
    and the evaluations after which 90 of the true top 100 had been found (NaN if never)."""
    if scores is None:
        return {}
    if not len(flat):  # a run that failed before it evaluated anything we were told of
        return {"top100_share": 0.0, "best100_mean": 0.0, "to_90": float("nan")}
    top = np.zeros(len(scores), dtype=bool)
    top[np.argsort(-scores, kind="stable")[:100]] = True
    _, first = np.unique(flat, return_index=True)
    new = np.zeros(len(flat), dtype=bool)
    new[first] = True
    found_curve = np.cumsum(new & top[flat])
    reached = np.flatnonzero(found_curve >= 90)
    found = np.sort(scores[np.unique(flat[:evaluations])])[::-1]
    return {
        "top100_share": float(found_curve[min(evaluations, len(flat)) - 1]) / 100,
        "best100_mean": float(np.mean(found[:100])),
        "to_90": float(reached[0] + 1) if reached.size else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", choices=sorted(SPACES), default="subset")
    parser.add_argument("--objective", choices=OBJECTIVES, default="similarity")
    parser.add_argument(
        "--transforms",
        default="none",
        help="ours' outcome transforms, comma-separated, each run (screen --transform)",
    )
    parser.add_argument("--evaluations", type=int, default=2000)
    parser.add_argument(
        "--longer",
        type=int,
        default=0,
        help="on subset, run both on to this many evaluations to find when each has 90 of the "
        "true top 100 (the share is still read at --evaluations)",
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--inducing",
        type=int,
        default=algorithm("gp-bucb").default_inducing(library=True),
        help="GP-BUCB's dictionary, as screen's --inducing (default the campaigns'; 0: an exact "
        "GP throughout)",
    )
    parser.add_argument(
        "--pool-move-size",
        type=int,
        help="ours' pool searches' move size, as screen's --pool-move-size (default its default)",
    )
    parser.add_argument("--walters-ts", help="a checkout of GitHub PatWalters/TS")
    parser.add_argument("--walters-python", default="python3", help="the Python to run it with")
    parser.add_argument(
        "--walters-evaluations", type=int, help="reagent TS's evaluations (default --evaluations)"
    )
    args = parser.parse_args()
    library = library_of(args.space)
    scores = truth(args.space, args.objective) if args.space == "subset" else None
    print(
        f"{args.space}: {library.size:.3g} products, {args.objective}, "
        f"{args.evaluations} evaluations (reagent TS: "
        f"{args.walters_evaluations or args.evaluations}, warm-up included)"
    )
    print("seed  rule          top-100 share  best-100 mean  evals to 90  s/batch  peak GB")
    transforms = args.transforms.split(",")
    rows: dict[str, list[dict]] = {f"ours {t}": [] for t in transforms} | {"theirs": []}
    lengths = {rule: max(args.evaluations, args.longer) for rule in rows}
    lengths["theirs"] = args.walters_evaluations or args.evaluations
    for seed in range(args.seeds):
        for transform in transforms:
            rule = f"ours {transform}"
            pool = {} if args.pool_move_size is None else {"move_size": args.pool_move_size}
            ours = run_ours(
                args.space,
                args.objective,
                lengths[rule],
                seed,
                args.inducing,
                transform=transform,
                **pool,
            )
            mine = summary(np.array(ours["flat"]), scores, args.evaluations)
            if scores is None:
                mine["best100_mean"] = best_mean(ours["smiles"][: args.evaluations], args)
                steps = range(2000, args.evaluations, 2000)
                curve = [f"{n}: {best_mean(ours['smiles'][:n], args):.4f}" for n in steps]
                if curve:
                    print(f"      ours' best-100 mean after {', '.join(curve)}")
            rows[rule].append(mine)
            print(
                f"{seed:4d}  {rule:12s}  {mine.get('top100_share', float('nan')):13.2f}  "
                f"{mine['best100_mean']:13.4f}  {mine.get('to_90', float('nan')):11.0f}  "
                f"{ours['seconds_a_batch']:7.1f}  {ours['peak_gb']:7.2f}",
                flush=True,
            )
        theirs = run_walters(args, seed)
        if theirs is None:
            continue
        flat = flat_of(theirs["names"], library)
        found = summary(flat, scores, min(args.evaluations, lengths["theirs"]))
        if scores is None:
            found["best100_mean"] = theirs["best100_mean"]
        rows["theirs"].append(found)
        print(
            f"{seed:4d}  reagent TS    {found.get('top100_share', float('nan')):13.2f}  "
            f"{found['best100_mean']:13.4f}  {found.get('to_90', float('nan')):11.0f}  "
            f"({theirs['evaluations']} evaluations, {theirs['seconds']:.0f} s"
            f"{'; failed: ' + theirs['failed'] if 'failed' in theirs else ''})",
            flush=True,
        )
    ratios(rows, lengths)


def best_mean(smiles: list[str], args: argparse.Namespace) -> float:
    """The mean score of the best 100 distinct products among ``smiles``."""
    unique = sorted(set(smiles))
    values = objective_of(args.objective, QUERIES[SPACES[args.space][0]])(unique)
    return float(np.mean(np.sort(values)[::-1][:100]))


def ratios(rows: dict[str, list[dict]], lengths: dict[str, int]) -> None:
    """The issue's figures: mean share ours / reagent TS, and evaluations to 90 % of the true
    top 100, ours / reagent TS. A run that never found 90 counts as its length (``lengths``,
    evaluations a run): that mean is then a lower bound (``>=``), its ratio an upper bound."""
    if not rows["theirs"]:
        return
    for ours in (rule for rule in rows if rule != "theirs"):
        _ratios({"ours": rows[ours], "theirs": rows["theirs"]}, lengths, ours)


def _ratios(rows: dict[str, list[dict]], lengths: dict[str, int], label: str) -> None:
    """:func:`ratios` of one of our variants, ``label``."""
    for name in ("top100_share", "best100_mean", "to_90"):
        if name not in rows["ours"][0]:
            continue
        mean, never = {}, {}
        for rule, found in rows.items():
            values = np.array([r[name] for r in found])
            never[rule] = int(np.isnan(values).sum())
            length = lengths[label if rule == "ours" else rule]
            mean[rule] = float(np.mean(np.where(np.isnan(values), length, values)))
        bound = {rule: ">=" if never[rule] else "" for rule in rows}
        ratio = "<=" if never["theirs"] and not never["ours"] else ""
        if never["ours"]:
            ratio = "~"  # both bounds: no direction
        note = f" ({never['theirs']} of reagent TS's runs never found 90)" * bool(never["theirs"])
        print(
            f"mean {name}: {label} {bound['ours']}{mean['ours']:.4g}, reagent TS "
            f"{bound['theirs']}{mean['theirs']:.4g}, ratio {ratio}"
            f"{mean['ours'] / mean['theirs'] if mean['theirs'] else float('inf'):.2f}"
            f"{note}"
        )


if __name__ == "__main__":
    main()
