"""A Nyström GP told packed fingerprints (``packed_width``) against the same GP told their dense
rows, and the rules' reading of packed datasets (issue 81, part 1)."""

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.acquisition.candidates import EvaluatedCandidates
from trieste_scalable.acquisition.confidence import ConfidenceWidth
from trieste_scalable.acquisition.pending import outstanding, proposed
from trieste_scalable.campaigns.algorithms.builders import build
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.models import NystromGPR, PivotedCholeskyDictionary
from trieste_scalable.models import dictionary as dictionary_module
from trieste_scalable.numerics.binary_products import binary_products_route
from trieste_scalable.numerics.bits import PackedRows
from trieste_scalable.packed_space import PackedSearchSpace

WIDTH = 61  # not a whole number of bytes: the last byte's padding must be ignored


def fingerprints(num: int, seed: int) -> np.ndarray:
    """Distinct sparse 0/1 rows [num, WIDTH], each with at least one on-bit."""
    rng = np.random.default_rng(seed)
    rows = (rng.uniform(size=(3 * num, WIDTH)) < 0.15).astype(np.float64)
    rows[:, 0] = 1.0
    return np.unique(rows, axis=0)[rng.permutation(len(np.unique(rows, axis=0)))[:num]]


def datasets(num: int, seed: int = 0) -> tuple[Dataset, Dataset]:
    """The same evaluations with dense rows and with packed bits; noisy scores (noise std as
    large as the score's spread)."""
    rows = fingerprints(num, seed)
    rng = np.random.default_rng(seed + 1)
    scores = rows[:, :10].sum(axis=1, keepdims=True) + rng.normal(size=(num, 1)) * 1.0
    packed = np.packbits(rows.astype(np.uint8), axis=1)
    y = tf.constant(scores)
    return Dataset(tf.constant(rows), y), Dataset(tf.constant(packed), y)


def model(dataset: Dataset, size: int, packed: bool, chunk_size: int = 7) -> NystromGPR:
    return NystromGPR(
        Tanimoto(variance=1.0, binary_inputs=True),
        0.3,
        dataset,
        dictionary=PivotedCholeskyDictionary(size, block=5, seed=2),
        fit_hyperparameters=False,
        chunk_size=chunk_size,
        packed_width=WIDTH if packed else None,
    )


