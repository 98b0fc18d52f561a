"""A catalog of make-on-demand libraries as one Trieste search space: draws weighted by each
library's products, one molecule one candidate across libraries, features equal to each
library's own, membership, and Trieste's own rule searching it."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("rdkit")

from trieste_scalable.spaces.catalog_space import CatalogSpace  # noqa: E402
from trieste_scalable.spaces.reaction import AMIDE, ReactionLibrary  # noqa: E402
from trieste_scalable.spaces.reagents import read_reagents  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402
from trieste_scalable.spaces.synthons import CHEMSPACE_SAMPLE, read_synthon_files  # noqa: E402

FINGERPRINT = ("morgan", 2, 128)


@functools.lru_cache(maxsize=1)
def _catalog() -> CatalogSpace:
    """Two reactions of Chemspace's sample: a8 (359 x 2 = 718 products) and a7 (12 x 40 x 297
    = 142,560), two and three components."""
    reactions = read_synthon_files([CHEMSPACE_SAMPLE])
    return CatalogSpace([reactions["a8"], reactions["a7"]], FINGERPRINT)


def test_draws_are_distinct_products_weighted_by_each_librarys_size() -> None:
    """1,000 draws: a8's share is 718 / 143,278 = 0.5 %, so its count is binomial with mean 5.0
    and sd 2.2; the bound 15 is 4.5 sd above (fails by chance with probability < 1e-5)."""
    catalog = _catalog()
    points = catalog.sample(1000, seed=0).numpy()
    assert points.shape == (1000, 4) and bool(np.all(catalog.contains(points)))
    assert len(set(catalog.products(points))) == 1000
    from_a8 = points[:, 0] == 0
    assert 0 < int(from_a8.sum()) <= 15
    assert np.all(points[from_a8, 3] == 0)  # a8 has two components: the third is padding
    assert catalog.name(points[from_a8][0]).endswith("|a8")


def test_one_molecule_in_two_libraries_is_one_candidate(tmp_path: Path) -> None:
    """The same amide space twice: 6 molecules, 12 tuples; 6 draws are 6 molecules, 7 are
    refused."""
    (tmp_path / "a.smi").write_text("CN methyl\nCCN ethyl\nCCCN propyl\n")
    (tmp_path / "b.smi").write_text("CC(=O)O acetic\nOC(=O)c1ccccc1 benzoic\n")
    reagents = [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")]
    twice = [ReactionLibrary(AMIDE, reagents), ReactionLibrary(AMIDE, reagents)]
    catalog = CatalogSpace(twice, FINGERPRINT)
    assert len(set(catalog.products(catalog.sample(6, seed=1)))) == 6
    with pytest.raises(ValueError, match="asked for 7 distinct products, found 6"):
        catalog.sample(7, seed=1)


def test_features_are_each_librarys_own_in_the_points_order() -> None:
    catalog = _catalog()
    points = catalog.sample(40, seed=2).numpy()
    kept, packed = catalog.features(points)
    assert kept.tolist() == list(range(40))
    with pytest.raises(ValueError, match="not a tuple of reagent indices"):
        catalog.features(np.array([[0, 400, 0, 0]]))  # a8 has 359 synthons
    reactions = read_synthon_files([CHEMSPACE_SAMPLE])
    for r, library in enumerate([reactions["a8"], reactions["a7"]]):
        mine = np.flatnonzero(points[:40, 0] == r)
        tuples = points[mine, 1 : 1 + len(library.counts)]
        _, expected = MakeOnDemandSpace(library, FINGERPRINT).features(tuples)
        np.testing.assert_array_equal(packed[mine], expected)


@pytest.mark.parametrize(
    "point, member",
    [
        ([0, 358, 1, 0], True),
        ([1, 11, 39, 296], True),
        ([0, 359, 1, 0], False),  # beyond a8's synthons
        ([0, 1, 1, 1], False),  # a8 has no third component
        ([2, 0, 0, 0], False),  # no third library
        ([1, 0.5, 0, 0], False),
        ([-1, 0, 0, 0], False),
    ],
)
def test_membership(point: list[float], member: bool) -> None:
    assert bool(_catalog().contains(tf.constant([point], tf.float64))[0]) is member


def test_trieste_rules_search_the_catalog_through_the_featurised_model() -> None:
    """Trieste's EfficientGlobalOptimization with a random-search optimizer over the catalog (it
    needs only ``sample``), its model a GPflow GPR over the products' fingerprints: the batch
    is points of the catalog whose products exist."""
    import gpflow
    from trieste.acquisition.optimizer import generate_random_search_optimizer
    from trieste.acquisition.rule import EfficientGlobalOptimization
    from trieste.data import Dataset
    from trieste.models.gpflow import GaussianProcessRegression

    from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel

    catalog = _catalog()
    points = catalog.sample(10, seed=3)
    scores = np.array([[len(s or "") / 50] for s in catalog.products(points)])
    data = Dataset(points, tf.constant(scores))
    rows = FeatureRows.of(catalog)
    inner = GaussianProcessRegression(
        gpflow.models.GPR(rows.dataset(data).astuple(), gpflow.kernels.Matern52())
    )
    model = FeaturisedModel(inner, rows)
    rule = EfficientGlobalOptimization(optimizer=generate_random_search_optimizer(200))
    chosen = rule.acquire_single(catalog, model, dataset=data)
    assert chosen.shape == (1, 4) and bool(catalog.contains(chosen)[0])
    assert catalog.products(chosen)[0] is not None


def test_the_pool_rule_finds_a_target_in_the_catalogs_small_reaction() -> None:
    """A target product of a8 (718 of the catalog's 143,278 products: random picks see one of
    a8's in 80 with probability 0.33, the target itself with 0.06 %), similarity to it the
    objective: the model's bound sends searches to a8 and the batches find it within 8 of 10."""
    from trieste.ask_tell_optimization import AskTellOptimizer
    from trieste.data import Dataset

    from trieste_scalable.campaigns.algorithms.builders import build
    from trieste_scalable.kernels import Tanimoto
    from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel
    from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule

    reactions = read_synthon_files([CHEMSPACE_SAMPLE])
    catalog = CatalogSpace([reactions["a8"], reactions["a7"]], ("morgan", 2, 1024))
    rows = FeatureRows.of(catalog)
    reference = rows(np.array([[0, 120, 1, 0]])).numpy()[0]

    def objective(points: tf.Tensor) -> tf.Tensor:
        features = rows(np.asarray(points)).numpy()
        shared = features @ reference
        return tf.constant(-(shared / (features.sum(1) + reference.sum() - shared))[:, None])

    initial = catalog.sample(20, seed=5)
    data = Dataset(initial, objective(initial))
    inner_model, inner_rule = build(
        "gp-bucb",
        rows.dataset(data),
        kernel=Tanimoto(variance=float(np.var(data.observations)), binary_inputs=True),
        noise_variance=1e-3,
        batch_size=10,
        max_batch_size=10,
        fixed_batches=True,
        fit_hyperparameters=False,
        screening=True,
        width="constant",
        seed=0,
    )
    rule = MakeOnDemandPoolRule(inner_rule, pool_size=512, num_starts=6, move_size=None)
    ask_tell = AskTellOptimizer(catalog, data, FeaturisedModel(inner_model, rows), rule)
    for _ in range(8):
        batch = ask_tell.ask()
        assert batch.shape == (10, 4) and bool(tf.reduce_all(catalog.contains(batch)))
        ask_tell.tell(Dataset(batch, objective(batch)))
    told = ask_tell.dataset.query_points.numpy()
    assert len({tuple(p) for p in told.tolist()}) == len(told) == 100
    assert float(ask_tell.dataset.observations.numpy().min()) == -1.0
    assert len(rule.last_starts) == 2 and sum(rule.last_starts) == 6


def test_the_pool_rule_refuses_a_space_it_cannot_search() -> None:
    from trieste.space import Box

    from trieste_scalable.acquisition import BatchThompsonSampling
    from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule

    rule = MakeOnDemandPoolRule(BatchThompsonSampling(2))
    with pytest.raises(TypeError, match="needs a make-on-demand space or catalog: Box"):
        rule.acquire(Box([0.0], [1.0]), {}, None)


def test_reaction_ids_name_smarts_libraries_and_must_be_distinct(tmp_path: Path) -> None:
    (tmp_path / "a.smi").write_text("CN methyl\nCCN ethyl\n")
    (tmp_path / "b.smi").write_text("CC(=O)O acetic\n")
    reagents = [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")]
    a8 = read_synthon_files([CHEMSPACE_SAMPLE])["a8"]
    two = [ReactionLibrary(AMIDE, reagents), a8, ReactionLibrary(AMIDE, reagents)]
    catalog = CatalogSpace(two, FINGERPRINT)
    assert catalog.reaction_ids == ("reaction1", "a8", "reaction2")
    assert catalog.name([0, 1, 0]) == "ethyl|acetic|reaction1"
    np.testing.assert_array_equal(catalog.points(1, np.array([[3, 1]])), [[1, 3, 1]])
    with pytest.raises(ValueError, match="share a reaction id"):
        CatalogSpace([a8, a8], FINGERPRINT)


def test_random_points_weight_reactions_by_their_products() -> None:
    """10,000 draws: a8's share is 0.5 % (binomial mean 50.1, sd 7.1); 20 to 80 is > 4 sd."""
    catalog = _catalog()
    points = catalog.random_points(10_000, np.random.default_rng(4))
    assert 20 <= int((points[:, 0] == 0).sum()) <= 80
    assert bool(np.all(catalog.contains(points)))
