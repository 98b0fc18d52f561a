"""Batch Thompson sampling and GP-BUCB scored over a library store on Ray actors pick exactly what
scoring in one process picks, for several shard and actor layouts, also after an actor is
killed."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import tensorflow as tf
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset

ray = pytest.importorskip("ray")

from tests.util import write_library  # noqa: E402
from trieste_scalable.acquisition import BatchThompsonSampling, ConfidenceWidth  # noqa: E402
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.cluster.actor_placement import threads_each  # noqa: E402
from trieste_scalable.cluster.scoring_actors import ScoringActors  # noqa: E402
from trieste_scalable.kernels import Tanimoto  # noqa: E402
from trieste_scalable.numerics.cores import usable_cores  # noqa: E402
from trieste_scalable.problems.screening import screening_problem  # noqa: E402
from trieste_scalable.stores.sign_store import LibrarySignStore  # noqa: E402
from trieste_scalable.stores.store import LibraryStore, StoreError  # noqa: E402
from trieste_scalable.stores.store_build import build_store  # noqa: E402


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    ray.init("local", num_cpus=2, include_dashboard=False, log_to_driver=False)  # its own
    yield
    ray.shutdown()


pytestmark = pytest.mark.usefixtures("private_cache")  # conftest.py


def _batches(
    store: Path, remote: ScoringActors | None, kill: bool = False, algorithm: str = "ts"
) -> list[np.ndarray]:
    """Three batches of 40 over the store's problem, the same model and seed either way
    (``gp-bucb``: fixed batches over a dictionary of 30 once 30 molecules are evaluated)."""
    problem = screening_problem(str(store))
    data = problem.initial_data(20, 0)
    scale = float(np.var(data.observations.numpy()))
    model, rule = build(
        algorithm, data, kernel=Tanimoto(variance=scale, binary_inputs=True),
        noise_variance=0.01 * scale, batch_size=40, max_batch_size=40,
        width=ConfidenceWidth("constant", beta=2.0), fit_hyperparameters=False, seed=0,
        screening=True, selector="random", remote_scoring=remote, fixed_batches=True,
        dictionary_size=30,
    )  # fmt: skip
    if algorithm == "ts":
        rule = BatchThompsonSampling(
            40, exclude_evaluated=True, seed=0, scoring_dtype=tf.float32, remote_scoring=remote
        )
    ask_tell = AskTellOptimizer(problem.search_space, data, model, rule)
    batches = []
    for step in range(3):
        if kill and step == 1 and remote is not None:
            ray.kill(remote._actors[0], no_restart=False)  # restarted; its call retried
        batch = ask_tell.ask()
        batches.append(problem.indices(batch))
        values = tf.constant(problem.values[batches[-1]][:, None])
        ask_tell.tell(Dataset(batch, values))
    return batches


@pytest.mark.parametrize(
    "shard_size, actors",
    [
        pytest.param(700, 2, marks=pytest.mark.slow),  # [450-3] runs the same check by default
        (450, 3),
        pytest.param(700, 1, marks=pytest.mark.slow),
        pytest.param(5000, 2, marks=pytest.mark.slow),  # one shard: one actor
    ],
)
def test_actors_pick_what_one_process_picks(
    local_cluster: None, tmp_path: Path, shard_size: int, actors: int
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 3000)
    store = build_store([library], tmp_path / "store", shard_size=shard_size)
    expected = _batches(store.path, None)
    remote = ScoringActors(LibraryStore(store.path), actors)
    picked = _batches(store.path, remote, kill=actors > 1)
    for mine, theirs in zip(picked, expected):
        np.testing.assert_array_equal(mine, theirs)
    assert len(np.unique(np.concatenate(picked))) == 120
    # the actors' signs are spilled to memory-mapped files: what is not file-backed is a part
    # of each actor's peak
    for peak, anonymous in zip(remote.peak_rss(), remote.peak_anonymous_rss()):
        assert 0 < anonymous < peak
    # one node: the actors share its cores rather than each running a thread per core
    threads = ray.get([actor.intra_op_threads.remote() for actor in remote._actors])
    share = threads_each(len(threads), True, usable_cores())  # one actor a shard
    assert threads == [share] * len(threads)


@pytest.mark.parametrize(
    "shard_size, actors", [(450, 3), pytest.param(5000, 2, marks=pytest.mark.slow)]
)
def test_gp_bucb_on_actors_picks_what_one_process_picks(
    local_cluster: None, tmp_path: Path, shard_size: int, actors: int
) -> None:
    """The batch-start marginals of the exact GP (the first batch) and of a dictionary of 30
    (the others) computed on the actors, shard by shard; one of them killed mid-campaign."""
    library = tmp_path / "library.smi"
    write_library(library, 3000)
    store = build_store([library], tmp_path / "store", shard_size=shard_size)
    expected = _batches(store.path, None, algorithm="gp-bucb")
    remote = ScoringActors(LibraryStore(store.path), actors)
    picked = _batches(store.path, remote, kill=actors > 1, algorithm="gp-bucb")
    for mine, theirs in zip(picked, expected):
        np.testing.assert_array_equal(mine, theirs)
    assert len(np.unique(np.concatenate(picked))) == 120
    assert remote.seconds["score"] > 0  # the marginals were computed there


def test_actors_keep_their_shards_signs_and_read_them_when_started_again(
    local_cluster: None, tmp_path: Path
) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 1200)
    store = build_store([library], tmp_path / "store", shard_size=450)
    kept = LibrarySignStore(str(tmp_path / "signs"))  # as the command passes the driver's cache
    expected = _batches(store.path, None)
    first = ScoringActors(LibraryStore(store.path), 2, sign_store=kept)
    picked = _batches(store.path, first)
    entries = sorted((tmp_path / "signs").glob("sign-features-*.npy"))
    assert len(entries) == len(LibraryStore(store.path).manifest["shards"])  # one a shard
    written = [entry.stat().st_mtime_ns for entry in entries]
    for actor in first._actors:
        ray.kill(actor, no_restart=True)
    again = ScoringActors(LibraryStore(store.path), 2, sign_store=kept)  # a resumed campaign's
    repicked = _batches(store.path, again)
    assert [entry.stat().st_mtime_ns for entry in entries] == written  # read, not rewritten
    for batches in (picked, repicked):
        for mine, theirs in zip(batches, expected):
            np.testing.assert_array_equal(mine, theirs)


def test_a_damaged_shard_stops_the_actors_naming_it(local_cluster: None, tmp_path: Path) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 600)
    store = build_store([library], tmp_path / "store", shard_size=200)
    edited = np.arange(200, 400)
    edited[[5, 6]] = edited[[6, 5]]  # edited: still the shard's rows, in another order
    np.save(store.path / "shard-00001.ids.npy", edited)
    with pytest.raises(StoreError, match="shard shard-00001 does not match its hash"):
        ScoringActors(LibraryStore(store.path), 2)
