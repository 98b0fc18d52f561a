"""Seconds of the Tanimoto kernel's inner products, each route of
``trieste_scalable.numerics.binary_products`` side by side in one run, on the fingerprints a
make-on-demand campaign scores: random products of Walters' quinazoline space over his full
reagent lists (atom-pair counts in unary encoding, 6,144 bits, screen's default), against a
dictionary of 1,000 of them.

Printed for each route and number of rows (a chunk of the pool searches' bounds, a pool, a pick's
row): the median seconds of ``x x2^T`` over ``--repeats`` calls (each compiled and called once
before), their ratio to TensorFlow's dense float32 product (``tf.matmul``, the route before the
sparse one), and whether the counts equal it. ``bfloat16`` is emulated, and slow, on CPUs without
AMX or AVX-512 BF16.

    python benchmarks/binary_products.py
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import make_on_demand  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from trieste_scalable.chemistry.molecules import (  # noqa: E402
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
)
from trieste_scalable.numerics import binary_products as products  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402

ROUTES = {
    "float32": lambda x, x2: products._products(x, x2, tf.float32),
    "sparse": products._sparse_products,
    "bfloat16": products._mixed_products,
}


def fingerprints(num: int, seed: int) -> np.ndarray:
    """0/1 rows [num, 6144] of ``num`` random products of the full quinazoline space."""
    space = MakeOnDemandSpace(
        make_on_demand.library_of("quinazoline"),
        (DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH),
    )
    _, packed = space.features(space.random_tuples(num, np.random.default_rng(seed)))
    return np.unpackbits(packed, axis=1)[:, : space.width].astype(np.float64)


def seconds(route: str, x: tf.Tensor, x2: tf.Tensor, repeats: int) -> tuple[float, np.ndarray]:
    """The median seconds of ``route``'s product and its counts."""
    compiled = tf.function(ROUTES[route], autograph=False)
    inner = compiled(x, x2).numpy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        compiled(x, x2).numpy()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), inner


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[2048, 256, 1])
    parser.add_argument("--dictionary", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = fingerprints(args.dictionary + max(args.rows), args.seed)
    x2 = tf.constant(rows[: args.dictionary], tf.float32)
    print(
        f"on-bits a row: mean {rows.sum(axis=1).mean():.0f} of {rows.shape[1]} "
        f"({rows.mean():.1%}); {os.cpu_count()} cores; dictionary of {args.dictionary}"
    )
    print("   rows  route        seconds  / float32  same counts")
    for num in args.rows:
        x = tf.constant(rows[args.dictionary : args.dictionary + num])
        dense, expected = seconds("float32", x, x2, args.repeats)
        for route in ROUTES:
            took, inner = (dense, expected) if route == "float32" else seconds(
                route, x, x2, args.repeats
            )
            same = np.array_equal(inner, expected)
            print(f"{num:7d}  {route:10s}  {took:8.4f}  {took / dense:9.2f}  {same}", flush=True)


if __name__ == "__main__":
    main()
