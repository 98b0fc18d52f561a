"""The hallucinating rules (GP-BUCB, BBKB) with their batch-start marginals computed elsewhere
(a :class:`~trieste_scalable.models.in_batch.RemoteMarginals`, as the scoring actors do it
on a store's shards) pick what they pick with the marginals computed here, batch by batch, with
points pending and over a Nyström dictionary; bad uses are refused. The actors themselves:
``integration_tests/test_scoring_actors.py``."""

from __future__ import annotations

from functools import partial
from typing import Any, Optional

import numpy as np
import pytest
import tensorflow as tf
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.space import Box

from trieste_scalable.acquisition import ConfidenceWidth
from trieste_scalable.campaigns.algorithms.builders import build
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.numerics.bits import pack_rows
from trieste_scalable.numerics.dtc import CompiledDTC
from trieste_scalable.numerics.dtc_posterior import DTCPosterior
from trieste_scalable.numerics.linalg import chunked_map
from trieste_scalable.packed_space import PackedSearchSpace

WIDTH, SHARD = 64, 230


class ShardedMarginals:
    """The marginals of ``rows`` computed shard by shard (each chunked on its own, as an actor
    chunks its shards), by a compiled copy of the numerics of its own."""

    def __init__(self, rows: np.ndarray):
        self._rows = rows
        self.calls = 0
        self._ops: Optional[CompiledDTC] = None

    @property
    def num_candidates(self) -> int:
        return len(self._rows)

    def marginals(
        self, kernel: Any, posterior: DTCPosterior, chunk_size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        own = Tanimoto(variance=float(kernel.variance.numpy()), binary_inputs=True)
        self._ops = self._ops or CompiledDTC(own, tf.float64)
        parts = [
            chunked_map(partial(self._ops.marginals, posterior), tf.constant(shard), chunk_size)
            for shard in np.array_split(self._rows, range(SHARD, len(self._rows), SHARD))
        ]
        mean, variance = (np.concatenate([p[i].numpy() for p in parts]) for i in range(2))
        return mean, variance


def _library(size: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    rows = (rng.uniform(size=(size, WIDTH)) < 0.2).astype(np.float64)
    values = rows[:, :8].sum(1) - rows[:, 8:12].sum(1) + rng.normal(0.0, 0.5, size)
    return rows, values


def _asks(algorithm: str, remote: Optional[ShardedMarginals], pending: bool) -> list[np.ndarray]:
    """Indices of three batches of 30 (``pending``: the second asked before the first is told,
    so the first's points are hallucinated as pending), the GP over a dictionary of 40."""
    rows, values = _library()
    space = PackedSearchSpace(pack_rows(rows), WIDTH)
    first = np.arange(0, 1000, 50)
    data = Dataset(tf.constant(rows[first]), tf.constant(values[first, None]))
    model, rule = build(
        algorithm, data, kernel=Tanimoto(variance=float(np.var(values)), binary_inputs=True),
        noise_variance=0.1, batch_size=30, max_batch_size=30,
        width=ConfidenceWidth("constant", beta=2.0), fit_hyperparameters=False, seed=1,
        screening=True, remote_scoring=remote, fixed_batches=algorithm == "gp-bucb",
        dictionary_size=40 if algorithm == "gp-bucb" else None,
    )  # fmt: skip
    model._chunk_size = 64  # several chunks a shard, not aligned with the shards
    ask_tell = AskTellOptimizer(space, data, model, rule)
    asked = []
    for step in range(3):
        batch = ask_tell.ask()
        picked = [int(np.flatnonzero((rows == row).all(1))[0]) for row in batch.numpy()]
        asked.append(np.array(picked, dtype=np.int64))
        if pending and step == 0:
            continue  # told with the next batch
        told = np.concatenate(asked[-2:]) if pending and step == 1 else asked[-1]
        ask_tell.tell(Dataset(tf.constant(rows[told]), tf.constant(values[told, None])))
    return asked


@pytest.mark.parametrize(
    "algorithm, pending", [("gp-bucb", False), ("gp-bucb", True), ("bbkb", True)]
)
def test_remote_marginals_pick_what_marginals_here_pick(algorithm: str, pending: bool) -> None:
    expected = _asks(algorithm, None, pending)
    remote = ShardedMarginals(_library()[0])
    picked = _asks(algorithm, remote, pending)
    assert remote.calls >= 3  # every batch (BBKB: also its regularised statistics)
    for mine, theirs in zip(picked, expected):
        np.testing.assert_array_equal(mine, theirs)
    sizes = [len(batch) for batch in picked]
    assert sizes == [30, 30, 30] if algorithm == "gp-bucb" else sum(sizes) > 3, sizes
    assert len(np.unique(np.concatenate(picked))) == sum(sizes)


def test_remote_marginals_of_another_candidate_set_are_refused() -> None:
    rows, values = _library()
    remote = ShardedMarginals(rows[:999])
    data = Dataset(tf.constant(rows[:20]), tf.constant(values[:20, None]))
    space = PackedSearchSpace(pack_rows(rows), WIDTH)
    model, rule = build(
        "gp-bucb", data, kernel=Tanimoto(binary_inputs=True), noise_variance=0.1, batch_size=5,
        max_batch_size=5, width=ConfidenceWidth("constant", beta=2.0), fit_hyperparameters=False,
        seed=0, screening=True, remote_scoring=remote, fixed_batches=True,
    )  # fmt: skip
    with pytest.raises(ValueError, match="remote candidates are 999 rows, the search space's 1000"):
        AskTellOptimizer(space, data, model, rule).ask()
    box = Box(tf.zeros(WIDTH, tf.float64), tf.ones(WIDTH, tf.float64))
    with pytest.raises(ValueError, match="DiscreteSearchSpace's points only"):
        AskTellOptimizer(box, data, model, rule).ask()


@pytest.mark.parametrize("algorithm", ["random", "mini-ucb", "mini-ei"])
def test_rules_that_score_nothing_elsewhere_refuse_a_remote(algorithm: str) -> None:
    rows, values = _library(30)
    data = Dataset(tf.constant(rows), tf.constant(values[:, None]))
    with pytest.raises(ValueError, match=f"{algorithm} scores no library elsewhere"):
        build(
            algorithm, data, noise_variance=0.1, batch_size=5, max_batch_size=5,
            width=ConfidenceWidth("constant", beta=2.0), fit_hyperparameters=False, seed=0,
            remote_scoring=ShardedMarginals(rows),
        )  # fmt: skip
