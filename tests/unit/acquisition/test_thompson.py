"""Decoupled samples against the posteriors they sample, and the BatchThompsonSampling rule."""

import subprocess
import sys
import textwrap

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression, SparseVariational
from trieste.space import Box, DiscreteSearchSpace, TaggedProductSearchSpace

from trieste_scalable.acquisition import BatchThompsonSampling, ThompsonState, thompson
from trieste_scalable.acquisition.pathwise_source import pathwise_source
from trieste_scalable.models import AdaptiveSVGP
from trieste_scalable.sampling import ChunkedSampleScorer, evaluate, feature_map_for

from ...util import replicated_dataset, se_kernel

NOISE = 0.05


def _svgp(data: Dataset, inducing: int = 12) -> AdaptiveSVGP:
    return AdaptiveSVGP(
        se_kernel(), NOISE, data, inducing=inducing, selector="greedy", fit_hyperparameters=False
    )


def _trieste_svgp(data: Dataset) -> SparseVariational:
    svgp = gpflow.models.SVGP(
        se_kernel(),
        gpflow.likelihoods.Gaussian(NOISE),
        data.query_points[:10].numpy(),
        num_data=len(data),
    )
    model = SparseVariational(svgp)
    model.optimize(data)
    return model


def _gpr(data: Dataset) -> GaussianProcessRegression:
    gpr = gpflow.models.GPR(data.astuple(), se_kernel(), noise_variance=NOISE)
    return GaussianProcessRegression(gpr)


@pytest.mark.parametrize("factory", [_svgp, _trieste_svgp, _gpr], ids=["ours", "svgp", "gpr"])
def test_sample_moments_match_the_posterior(factory) -> None:  # type: ignore[no-untyped-def]
    data = replicated_dataset(0)
    model = factory(data)
    source = pathwise_source(model)
    features = feature_map_for(source.kernel, 4000)
    x = tf.constant(np.random.default_rng(0).uniform(size=(6, 2)))
    samples = []
    for seed in range(4):  # 4 feature draws x 2,000 samples each
        draws = features.draw(tf.constant([seed, 0]), 2, tf.float64)
        weights = source.sample_weights(features, draws, 2000, tf.constant([seed, 1]))
        samples.append(evaluate(features, source.mean_function, draws, weights, x).numpy())
    samples = np.concatenate(samples, axis=1).T  # [S, N]
    mean, cov = model.predict_joint(x)
    mean, cov = mean.numpy()[:, 0], cov.numpy()[0]
    # Mean: within 5 standard errors of the 8,000-sample average. Covariance: Monte Carlo error
    # ~ sqrt(2 / 8000) = 0.016 plus the F = 4,000 feature error ~ 0.016 of a unit-variance kernel.
    standard_error = np.sqrt(np.diag(cov) / samples.shape[0])
    assert np.all(np.abs(samples.mean(0) - mean) < 5 * standard_error + 1e-9)
    np.testing.assert_allclose(np.cov(samples.T), cov, atol=0.06)


def _candidates(num: int, seed: int = 1) -> DiscreteSearchSpace:
    return DiscreteSearchSpace(tf.constant(np.random.default_rng(seed).uniform(size=(num, 2))))


def _acquire(rule, space, model, dataset=None, state=None):  # type: ignore[no-untyped-def]
    return rule.acquire_single(space, model, dataset=dataset)(state)


def test_samples_are_independent_under_a_global_seed() -> None:
    tf.random.set_seed(1234)
    model = _svgp(replicated_dataset(1, num_unique=15, num_repeats=0))
    rule = BatchThompsonSampling(20, distinct=False)
    _, batch = _acquire(rule, _candidates(5000), model)
    assert batch.shape == (20, 2)
    assert np.unique(batch.numpy(), axis=0).shape[0] >= 18


