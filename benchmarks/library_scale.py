"""Featurising a library: chunked, bit-packed, on every core (``problems.featurise``) against
the previous path (all molecules parsed in one process, dense byte fingerprints), each in a
fresh process, for growing libraries.

Run: ``.venv/bin/python benchmarks/library_scale.py [--sizes 20000 100000]`` (the shipped MOSES
subset; about 2 x 3 minutes per 100,000 molecules on 2 cores). Each measurement featurises the
first N molecules (Morgan bits, 1,024) and scores them with celecoxib-MPO, in a child process,
and reports wall time, the peak resident memory of the process and of its worker processes
(``ru_maxrss``: the largest single worker, not their sum) and the bytes of the fingerprints kept.

This is the first part of the library-scale work (issue 10): scoring, the campaign's memory and
the full MOSES library are not measured here yet.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import numpy as np
from trieste_scalable.problems.molecules import celecoxib_mpo, fingerprints, load_smiles, parse
from trieste_scalable.problems.featurise import fingerprint_library, score_library
n, method = int(sys.argv[1]), sys.argv[2]
smiles = load_smiles("moses-100k")[:n]
start = time.perf_counter()
if method == "chunked":
    kept, packed = fingerprint_library(smiles)
    scores = score_library([smiles[i] for i in kept], "celecoxib-mpo")
    stored = packed.nbytes
else:  # the previous path: every Mol object at once, dense bytes
    molecules, kept = parse(smiles)
    dense = fingerprints(molecules)
    scores = celecoxib_mpo(molecules)
    stored = dense.nbytes
seconds = time.perf_counter() - start
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(dict(seconds=seconds, rss_mb=own, worker_rss_mb=workers, stored_mb=stored / 2**20,
                      mean_score=float(np.mean(scores)))))
"""


def measure(n: int, method: str) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), method],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    args = parser.parse_args()
    print(f"# featurise + celecoxib-MPO, Morgan bits 1024, {os.cpu_count()} cores", flush=True)
    for n in args.sizes:
        results = {method: measure(n, method) for method in ("one-process", "chunked")}
        for method, r in results.items():
            print(
                f"N={n:>7}  {method:>11}: {r['seconds']:7.1f} s, peak RSS {r['rss_mb']:6.0f} MB "
                f"(largest worker {r['worker_rss_mb']:5.0f} MB), fingerprints "
                f"{r['stored_mb']:6.1f} MB, mean score {r['mean_score']:.4f}",
                flush=True,
            )
        old, new = results["one-process"], results["chunked"]
        print(
            f"N={n:>7}  chunked/one-process: time {new['seconds'] / old['seconds']:.2f}x, "
            f"peak RSS {new['rss_mb'] / old['rss_mb']:.2f}x, "
            f"fingerprint bytes {new['stored_mb'] / old['stored_mb']:.3f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
