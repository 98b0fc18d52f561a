"""BBKB, BKB and GP-BUCB rules: selection, stopping, state and tracing."""

from typing import Optional

import numpy as np
import pytest
import tensorflow as tf
import trieste
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.objectives.utils import mk_observer
from trieste.space import Box, DiscreteSearchSpace, TaggedProductSearchSpace

from trieste_scalable.acquisition import BBKB, BKB, GPBUCB, ConfidenceWidth
from trieste_scalable.acquisition.pick_stream import streaming_picks
from trieste_scalable.models import (
    DictionaryPolicy,
    ExactDictionary,
    NystromGPR,
    PivotedCholeskyDictionary,
    RidgeLeverageSampler,
)

from ...util import se_kernel


def objective(x: tf.Tensor) -> tf.Tensor:
    return -tf.exp(-tf.reduce_sum((x - 0.3) ** 2, axis=-1, keepdims=True) / 0.1)


def problem(seed: int, num_points: int = 500, num_initial: int = 8):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(num_points, 2))))
    x = tf.gather(space.points, rng.choice(num_points, num_initial, replace=False))
    return space, Dataset(x, objective(x))


def make_model(
    data: Dataset, noise: float = 0.5, dictionary: Optional[DictionaryPolicy] = None
) -> NystromGPR:
    policy = dictionary or RidgeLeverageSampler(2.0, seed=0)
    return NystromGPR(
        se_kernel(lengthscale=0.2), noise, data, dictionary=policy, fit_hyperparameters=False
    )


def run(rule, model, space, data, steps):  # type: ignore[no-untyped-def]
    result = trieste.bayesian_optimizer.BayesianOptimizer(mk_observer(objective), space).optimize(
        steps, data, model, rule, track_state=False
    )
    return result.final_result.unwrap()


def test_lazy_argmin_equals_brute_force() -> None:
    space, data = problem(0, num_initial=40)
    model = make_model(data, noise=1.0)
    rule = BBKB(width=ConfidenceWidth("constant", beta=3.0), ratio_threshold=4.0)
    batch = rule.acquire_single(space, model, data)(None)[1]
    assert batch.shape[0] > 2
    alpha = rule.width.alpha(0.0, 1.0, 4.0, exact=False)
    in_batch = model.batch_posterior()
    mean, _ = in_batch.batch_start_marginals(space.points)
    for point in batch:
        scores = mean - alpha * tf.sqrt(in_batch.variance(space.points))
        np.testing.assert_array_equal(space.points[int(tf.argmin(scores))], point)
        in_batch.add(point[None])


