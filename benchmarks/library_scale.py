"""Screening at library scale: featurising, memory and seconds per batch for growing libraries.

Run: ``.venv/bin/python benchmarks/library_scale.py [--sizes 100000 300000 1000000 full]
[--algorithms ts bbkb random] [--batches 3] [--batch-size 500] [--device cpu|gpu]``
(``full`` = the whole MOSES set, 1,936,962 molecules, read from the ``molsets`` package:
``pip install --no-deps molsets``; without it only sizes up to the shipped 100,000 work).
``--device gpu`` runs parts B and C on TensorFlow's GPU (the code is device-agnostic; the
child processes fail clearly if none is visible); the default hides any GPU.

Every measurement runs in a fresh process with a private cache (``benchmarks/out/cache``):

A. Featurising the largest library from scratch (Morgan bits, 1,024), then scoring it with
   celecoxib-MPO (the table a benchmark needs for recall; a real oracle scores only what is
   evaluated): wall time of each on every core, peak resident memory of the process and of its
   worker processes (sampled), and the store on disk (bit-packed fingerprints and scores).
   Smaller sizes are prefixes of it and reuse its cached chunks.
B. Per size N and rule: a campaign of ``--batches`` batches of ``--batch-size`` after as many
   random molecules (the command line's settings: Tanimoto kernel, fixed hyperparameters, 500
   inducing points chosen uniformly for ``ts``): building the problem from the cache, seconds per
   batch split into asking (for ``ts``: posterior sampling, the one-off sign features of the
   library, scoring) and telling (model update), and the peak resident memory. Scoring is
   compared with the arithmetic floor ``N (F + M) B 2`` flop at the float32 matrix-product speed
   this machine reaches in the same process (F = 1,000 features, M inducing points).
C. The S-GP-TS paper's protocol on the largest library: ``ts`` and random search, batches of
   ``--batch-size`` for ``--protocol-batches`` batches, recall of the top 1 % and 10 % after each
   batch (the paper ran 250 batches of 500 on 2.3 M molecules, scoring a 100,000-molecule subset
   per sample; here every sample scores the whole library).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).parent / "out"
CACHE = OUT / "cache"

CHILD_FEATURISE = r"""
import json, multiprocessing, os, resource, sys, threading, time
from pathlib import Path
from trieste_scalable.problems.screening import screening_problem

def vm_rss(pid):  # MB, 0 if gone
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    rows = [int(l.split()[1]) for l in text.splitlines() if l.startswith("VmRSS")]
    return rows[0] / 1024 if rows else 0.0  # no VmRSS: exiting

# the workers' resident memory, sampled (their ru_maxrss would include this process's peak at
# spawn: Linux keeps the high-water mark across exec)
peak = dict(workers=0.0, total=0.0)
def sample():
    while True:
        workers = sum(vm_rss(c.pid) for c in multiprocessing.active_children())
        peak["workers"] = max(peak["workers"], workers)
        peak["total"] = max(peak["total"], workers + vm_rss(os.getpid()))
        time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()
start = time.perf_counter()
screening_problem(sys.argv[1], None, progress=True)  # fingerprints only
seconds = time.perf_counter() - start
start = time.perf_counter()
# + the score table; Morgan bits 1,024, as when measured
problem = screening_problem(sys.argv[1], "celecoxib-mpo", "bits", 2, 1024, progress=True)
scoring = time.perf_counter() - start
cache = Path(sys.argv[2])
store = sum(p.stat().st_size for p in cache.glob("*.npy"))
chunks = sum(p.stat().st_size for p in (cache / "chunks").glob("*.npz"))
print(json.dumps(dict(
    seconds=seconds, scoring=scoring, candidates=len(problem.points),
    molecules=problem.num_molecules,
    rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    workers_mb=peak["workers"], total_mb=peak["total"],
    store_mb=store / 2**20, chunks_mb=chunks / 2**20)))
"""

CHILD_CAMPAIGN = r"""
import json, os, resource, sys, time
import numpy as np, tensorflow as tf
if os.environ["LIBRARY_SCALE_DEVICE"] == "cpu":  # the code is device-agnostic: choose here
    tf.config.set_visible_devices([], "GPU")
