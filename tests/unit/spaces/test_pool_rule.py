"""Batches over a make-on-demand space through Trieste's ask/tell: the pool rule around this
package's GP-BUCB finds a target product among 10^4 amides (Walters' 100 amines x 100 acids) far
sooner than random picks, never proposes an evaluated product, and Trieste's own EGO runs on the
same space through the featurised model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from trieste.acquisition import ExpectedImprovement
from trieste.acquisition.optimizer import generate_random_search_optimizer
from trieste.acquisition.rule import EfficientGlobalOptimization
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.observer import OBJECTIVE

pytest.importorskip("rdkit")

from trieste_scalable.acquisition.pick_stream import streaming_picks  # noqa: E402
from trieste_scalable.campaigns.algorithms.builders import build  # noqa: E402
from trieste_scalable.kernels import Tanimoto  # noqa: E402
from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel  # noqa: E402
from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule  # noqa: E402
from trieste_scalable.spaces.reaction import (  # noqa: E402
    AMIDE,
    REAGENTS,
    ReactionLibrary,
)
from trieste_scalable.spaces.reagents import read_reagents  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402

FINGERPRINT = ("morgan", 2, 1024)


@pytest.fixture(scope="module")
def space() -> MakeOnDemandSpace:
    lists = [
        read_reagents(REAGENTS / f"{n}_100.smi.gz") for n in ("primary_amines", "carboxylic_acids")
    ]
    return MakeOnDemandSpace(ReactionLibrary(AMIDE, lists), FINGERPRINT)


def _objective(space: MakeOnDemandSpace, target: np.ndarray):  # type: ignore[no-untyped-def]
    """Minus the Tanimoto similarity of a product's fingerprint to the target product's."""
    featurise = FeatureRows.of(space)
    reference = featurise(target[None]).numpy()[0]

    def minus_similarity(points: np.ndarray) -> np.ndarray:
        rows = featurise(np.asarray(points)).numpy()
        shared = rows @ reference
        return -(shared / (rows.sum(1) + reference.sum() - shared))[:, None]

    return minus_similarity


def _initial(space: MakeOnDemandSpace, objective, num: int) -> Dataset:  # type: ignore[no-untyped-def]
    points = space.sample(num, seed=11)
    return Dataset(points, tf.constant(objective(points.numpy())))


def _gp_bucb(
    space: MakeOnDemandSpace, data: Dataset, batch_size: int, variance: float = 0.0
) -> tuple[FeaturisedModel, Any]:
    """This package's screening GP-BUCB (fixed batches, fixed Tanimoto kernel of ``variance``,
    by default the observations') on the space's tuples, and its rule for the fingerprints."""
    rows = FeatureRows.of(space)
    inner_model, inner_rule = build(
        "gp-bucb",
        rows.dataset(data),
        kernel=Tanimoto(variance=variance or float(np.var(data.observations)), binary_inputs=True),
        noise_variance=1e-3,
        batch_size=batch_size,
        max_batch_size=batch_size,
        fixed_batches=True,
        fit_hyperparameters=False,
        screening=True,
        width="constant",
        seed=0,
    )
    return FeaturisedModel(inner_model, rows), inner_rule


def test_the_pool_rule_finds_a_target_product_far_sooner_than_random(
    space: MakeOnDemandSpace,
) -> None:
    target = np.array([37, 64])
    objective = _objective(space, target)
    data = _initial(space, objective, 20)
    model, inner_rule = _gp_bucb(space, data, 10)
    rule = MakeOnDemandPoolRule(inner_rule, pool_size=512, num_starts=6, move_size=None)
    ask_tell = AskTellOptimizer(space, data, model, rule)
    for _ in range(8):
        batch = ask_tell.ask()
        assert batch.shape == (10, 2) and bool(tf.reduce_all(space.contains(batch)))
        ask_tell.tell(Dataset(batch, tf.constant(objective(batch.numpy()))))
    told = ask_tell.dataset.query_points.numpy()
    assert len({tuple(p) for p in told.tolist()}) == len(told) == 100  # nothing proposed twice
    # a product of the target's fingerprint (two of the 10^4 have it: random picks find one
    # within 100 with probability 2 %), found within the 80 picks
    assert float(ask_tell.dataset.observations.numpy().min()) == -1.0
    assert rule.last_pool_size > 100


def test_trieste_expected_improvement_runs_on_the_space_through_the_featurised_model(
    space: MakeOnDemandSpace,
) -> None:
    objective = _objective(space, np.array([3, 5]))
    data = _initial(space, objective, 12)
    model, _ = _gp_bucb(space, data, 1)
    rule = EfficientGlobalOptimization(
        ExpectedImprovement(), optimizer=generate_random_search_optimizer(300)
    )
    ask_tell = AskTellOptimizer(space, data, model, rule)
    for _ in range(2):
        point = ask_tell.ask()
        assert point.shape == (1, 2) and bool(tf.reduce_all(space.contains(point)))
        ask_tell.tell(Dataset(point, tf.constant(objective(point.numpy()))))
    assert ask_tell.dataset.query_points.shape == (14, 2)


def test_pending_tuples_are_kept_as_tuples_and_streamed_picks_lead_the_batch(
    space: MakeOnDemandSpace,
) -> None:
    """Asynchronous use: the state the campaign sees holds reagent tuples, the picks announced
    while a batch grows are its first rows in tuple coordinates, and a second batch asked
    before the first is told proposes none of the first's products."""
    objective = _objective(space, np.array([11, 22]))
    data = _initial(space, objective, 16)
    model, inner_rule = _gp_bucb(space, data, 6)
    model.update(data)
    rule = MakeOnDemandPoolRule(inner_rule, pool_size=256, num_starts=4, move_size=None)
    streamed: list[np.ndarray] = []
    with streaming_picks(streamed.append):
        state, first = rule.acquire(space, {OBJECTIVE: model}, {OBJECTIVE: data})(None)
    first = first.numpy()
    assert first.shape == (6, 2) and np.array_equal(np.concatenate(streamed), first)
    assert np.array_equal(np.asarray(state.pending), first)  # tuples, not fingerprints
    state, second = rule.acquire(space, {OBJECTIVE: model}, {OBJECTIVE: data})(state)
    firsts = {space.library.product(p) for p in first.astype(int)}
    assert not firsts & {space.library.product(p) for p in second.numpy().astype(int)}
    assert np.asarray(state.pending).shape == (12, 2)
    failed = state.with_failures(first[:1])  # the campaign's bookkeeping, in tuples
    assert np.array_equal(np.asarray(failed.failed), first[:1])


