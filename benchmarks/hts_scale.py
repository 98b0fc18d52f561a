"""MolPAL's HTS protocol at 10⁶ molecules: 0.4 % at random, then five batches of 0.4 % (4,000 a
batch, 24,000 evaluated), on the synthetic library (``benchmarks/sharded_scale.py``'s rows: the
shipped MOSES molecules' 1,024-bit Morgan fingerprints perturbed, scored by its Tanimoto-GP
oracle), for ``screen``'s default rule and batch Thompson sampling, each in a process of its own,
side by side in one invocation: whole-campaign seconds (the library made and scored before, not
counted), seconds of each batch, peak RSS, and the share of the library's top 1,000 found.

Each rule is built exactly as a ``screen`` campaign builds it
(:func:`~trieste_scalable.campaigns.candidates.library_models.library_models` of the resolved
specification), over the library in memory (a store's rows are the same packed rows, mapped).

    python benchmarks/hts_scale.py                      # 10^6 rows, default and ts
    python benchmarks/hts_scale.py --size 100000 --rules default
    python benchmarks/hts_scale.py --size 10000000 --batches 1 --rules default   # one batch at 10^7
    python benchmarks/hts_scale.py --size 10000000 --distinct 1000000 --batch 4000 --batches 1 \
        --rules default   # its cost with 10^6 distinct rows tiled and 10^6's batch (recall moot)

``--library moses-full`` runs the same protocol on real molecules instead: the first ``--size``
molecules of the whole MOSES set (``pip install --no-deps molsets``; ``benchmarks/library_scale.py``
writes the prefix), featurised with ``screen``'s default fingerprint (atom-pair counts, 2,048 bits:
6,144 after the unary encoding of counts) and scored with a computed property (``--objective``,
default celecoxib-MPO), both cached before any campaign (their time is printed, not counted)::

    python benchmarks/hts_scale.py --library moses-full   # 10^6 MOSES molecules, default and ts

``--distinct`` makes fewer distinct rows and tiles them (the library's build is most of a 10^7
run's time on 2 cores): the rows and their scoring cost the same, but each molecule's copies
share its score, so the top 1,000 are 1,000 / copies molecules and the recall means nothing.
``--batch`` sets the initial design and each batch (default 0.4 % of the library).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from library_scale import library_file  # noqa: E402
from sharded_scale import memory_library  # noqa: E402

RULES = {"default": None, "ts": "ts"}


def load(path: str, objective: str):  # type: ignore[no-untyped-def]
    """The screening problem of a synthetic library's ``.npz`` (rows and oracle values), or of a
    SMILES file featurised with ``screen``'s default fingerprint and scored with ``objective``
    (cached: the first call computes, on every core)."""
    import numpy as np
    import tensorflow as tf

    from trieste_scalable.chemistry.labels import Labels
    from trieste_scalable.numerics.bits import PackedRows, shared_tensor
    from trieste_scalable.problems.screening import ScreeningProblem, screening_problem

    if not path.endswith(".npz"):
        return screening_problem(path, objective, progress=True)
    library = np.load(path)
    packed, values = library["packed"], -library["values"]  # Trieste minimises
    return ScreeningProblem(
        name="synthetic", points=PackedRows(shared_tensor(packed), 1024, tf.float64),
        values=values, noise_std=0.0, labels=Labels([""] * len(values)),
        num_molecules=len(values),
    )  # fmt: skip


def one(path: str, rule: str, batch: int, batches: int, seed: int, objective: str) -> None:
    """One campaign (in a child process): its figures as a JSON line."""
    import numpy as np
    import tensorflow as tf
    from trieste.ask_tell_optimization import AskTellOptimizer
    from trieste.data import Dataset

    from trieste_scalable.campaigns.candidates.library_models import library_models
    from trieste_scalable.campaigns.spec.defaults import resolved
    from trieste_scalable.campaigns.spec.library import ScreenSpec

    problem = load(path, objective)
    values = problem.values  # minimised
    with tempfile.TemporaryDirectory() as logdir:
        spec = resolved(
            ScreenSpec(
                algorithm=RULES[rule],
                initial=batch,
                budget=batch * batches,
                batch_size=batch,
                seed=seed,
                logdir=logdir,
            )  # fmt: skip
        )
    start = time.perf_counter()
    first = np.random.default_rng(seed).choice(len(values), size=batch, replace=False)
    data = Dataset(tf.constant(problem.points[first]), tf.constant(values[first][:, None]))
    model, acquisition = library_models(spec)(data, batch * batches)
    ask_tell = AskTellOptimizer(problem.search_space, data, model, acquisition)
    seconds, picked = [], [first]
    for _ in range(batches):
        t = time.perf_counter()
        x = ask_tell.ask()
        seconds.append(time.perf_counter() - t)
        ids = problem.indices(x)
        picked.append(ids)
        ask_tell.tell(Dataset(x, tf.constant(values[ids][:, None])))
    found = set(np.concatenate(picked).tolist())
    top = set(np.argsort(values)[:1000].tolist())
    print(json.dumps(dict(
        rule=spec.algorithm, dictionary=spec.dictionary_size, campaign=time.perf_counter() - start,
        batches=seconds, rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        recall=len(found & top) / 1000, evaluated=len(found),
    )))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--rules", nargs="+", default=list(RULES), choices=list(RULES))
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--distinct", type=int, default=None, help="distinct rows (tiled)")
    parser.add_argument("--batch", type=int, default=None, help="default 0.4 %% of --size")
    parser.add_argument("--library", default=None, help="moses-full: real molecules (above)")
    parser.add_argument("--objective", default="celecoxib-mpo", help="with --library")
    parser.add_argument("--one", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    batch = args.batch or max(1, round(0.004 * args.size))
    if args.one:
        return one(args.one[0], args.one[1], batch, args.batches, args.seed, args.objective)
    if args.library:
        path = library_file(str(args.size)) if args.library == "moses-full" else args.library
        start = time.perf_counter()
        problem = load(str(path), args.objective)
        print(
            f"{path}: {len(problem.values)} molecules, featurised ({problem.points.width} bits) "
            f"and scored ({args.objective}) in {time.perf_counter() - start:.0f} s, or read "
            "from the cache"
        )
        described = f"{len(problem.values)} MOSES molecules"
        del problem  # the children load it from the cache
    else:
        distinct = args.distinct or args.size
        path = memory_library(args.size, distinct, None)
        described = f"{args.size} ({distinct} distinct)"
    print(f"N={described}: {batch} at random, then {args.batches} batches of {batch}")
    for rule in args.rules:
        child = subprocess.run(
            [sys.executable, __file__, "--size", str(args.size), "--batches", str(args.batches),
             "--batch", str(batch), "--seed", str(args.seed), "--objective", args.objective,
             "--one", str(path), rule],
            capture_output=True, text=True,
        )  # fmt: skip
        if child.returncode:
            print(f"{rule}: failed\n{child.stderr[-3000:]}")
            continue
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"{rule} ({figures['rule']}, dictionary {figures['dictionary']}): campaign "
            f"{figures['campaign']:.0f} s, batches {[round(s) for s in figures['batches']]} s, "
            f"peak RSS {figures['rss'] / 1e9:.2f} GB, top-1,000 recall {figures['recall']:.3f} "
            f"({figures['evaluated']} evaluated)",
            flush=True,
        )


if __name__ == "__main__":
    main()