@pytest.mark.parametrize("size", [20, 200])  # a Nyström GP over 20 of 90, and an exact one
def test_a_packed_model_predicts_what_the_dense_one_does(size: int) -> None:
    dense_data, packed_data = datasets(90)
    dense, packed = model(dense_data, size, False), model(packed_data, size, True)
    np.testing.assert_array_equal(packed.dictionary.numpy(), dense.dictionary.numpy())
    query = tf.constant(fingerprints(30, seed=5))
    for ours, theirs in zip(packed.predict(query), dense.predict(query)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    # the packed model predicts at packed rows too (a Trieste rule at the evaluated points)
    at_packed = packed.predict(packed_data.query_points)
    for ours, theirs in zip(at_packed, dense.predict(dense_data.query_points)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    assert packed.information_gain() == pytest.approx(dense.information_gain(), rel=1e-10)
    assert packed.prior_variance() == pytest.approx(dense.prior_variance(), rel=1e-12)


def test_a_packed_model_grows_by_updates_and_keeps_one_trace() -> None:
    dense_data, packed_data = datasets(120, seed=3)
    dense = model(_head(dense_data, 40), 25, False)
    packed = model(_head(packed_data, 40), 25, True)
    for num in (60, 80, 120):
        dense.update(_head(dense_data, num))
        packed.update(_head(packed_data, num))
    query = tf.constant(fingerprints(10, seed=9))
    np.testing.assert_allclose(packed.predict(query)[0], dense.predict(query)[0], rtol=1e-9)
    counts = packed.compiled.tracing_counts()
    assert counts["data_terms"] == 1 and counts["kernel_columns"] == 1, counts


def _head(dataset: Dataset, num: int) -> Dataset:
    return Dataset(dataset.query_points[:num], dataset.observations[:num])


def test_pivots_among_a_bounded_draw_of_many_packed_inputs() -> None:
    """Past ``candidates * size`` inputs the pivots are drawn among that many (seeded by n:
    the same dictionary again); the model still conditions on every input."""
    _, packed_data = datasets(150, seed=4)
    policy = PivotedCholeskyDictionary(10, block=5, seed=1, candidates=3)
    first = NystromGPR(
        Tanimoto(binary_inputs=True),
        0.3,
        packed_data,
        dictionary=policy,
        fit_hyperparameters=False,
        packed_width=WIDTH,
    )
    again = NystromGPR(
        Tanimoto(binary_inputs=True),
        0.3,
        packed_data,
        dictionary=PivotedCholeskyDictionary(10, block=5, seed=1, candidates=3),
        fit_hyperparameters=False,
        packed_width=WIDTH,
    )
    np.testing.assert_array_equal(first.dictionary.numpy(), again.dictionary.numpy())
    assert first.dictionary.shape == (10, WIDTH)
    assert len(np.unique(first.dictionary.numpy(), axis=0)) == 10
    assert first.num_unique_points == 150


def test_packed_data_of_the_wrong_kind_is_refused_and_loses_nothing() -> None:
    dense_data, packed_data = datasets(30)
    packed = model(packed_data, 10, True)
    before = packed.predict(tf.constant(fingerprints(3, seed=7)))[0].numpy()
    with pytest.raises(TypeError, match="packed bits"):
        packed.update(dense_data)
    short = Dataset(packed_data.query_points[:, :-1], packed_data.observations)
    with pytest.raises(ValueError, match="bytes a row"):
        packed.update(short)
    after = packed.predict(tf.constant(fingerprints(3, seed=7)))[0].numpy()
    np.testing.assert_array_equal(before, after)
    with pytest.raises(ValueError, match="packed_width"):
        NystromGPR(Tanimoto(binary_inputs=True), 0.3, packed_width=0)


def test_only_a_nystrom_gp_is_built_for_packed_rows() -> None:
    _, packed_data = datasets(30)
    options = dict(
        kernel=Tanimoto(binary_inputs=True),
        noise_variance=0.1,
        width=ConfidenceWidth("constant", beta=2.0),
        batch_size=4,
        max_batch_size=4,
        fit_hyperparameters=False,
        seed=0,
        screening=True,
        packed_width=WIDTH,
    )
    inner, _ = build("gp-bucb", packed_data, dictionary_size=10, **options)
    assert isinstance(inner, NystromGPR) and inner.num_unique_points == 30
    with pytest.raises(ValueError, match="dense rows"):
        build("ts", packed_data, **options)


def test_rules_read_told_rows_packed() -> None:
    rows = fingerprints(6, seed=11)
    packed = np.packbits(rows.astype(np.uint8), axis=1)
    told = Dataset(tf.constant(packed[:4]), tf.zeros([4, 1], tf.float64))
    pending = proposed(rows[2:], np.zeros((0, WIDTH)))  # rows 2..5: 2 and 3 told since
    np.testing.assert_array_equal(outstanding(pending, 2, told), rows[4:])
    space = PackedSearchSpace(packed, WIDTH)
    evaluated = EvaluatedCandidates()
    np.testing.assert_array_equal(evaluated.positions(space, packed[[1, 3]]), [1, 3])
    np.testing.assert_array_equal(evaluated.positions(space, rows[[1, 3]]), [1, 3])


def test_pivots_drawn_from_on_bits_are_those_of_the_dense_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the sparse route the draw keeps each chunk of packed inputs as its on-bits, or, for a
    chunk with too many on-bits, unpacks it for each block: the same dictionary either way."""
    monkeypatch.setenv("TRIESTE_SCALABLE_BINARY_PRODUCTS", "sparse")
    binary_products_route.cache_clear()
    monkeypatch.setattr(dictionary_module, "CHUNK_SIZE", 16)  # six chunks of 90 inputs
    try:
        rng = np.random.default_rng(6)
        rows = np.zeros((90, WIDTH))
        for i, row in enumerate(rows):  # 3 of 61 bits on (5 %); rows 32-47 half on: one chunk
            row[rng.choice(WIDTH, 30 if 32 <= i < 48 else 3, replace=False)] = 1.0
        assert len(np.unique(rows, axis=0)) == len(rows)
        scores = tf.constant(rows[:, :10].sum(axis=1, keepdims=True) + rng.normal(size=(90, 1)))
        packed_rows = tf.constant(np.packbits(rows.astype(np.uint8), axis=1))
        dense = model(Dataset(tf.constant(rows), scores), 20, False)
        packed = model(Dataset(packed_rows, scores), 20, True)
        np.testing.assert_array_equal(packed.dictionary.numpy(), dense.dictionary.numpy())
        query = tf.constant(rows[::7])
        np.testing.assert_allclose(packed.predict(query)[0], dense.predict(query)[0], rtol=1e-9)
        counts = packed.compiled.tracing_counts()
        assert counts["on_bits_columns"] == 1 and counts["kernel_columns"] == 1, counts
        # the columns and prior each block reads, against the kernel on the dense rows
        inputs = PackedRows(packed_rows, WIDTH, tf.float64)
        prior, columns_of = dictionary_module._prior_and_columns(packed.compiled, inputs)
        kernel, anchors = packed.get_kernel(), tf.constant(rows[[3, 40, 77]])
        np.testing.assert_array_equal(columns_of(anchors), kernel(rows, anchors))
        np.testing.assert_array_equal(prior, kernel(rows, full_cov=False))
    finally:
        binary_products_route.cache_clear()
