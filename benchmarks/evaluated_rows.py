"""What the evaluated molecules cost a campaign's model at wide fingerprints: grouping repeated
rows against NumPy's ``unique(axis=0)`` side by side, and the default model's update (a tell) at
n evaluations, each with its peak memory.

    python benchmarks/evaluated_rows.py                       # 24,000 rows of 6,144 bits
    python benchmarks/evaluated_rows.py --rows 12000 --width 2048

Rows are random 0/1 fingerprints (5 % on-bits), float64, as a campaign's dataset holds them
(``screen``'s default fingerprint, atom-pair counts in unary encoding, has 6,144 columns; MolPAL's
HTS protocol at 10⁶ molecules evaluates 24,000). Printed:

- grouping: seconds and the peak memory above the rows themselves, for
  :func:`~trieste_scalable.models.data.aggregate` (a hash of each row's bytes) and for
  ``np.unique(..., axis=0)`` with the same outputs (the grouping ``aggregate`` used before), and
  their ratios;
- the update: the campaign's default model (``screen``'s GP-BUCB over a dictionary of 1,000,
  built by :func:`~trieste_scalable.campaigns.candidates.library_models.library_models`)
  conditioned on 1,000 rows, then told a quarter, half and all of the rows, each update's
  seconds and its peak memory above what was held before it, in copies of the rows it was told
  (the first update also makes the process's first allocations of those sizes).

Peak memory is the process's resident set sampled every millisecond on a thread of its own.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.campaigns.candidates.library_models import library_models  # noqa: E402
from trieste_scalable.campaigns.spec.defaults import resolved  # noqa: E402
from trieste_scalable.campaigns.spec.library import ScreenSpec  # noqa: E402
from trieste_scalable.models.data import aggregate  # noqa: E402


class PeakMemory:
    """The resident set's peak (bytes) since :meth:`reset`, sampled on a daemon thread."""

    def __init__(self) -> None:
        self.peak = self.now()
        threading.Thread(target=self._sample, daemon=True).start()

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def reset(self) -> int:
        """Start a new peak; return the resident set now."""
        self.peak = now = self.now()
        return now

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, self.now())
            time.sleep(0.001)


def numpy_grouping(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique rows in first-occurrence order, counts and sums by ``np.unique(axis=0)``."""
    unique, first, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    groups = rank[inverse.reshape(-1)]
    counts = np.bincount(groups, minlength=order.size)
    return unique[order], counts, np.bincount(groups, weights=y[:, 0], minlength=order.size)


def timed(memory: PeakMemory, call, *args):  # type: ignore[no-untyped-def]
    """``call(*args)``'s result, seconds and peak memory above the resident set before it."""
    before = memory.reset()
    start = time.perf_counter()
    result = call(*args)
    seconds = time.perf_counter() - start
    time.sleep(0.01)
    return result, seconds, memory.peak - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=24_000)
    parser.add_argument("--width", type=int, default=6144)
    args = parser.parse_args()
    memory = PeakMemory()
    rng = np.random.default_rng(0)
    x = (rng.random((args.rows, args.width)) < 0.05).astype(np.float64)
    y = rng.normal(size=(args.rows, 1))
    copy = x.nbytes
    print(f"{args.rows} rows of {args.width} bits: {copy / 1e9:.2f} GB a copy (float64)")

    ours, our_seconds, our_peak = timed(memory, aggregate, x, y)
    (inputs, counts, sums), np_seconds, np_peak = timed(memory, numpy_grouping, x, y)
    assert np.array_equal(ours.inputs, inputs) and np.array_equal(ours.counts, counts)
    assert np.allclose(ours.sums, sums)
    print(
        f"grouping: aggregate {our_seconds:.2f} s, +{our_peak / copy:.2f} copies; "
        f"np.unique(axis=0) {np_seconds:.2f} s, +{np_peak / copy:.2f} copies; "
        f"ratio {our_seconds / np_seconds:.3f}x the time"
    )
    del ours, inputs, counts, sums

    rows, values = tf.constant(x), tf.constant(y)
    del x
    with tempfile.TemporaryDirectory() as logdir:
        spec = resolved(
            ScreenSpec(initial=1000, budget=args.rows, batch_size=1000, seed=0, logdir=logdir)
        )
    model, _ = library_models(spec)(Dataset(rows[:1000], values[:1000]), args.rows)
    for size in (args.rows // 4, args.rows // 2, args.rows):
        data = Dataset(rows[:size], values[:size])
        _, seconds, peak = timed(memory, model.update, data)
        print(
            f"update of the default model ({type(model).__name__}, dictionary "
            f"{spec.dictionary_size}) to {size} rows: {seconds:.1f} s, peak +{peak / 1e9:.2f} GB "
            f"(+{peak / (copy * size / args.rows):.2f} copies of those rows)",
            flush=True,
        )


if __name__ == "__main__":
    main()
