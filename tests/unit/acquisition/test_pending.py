"""Pending points (asynchronous use): every rule keeps the points it proposed and not yet told in
its State, never re-proposes them where it excludes repeats, and a hallucinating rule given
pending points continues exactly the batch it would have built synchronously."""

from collections import Counter
from dataclasses import replace

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition import (
    BBKB,
    GPBUCB,
    BatchThompsonSampling,
    BatchUCBState,
    ConfidenceWidth,
    MiniGPEI,
    MiniGPUCB,
    rule_state,
)
from trieste_scalable.acquisition.pathwise_source import pathwise_source
from trieste_scalable.acquisition.pending import outstanding, proposed, with_failures
from trieste_scalable.acquisition.random_search import RandomRule
from trieste_scalable.models import (
    AdaptiveSVGP,
    ExactDictionary,
    NystromGPR,
    ReplicatedGPR,
    RidgeLeverageSampler,
)
from trieste_scalable.sampling.features import feature_map_for
from trieste_scalable.sampling.pathwise import believed_q_sqrt, evaluate

from ...util import se_kernel

WIDTH = ConfidenceWidth("constant", beta=2.0)


def objective(x: tf.Tensor) -> tf.Tensor:
    return -tf.exp(-tf.reduce_sum((x - 0.3) ** 2, axis=-1, keepdims=True) / 0.1)


def problem(seed: int = 0, num_points: int = 300):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(num_points, 2))))
    x = tf.gather(space.points, rng.choice(num_points, 10, replace=False))
    return space, Dataset(x, objective(x))


def test_told_rows_resolve_one_pending_copy_each() -> None:
    rng = np.random.default_rng(0)
    points = rng.uniform(size=(4, 2))
    pending = proposed(np.zeros((0, 0)), tf.constant(points[[0, 1, 1, 2, 3]]))
    # rows 0-2 were known before (one of them a copy of a pending point): they resolve nothing
    history = points[[1, 3, 3]]
    told = points[[1, 3, 0]]  # after: one copy of point 1, point 3 and point 0
    x = np.concatenate([history, told])
    dataset = Dataset(tf.constant(x), tf.zeros([len(x), 1], tf.float64))
    left = outstanding(pending, 3, dataset)
    expected = Counter(map(tuple, points[[1, 2]]))
    assert Counter(map(tuple, left)) == expected
    assert outstanding(pending, 6, dataset).shape == (5, 2)  # nothing told after row 6
    assert outstanding((), 0, dataset).shape[0] == 0


def models_and_rules():  # type: ignore[no-untyped-def]
    def nystrom(data, exact=False):  # type: ignore[no-untyped-def]
        policy = ExactDictionary() if exact else RidgeLeverageSampler(2.0, seed=0)
        return NystromGPR(se_kernel(0.2), 0.5, data, dictionary=policy, fit_hyperparameters=False)

    return {
        "bbkb": (nystrom, lambda: BBKB(width=WIDTH, max_batch_size=4, allow_repeats=False)),
        "gp-bucb": (
            lambda data: nystrom(data, exact=True),
            lambda: GPBUCB(width=WIDTH, max_batch_size=4, allow_repeats=False),
        ),
        "ts": (
            lambda data: AdaptiveSVGP(se_kernel(0.2), 0.01, data, inducing=20, seed=0),
            lambda: BatchThompsonSampling(4, num_features=200),
        ),
        "mini-ucb": (
            lambda data: ReplicatedGPR(se_kernel(0.2), 0.01, data, fit_hyperparameters=False),
            lambda: MiniGPUCB(width=WIDTH, exclude_evaluated=True),
        ),
        "random": (lambda data: None, lambda: RandomRule(4, seed=0)),
    }


@pytest.mark.parametrize("name", ["bbkb", "gp-bucb", "ts", "mini-ucb", "random"])
def test_pending_points_are_never_proposed_again(name: str) -> None:
    space, data = problem(1)
    make_model, make_rule = models_and_rules()[name]
    model = make_model(data)
    models = {"OBJECTIVE": model} if model is not None else {"OBJECTIVE": _Static()}
    ask_tell = AskTellOptimizer(space, data, models["OBJECTIVE"], make_rule())
    in_flight: list[np.ndarray] = []
    for step in range(6):  # ask for more while most of what was asked is still being evaluated
        batch = ask_tell.ask().numpy()
        keys = {tuple(p) for p in in_flight}
        assert not any(tuple(p) in keys for p in batch), f"step {step} re-proposed a pending point"
        in_flight.extend(batch)
        pending = ask_tell.acquisition_state.pending  # resolved at each acquisition
        assert Counter(map(tuple, np.array(pending))) == Counter(map(tuple, in_flight))
        done, in_flight = in_flight[:1], in_flight[1:]  # one evaluation finishes per step
        if done:
            x = tf.constant(np.array(done))
            ask_tell.tell(Dataset(x, objective(x)))