def test_chunked_and_unchunked_scoring_agree() -> None:
    model = _svgp(replicated_dataset(2))
    space = _candidates(3001)
    small = _acquire(BatchThompsonSampling(15, chunk_size=7, seed=3), space, model)[1]
    whole = _acquire(BatchThompsonSampling(15, chunk_size=10_000, seed=3), space, model)[1]
    np.testing.assert_array_equal(small, whole)


@pytest.mark.parametrize("num, chunk_size", [(103, 10), (100, 10), (7, 50), (1, 4)])
def test_scorer_finds_each_samples_lowest_allowed_values(num: int, chunk_size: int) -> None:
    """Every chunking (the last chunk overlapping the one before it, or one chunk) gives each
    sample's k lowest values over the allowed candidates, each candidate at most once."""
    model = _svgp(replicated_dataset(3))
    points = _candidates(num).points
    source = pathwise_source(model)
    features = feature_map_for(source.kernel, 50)
    draws = features.draw(tf.constant([1, 2]), 2, tf.float64)
    weights = source.sample_weights(features, draws, 3, tf.constant([3, 4]))
    excluded = np.random.default_rng(0).uniform(size=num) < 0.3
    k = 6
    values, index = ChunkedSampleScorer(features, source.mean_function, chunk_size).lowest(
        points, tf.constant(excluded), draws, weights, k
    )
    every = evaluate(features, source.mean_function, draws, weights, points).numpy().T  # [B, N]
    every[:, excluded] = np.inf
    expected = np.sort(every, axis=1)[:, :k]
    if expected.shape[1] < k:  # fewer candidates than k: +inf after them
        expected = np.pad(expected, [(0, 0), (0, k - num)], constant_values=np.inf)
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    allowed = values.numpy() < np.inf
    found = np.take_along_axis(every, np.minimum(index.numpy(), num - 1), axis=1)
    np.testing.assert_allclose(found[allowed], values.numpy()[allowed], rtol=1e-12)
    for row, ok in zip(index.numpy(), allowed):
        assert len(set(row[ok])) == ok.sum()  # no candidate twice


def test_argmin_is_the_argmin_of_each_sample() -> None:
    model = _svgp(replicated_dataset(3))
    space = _candidates(500)
    rule = BatchThompsonSampling(4, distinct=False, seed=5, chunk_size=64)
    _, batch = _acquire(rule, space, model)
    source = pathwise_source(model)
    scorer, _ = rule._scorer(source)
    seeds = np.random.default_rng([5, 0]).integers(2**31, size=4)
    draws = scorer.features.draw(tf.constant(seeds[:2]), 2, tf.float64)
    weights = source.sample_weights(scorer.features, draws, 4, tf.constant(seeds[2:]))
    values = evaluate(scorer.features, source.mean_function, draws, weights, space.points)
    np.testing.assert_array_equal(batch, tf.gather(space.points, tf.argmin(values, axis=0)))


def test_distinct_batches_and_screening_without_replacement() -> None:
    data = replicated_dataset(4, num_unique=200, num_repeats=0)
    model = _svgp(data, inducing=40)
    space = DiscreteSearchSpace(tf.concat([data.query_points, _candidates(100).points], axis=0))
    rule = BatchThompsonSampling(30, exclude_evaluated=True)
    _, batch = _acquire(rule, space, model, data)
    assert np.unique(batch.numpy(), axis=0).shape[0] == 30
    evaluated = {tuple(row) for row in data.query_points.numpy()}
    assert not any(tuple(row) in evaluated for row in batch.numpy())
    # fewer candidates left than the batch: the (last) batch shrinks to all of them
    _, last = _acquire(BatchThompsonSampling(101, exclude_evaluated=True), space, model, data)
    left = np.unique(space.points.numpy()[200:], axis=0)
    np.testing.assert_array_equal(np.unique(last.numpy(), axis=0), left)


