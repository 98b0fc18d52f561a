"""Products similar to a query across a catalog's synthon reactions (RDKit's fingerprint search
without enumerating), checked against the catalog enumerated and every product's Tanimoto
similarity computed independently; and the pool rule scoring them."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("rdkit")

from trieste_scalable.spaces.catalog_space import CatalogSpace  # noqa: E402
from trieste_scalable.spaces.reaction import AMIDE, ReactionLibrary  # noqa: E402
from trieste_scalable.spaces.reagents import read_reagents  # noqa: E402
from trieste_scalable.spaces.similar_products import SimilarProducts  # noqa: E402
from trieste_scalable.spaces.synthons import CHEMSPACE_SAMPLE, read_synthon_files  # noqa: E402

FINGERPRINT = ("atom-pair-counts", 2, 256)


@functools.lru_cache(maxsize=1)
def _catalog() -> CatalogSpace:
    """a8 (359 x 2 = 718 products) and a3 (19 x 174 = 3,306) of Chemspace's sample, and an
    amide SMARTS reaction of two amines and two acids."""
    reactions = read_synthon_files([CHEMSPACE_SAMPLE])
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "amines.smi").write_text("CN m\nCCN e\n")
        (Path(folder) / "acids.smi").write_text("CC(=O)O a\n")
        reagents = [read_reagents(Path(folder) / f"{name}.smi") for name in ("amines", "acids")]
    amide = ReactionLibrary(AMIDE, reagents)
    return CatalogSpace([reactions["a8"], reactions["a3"], amide], FINGERPRINT)


def _similarity(query: str, products: list) -> np.ndarray:
    """Tanimoto on Morgan bits, radius 2, 2,048 bits, of each product to ``query`` [N] (-1
    where no product)."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    reference = generator.GetFingerprint(Chem.MolFromSmiles(query))
    return np.array(
        [
            -1.0
            if smiles is None
            else DataStructs.TanimotoSimilarity(
                reference, generator.GetFingerprint(Chem.MolFromSmiles(smiles))
            )
            for smiles in products
        ]
    )


def _every_synthon_product(catalog: CatalogSpace) -> np.ndarray:
    """The points [N, 3] of every product of the catalog's two synthon reactions."""
    blocks = []
    for r in (0, 1):
        counts = catalog.libraries[r].counts
        tuples = np.stack(np.unravel_index(np.arange(int(np.prod(counts))), counts), axis=1)
        blocks.append(catalog.points(r, tuples))
    return np.concatenate(blocks)


def test_hits_are_products_at_least_the_cutoff_similar_most_similar_first() -> None:
    """Against every product of a8 and a3 enumerated: each hit is above the cutoff, the query's
    own product is the first, similarities do not increase, and the hits are at least 80 % of
    the products above the cutoff (RDKit's screen is approximate: here it finds 32 of 37)."""
    catalog = _catalog()
    similar = SimilarProducts(catalog, cutoff=0.4)
    every = _every_synthon_product(catalog)
    every_smiles = catalog.products(every)
    query_point = catalog.points(1, np.array([[7, 100]]))
    query = catalog.products(query_point)[0]
    assert query is not None
    hits = similar([query])
    np.testing.assert_array_equal(hits[0], query_point[0])
    made = catalog.products(hits)
    values = _similarity(query, made)
    assert np.all(values >= 0.4) and np.all(np.diff(values) <= 1e-12)
    truth = _similarity(query, every_smiles)
    above = {tuple(p) for p in every[truth >= 0.4].tolist()}
    assert {tuple(p) for p in hits.tolist()} <= above
    assert len(hits) >= 0.8 * len(above) and len(above) > 10
    assert set(hits[:, 0].tolist()) <= {0.0, 1.0}  # never the SMARTS reaction's products


def test_queries_hits_are_merged_each_point_once_and_cached() -> None:
    catalog = _catalog()
    similar = SimilarProducts(catalog, max_hits=20, cutoff=0.3)
    first, second = catalog.products(catalog.points(0, np.array([[3, 0], [3, 1]])))
    assert first is not None and second is not None
    alone = similar([first])
    both = similar([first, second])
    assert len(alone) <= 20 and len(both) == len({tuple(p) for p in both.tolist()})
    np.testing.assert_array_equal(both[: len(alone)], alone)
    np.testing.assert_array_equal(similar([first]), alone)
    assert similar([]).shape == (0, 3)


def test_bad_settings_and_catalogs_without_synthons_are_refused() -> None:
    catalog = _catalog()
    with pytest.raises(ValueError, match="max_hits >= 1 and 0 < cutoff <= 1"):
        SimilarProducts(catalog, max_hits=0)
    with pytest.raises(ValueError, match="max_hits >= 1 and 0 < cutoff <= 1"):
        SimilarProducts(catalog, cutoff=1.5)
    smarts_only = CatalogSpace([catalog.libraries[2]], FINGERPRINT)
    with pytest.raises(ValueError, match="no synthon reaction"):
        SimilarProducts(smarts_only)
    with pytest.raises(ValueError, match="does not parse"):
        SimilarProducts(catalog)(["not a molecule"])


def test_a_query_too_large_to_fragment_finds_nothing_without_a_search() -> None:
    """51 heavy atoms (a chain): no search, so no time the machine's speed could change."""
    similar = SimilarProducts(_catalog())
    assert similar(["C" * 51]).shape == (0, 3)
    assert similar._space is None  # RDKit's synthon space was never built


def test_the_pool_rule_scores_the_similar_products_of_the_best() -> None:
    """``similar`` is asked about the two best evaluated products, and its points enter the
    pool by their bound: with a pool larger than everything scored, all of them."""
    from trieste.data import Dataset
    from trieste.observer import OBJECTIVE

    from trieste_scalable.campaigns.algorithms.builders import build
    from trieste_scalable.kernels import Tanimoto
    from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel
    from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule

    catalog = _catalog()
    rows = FeatureRows.of(catalog)
    initial = catalog.sample(10, seed=2)
    data = Dataset(initial, tf.constant(np.arange(10.0)[:, None], dtype=tf.float64))
    inner, inner_rule = build(
        "gp-bucb",
        rows.dataset(data),
        kernel=Tanimoto(variance=1.0, binary_inputs=True),
        noise_variance=1e-3,
        batch_size=3,
        max_batch_size=3,
        fixed_batches=True,
        fit_hyperparameters=False,
        screening=True,
        width="constant",
        seed=0,
    )
    asked: list[list] = []
    extra = catalog.points(1, np.array([[0, 5], [1, 6], [2, 7]]))

    def similar(queries: list) -> np.ndarray:
        asked.append(list(queries))
        return extra

    rule = MakeOnDemandPoolRule(
        inner_rule, pool_size=10_000, num_starts=2, random_share=0.0, similar=similar
    )
    rule.acquire(catalog, {OBJECTIVE: FeaturisedModel(inner, rows)}, {OBJECTIVE: data})
    assert asked == [catalog.products(initial[:2])]
    assert rule.last_similar == 3
    pool = rule._pool(catalog, FeaturisedModel(inner, rows), data)[0]
    assert {tuple(p) for p in extra.tolist()} <= {tuple(p) for p in pool.tolist()}