elif not tf.config.list_physical_devices("GPU"):
    print(json.dumps(dict(error="--device gpu, but TensorFlow sees no GPU")))
    sys.exit(0)
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste_scalable.acquisition import ConfidenceWidth
from trieste_scalable.campaigns.algorithms.builders import build
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.campaigns.candidates.library_models import screening_regulariser
from trieste_scalable.problems.screening import screening_problem
library, algorithm = sys.argv[1], sys.argv[2]
batches, batch_size = int(sys.argv[3]), int(sys.argv[4])
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
problem = screening_problem(library, "celecoxib-mpo", "bits", 2, 1024)
space = problem.search_space
build_seconds, build_rss = time.perf_counter() - start, rss()
initial = problem.initial_data(batch_size, 0)
scale = float(np.var(initial.observations.numpy()))
model, rule = build(algorithm, initial, kernel=Tanimoto(variance=scale, binary_inputs=True),
    noise_variance=screening_regulariser(algorithm, scale),
    width=ConfidenceWidth("constant", beta=2.0),
    batch_size=batch_size, max_batch_size=batch_size, fit_hyperparameters=False, seed=0,
    screening=True, selector="random")
observer = problem.observer(1)
ask_tell = AskTellOptimizer(space, initial, model, rule)
steps = []
for _ in range(batches):
    t0 = time.perf_counter()
    batch = ask_tell.ask()
    t1 = time.perf_counter()
    ask_tell.tell(observer(batch))
    t2 = time.perf_counter()
    stats = dict(getattr(rule, "last_statistics", {}))
    steps.append(dict(ask=t1 - t0, tell=t2 - t1, size=int(batch.shape[0]),
        sampling=stats.get("sampling_seconds", 0.0), scoring=stats.get("scoring_seconds", 0.0),
        inducing=stats.get("inducing_points", 0), rss_mb=rss()))
ids = problem.indices(ask_tell.dataset.query_points)
ends = batch_size + np.cumsum([s["size"] for s in steps]) - 1  # after each batch
curves = {f: problem.recall_curve(ids, f)[ends].tolist() for f in (0.01, 0.1)}
# the float32 matrix-product speed of this machine: 20 products [4096, F + M] x [F + M, B] in a
# graph loop, cycling over 4 different row blocks (a loop-invariant product could be hoisted)
width = 1000 + 500
a = tf.random.normal([4, 4096, width], dtype=tf.float32)
b = tf.random.normal([width, batch_size], dtype=tf.float32)
def products():
    def body(i, total):
        return i + 1, total + tf.reduce_max(tf.gather(a, i % 4) @ b)
    return tf.while_loop(lambda i, _: i < 20, body, [tf.constant(0), tf.constant(0.0)])[1]
product = tf.function(products)
product()
t0 = time.perf_counter(); product().numpy(); matmul = time.perf_counter() - t0
flops = 20 * 4096 * width * batch_size * 2 / matmul
print(json.dumps(dict(candidates=len(problem.points), build_seconds=build_seconds,
    build_rss_mb=build_rss, steps=steps, rss_mb=rss(), float32_gflops=flops / 1e9,
    recall_top1pct=problem.recall(ids, 0.01), distinct=int(np.unique(ids).size),
    evaluations=int(ids.size), recall_top1pct_curve=curves[0.01],
    recall_top10pct_curve=curves[0.1])))