class _Static:
    """The model a random rule ignores."""

    def update(self, dataset: Dataset) -> None:
        pass

    def optimize(self, dataset: Dataset) -> None:
        pass

    def log(self, dataset: Dataset = None) -> None:  # type: ignore[assignment]
        pass


@pytest.mark.parametrize("exact", [False, True])
def test_pending_points_continue_the_synchronous_batch(exact: bool) -> None:
    # with nothing told in between, the points in flight are hallucinated and counted exactly as
    # the first points of the batch were: the rule proposes the rest of that batch
    space, data = problem(2)
    policy = ExactDictionary() if exact else RidgeLeverageSampler(2.0, seed=0)
    model = NystromGPR(se_kernel(0.2), 2.0, data, dictionary=policy, fit_hyperparameters=False)
    rule = GPBUCB(4.0, width=WIDTH) if exact else BBKB(ratio_threshold=4.0, width=WIDTH)
    start = BatchUCBState(information=model.information_gain())
    _, whole = rule.acquire_single(space, model, data)(start)
    assert whole.shape[0] >= 4
    for k in (1, 3):
        state = replace(start, pending=proposed(np.zeros((0, 0)), whole[:k]), seen=10)
        after, rest = rule.acquire_single(space, model, data)(state)
        np.testing.assert_array_equal(rest, whole[k:])
        assert len(after.pending) == whole.shape[0]
        assert rule.last_statistics["pending_points"] == k


def test_a_stopping_rule_satisfied_by_the_pending_points_proposes_nothing() -> None:
    space, data = problem(3)
    model = NystromGPR(se_kernel(0.2), 0.5, data, fit_hyperparameters=False)
    rule = BBKB(width=WIDTH, ratio_threshold=1.0)  # BKB: one point per batch
    first = rule.acquire_single(space, model, data)(None)
    assert first[1].shape[0] == 1
    state, nothing = rule.acquire_single(space, model, data)(first[0])
    assert nothing.shape == (0, 2) and len(state.pending) == 1


def test_a_mini_epoch_waits_for_its_repeats() -> None:
    space, data = problem(4)
    model = ReplicatedGPR(se_kernel(0.2), 1.0, data, fit_hyperparameters=False)
    ask_tell = AskTellOptimizer(space, data, model, MiniGPEI(width=WIDTH, max_batch_size=5))
    epoch = ask_tell.ask()
    assert epoch.shape[0] > 1 and np.unique(epoch.numpy(), axis=0).shape[0] == 1
    told = epoch[:-1]
    ask_tell.tell(Dataset(told, objective(told)))  # one repeat still being evaluated
    assert ask_tell.ask().shape[0] == 0
    assert ask_tell.acquisition_state.epochs == 1
    ask_tell.tell(Dataset(epoch[-1:], objective(epoch[-1:])))
    assert ask_tell.ask().shape[0] >= 1  # the next epoch
    assert ask_tell.acquisition_state.epochs == 2


def test_pending_points_survive_the_json_round_trip() -> None:
    state = BatchUCBState(0.5, 2, 3, pending=((0.1, 1 / 3), (2e-300, -1.0)), seen=12)
    restored, _ = rule_state.decode(rule_state.encode(state, 2))
    assert restored == state
    hash(restored)


@pytest.mark.parametrize("whiten", [True, False])
def test_believed_covariance_is_the_posterior_given_mean_observations(whiten: bool) -> None:
    rng = np.random.default_rng(5)
    kernel = se_kernel(0.3)
    inducing = tf.constant(rng.uniform(size=(12, 2)))
    root = np.tril(rng.normal(size=(12, 12))) * 0.3 + np.eye(12)
    pending = tf.constant(rng.uniform(size=(3, 2)))
    believed = believed_q_sqrt(kernel, inducing, tf.constant(root), whiten, pending, 0.05).numpy()
    # independently: Sigma' = (Sigma^-1 + Phi^T Phi / lambda)^-1 by explicit inverses
    gram = kernel(inducing).numpy() + 1e-6 * np.eye(12)
    cross = kernel(pending, inducing).numpy()
    phi = (
        cross @ np.linalg.inv(np.linalg.cholesky(gram)).T if whiten else cross @ np.linalg.inv(gram)
    )
    sigma = root @ root.T
    expected = np.linalg.inv(np.linalg.inv(sigma) + phi.T @ phi / 0.05)
    np.testing.assert_allclose(believed @ believed.T, expected, rtol=1e-7, atol=1e-10)
    assert np.allclose(believed, np.tril(believed))