def test_a_product_two_tuples_make_counts_once(tmp_path: Path) -> None:
    """An ester's alkoxy group leaves: methyl and ethyl acetate make the same amides, so 9 tuples
    make 6 products. With two of them evaluated, one at the best score, the 4 products left are
    proposed once each, and the other tuple making the best product never is, though the
    model's bound is lowest there (a rule that let it in picks it 4 times)."""
    (tmp_path / "amines.smi").write_text("CCN ethyl\nCCCN propyl\nNCc1ccccc1 benzyl\n")
    (tmp_path / "esters.smi").write_text("CC(=O)OC methyl_ac\nCC(=O)OCC ethyl_ac\nCCC(=O)OC pr\n")
    reaction = "[#6:1][NH2:2].[#6:4][C:3](=O)O[#6]>>[#6:1][NH:2][C:3]([#6:4])=O"
    library = ReactionLibrary(
        reaction, [read_reagents(tmp_path / f) for f in ("amines.smi", "esters.smi")]
    )
    space = MakeOnDemandSpace(library, FINGERPRINT)
    assert library.product([0, 0]) == library.product([0, 1]) != library.product([0, 2])
    data = Dataset(
        tf.constant([[0.0, 0.0], [2.0, 2.0]], tf.float64), tf.constant([[-10.0], [0.0]], tf.float64)
    )
    model, inner_rule = _gp_bucb(space, data, 4, variance=1.0)
    model.update(data)
    rule = MakeOnDemandPoolRule(inner_rule, pool_size=64, num_starts=4, move_size=None)
    _, batch = rule.acquire(space, {OBJECTIVE: model}, {OBJECTIVE: data})(None)
    made = [library.product(p) for p in batch.numpy().astype(int)]
    assert batch.shape == (4, 2) and len(set(made)) == 4
    assert library.product([0, 0]) not in made


def test_the_initial_design_draws_each_product_once(tmp_path: Path) -> None:
    """Methyl and ethyl acetate make the same amides: of the 9 tuples, 6 products. A draw of 6
    is every product once (never one under both esters), and a seventh does not exist."""
    (tmp_path / "amines.smi").write_text("CCN ethyl\nCCCN propyl\nNCc1ccccc1 benzyl\n")
    (tmp_path / "esters.smi").write_text("CC(=O)OC methyl_ac\nCC(=O)OCC ethyl_ac\nCCC(=O)OC pr\n")
    reaction = "[#6:1][NH2:2].[#6:4][C:3](=O)O[#6]>>[#6:1][NH:2][C:3]([#6:4])=O"
    files = [read_reagents(tmp_path / f) for f in ("amines.smi", "esters.smi")]
    space = MakeOnDemandSpace(ReactionLibrary(reaction, files), FINGERPRINT)
    for seed in range(5):
        drawn = space.sample(6, seed=seed).numpy().astype(int)
        assert len({space.library.product(p) for p in drawn}) == 6
    with pytest.raises(ValueError, match="asked for 7 distinct products, found 6"):
        space.sample(7, seed=0)


def test_while_every_score_is_the_same_the_batch_is_a_uniform_draw(
    space: MakeOnDemandSpace,
) -> None:
    """A hit call before its first hit (every score 0): no search starts and the pool is the
    batch's size of random products, all picked; its draws spread over the space (the 40 picks'
    amines: 40 draws of 100 give at least 25 distinct with probability > 0.999). One score
    apart, the searches start again."""
    data = Dataset(space.sample(20, seed=3), tf.zeros((20, 1), tf.float64))
    model, inner_rule = _gp_bucb(space, data, 10, variance=1.0)
    rule = MakeOnDemandPoolRule(inner_rule, pool_size=512, num_starts=6, flat_pool=10)
    ask_tell = AskTellOptimizer(space, data, model, rule)
    picks = []
    for _ in range(4):
        batch = ask_tell.ask()
        assert rule.last_pool_size == 10 and rule.last_starts == [0]
        picks.append(batch.numpy())
        ask_tell.tell(Dataset(batch, tf.zeros((10, 1), tf.float64)))
    amines = np.concatenate(picks)[:, 0]
    assert len(set(amines.tolist())) >= 25
    ask_tell.tell(Dataset(space.sample(1, seed=99), tf.constant([[-1.0]], tf.float64)))
    ask_tell.ask()
    assert sum(rule.last_starts) == 6 and rule.last_pool_size > 10