"""


DEVICE = "cpu"  # set from --device


def run_child(code: str, *args: str) -> dict:
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        TRIESTE_SCALABLE_CACHE=str(CACHE),
        LIBRARY_SCALE_DEVICE=DEVICE,
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    if done.returncode:
        return dict(error=f"exit {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def library_file(size: str) -> str:
    """The library of ``size`` molecules: ``moses-full``, or a prefix of it (of the shipped
    100,000 without ``molsets``) written once to ``benchmarks/out``: prefixes share the
    featurised chunks of the largest library."""
    from trieste_scalable.chemistry.molecules import MOSES_FULL, load_smiles, moses_full_files

    if size == "full":
        return MOSES_FULL
    try:
        source = MOSES_FULL if moses_full_files() else "moses-100k"
    except ValueError:
        source = "moses-100k"
    path = OUT / f"{source}_first_{size}.smi"
    if not path.is_file():
        OUT.mkdir(exist_ok=True)
        path.write_text("\n".join(load_smiles(source)[: int(size)]) + "\n")
    return str(path)


def report_campaign(size: str, algorithm: str, r: dict, batch_size: int) -> None:
    if "error" in r:
        print(f"N={size:>8} {algorithm:6s}: failed ({r['error']})", flush=True)
        return
    steps = r["steps"]
    later = steps[1:] or steps
    per_batch = sum(s["ask"] + s["tell"] for s in later) / len(later)
    line = (
        f"N={r['candidates']:>8} {algorithm:6s}: build {r['build_seconds']:6.1f} s "
        f"(RSS {r['build_rss_mb']:5.0f} MB), batches of {batch_size}: first "
        f"{steps[0]['ask'] + steps[0]['tell']:6.1f} s, then {per_batch:6.1f} s/batch "
        f"[ask {sum(s['ask'] for s in later) / len(later):5.1f}, tell "
        f"{sum(s['tell'] for s in later) / len(later):5.1f}]"
    )
    if algorithm == "ts":
        scoring = sum(s["scoring"] for s in later) / len(later)
        sampling = sum(s["sampling"] for s in later) / len(later)
        features = steps[0]["scoring"] - scoring if len(steps) > 1 else float("nan")
        flop = r["candidates"] * (1000 + later[-1]["inducing"]) * batch_size * 2
        floor = flop / (r["float32_gflops"] * 1e9)
        line += (
            f"; sampling {sampling:4.1f} s, scoring {scoring:5.1f} s = {scoring / floor:4.1f}x "
            f"the float32 floor ({floor:4.1f} s at {r['float32_gflops']:.0f} GFLOP/s), "
            f"library sign features once {features:5.1f} s"
        )
    sizes = "/".join(str(s["size"]) for s in steps)
    line += f"; batch sizes {sizes}; peak RSS {r['rss_mb']:5.0f} MB"
    line += f"; recall top 1% {r['recall_top1pct']:.4f}"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["100000", "300000", "1000000", "full"])
    parser.add_argument("--algorithms", nargs="+", default=["ts", "bbkb", "random"])
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["featurise", "campaigns", "protocol"],
        help="A, B and C (any of them)",
    )
    parser.add_argument("--protocol-batches", type=int, default=20, help="C's batches")
    parser.add_argument(
        "--device", choices=["cpu", "gpu"], default="cpu", help="where B and C compute"
    )
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    libraries = {size: library_file(size) for size in args.sizes}
    if "featurise" in args.parts:
        featurise(libraries[args.sizes[-1]])
    if "campaigns" in args.parts:
        campaigns(args, libraries)
    if "protocol" in args.parts:
        protocol(args, libraries[args.sizes[-1]])


def featurise(library: str) -> None:
    """Part A, from an empty cache."""
    shutil.rmtree(CACHE, ignore_errors=True)
    print(f"# A. featurise {library} (Morgan bits 1024 + celecoxib-MPO), {os.cpu_count()} cores")
    r = run_child(CHILD_FEATURISE, library, str(CACHE))
    print(
        f"N={r['molecules']:>8}: fingerprints {r['seconds']:6.1f} s, the objective's table "
        f"{r['scoring']:6.1f} s; peak RSS {r['rss_mb']:6.0f} MB (workers "
        f"together {r['workers_mb']:5.0f} MB; process + workers {r['total_mb']:5.0f} MB), "
        f"store {r['store_mb']:6.1f} MB on disk (+ chunk "
        f"cache {r['chunks_mb']:6.1f} MB), {r['candidates']} unique fingerprints",
        flush=True,
    )


def campaigns(args: argparse.Namespace, libraries: dict[str, str]) -> None:
    """Part B, from the cache part A filled (prefixes reuse its chunks)."""
    print(
        f"# B. campaigns on the {args.device}: {args.batches} batches of {args.batch_size} after "
        "as many at random"
    )
    for size in args.sizes:
        for algorithm in args.algorithms:
            result = run_child(
                CHILD_CAMPAIGN,
                libraries[size],
                algorithm,
                str(args.batches),
                str(args.batch_size),
            )
            report_campaign(size, algorithm, result, args.batch_size)


def protocol(args: argparse.Namespace, library: str) -> None:
    """Part C: the S-GP-TS paper's protocol (batches of 500) on the largest library, ``ts``
    against random search, recall after each batch."""
    print(
        f"# C. protocol: {library}, {args.protocol_batches} batches of {args.batch_size} after "
        "as many at random; recall of the top 1 % / 10 % after each batch"
    )
    for algorithm in ("ts", "random"):
        r = run_child(
            CHILD_CAMPAIGN, library, algorithm, str(args.protocol_batches), str(args.batch_size)
        )
        if "error" in r:
            print(f"{algorithm:6s}: failed ({r['error']})", flush=True)
            continue
        seconds = sum(s["ask"] + s["tell"] for s in r["steps"])
        print(
            f"{algorithm:6s}: {r['evaluations']} evaluations ({r['distinct']} distinct) of "
            f"{r['candidates']} candidates in {seconds:.0f} s; peak RSS "
            f"{r['steps'][0]['rss_mb']:.0f} MB after the first batch, {r['rss_mb']:.0f} MB "
            "at the end",
            flush=True,
        )
        for i, (top1, top10) in enumerate(
            zip(r["recall_top1pct_curve"], r["recall_top10pct_curve"])
        ):
            evaluations = args.batch_size * (i + 2)
            print(f"  {evaluations:6d} evaluations: recall top 1% {top1:.4f}, top 10% {top10:.4f}")


if __name__ == "__main__":
    main()
