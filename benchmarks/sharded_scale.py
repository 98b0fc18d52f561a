"""Sharded library stores and scoring on Ray actors (issue 24), measured side by side with
scoring in one process.

Run: ``.venv/bin/python benchmarks/sharded_scale.py [--sizes 1000000] [--actors 1 2]
[--batch-size 500] [--batches 2] [--featurise 100000] [--binary-products float32 bfloat16]``
(``--actors`` with no value: in-process only; ``--sizes`` with none: parts A and B only).
Writes stores under ``benchmarks/out/stores`` and ``benchmarks/results/sharded_histograms.png``.
With ``--in-memory [--distinct 1000000] [--base-bits moses_bits.npy]``, only part D runs.

A. The synthetic library (``benchmarks/synthetic_library.py``) against the
   shipped 100,000 MOSES molecules it perturbs: on-bits per molecule and Tanimoto similarity of
   20,000 random pairs (quantiles printed, both histograms plotted).
B. ``trieste-scalable featurise`` of ``--featurise`` real SMILES (worker processes on this
   machine), then the same build as Ray tasks on a local Ray cluster (what ``--ray-address``
   does on a cluster): wall time, molecules per second and the share of the machine's CPU time
   busy during it (``/proc/stat``): over the whole command (start-up included) and from the
   first shard written to the last (the next shards are fingerprinted while one is written).
C. Per size N: the synthetic store built (seconds, size on disk); then, each in a fresh process,
   batch Thompson sampling (the command line's ``ts``: Tanimoto kernel, 1,000 inducing points,
   fixed hyperparameters) for ``--batches`` batches of ``--batch-size`` after as many random
   rows, in-process and on each number of ``--actors`` (each under every
   ``--binary-products``): seconds per batch (the first computes
   the library's sign features), split for actors into broadcast / score / merge as the driver
   sees them, peak resident memory of the driver and of each actor (and, for each actor, the
   most of it not backed by a file: beyond its memory-mapped shards and spilled signs, sampled
   after each shard), recall of the top 1 %.
D. ``--in-memory``, for a machine with neither Ray, RDKit nor the disk for stores (the lent GPU
   machine: TensorFlow places the scoring on its GPU): per size N, the first ``--distinct`` rows
   of the synthetic library made in memory on every core (from ``--base-bits``, the shipped
   MOSES molecules' packed fingerprints saved with ``numpy.save``, or featurised here), tiled
   to N rows (the scoring's cost per row does not depend on repeats; recall then counts each
   repeat), scored by the oracle, then the batches of C in one process.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = str(Path(__file__).parent)  # synthetic_library.py, for the child processes
OUT = Path(__file__).parent / "out"
RESULTS = Path(__file__).parent / "results"

CHILD = r"""
import json, sys, time
import numpy as np, tensorflow as tf
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste_scalable.acquisition import ConfidenceWidth
from trieste_scalable.campaigns.algorithms.builders import build
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.numerics.bits import PackedRows, shared_tensor
from trieste_scalable.chemistry.labels import Labels
from trieste_scalable.problems.screening import ScreeningProblem
from trieste_scalable.stores.store import LibraryStore
from synthetic_library import TanimotoOracle

path, actors, batch, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
at_picks, keep = sys.argv[5] == "at-picks", sys.argv[6] == "keep"
start = time.perf_counter()
if path.endswith(".npz"):  # part D: packed rows and oracle values made in memory
    library = np.load(path)
    packed, values, keys = library["packed"], -library["values"], None
    labels = Labels([""] * len(values))
else:  # the store's rows, row index keys and labels memory-mapped from the cache
    store = LibraryStore(path)
    packed, keys, labels = store.packed(), store.index_keys(), store.labels()
    # the problem's values, minus the oracle's (Trieste minimises); with at_picks none for any
    # row (hence no recall): the oracle scores the rows evaluated
    if at_picks:
        values = np.broadcast_to(-np.float64(np.nan), (len(packed),))  # one float, not N
    else:
        values = -np.load(f"{path}/oracle.npy", mmap_mode="r")
oracle = TanimotoOracle(1024, seed=0)
def observed(ids):  # minus the oracle's value at rows ids [n, 1] (Trieste minimises)
    if not at_picks:
        return tf.constant(values[ids][:, None])
    order = np.argsort(ids)  # the mapped rows read in order
    scores = np.empty(len(ids))
    scores[order] = oracle(packed[ids[order]])
    return tf.constant(-scores[:, None])
problem = ScreeningProblem(name="synthetic", points=PackedRows(shared_tensor(packed), 1024,
    tf.float64), values=values, noise_std=0.0, labels=labels,
    num_molecules=len(values), index_keys=keys)