class _PriorSVGP:
    """A whitened SVGP at its prior (q = N(0, I)) over given inducing points, with a noise."""

    def __init__(self, inducing: tf.Tensor):
        self.inducing, self.kernel = inducing, se_kernel(0.2)

    def get_kernel(self):  # type: ignore[no-untyped-def]
        return self.kernel

    def get_inducing_variables(self):  # type: ignore[no-untyped-def]
        m = int(self.inducing.shape[0])
        q_sqrt = tf.eye(m, dtype=tf.float64)[None]
        return self.inducing, tf.zeros([m, 1], tf.float64), q_sqrt, True

    def get_observation_noise(self) -> tf.Tensor:
        return tf.constant(1e-4, tf.float64)

    def predict(self, query_points):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def sample(self, query_points, num_samples):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def log(self, dataset=None):  # type: ignore[no-untyped-def]
        pass


def spreads_at(model: object, at: tf.Tensor) -> list[float]:
    """The samples' standard deviation at ``at`` [1, D] without, then with ``at`` pending."""
    features = feature_map_for(model.get_kernel(), 2000)  # type: ignore[attr-defined]
    draws = features.draw(tf.constant([1, 2]), 2, tf.float64)
    spreads = []
    for pending in (None, at):
        source = pathwise_source(model, pending)
        weights = source.sample_weights(features, draws, 4000, tf.constant([3, 4]))
        values = evaluate(features, source.mean_function, draws, weights, at)
        spreads.append(float(tf.math.reduce_std(values)))
    return spreads


def test_thompson_samples_spread_less_where_points_are_in_flight() -> None:
    # at a pending point the samples' spread falls from the prior's (1) to about the noise's
    # (0.01) once it is believed observed (an inducing point: the SVGP is exact there)
    model = _PriorSVGP(tf.constant(np.random.default_rng(6).uniform(size=(5, 2))))
    spreads = spreads_at(model, model.inducing[:1])
    assert spreads[0] == pytest.approx(1.0, rel=0.1) and spreads[1] < 0.05, spreads


def test_exact_gp_samples_believe_pending_points_too() -> None:
    _, data = problem(7)
    gpr = gpflow.models.GPR(data.astuple(), se_kernel(0.2), noise_variance=1e-4)
    spreads = spreads_at(GaussianProcessRegression(gpr), tf.constant([[0.99, 0.01]], tf.float64))
    assert spreads[1] < 0.1 * spreads[0], spreads


def test_a_failure_moves_one_pending_copy_to_the_failed_points_and_needs_none_pending() -> None:
    """One copy of a failed point leaves ``pending`` for ``failed``; a state with nothing
    pending (a prospective campaign's, restored before its batch) just keeps the failure."""
    points = np.array([[0.0, 1.0], [0.5, 0.5], [0.0, 1.0]])
    state = replace(RandomRule(2).state_type(), pending=proposed(points[:0], points))
    after = with_failures(state, points[:1])
    assert np.array_equal(np.array(after.pending), points[1:])
    assert np.array_equal(np.array(after.failed), points[:1])
    empty = with_failures(RandomRule(2).state_type(), points[1:2])
    assert empty.pending == () and np.array_equal(np.array(empty.failed), points[1:2])


def test_every_rule_state_keeps_its_bookkeeping_in_one_base_and_starts_campaigns_alike() -> None:
    """Each saved rule state is a :class:`PendingState`; ``initial_state`` gives ``None`` where
    nothing is pending or failed, or the rule keeps no pending points, and a fresh state with
    both otherwise; ``restarted`` keeps the rule's own fields."""
    from trieste_scalable.acquisition import rule_state
    from trieste_scalable.acquisition.exploration_share import ExplorationShare
    from trieste_scalable.acquisition.pending import PendingState, initial_state

    assert all(issubclass(cls, PendingState) for cls in rule_state.STATE_TYPES.values())
    pending, failed = np.array([[0.25, 0.5]]), np.array([[1.0, 2.0], [3.0, 4.0]])
    rule = RandomRule(2)
    none = np.zeros((0, 2))
    assert initial_state(rule, pending=none, failed=none, seen=4) is None
    assert initial_state(object(), pending=pending, failed=failed, seen=4) is None
    started = initial_state(ExplorationShare(rule), pending=pending, failed=failed, seen=4)
    assert type(started) is rule.state_type
    assert started.pending == ((0.25, 0.5),) and started.failed == ((1.0, 2.0), (3.0, 4.0))
    assert started.seen == 4 and started.num_batches == 0
    later = replace(started, num_batches=5).restarted(pending=none, failed=failed[:1], seen=9)
    assert (later.num_batches, later.pending, later.failed, later.seen) == (5, (), ((1.0, 2.0),), 9)
    with pytest.raises(TypeError, match="cannot continue from a str"):
        rule.state_type.continued("a state", rule)
