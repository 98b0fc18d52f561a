"""Test helpers: seeded toy problems and independent reference computations."""

from __future__ import annotations

import csv
import gc
import sys
import tracemalloc
from pathlib import Path
from typing import Callable, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from trieste.data import Dataset


def replicated_dataset(
    seed: int, num_unique: int = 30, num_repeats: int = 10, dim: int = 2, dtype=np.float64
) -> Dataset:
    """Random inputs in [0, 1]^dim, some repeated, with noisy sine observations."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(num_unique, dim))
    x = np.concatenate([x, x[rng.integers(num_unique, size=num_repeats)]])
    y = np.sin(6.0 * x[:, :1]) + np.cos(4.0 * x[:, -1:]) + 0.1 * rng.normal(size=(len(x), 1))
    return Dataset(tf.constant(x.astype(dtype)), tf.constant(y.astype(dtype)))


def se_kernel(lengthscale: float = 0.3, variance: float = 1.0) -> gpflow.kernels.Kernel:
    return gpflow.kernels.SquaredExponential(variance=variance, lengthscales=lengthscale)


def reference_gpr(
    dataset: Dataset, kernel: gpflow.kernels.Kernel, noise: float, mean: Optional[float] = None
) -> gpflow.models.GPR:
    """GPflow's exact GPR on the (duplicated) data with a constant mean: ``mean`` (a fitted
    model's ``prior_mean``), by default the data's mean, where an unfitted model starts it."""
    mean = float(np.mean(dataset.observations.numpy())) if mean is None else mean
    return gpflow.models.GPR(
        dataset.astuple(),
        kernel,
        noise_variance=noise,
        mean_function=gpflow.mean_functions.Constant(mean),
    )


def reference_sgpr_predictions(
    dataset: Dataset, kernel: gpflow.kernels.Kernel, noise: float, inducing: np.ndarray, x
):  # type: ignore[no-untyped-def]
    """GPflow's SGPR (the DTC predictive) on the (duplicated) data with ``inducing`` points and
    the data's mean as a constant mean: its latent mean and variance at ``x``."""
    x_np, y_np = dataset.query_points.numpy(), dataset.observations.numpy()
    sgpr = gpflow.models.SGPR(
        (x_np, y_np),
        kernel,
        inducing_variable=inducing,
        noise_variance=noise,
        mean_function=gpflow.mean_functions.Constant(np.mean(y_np)),
    )
    with gpflow.config.as_context(gpflow.config.Config(jitter=1e-14)):
        return sgpr.predict_f(x)


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file with a header, as dicts (a campaign's log, a batch file)."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


FIXTURES = Path(__file__).parent / "fixtures"
"""Files the tests read (campaign directories of earlier versions)."""


def moses(stop: int, start: int = 0) -> list[str]:
    """Molecules ``start`` to ``stop`` of the shipped 20,000-molecule MOSES subset."""
    from trieste_scalable.chemistry.molecules import load_smiles

    return load_smiles("moses-20k")[start:stop]


def write_library(path: Path, stop: int, start: int = 0, extra: Sequence[str] = ()) -> Path:
    """A ``.smi`` library at ``path`` of :func:`moses` ``(stop, start)`` and the ``extra`` lines
    (e.g. an unparseable SMILES); returns ``path``."""
    path.write_text("\n".join([*moses(stop, start), *extra]) + "\n")
    return path


def screen_argv(
    library: Path, logdir: Path, *extra: str, initial: int = 10, batch_size: int = 10
) -> list[str]:
    """Arguments of a quiet ``trieste-scalable screen`` of ``library`` into ``logdir``, with
    ``initial`` molecules and batches of ``batch_size``, then ``extra`` (for ``main`` or, after
    :data:`COMMAND`, a subprocess)."""
    return [
        *("screen", "--library", str(library), "--logdir", str(logdir), "--quiet"),
        *("--initial", str(initial), "--batch-size", str(batch_size), *extra),
    ]


COMMAND = [sys.executable, "-m", "trieste_scalable"]
"""The command line, as a subprocess runs it."""


def retained_bytes(call: Callable[[], object], times: int, warmup: int = 20) -> int:
    """Python-allocated bytes still held after ``times`` calls of ``call`` (``tracemalloc``,
    after ``warmup`` calls and a collection), whatever the calls return being dropped: what a
    loop that calls it forever would leak ``times`` calls' worth of."""
    for _ in range(warmup):
        call()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(times):
            call()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