remote = None
if actors:
    from trieste_scalable.stores.sign_store import LibrarySignStore
    from trieste_scalable.cluster.scoring_actors import ScoringActors
    from trieste_scalable.chemistry.molecules import cache_dir
    remote = ScoringActors(store, actors,
        sign_store=LibrarySignStore(str(cache_dir())) if keep else None)
loaded = time.perf_counter() - start
first = np.random.default_rng(0).choice(len(packed), size=batch, replace=False)
data = Dataset(tf.constant(problem.points[first]), observed(first))
scale = float(np.var(data.observations.numpy()))
model, rule = build("ts", data, kernel=Tanimoto(variance=scale, binary_inputs=True),
    noise_variance=0.01 * scale, width=ConfidenceWidth("constant", beta=2.0), batch_size=batch,
    max_batch_size=batch, fit_hyperparameters=False, seed=0, screening=True, selector="random",
    keep_sign_features=keep, remote_scoring=remote)
ask_tell = AskTellOptimizer(problem.search_space, data, model, rule)
from trieste_scalable.cluster.scoring_actors import anonymous_rss, peak_rss
anonymous = anonymous_rss()  # sampled after loading and after each batch
seconds, splits, picked = [], [], [problem.indices(data.query_points)]
for _ in range(batches):
    before = dict(remote.seconds) if remote else {}
    t = time.perf_counter()
    x = ask_tell.ask()
    seconds.append(time.perf_counter() - t)
    splits.append({k: remote.seconds[k] - before[k] for k in before})
    ids = problem.indices(x)
    picked.append(ids)
    ask_tell.tell(Dataset(x, observed(ids)))
    anonymous = max(anonymous, anonymous_rss())
print(json.dumps(dict(load=loaded, seconds=seconds, splits=splits,
    device=next((tf.config.experimental.get_device_details(g).get("device_name", "GPU")
        for g in tf.config.list_physical_devices("GPU")), "CPU"),
    driver_rss=peak_rss(), driver_anonymous=anonymous,
    actor_rss=remote.peak_rss() if remote else [],
    actor_anonymous=remote.peak_anonymous_rss() if remote else [],
    recall=None if at_picks else problem.recall(np.concatenate(picked), 0.01))))
"""


def histograms(out: Path) -> None:
    import numpy as np
    from synthetic_library import perturbed_rows

    from trieste_scalable.problems.screening import screening_problem

    real = np.asarray(screening_problem("moses-100k", None, "bits", 2, 1024).points.bits)
    frequency = np.unpackbits(real, axis=1, count=1024).mean(axis=0)
    rng = np.random.default_rng(0)
    rows = rng.choice(10**7, size=len(real), replace=False).astype(np.int64)
    synthetic = perturbed_rows(real, rows, frequency, flips=2)

    def on_bits(packed):  # type: ignore[no-untyped-def]
        return np.unpackbits(packed, axis=1).sum(axis=1)

    def similarity(packed):  # type: ignore[no-untyped-def]
        a, b = (np.unpackbits(packed[rng.integers(0, len(packed), 20000)], axis=1) for _ in "ab")
        both = (a & b).sum(axis=1)
        return both / np.maximum(a.sum(axis=1) + b.sum(axis=1) - both, 1)

    measured = {
        "on-bits": (on_bits(real), on_bits(synthetic)),
        "Tanimoto": (similarity(real), similarity(synthetic)),
    }
    for name, (a, b) in measured.items():
        q = [0.05, 0.25, 0.5, 0.75, 0.95]
        print(f"A {name:>8}: real quantiles {np.quantile(a, q).round(3).tolist()}, "
              f"synthetic {np.quantile(b, q).round(3).tolist()}", flush=True)  # fmt: skip
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for axis, (name, (a, b)) in zip(axes, measured.items()):
        bins = np.linspace(min(a.min(), b.min()), max(a.max(), b.max()), 40)
        axis.hist(a, bins, alpha=0.6, density=True, label="MOSES 100k")
        axis.hist(b, bins, alpha=0.6, density=True, label="synthetic (2 flips)")
        axis.set_title(name if name == "on-bits" else "Tanimoto similarity, random pairs")
        axis.legend()
    figure.tight_layout()
    figure.savefig(out)
    print(f"A histograms: {out}", flush=True)


def busy_cpu() -> tuple[int, int]:
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


RAY_FEATURISE = r"""
import sys
from trieste_scalable.cluster.chunk_maps import RayChunkMap
from trieste_scalable.stores.store_build import build_store
build_store([sys.argv[1]], sys.argv[2], "bits", 2, 1024, shard_size=int(sys.argv[3]),
            chunk_map=RayChunkMap(), progress=lambda line: print(line, flush=True))