class _RemoteInThisProcess:
    """A remote scorer over the same candidates, scored here: records what the rule sends."""

    def __init__(self, points: tf.Tensor):
        self.points, self.sent = points, []  # type: ignore[var-annotated]

    @property
    def num_candidates(self) -> int:
        return int(self.points.shape[0])

    def lowest(self, features, mean_function, draws, weights, k, excluded, draw):  # type: ignore[no-untyped-def]
        self.sent.append(excluded)
        mask = np.zeros(self.num_candidates, dtype=bool)
        mask[excluded] = True
        scorer = ChunkedSampleScorer(features, mean_function, 64)
        values, index = scorer.lowest(self.points, tf.constant(mask), draws, weights, k)
        return values.numpy(), index.numpy()


def test_a_remote_scorer_gets_the_excluded_positions_and_picks_what_this_process_picks() -> None:
    """The excluded candidates (evaluated and pending) go to a remote scorer as their positions,
    ascending, not as an [N] mask; the batch is the one scored in this process."""
    data = replicated_dataset(4, num_unique=50, num_repeats=0)
    model = _svgp(data, inducing=20)
    space = DiscreteSearchSpace(tf.concat([_candidates(300).points, data.query_points], axis=0))
    state, here = _acquire(BatchThompsonSampling(10, exclude_evaluated=True, seed=4), space,
                           model, data)  # fmt: skip
    remote = _RemoteInThisProcess(space.points)
    rule = BatchThompsonSampling(10, exclude_evaluated=True, seed=4, remote_scoring=remote)
    _, there = _acquire(rule, space, model, data)
    np.testing.assert_array_equal(there, here)
    np.testing.assert_array_equal(remote.sent[0], np.arange(300, 350))  # the evaluated rows
    _, after = _acquire(rule, space, model, data, state)  # the first batch pending
    pending = np.flatnonzero(np.all(space.points.numpy()[:, None] == here.numpy(), -1).any(-1))
    np.testing.assert_array_equal(remote.sent[-1], np.union1d(pending, np.arange(300, 350)))
    assert not set(map(tuple, after.numpy())) & set(map(tuple, here.numpy()))


