"""Hallucinated in-batch posterior and the ratio bounds of the stopping rules."""

import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.acquisition.stopping import GlobalLocalStopping
from trieste_scalable.models import ExactDictionary, NystromGPR, RidgeLeverageSampler
from trieste_scalable.models.in_batch import FeatureCache
from trieste_scalable.numerics import dtc

from ...util import reference_gpr, replicated_dataset, retained_bytes, se_kernel

NOISE = 0.1


def sparse_model(seed: int) -> NystromGPR:
    data = replicated_dataset(seed, num_unique=80, num_repeats=20)
    return NystromGPR(
        se_kernel(lengthscale=0.25),
        NOISE,
        data,
        dictionary=RidgeLeverageSampler(0.05, seed=seed),
        fit_hyperparameters=False,
    )


def test_hallucination_equals_recomputation_with_the_points_as_data() -> None:
    model = sparse_model(0)
    assert not model.batch_posterior().exact  # the draw dropped points: the dictionary is kept
    pending = tf.constant(np.random.default_rng(1).uniform(size=(3, 2)))
    in_batch = model.batch_posterior()
    for i in range(3):
        in_batch.add(pending[i : i + 1])
    data = model._data
    assert data is not None
    inputs = np.concatenate([data.inputs, pending.numpy()])
    counts = np.concatenate([data.counts, np.ones(3)])
    sums = np.concatenate([data.sums, np.zeros(3)])
    post = model._posterior
    assert post is not None
    recomputed, _ = dtc.build_posterior(
        model.compiled,
        model.dictionary,
        post.capacity,
        tf.constant(inputs),
        tf.constant(counts),
        tf.constant(sums),
        post.noise,
        post.mean,
        1e-10,
    )
    x = tf.constant(np.random.default_rng(2).uniform(size=(50, 2)))
    expected = dtc.marginals(model.get_kernel(), recomputed, x)[1]
    np.testing.assert_allclose(in_batch.variance(x), expected, rtol=1e-9)


@pytest.mark.parametrize(
    "policy", [ExactDictionary(), RidgeLeverageSampler(2.0, seed=0)], ids=["exact", "full_draw"]
)
def test_exact_hallucination_equals_gpr_conditioned_on_pending_points(policy) -> None:  # type: ignore[no-untyped-def]
    # a ridge-leverage draw from the prior keeps every point here (2 k(x, x) / lambda > 1)
    data = replicated_dataset(3)
    model = NystromGPR(
        se_kernel(), NOISE, data, dictionary=policy, fit_hyperparameters=False, jitter=1e-14
    )
    rng = np.random.default_rng(4)
    pending = rng.uniform(size=(20, 2))  # more than the padding: forces a capacity growth
    pending[5] = pending[2]  # a repeat inside the batch
    in_batch = model.batch_posterior()
    assert in_batch.exact
    for i in range(len(pending)):
        in_batch.add(tf.constant(pending[i : i + 1]))
    x = np.concatenate([data.query_points.numpy(), pending])
    y = np.concatenate([data.observations.numpy(), np.zeros((20, 1))])
    from trieste.data import Dataset

    gpr = reference_gpr(Dataset(tf.constant(x), tf.constant(y)), se_kernel(), NOISE)
    probe = tf.constant(rng.uniform(size=(30, 2)))
    np.testing.assert_allclose(
        NOISE * in_batch.variance(probe), gpr.predict_f(probe)[1][:, 0], rtol=1e-7
    )