"""


def featurise(count: int) -> None:
    """Part B: the command (worker processes), then the same build on a local Ray cluster."""
    from trieste_scalable.chemistry.molecules import load_smiles

    library = OUT / f"featurise_{count}.smi"
    library.write_text("\n".join(load_smiles("moses-100k")[:count]) + "\n")
    store, shard_size = OUT / "stores" / f"featurised_{count}", str(max(count // 4, 1))
    command = [sys.executable, "-m", "trieste_scalable", "featurise", str(library), "--out",
               str(store), "--shard-size", shard_size]  # fmt: skip
    on_ray = [sys.executable, "-c", RAY_FEATURISE, str(library), str(store), shard_size]
    walls = {}
    for name, run in (
        ("featurise (worker processes)", command),
        ("same build on local Ray", on_ray),
    ):
        walls[name] = featurise_once(run, store, count, name)
    (first, a), (second, b) = walls.items()
    print(f"B {first} / {second}: {a / b:.2f}x the wall time", flush=True)


def featurise_once(command: list[str], store: Path, count: int, name: str) -> float:
    subprocess.run(["rm", "-rf", str(store)], check=True)
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(OUT))
    busy0, total0 = busy_cpu()
    start = time.perf_counter()
    shards = []  # (CPU counters, time) as each shard's line comes
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as run:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("shard-"):
                shards.append((busy_cpu(), time.perf_counter()))
    if run.returncode:
        raise RuntimeError(f"{name} exited with {run.returncode}")
    wall = time.perf_counter() - start
    busy1, total1 = busy_cpu()
    busy = (busy1 - busy0) / (total1 - total0)
    (b0, t0), t_0 = shards[0]
    (b1, t1), t_1 = shards[-1]
    print(f"B {name}, {count} SMILES: {wall:.1f} s ({count / wall:.0f}/s, start-up included), "
          f"CPU busy {busy:.1%}; from the first shard written to the last "
          f"({t_1 - t_0:.1f} s) {(b1 - b0) / (t1 - t0):.1%}", flush=True)  # fmt: skip
    return wall


def synthetic_store(size: int, oracle_values: bool) -> Path:
    """The synthetic store of ``size`` rows, built once, with the oracle's value of every row
    (``oracle.npy``) where ``oracle_values``."""
    import numpy as np
    from synthetic_library import (
        TanimotoOracle,
        synthetic_chunk_map,
    )

    from trieste_scalable.problems.screening import screening_problem
    from trieste_scalable.stores.store import LibraryStore, StoreError
    from trieste_scalable.stores.store_build import build_store

    path = OUT / "stores" / f"synthetic_{size}"
    if (path / "oracle.npy").is_file() or not oracle_values:
        try:
            LibraryStore(path)
            return path
        except StoreError:  # not built, or not finished: build_store resumes it
            pass
    base = np.asarray(screening_problem("moses-100k", None, "bits", 2, 1024).points.bits)
    names = OUT / f"synthetic_{size}.txt"
    with open(names, "w") as handle:
        for start in range(0, size, 10**6):
            stop = min(start + 10**6, size)
            handle.write("".join(f"synthetic-{i}\n" for i in range(start, stop)))
    start = time.perf_counter()
    shard_size = min(10**6, -(-size // 4))  # at least four shards: actors share them
    store = build_store([names], path, "bits", 2, 1024, shard_size=shard_size,
                        chunk_map=synthetic_chunk_map(base, 1024, flips=2))  # fmt: skip
    built = time.perf_counter() - start
    if not oracle_values:
        print(f"C N={store.num_rows}: store built in {built:.0f} s", flush=True)
        return path
    oracle = TanimotoOracle(1024, seed=0)
    values = np.concatenate([oracle(shard.bits) for shard in store.shards()])
    np.save(path / "oracle.npy", values)
    disk = sum(p.stat().st_size for p in path.glob("shard-*"))
    print(f"C N={store.num_rows}: store built in {built:.0f} s, oracle in "
          f"{time.perf_counter() - start - built:.0f} s, {disk / 1e9:.2f} GB on disk "
          f"({disk / store.num_rows:.0f} B a row)", flush=True)  # fmt: skip
    return path


def _perturbed(args: tuple) -> object:
    from synthetic_library import perturbed_rows

    base, rows, frequency = args
    return perturbed_rows(base, rows, frequency, flips=2)


def memory_library(size: int, distinct: int, base_bits: str | None) -> Path:
    """Part D's library of ``size`` rows: the synthetic library's first ``distinct`` rows, made
    on every core, tiled; saved with the oracle's values for the child."""
    import multiprocessing

    import numpy as np

    path = OUT / f"memory_{size}_{distinct}.npz"
    if path.is_file():
        return path
    OUT.mkdir(parents=True, exist_ok=True)
    if base_bits:
        base = np.load(base_bits)
    else:
        from trieste_scalable.problems.screening import screening_problem

        base = np.asarray(screening_problem("moses-100k", None, "bits", 2, 1024).points.bits)
    start = time.perf_counter()
    frequency = np.unpackbits(base, axis=1, count=1024).mean(axis=0)
    blocks = np.array_split(np.arange(min(size, distinct), dtype=np.int64), 256)
    with multiprocessing.get_context("spawn").Pool(os.cpu_count()) as pool:
        rows = np.concatenate(pool.map(_perturbed, [(base, b, frequency) for b in blocks]))
    made = time.perf_counter() - start
    from synthetic_library import TanimotoOracle

    values = TanimotoOracle(1024, seed=0)(rows, chunk_size=65536)
    repeats = -(-size // len(rows))
    np.savez(
        path, packed=np.tile(rows, (repeats, 1))[:size], values=np.tile(values, repeats)[:size]
    )
    print(f"D N={size}: {len(rows)} distinct rows made in {made:.0f} s on {os.cpu_count()} "
          f"cores, oracle in {time.perf_counter() - start - made:.0f} s", flush=True)  # fmt: skip
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--actors", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--featurise", type=int, default=100_000)
    parser.add_argument(
        "--binary-products",
        nargs="+",
        default=["auto"],
        help="routes of the fingerprints' inner products to measure side by side (auto, "
        "bfloat16, float32, sparse: TRIESTE_SCALABLE_BINARY_PRODUCTS)",
    )
    parser.add_argument("--in-memory", action="store_true", help="part D only (docstring)")
    parser.add_argument(
        "--no-in-process", action="store_true", help="part C on the actors only (not in-process)"
    )
    parser.add_argument(
        "--oracle-at-picks",
        action="store_true",
        help="part C: the oracle scores only the rows evaluated, not every row (no recall): "
        "for stores whose every row would take hours (10^8: ~2 h on 2 cores)",
    )
    parser.add_argument(
        "--keep-signs",
        action="store_true",
        help="part C: keep the library's sign features in the cache directory, as the command "
        "does (a first run writes them, a later one reads them); by default hashed every run",
    )
    parser.add_argument("--distinct", type=int, default=1_000_000)
    parser.add_argument("--base-bits", default=None, help="the base fingerprints, numpy.save'd")
    args = parser.parse_args()
    (OUT / "stores").mkdir(parents=True, exist_ok=True)
    if not args.in_memory:
        histograms(RESULTS / "sharded_histograms.png")
        if args.featurise:
            featurise(args.featurise)
    for size in args.sizes:
        if args.in_memory:
            os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")  # two processes share it
            path, actor_counts = memory_library(size, args.distinct, args.base_bits), [0]
        else:
            path = synthetic_store(size, not args.oracle_at_picks)
            actor_counts = [*([] if args.no_in_process else [0]), *args.actors]
        for products, actors in itertools.product(args.binary_products, actor_counts):
            flags = ["-S"] if sys.flags.no_site else []  # part D on the GPU machine's site
            command = [sys.executable, *flags, "-c", CHILD, str(path), str(actors),
                       str(args.batch_size), str(args.batches),
                       "at-picks" if args.oracle_at_picks else "all",
                       "keep" if args.keep_signs else "fresh"]  # fmt: skip
            env = dict(os.environ, TRIESTE_SCALABLE_BINARY_PRODUCTS=products, PYTHONPATH=HERE)
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            if done.returncode:
                print(done.stderr[-3000:])
                raise SystemExit(1)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            label = f"{actors} actors" if actors else f"in-process ({r['device']})"
            label += "" if products == "auto" else f" ({products})"
            split = "; ".join(", ".join(f"{k} {v:.2f}" for k, v in s.items()) for s in r["splits"])
            part = "D" if args.in_memory else "C"
            print(f"{part} N={size} {label:>21}: batches of {args.batch_size} "
                  f"{', '.join(f'{s:.1f}' for s in r['seconds'])} s"
                  f"{f' ({split})' if split else ''}; driver peak RSS "
                  f"{r['driver_rss'] / 1e9:.2f} GB (not file-backed "
                  f"{r['driver_anonymous'] / 1e9:.2f} GB), actors "
                  f"{[round(a / 1e9, 2) for a in r['actor_rss']]} GB (not file-backed "
                  f"{[round(a / 1e9, 2) for a in r['actor_anonymous']]} GB); "
                  f"load {r['load']:.1f} s; recall top 1% "
                  f"{'-' if r['recall'] is None else format(r['recall'], '.3f')}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