def test_unit_threshold_gives_batches_of_one_and_reproduces_bkb() -> None:
    space, data = problem(1)
    bbkb = run(BBKB(ratio_threshold=1.0, width="theory"), make_model(data), space, data, 6)
    bkb = run(BKB(width="theory"), make_model(data), space, data, 6)
    assert bbkb.datasets["OBJECTIVE"].query_points.shape[0] == 8 + 6
    np.testing.assert_array_equal(
        bbkb.datasets["OBJECTIVE"].query_points, bkb.datasets["OBJECTIVE"].query_points
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_global_bbkb_batches_are_never_shorter_than_gp_bucb(seed: int) -> None:
    space, data = problem(seed, num_initial=20)
    width = ConfidenceWidth("constant", beta=2.0)
    for noise in [0.3, 1.0, 3.0]:
        model = make_model(data, noise, ExactDictionary())
        bbkb = BBKB(ratio_threshold=2.0, width=width).acquire_single(space, model, data)(None)[1]
        bucb = GPBUCB(ratio_threshold=2.0, width=width).acquire_single(space, model, data)(None)[1]
        assert bbkb.shape[0] >= bucb.shape[0]
        np.testing.assert_array_equal(bbkb[: bucb.shape[0]], bucb)  # same greedy choices


def test_bbkb_batches_grow_and_respect_cap() -> None:
    space, data = problem(3, num_points=800, num_initial=60)
    rule = BBKB(width=ConfidenceWidth("constant", beta=1.0), max_batch_size=40)
    model = make_model(data, noise=1.0)
    state = None
    sizes = []
    for _ in range(10):
        state, batch = rule.acquire_single(space, model, data)(state)
        sizes.append(int(batch.shape[0]))
        data = data + Dataset(batch, objective(batch))
        model.update(data)
    assert max(sizes) <= 40
    assert sum(sizes[5:]) > sum(sizes[:5]), sizes  # sizes fluctuate but grow
    assert state is not None and state.num_batches == 10


@pytest.mark.parametrize("rule_class", [BBKB, GPBUCB])
def test_batches_of_distinct_points_on_request(rule_class) -> None:  # type: ignore[no-untyped-def]
    space, data = problem(7, num_points=300, num_initial=60)
    model = make_model(data, noise=1.0, dictionary=ExactDictionary())
    width = ConfidenceWidth("constant", beta=0.5)
    repeated = rule_class(width=width).acquire_single(space, model, data)(None)[1]
    distinct = rule_class(width=width, allow_repeats=False).acquire_single(space, model, data)(
        None
    )[1]
    assert np.unique(repeated.numpy(), axis=0).shape[0] < repeated.shape[0]  # exploits by repeats
    assert np.unique(distinct.numpy(), axis=0).shape[0] == distinct.shape[0]


@pytest.mark.parametrize(
    "rule", [GPBUCB(max_batch_size=6, fixed_batch_size=True), BBKB(width="constant")]
)
def test_each_pick_is_announced_as_made_and_the_announced_picks_are_the_batch(rule) -> None:  # type: ignore[no-untyped-def]
    space, data = problem(5, num_points=200, num_initial=20)
    model = make_model(data, noise=1.0, dictionary=ExactDictionary())
    announced: list[np.ndarray] = []
    with streaming_picks(announced.append):
        batch = rule.acquire_single(space, model, data)(None)[1].numpy()
    assert len(announced) == len(batch) > 1 and all(a.shape == (1, 2) for a in announced)
    np.testing.assert_array_equal(np.concatenate(announced), batch)  # in the batch's order
    rule.acquire_single(space, model, data)(None)  # no listener: nothing announced
    assert len(announced) == len(batch)


def test_refined_picks_on_a_box_are_announced_refined() -> None:
    space = Box([0.0, 0.0], [1.0, 1.0])
    x = space.sample(6)
    data = Dataset(x, objective(x))
    rule = GPBUCB(width="constant", pool_size=100, max_batch_size=3, fixed_batch_size=True)
    announced: list[np.ndarray] = []
    with streaming_picks(announced.append):
        batch = rule.acquire_single(space, make_model(data), data)(None)[1].numpy()
    np.testing.assert_array_equal(np.concatenate(announced), batch)


def test_global_local_batches_are_at_least_as_long_as_global() -> None:
    space, data = problem(4, num_initial=30)
    width = ConfidenceWidth("constant", beta=1.0)
    model = make_model(data, noise=1.0)
    glob = BBKB("global", width=width).acquire_single(space, model, data)(None)[1]
    local = BBKB("global_local", width=width).acquire_single(space, model, data)(None)[1]
    assert local.shape[0] >= glob.shape[0]


def test_box_search_space_uses_a_candidate_pool() -> None:
    space = Box([0.0, 0.0], [1.0, 1.0])
    x = space.sample(6)
    data = Dataset(x, objective(x))
    rule = BBKB(width="constant", pool_size=300, seed=3)
    model = make_model(data)
    batch = rule.acquire_single(space, model, data)(None)[1]
    assert batch.shape[1] == 2 and batch.shape[0] >= 1
    assert np.all(space.contains(batch))
    assert rule.last_statistics["candidates"] == 306


def test_rules_reject_bad_configuration() -> None:
    space, data = problem(0)
    sparse = make_model(data, dictionary=PivotedCholeskyDictionary(4))
    full_draw = make_model(data)  # a ridge-leverage draw from the prior keeps all 8 points
    assert full_draw.batch_posterior().exact
    for model in (sparse, full_draw):
        with pytest.raises(ValueError, match="ExactDictionary"):
            GPBUCB().acquire_single(space, model, data)(None)
    with pytest.raises(ValueError, match="NystromGPR"):
        BBKB().acquire_single(space, object(), data)(None)  # type: ignore[arg-type]
    product = TaggedProductSearchSpace([space, space])
    with pytest.raises(ValueError, match="DiscreteSearchSpace and Box"):
        BBKB().acquire_single(product, make_model(data), data)(None)
    with pytest.raises(ValueError, match="ratio threshold"):
        BBKB(ratio_threshold=0.5)
    with pytest.raises(ValueError, match="stopping"):
        BBKB("local")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_batch_size"):
        BBKB(max_batch_size=0)
    with pytest.raises(ValueError, match="width mode"):
        ConfidenceWidth("huge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delta"):
        ConfidenceWidth(delta=1.5)


def test_theory_width_formula() -> None:
    width = ConfidenceWidth("theory", noise_std=0.1, rkhs_norm=2.0, delta=0.05)
    expected_beta = 2 * 0.1 * np.sqrt(3.0 + np.log(20.0)) + (1 + np.sqrt(2)) * np.sqrt(0.5) * 2.0
    assert width.alpha(3.0, 0.5, 2.0, exact=False) == pytest.approx(2.0 * expected_beta)
    exact_beta = 2 * 0.1 * np.sqrt(3.0 + np.log(20.0)) + np.sqrt(0.5) * 2.0
    assert width.alpha(3.0, 0.5, 2.0, exact=True) == pytest.approx(2.0 * exact_beta)
    assert width.information_term(0.5, exact=False) == pytest.approx(np.log(2.5))
    reference = ConfidenceWidth("reference_code", noise_std=0.1, rkhs_norm=2.0, delta=0.05)
    assert reference.alpha(3.0, 0.5, 2.0, exact=False) == pytest.approx(
        np.sqrt(0.5) * 2.0 + 0.1 * np.sqrt(2.0 * 3.0 + np.log(20.0))
    )


def test_trace_count_does_not_grow_over_thirty_steps() -> None:
    space, data = problem(5, num_points=600)
    model = NystromGPR(
        se_kernel(lengthscale=0.2),
        0.5,
        data,
        dictionary=RidgeLeverageSampler(2.0, seed=0),
        exact_fit_limit=0,  # fit on the SGPR bound (its trace count is what is tested)
    )
    rule = BBKB("global_local", width="constant", max_batch_size=5)
    optimizer = trieste.bayesian_optimizer.BayesianOptimizer(mk_observer(objective), space)
    result = optimizer.optimize(30, data, model, rule, track_state=False)
    assert result.final_result.is_ok
    counts = model.compiled.tracing_counts()
    # each function used by the loop was traced exactly once over 30 steps in which the data,
    # the dictionary (and its capacity bucket) and the batch size all changed
    used = ["marginals", "row_features", "hallucinate", "hallucinated_variance", "local_terms"]
    used.append("data_terms")
    used.append("evidence")
    assert all(counts[name] == 1 for name in used), counts
    assert all(count <= 1 for count in counts.values()), counts
    final = result.final_result.unwrap().datasets["OBJECTIVE"]
    assert final.query_points.shape[0] > 8 + 30  # some batches had several points


def test_ask_tell_round_trip_keeps_rule_state() -> None:
    space, data = problem(6)
    rule = BBKB(width="constant")
    ask_tell = AskTellOptimizer(space, data, make_model(data), rule)
    observer = mk_observer(objective)
    for _ in range(3):
        ask_tell.tell(observer(ask_tell.ask()))
    saved = ask_tell.to_state()
    restored = AskTellOptimizer.from_state(saved, space, rule)
    assert restored.acquisition_state == ask_tell.acquisition_state
    assert restored.acquisition_state is not None
    assert restored.acquisition_state.num_batches == 3
    batch = restored.ask()
    assert batch.shape[1] == 2