@pytest.mark.parametrize("exact", [False, True])
def test_hallucinating_points_together_equals_one_at_a_time(exact: bool) -> None:
    if exact:
        model = NystromGPR(
            se_kernel(),
            NOISE,
            replicated_dataset(5),
            dictionary=ExactDictionary(),
            fit_hyperparameters=False,
        )
    else:
        model = sparse_model(5)
    rng = np.random.default_rng(6)
    points = tf.constant(rng.uniform(size=(7, 2)))
    probe = tf.constant(rng.uniform(size=(40, 2)))
    together, one_by_one = model.batch_posterior(), model.batch_posterior()
    _, start = together.batch_start_marginals(probe)
    np.testing.assert_allclose(together.variance(probe), start, rtol=1e-12)  # none yet
    together.add(points[:3])
    together.add(points[3:])
    for i in range(7):
        one_by_one.add(points[i : i + 1])
    np.testing.assert_allclose(together.variance(probe), one_by_one.variance(probe), rtol=1e-9)
    assert np.all(together.variance(probe).numpy() < start.numpy())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_global_and_local_statistics_bound_the_variance_ratio(seed: int) -> None:
    model = sparse_model(seed)
    rng = np.random.default_rng(seed + 10)
    candidates = tf.constant(rng.uniform(size=(400, 2)))
    batch = rng.choice(400, size=6, replace=True)
    in_batch = model.batch_posterior()
    _, s2_0 = (t.numpy() for t in in_batch.batch_start_marginals(candidates))
    for j in batch:
        in_batch.add(tf.gather(candidates, [j]))
    s2_t = in_batch.variance(candidates).numpy()
    ratio = s2_0 / s2_t
    assert np.all(ratio >= 1 - 1e-9)

    global_statistic = 1 + s2_0[batch].sum()  # Lemma 1
    assert ratio.max() <= global_statistic * (1 + 1e-9)

    full, projected = (
        t.numpy() for t in in_batch.local_terms(tf.gather(candidates, batch), candidates)
    )
    local = 1 + np.maximum(full, projected) / s2_0  # Lemma 3 with spec errata 2, per candidate
    assert np.all(ratio <= local * (1 + 1e-9))
    assert local.max() <= global_statistic * (1 + 1e-9)  # never exceeds the global one


def test_global_local_rule_switches_to_local_statistic() -> None:
    model = sparse_model(0)
    candidates = tf.constant(np.random.default_rng(0).uniform(size=(300, 2)))
    in_batch = model.batch_posterior()
    _, s2_0 = (t.numpy() for t in in_batch.batch_start_marginals(candidates))
    order = np.argsort(s2_0)  # low-variance points first: a long batch
    rule = GlobalLocalStopping(1.5).start(in_batch, candidates, s2_0)
    stopped_at = None
    for k, j in enumerate(order):
        if rule.add(int(j), float(s2_0[j])):
            stopped_at = k
            break
        in_batch.add(tf.gather(candidates, [int(j)]))
    assert stopped_at is not None
    assert rule.global_statistic > 1.5
    assert rule.statistic <= rule.global_statistic + 1e-12
    assert 1 + s2_0[order[: stopped_at + 1]].sum() == pytest.approx(rule.global_statistic)


def test_global_local_rule_adds_a_repeated_pick_s_terms_without_recomputing_them() -> None:
    # a repeat's local terms are its batch-start ones: kept, not recomputed, and the statistic
    # equals the sum of each pick's terms computed afresh
    model = sparse_model(0)
    candidates = tf.constant(np.random.default_rng(0).uniform(size=(300, 2)))
    in_batch = model.batch_posterior()
    _, s2_0 = (t.numpy() for t in in_batch.batch_start_marginals(candidates))
    picks = [int(np.argmax(s2_0)), 3, 3, 7, 3, 7, 7]
    rule = GlobalLocalStopping(1.0).start(in_batch, candidates, s2_0)  # local from the first
    computed: list[int] = []
    compute = in_batch.local_terms

    def counted(points, rows):  # type: ignore[no-untyped-def]
        computed.append(int(points.shape[0]))
        return compute(points, rows)

    in_batch.local_terms = counted  # type: ignore[method-assign]
    full = projected = np.zeros(300)
    for j in picks:
        rule.add(j, float("nan"))
        one_full, one_projected = (
            t.numpy() for t in compute(tf.gather(candidates, [j]), candidates)
        )
        full, projected = full + one_full, projected + one_projected
        expected = 1 + np.max(np.maximum(full, projected) / s2_0)
        assert rule.statistic == pytest.approx(expected, rel=1e-12)
    assert computed == [1, 1, 1]  # the three distinct picks, once each


