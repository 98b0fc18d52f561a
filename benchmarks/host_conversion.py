"""What making a tensor from a host value keeps and costs: ``tf.constant`` against
:func:`~trieste_scalable.numerics.host_tensors.host_tensor`, side by side in one process.

    python benchmarks/host_conversion.py
    python benchmarks/host_conversion.py --calls 20000

For each kind of value a campaign converts (a row of features, a few indices, a Python number,
and the outcome transform's fit on 300 values, which converted about 800 numbers), printed:
the bytes still allocated per call after ``--calls`` calls and a collection (``tracemalloc``:
what a loop that calls it forever leaks), the microseconds a call, and the ratios of the two.
The resident memory the process gained over the ``tf.constant`` calls is printed too, since
TensorFlow keeps more than Python's allocator sees (its scalar cache: a distinct number costs
about 0.8 KB more).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from typing import Callable

import numpy as np
import tensorflow as tf

from trieste_scalable.numerics import outcome_transforms
from trieste_scalable.numerics.host_tensors import host_tensor


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def measure(call: Callable[[int], object], calls: int) -> tuple[float, float, float]:
    """Bytes kept a call, microseconds a call, resident MiB gained over the calls."""
    for i in range(20):
        call(i)
    gc.collect()
    resident = resident_mib()
    tracemalloc.start()
    start = time.perf_counter()
    for i in range(calls):
        call(i)
    seconds = time.perf_counter() - start
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return kept / calls, 1e6 * seconds / calls, resident_mib() - resident


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    row = rng.normal(size=(8, 1001))  # a pick's features: [K, M] with M = 1,001
    index = np.arange(12)
    values = rng.exponential(size=(300, 1)) - 4.0
    cases: dict[str, tuple[Callable[[int], object], Callable[[int], object], int]] = {
        "features [8, 1001]": (
            lambda i: tf.constant(row, tf.float64),
            lambda i: host_tensor(row, tf.float64),
            args.calls,
        ),
        "indices [12]": (
            lambda i: tf.constant(index, tf.int64),
            lambda i: host_tensor(index, tf.int64),
            args.calls,
        ),
        "distinct numbers": (
            lambda i: tf.constant(0.5 + i, tf.float64),
            lambda i: host_tensor(0.5 + i, tf.float64),
            args.calls,
        ),
    }
    print(f"{'value':24s} {'kept B/call':>24s} {'us/call':>20s}  resident MiB gained")
    print(f"{'':24s} {'tf.constant':>12s} {'host':>6s} {'ratio':>5s} {'tf':>7s} {'host':>6s} "
          f"{'ratio':>5s}  {'tf':>5s} {'host':>5s}")  # fmt: skip
    for name, (builtin, ours, calls) in cases.items():
        kept_tf, us_tf, mib_tf = measure(builtin, calls)
        kept, us, mib = measure(ours, calls)
        print(
            f"{name:24s} {kept_tf:12.0f} {kept:6.0f} {kept_tf / max(kept, 1):5.0f} "
            f"{us_tf:7.1f} {us:6.1f} {us / us_tf:5.2f}  {mib_tf:5.1f} {mib:5.1f}"
        )
    kept_fit, us_fit, mib_fit = measure(
        lambda i: outcome_transforms.fit_outcome_transform("auto", values), 20
    )
    print(
        f"outcome fit (auto, 300):  {kept_fit / 1024:.1f} KB kept a fit, {us_fit / 1e3:.0f} ms "
        f"a fit, {mib_fit:.1f} MiB resident gained over 20"
    )


if __name__ == "__main__":
    main()
