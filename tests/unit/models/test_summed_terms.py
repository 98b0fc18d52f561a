"""The Nystrom GP's data terms summed in chunks and added to as evaluations arrive (issue 81:
an update embeds what changed, not every evaluation), against the whole embedding and against
a model built afresh; and the outcome transform kept between refits, which lets it do so."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.kernels import Tanimoto
from trieste_scalable.models import NystromGPR, PivotedCholeskyDictionary
from trieste_scalable.models.transform_refits import REFIT_GROWTH
from trieste_scalable.numerics.dtc import CompiledDTC, factor_dictionary
from trieste_scalable.numerics.dtc_terms import factor_terms, sum_terms
from trieste_scalable.numerics.embedding import factor_data

from ...util import se_kernel

NOISE = 0.3
WIDTH = 37  # fingerprint bits: not a whole number of bytes


def test_terms_summed_in_chunks_are_those_of_the_whole_embedding() -> None:
    """:math:`G + \\lambda I` and :math:`w` from terms summed over chunks of 7 (and two parts
    added) equal :math:`V` and :math:`w` of the one-shot embedding, with repeats and a mean."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(size=(50, 2)))
    counts = tf.constant(rng.integers(1, 4, size=50).astype(np.float64))
    sums = tf.constant(rng.normal(size=50) * counts.numpy())
    kernel, noise, mean = se_kernel(), tf.constant(NOISE, tf.float64), tf.constant(0.4, tf.float64)
    ops = CompiledDTC(kernel, tf.float64)
    inducing, mask, chol_kss, _ = factor_dictionary(ops, x[:12], 15, 1e-10)  # padded
    whole = factor_data(kernel, x, counts, sums, inducing, mask, chol_kss, noise, mean)
    terms = sum_terms(ops.data_terms, x, counts, sums, inducing, mask, chol_kss, chunk_size=7)
    eye = tf.eye(15, dtype=tf.float64)
    np.testing.assert_allclose(terms.gram + noise * eye, whole.precision, rtol=1e-12, atol=1e-12)
    chol_v, weights = factor_terms(terms, noise, mean)
    np.testing.assert_allclose(chol_v, whole.chol_v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, whole.weights, rtol=1e-10, atol=1e-12)
    head, tail = (
        sum_terms(ops.data_terms, x[part], counts[part], sums[part], inducing, mask, chol_kss, 7)
        for part in (slice(0, 20), slice(20, 50))
    )
    for ours, theirs in zip(head.plus(tail), terms):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def _fingerprints(num: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = (rng.uniform(size=(num, WIDTH)) < 0.2).astype(np.float64)
    rows[:, 0] = 1.0
    return rows


def _evaluations(packed: bool, seed: int = 1) -> Dataset:
    """34 evaluations of 32 inputs (two repeat earlier ones as the last rows), with noise as
    large as the scores' spread."""
    rng = np.random.default_rng(seed)
    if packed:
        rows = _fingerprints(32, seed)
        scores = rows[:, :6].sum(axis=1, keepdims=True)
    else:
        rows = rng.uniform(size=(32, 2))
        scores = np.sin(6 * rows[:, :1]) + np.cos(4 * rows[:, 1:])
    rows = np.concatenate([rows, rows[[3, 17]]])
    scores = np.concatenate([scores, scores[[3, 17]]]) + rng.normal(size=(34, 1)) * scores.std()
    x = np.packbits(rows.astype(np.uint8), axis=1) if packed else rows
    return Dataset(tf.constant(x), tf.constant(scores))


def _model(data: Dataset, packed: bool, lengthscale: float = 0.3, **options: object) -> NystromGPR:
    """At this growth the draws are among 10, 12, 15, 18, 22, 27, 33, 41, 51, 63 inputs: one
    draw for 27 to 32 inputs, another for 33 to 40. The prior mean is fixed (0), so models
    built on other data have the same."""
    policy = PivotedCholeskyDictionary(10, block=5, seed=4, growth=1.25)
    kernel = Tanimoto(binary_inputs=True) if packed else se_kernel(lengthscale)
    return NystromGPR(
        kernel,
        NOISE,
        data,
        dictionary=policy,
        fit_hyperparameters=False,
        chunk_size=4,
        packed_width=WIDTH if packed else None,
        prior_mean=0.0,
        **options,  # type: ignore[arg-type]
    )


class _Counting:
    """A compiled function that records how many rows each call's first argument has."""

    def __init__(self, compiled: Any):
        self.compiled, self.rows = compiled, []

    def __call__(self, x: tf.Tensor, *rest: tf.Tensor) -> Any:
        self.rows.append(int(x.shape[0]))
        return self.compiled(x, *rest)

    def experimental_get_tracing_count(self) -> int:
        return int(self.compiled.experimental_get_tracing_count())


def _embedded_rows(model: NystromGPR) -> list[int]:
    """Records how many inputs each call of the model's compiled data terms embeds."""
    counting = _Counting(model.compiled.data_terms)
    model.compiled.data_terms = counting
    return counting.rows


def _head(data: Dataset, num: int) -> Dataset:
    return Dataset(data.query_points[:num], data.observations[:num])


@pytest.mark.parametrize("packed", [False, True])
def test_an_update_embeds_only_the_evaluations_it_adds(packed: bool) -> None:
    """New inputs, and an old input evaluated again (its count and sum change), are embedded;
    the posterior is a fresh model's on all the data, to rounding."""
    data = _evaluations(packed)
    model = _model(_head(data, 30), packed)
    rows = _embedded_rows(model)
    model.update(_head(data, 32))  # two new inputs
    model.update(_head(data, 33))  # input 3 again
    model.update(data)  # input 17 again
    assert rows == [2, 1, 1]
    fresh = _model(data, packed)
    np.testing.assert_array_equal(fresh.dictionary.numpy(), model.dictionary.numpy())
    query = _fingerprints(9, 5) if packed else np.random.default_rng(5).uniform(size=(9, 2))
    for ours, theirs in zip(model.predict(tf.constant(query)), fresh.predict(tf.constant(query))):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert model.information_gain() == pytest.approx(fresh.information_gain(), rel=1e-10)
    counts = model.compiled.tracing_counts()
    assert counts["data_terms"] == 1, counts


def test_a_new_dictionary_kernel_or_observations_sum_every_input_again() -> None:
    data = _evaluations(packed=False)  # 32 inputs
    model = _model(_head(data, 26), packed=False)  # 22 inputs drawn among
    rows = _embedded_rows(model)
    embedded = []
    model.update(data)  # 27 drawn among: a new dictionary
    embedded.append(sum(rows))
    model.get_kernel().lengthscales.assign(0.5)
    model._refactorise()  # what a fit does after changing the kernel
    embedded.append(sum(rows) - sum(embedded))
    shifted = Dataset(data.query_points, data.observations + 1.0)  # every sum changes
    model.update(shifted)
    embedded.append(sum(rows) - sum(embedded))
    assert embedded == [32, 32, 32] and max(rows) == 4  # in chunks of 4
    fresh = _model(shifted, packed=False, lengthscale=0.5)
    np.testing.assert_array_equal(fresh.dictionary.numpy(), model.dictionary.numpy())
    x = tf.constant(np.random.default_rng(2).uniform(size=(6, 2)))
    for ours, theirs in zip(model.predict(x), fresh.predict(x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_a_regularised_posterior_reads_the_kept_terms() -> None:
    """BBKB's regulariser refactorises :math:`V` from the kept terms: as a model whose noise
    variance is the regulariser."""
    data = _evaluations(packed=False)
    model = _model(data, False)
    regularised = model._regularised(0.9)
    reference = NystromGPR(
        se_kernel(),
        0.9,
        data,
        dictionary=PivotedCholeskyDictionary(10, block=5, seed=4, growth=1.25),
        fit_hyperparameters=False,
        prior_mean=0.0,
    )._require_posterior()
    for name in ("chol_v", "weights", "noise"):
        np.testing.assert_allclose(
            getattr(regularised, name), getattr(reference, name), rtol=1e-10, atol=1e-12
        )


def _skewed(num: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(num, 2))
    return Dataset(tf.constant(x), tf.constant(rng.gamma(1.5, size=(num, 1))))


def _joined(*parts: Dataset) -> Dataset:
    return Dataset(*(tf.concat(tensors, 0) for tensors in zip(*(p.astuple() for p in parts))))


def test_the_transform_is_kept_until_it_grows_or_reads_a_worse_value() -> None:
    """Kept (a new best, a value within those fitted to), the model is the plain model of the
    observations under the kept transform, and each update embeds only its new input;
    refitted (a value worse than any fitted to, 5 % more values), every input is embedded."""
    data = _skewed(80, 3)
    y = data.observations.numpy()
    model = _model(_head(data, 52), False, outcome_transform="power")  # 51 drawn among, to 62
    first = model.outcome_transform
    assert first is not None
    rows = _embedded_rows(model)

    def told(num: int, *values: float) -> Dataset:
        """The first ``num`` evaluations, then the next inputs with ``values``."""
        extra = tf.constant([[v] for v in values], tf.float64)
        following = Dataset(data.query_points[num : num + len(values)], extra)
        return _joined(_head(data, num), following)

    best, within = float(y[:52].min()) - 0.5, float(np.median(y[:52]))
    model.update(told(52, best))
    model.update(told(52, best, within))
    assert model.outcome_transform is first and rows == [1, 1]
    kept = told(52, best, within)
    plain = _model(Dataset(kept.query_points, first.forward(kept.observations)), False)
    x = tf.constant(np.random.default_rng(4).uniform(size=(7, 2)))
    for ours, theirs in zip(model.predict(x), plain.predict(x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)

    model.update(told(52, best, within, float(y[:52].max()) + 1.0))  # worse than the worst
    refitted = model.outcome_transform
    assert refitted is not first and sum(rows[2:]) == 55
    grown_by = int(np.ceil(REFIT_GROWTH * 55)) - 55
    model.update(told(52, best, within, float(y[:52].max()) + 1.0, *[within] * grown_by))
    assert model.outcome_transform is not refitted  # 5 % more observations