@pytest.mark.parametrize("max_rows", [0, 5, 100])
def test_kept_row_features_give_the_variances_computed_afresh(max_rows: int) -> None:
    # rows asked about again (and repeated within one call) reuse what was computed for them,
    # up to the memory bound (none kept, some kept, all kept): the same variances as a fresh
    # in-batch posterior's, before and after hallucinating points
    model = sparse_model(7)
    rng = np.random.default_rng(8)
    probe = rng.uniform(size=(30, 2))
    probe[4] = probe[9]
    added = tf.constant(probe[[3, 4, 20]])
    kept = model.batch_posterior()
    capacity = model._require_posterior().capacity
    row_bytes = 8 * (2 * capacity + 1) + 16  # features and key
    kept._features = FeatureCache(kept._features._compute, capacity, max_rows * row_bytes)
    first = kept.variance(tf.constant(probe[:12]))
    kept.add(added)
    again = kept.variance(tf.constant(probe))
    fresh = model.batch_posterior()
    np.testing.assert_allclose(first, fresh.variance(tf.constant(probe[:12])), rtol=1e-12)
    fresh.add(added)
    np.testing.assert_allclose(again, fresh.variance(tf.constant(probe)), rtol=1e-12)
    assert len(kept._features._kept) == min(max_rows, 29)  # 29 distinct rows asked about


def test_rows_named_by_their_candidate_index_reuse_their_features_without_a_digest() -> None:
    model = sparse_model(9)
    probe = tf.constant(np.random.default_rng(10).uniform(size=(20, 2)))
    named, fresh = model.batch_posterior(), model.batch_posterior()
    calls = []
    compute = named._features._compute
    named._features._compute = lambda rows: calls.append(len(rows)) or compute(rows)
    first = named.variance(probe[:12], range(12))
    named.add(probe[3:4], [3])  # its features were kept under its index
    again = named.variance(probe, range(20))
    assert calls == [12, 8]  # each row's features computed once
    np.testing.assert_allclose(first, fresh.variance(probe[:12]), rtol=1e-12)
    fresh.add(probe[3:4])
    np.testing.assert_allclose(again, fresh.variance(probe), rtol=1e-12)


def test_asking_about_rows_retains_no_memory() -> None:
    # a batch rule asks about a few rows after every pick, thousands of times a campaign; made
    # with tf.constant, each ask's features kept 1.7 KB (host_tensors' docstring), now 45 bytes.
    # Nothing is kept by the cache here (no memory for it); the bound is 256 bytes a call
    model = sparse_model(11)
    in_batch = model.batch_posterior()
    in_batch._features = FeatureCache(in_batch._features._compute, 1, max_bytes=0)
    probe = tf.constant(np.random.default_rng(12).uniform(size=(6, 2)))
    keys = np.arange(6)
    assert retained_bytes(lambda: in_batch.variance(probe, keys), 500) < 256 * 500


def test_a_batch_longer_than_the_dictionary_is_folded_into_it_and_equals_recomputation() -> None:
    """Over a fixed dictionary of M points, hallucinated points are folded into the posterior
    each time M have been added (so none costs more than O(M^2)); the in-batch variances, and
    the batch-start mean, are those of the posterior recomputed with the points as data."""
    model = sparse_model(3)
    in_batch = model.batch_posterior()
    capacity = model._require_posterior().capacity
    pending = tf.constant(np.random.default_rng(4).uniform(size=(2 * capacity + 3, 2)))
    x = tf.constant(np.random.default_rng(5).uniform(size=(40, 2)))
    mean_before, start_variance = in_batch.marginals(x)
    for i in range(0, len(pending), 2):
        in_batch.add(pending[i : i + 2])
    assert in_batch.num_hallucinated == 3  # 2 M folded (M even here), 3 left
    data = model._require_data()
    post = model._require_posterior()
    recomputed, _ = dtc.build_posterior(
        model.compiled,
        model.dictionary,
        post.capacity,
        tf.constant(np.concatenate([data.inputs, pending.numpy()])),
        tf.constant(np.concatenate([data.counts, np.ones(len(pending))])),
        tf.constant(np.concatenate([data.sums, np.zeros(len(pending))])),
        post.noise,
        post.mean,
        1e-10,
    )
    expected = dtc.marginals(model.get_kernel(), recomputed, x)[1]
    np.testing.assert_allclose(in_batch.variance(x), expected, rtol=1e-8)
    mean_after, variance_after = in_batch.marginals(x)
    np.testing.assert_allclose(mean_after, mean_before, rtol=1e-12)  # no observation
    np.testing.assert_allclose(variance_after, expected, rtol=1e-8)
    np.testing.assert_allclose(in_batch.batch_start_marginals(x)[1], start_variance, rtol=1e-12)