def test_distinct_batches_do_not_depend_on_how_many_ranks_are_tried_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each sample's best free candidate is found from a few ranks first, more when they are
    all taken: the batch is the one ranking every candidate for every sample gives."""
    model = _svgp(replicated_dataset(6, num_unique=30, num_repeats=0))
    space = _candidates(60)  # a batch of half the candidates: samples often share their best
    batches = {}
    for first in (1, 2, 10**6):
        monkeypatch.setattr(thompson, "_FIRST_RANKS", first)
        rule = BatchThompsonSampling(30, seed=2)
        batches[first] = _acquire(rule, space, model)[1].numpy()
    assert np.unique(batches[1], axis=0).shape[0] == 30
    np.testing.assert_array_equal(batches[1], batches[10**6])
    np.testing.assert_array_equal(batches[2], batches[10**6])


def test_state_seeds_the_batch() -> None:
    model = _svgp(replicated_dataset(5))
    space = _candidates(2000)
    rule = BatchThompsonSampling(5)
    state, first = _acquire(rule, space, model)
    assert state.num_batches == 1 and len(state.pending) == 5  # the batch is pending until told
    _, second = _acquire(rule, space, model, state=state)
    _, again = _acquire(rule, space, model, state=ThompsonState(0))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)


def test_box_samples_are_minimised_inside_the_box() -> None:
    rng = np.random.default_rng(6)
    x = rng.uniform(size=(200, 2))
    y = (x[:, :1] - 0.3) ** 2 + (x[:, 1:] - 0.7) ** 2 + 0.01 * rng.normal(size=(200, 1))
    model = AdaptiveSVGP(se_kernel(0.5), 1e-4, Dataset(tf.constant(x), tf.constant(y)), inducing=50)
    space = Box([0.0, 0.0], [1.0, 1.0])
    _, batch = _acquire(BatchThompsonSampling(8, pool_size=200), space, model)
    assert batch.shape == (8, 2)
    assert np.all((batch.numpy() >= 0.0) & (batch.numpy() <= 1.0))
    np.testing.assert_allclose(batch.numpy().mean(0), [0.3, 0.7], atol=0.05)


def test_trieste_models_and_bad_input() -> None:
    data = replicated_dataset(7)
    space = _candidates(300)
    for model in (_trieste_svgp(data), _gpr(data)):
        _, batch = _acquire(BatchThompsonSampling(6), space, model)
        assert batch.shape == (6, 2)
    model = _svgp(data)
    product = TaggedProductSearchSpace([Box([0.0], [1.0]), Box([0.0], [1.0])])
    with pytest.raises(ValueError, match="DiscreteSearchSpace and Box"):
        _acquire(BatchThompsonSampling(2), product, model)
    with pytest.raises(ValueError, match="num_query_points"):
        BatchThompsonSampling(0)
    periodic = AdaptiveSVGP(
        gpflow.kernels.Periodic(se_kernel()), NOISE, data, inducing=5, fit_hyperparameters=False
    )
    with pytest.raises(ValueError, match="random features"):
        _acquire(BatchThompsonSampling(2), space, periodic)


def test_no_retracing_over_steps_with_growing_inducing_points() -> None:
    from trieste_scalable.models import InducingSchedule

    rng = np.random.default_rng(8)
    model = AdaptiveSVGP(
        se_kernel(),
        NOISE,
        inducing=InducingSchedule(maximum=80, scale=3.0, exponent=0.5),
        max_optimizer_iterations=3,
    )
    space = _candidates(1000)
    rule = BatchThompsonSampling(10, chunk_size=256)
    x = rng.uniform(size=(10, 2))
    state = None
    for _ in range(20):
        data = Dataset(tf.constant(x), tf.constant(np.sin(5 * x[:, :1])))
        model.update(data)
        model.optimize(data)
        state, batch = _acquire(rule, space, model, data, state)
        x = np.concatenate([x, batch.numpy()])
    scorer, paired = next(iter(rule._scorers.values()))
    assert len(rule._scorers) == 1 and scorer.tracing_count == 1
    assert all(count <= 1 for count in model.compiled.tracing_counts().values())


def test_memory_stays_bounded_for_a_million_candidates() -> None:
    """Scoring 10^6 candidates with F = 500 features would need 4 GB for the features alone if
    materialised; chunked, the whole process stays under 2.5 GB (peak RSS, TF included)."""
    script = textwrap.dedent(
        """
        import numpy as np, tensorflow as tf, gpflow
        from trieste.data import Dataset
        from trieste.space import DiscreteSearchSpace
        from trieste_scalable.acquisition import BatchThompsonSampling
        from trieste_scalable.models import AdaptiveSVGP
        rng = np.random.default_rng(0)
        x = rng.uniform(size=(200, 3))
        data = Dataset(tf.constant(x), tf.constant(np.sin(5 * x[:, :1])))
        model = AdaptiveSVGP(gpflow.kernels.Matern52(), 0.01, data, inducing=50)
        space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(1_000_000, 3))))
        rule = BatchThompsonSampling(100, num_features=500, chunk_size=8192)
        batch = rule.acquire_single(space, model, dataset=data)(None)[1]
        assert batch.shape == (100, 3)
        # VmHWM, not ru_maxrss: the latter keeps the parent's RSS at fork across exec
        status = open("/proc/self/status").read().split("VmHWM:")[1]
        print(int(status.split()[0]))
        """
    )
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    peak_kib = int(output.strip().splitlines()[-1])
    assert peak_kib < 2.5 * 1024**2


def test_trieste_thompson_sampling_runs_on_our_model() -> None:
    """AdaptiveSVGP exposes what Trieste's own decoupled sampler needs."""
    from trieste.acquisition.rule import DiscreteThompsonSampling
    from trieste.acquisition.sampler import ThompsonSamplerFromTrajectory

    data = replicated_dataset(9)
    model = _svgp(data)
    rule = DiscreteThompsonSampling(200, 3, thompson_sampler=ThompsonSamplerFromTrajectory())
    batch = rule.acquire_single(_candidates(200), model, dataset=data)
    assert batch.shape == (3, 2)