@pytest.mark.parametrize("active_dims", [None, slice(0, 300)])
def test_features_from_a_prepared_dictionary_equal_those_computed_afresh(active_dims) -> None:  # type: ignore[no-untyped-def]
    from trieste.data import Dataset

    from trieste_scalable.kernels import Tanimoto
    from trieste_scalable.numerics.hallucination import row_features, row_features_prepared

    rng = np.random.default_rng(3)
    rows = (rng.random((200, 400)) < 0.9).astype(np.float64)  # ~360 on-bits: > 256
    data = Dataset(tf.constant(rows[:120]), tf.constant(rng.normal(size=(120, 1))))
    kernel = Tanimoto(variance=1.3, active_dims=active_dims, binary_inputs=True)
    model = NystromGPR(
        kernel,
        NOISE,
        data,
        dictionary=RidgeLeverageSampler(0.02, seed=0),
        fit_hyperparameters=False,
    )
    built = model._posterior
    assert built is not None and model._data is not None
    data_part = (tf.constant(model._data.inputs), tf.constant(model._data.counts))
    posterior, _ = dtc.build_posterior(  # padded: the mask zeroes the kernel's extra columns
        model.compiled, model.dictionary, built.capacity + 8, *data_part,
        tf.constant(model._data.sums), built.noise, built.mean, 1e-10,
    )  # fmt: skip
    assert posterior.size < posterior.capacity
    assert model.compiled.row_features_prepared is not None  # the in-batch path takes it
    x = tf.constant(rows[120:])
    prepared = kernel.prepare(posterior.inducing)
    expected = row_features(kernel, posterior, x)
    for got, want in zip(row_features_prepared(kernel, posterior, *prepared, x), expected):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(
        kernel.K_prepared(x, prepared).numpy(), kernel(x, posterior.inducing).numpy()
    )


def test_binary_tanimoto_batches_trace_the_prepared_features_once() -> None:
    from trieste.ask_tell_optimization import AskTellOptimizer
    from trieste.data import Dataset
    from trieste.space import DiscreteSearchSpace

    from trieste_scalable.acquisition import BBKB
    from trieste_scalable.kernels import Tanimoto

    rng = np.random.default_rng(4)
    rows = (rng.random((600, 300)) < 0.9).astype(np.float64)  # ~270 on-bits each
    values = rows[:, :60].mean(axis=1, keepdims=True) + 0.05 * rng.normal(size=(600, 1))
    first = Dataset(tf.constant(rows[:40]), tf.constant(values[:40]))
    model = NystromGPR(
        Tanimoto(binary_inputs=True), NOISE, first,
        dictionary=RidgeLeverageSampler(0.05, seed=0), fit_hyperparameters=False,
    )  # fmt: skip
    rule = BBKB(width="constant", max_batch_size=16, fixed_batch_size=True, exclude_evaluated=True)
    ask_tell = AskTellOptimizer(DiscreteSearchSpace(tf.constant(rows)), first, model, rule)
    for _ in range(5):  # the data, the dictionary and its capacity change
        batch = ask_tell.ask()
        index = [int(np.flatnonzero((rows == row).all(axis=1))[0]) for row in batch.numpy()]
        ask_tell.tell(Dataset(batch, tf.constant(values[index])))
    counts = model.compiled.tracing_counts()
    assert counts["row_features_prepared"] == 1 and counts["row_features"] == 0, counts
    assert all(count <= 1 for count in counts.values()), counts
