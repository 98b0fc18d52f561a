"""ExplorationShare: a decaying share of uniformly random points beside any rule's batch."""

import math

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset
from trieste.space import Box, DiscreteSearchSpace

from trieste_scalable.acquisition import ExplorationShare
from trieste_scalable.acquisition.exploration_share import noise_share_of
from trieste_scalable.acquisition.random_search import RandomRule, RandomState
from trieste_scalable.models import build_nystrom_gpr


class FixedRule(AcquisitionRule):
    """Always the first ``size`` candidates (no state)."""

    def __init__(self, size: int):
        self.size = size

    def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
        return search_space.points[: self.size]


def space(num_points: int = 300) -> DiscreteSearchSpace:
    rng = np.random.default_rng(0)
    return DiscreteSearchSpace(tf.constant(rng.uniform(size=(num_points, 2))))


def data(space: DiscreteSearchSpace, n: int) -> dict:
    x = tf.gather(space.points, np.arange(n) % space.points.shape[0])
    return {"OBJECTIVE": Dataset(x, tf.zeros([n, 1], tf.float64))}


def test_the_probability_decays_as_c_over_two_root_n() -> None:
    share = ExplorationShare(FixedRule(1), rate=3.0)
    assert share.probability(0) == 1.0 and share.probability(1) == 1.0
    assert share.probability(9) == 0.5
    assert share.probability(900) == pytest.approx(0.05)


def test_the_rule_s_batch_comes_first_and_random_candidates_follow() -> None:
    candidates = space()
    share = ExplorationShare(FixedRule(10), rate=20.0)  # probability 1 up to n = 100
    points = share.acquire(candidates, {}, data(candidates, 50)).numpy()
    assert points.shape == (20, 2)
    np.testing.assert_array_equal(points[:10], candidates.points.numpy()[:10])
    assert all(candidates.contains(tf.constant(points[10:])).numpy())


def test_a_stateful_rule_s_state_passes_through_untouched() -> None:
    candidates = space()
    share = ExplorationShare(RandomRule(5, seed=1), rate=20.0)
    state, points = share.acquire(candidates, {}, data(candidates, 4))(None)
    alone_state, alone = RandomRule(5, seed=1).acquire(candidates, {}, data(candidates, 4))(None)
    assert isinstance(state, RandomState) and state == alone_state
    np.testing.assert_array_equal(points.numpy()[:5], alone.numpy())
    assert points.shape[0] == 10 and share.state_type is RandomState
    assert not hasattr(ExplorationShare(FixedRule(1)), "state_type")


def test_draws_are_seeded_by_the_number_of_evaluations() -> None:
    candidates = space()
    share = ExplorationShare(FixedRule(10), rate=6.0, seed=4)
    first = share.acquire(candidates, {}, data(candidates, 30)).numpy()
    again = ExplorationShare(FixedRule(10), rate=6.0, seed=4).acquire(
        candidates, {}, data(candidates, 30)
    )
    np.testing.assert_array_equal(first, again.numpy())
    other = ExplorationShare(FixedRule(10), rate=6.0, seed=5).acquire(
        candidates, {}, data(candidates, 30)
    )
    assert first.shape != other.shape or not np.array_equal(first, other.numpy())


def test_about_c_root_t_of_t_evaluations_are_random() -> None:
    """Batches of 10 up to T = 2,000 evaluations: the random count is c·sqrt(T) within 15 %
    (its mean is within 5 % of c·sqrt(T) here and its std about 7 %; seeded)."""
    candidates, rate, total = space(), 3.0, 2000
    share = ExplorationShare(FixedRule(10), rate=rate, seed=0)
    n, drawn = 20, 0
    while n < total:
        size = int(share.acquire(candidates, {}, data(candidates, n)).shape[0])
        count = int(np.random.default_rng([0, n]).binomial(10, share.probability(n)))
        assert size == 10 + count
        drawn, n = drawn + count, n + size
    assert abs(drawn - rate * math.sqrt(total)) <= 0.15 * rate * math.sqrt(total)


def test_a_box_gets_points_inside_it() -> None:
    box = Box([0.0, -1.0], [1.0, 2.0])

    class BoxRule(AcquisitionRule):
        def acquire(self, search_space, models, datasets=None):  # type: ignore[no-untyped-def]
            return tf.constant([[0.5, 0.5]], tf.float64)

    points = ExplorationShare(BoxRule(), rate=100.0).acquire(box, {}, None)
    assert points.shape == (2, 2) and all(box.contains(points).numpy())


class NoiseModel:
    """A fit's kernel variance and noise, all ``ExplorationShare`` reads of a model."""

    def __init__(self, signal: float, noise: float):
        self.signal, self.noise = signal, noise

    def get_kernel(self) -> gpflow.kernels.Kernel:
        return gpflow.kernels.Matern52(variance=self.signal)

    def get_observation_noise(self) -> tf.Tensor:
        return tf.constant(self.noise, tf.float64)


def test_the_share_scales_with_the_noise_s_part_of_the_fit() -> None:
    """rho = noise / (signal + noise) multiplies the probability: a known small noise (Trieste's
    build_gpr default, variance / 100) leaves the rule almost alone, a noise-dominated fit gets
    the full rate; a model without a kernel variance gets rho = 1."""
    assert noise_share_of(NoiseModel(1.0, 3.0)) == pytest.approx(0.75)
    assert noise_share_of(NoiseModel(2.0, 0.02)) == pytest.approx(1 / 101)
    assert noise_share_of(object()) == 1.0  # type: ignore[arg-type]
    share = ExplorationShare(FixedRule(10), rate=3.0)
    assert share.probability(900, 0.75) == pytest.approx(0.0375)
    candidates = space()
    sizes = {
        name: [
            int(share.acquire(candidates, {"OBJECTIVE": model}, data(candidates, n)).shape[0])
            for n in range(20, 1000, 10)
        ]
        for name, model in {"known": NoiseModel(1.0, 0.01), "noisy": NoiseModel(1.0, 1e6)}.items()
    }
    expected = [
        10 + int(np.random.default_rng([0, n]).binomial(10, share.probability(n)))
        for n in range(20, 1000, 10)
    ]
    assert sizes["noisy"] == expected  # rho ~ 1: the same draws as ungated
    assert sum(sizes["known"]) - 10 * len(expected) <= 2  # ~0.5 expected of ~70 ungated


def test_a_model_built_as_trieste_builds_gives_rho_one_percent() -> None:
    candidates = space()
    initial = data(candidates, 10)["OBJECTIVE"]
    initial = Dataset(initial.query_points, tf.sin(initial.query_points[:, :1] * 6))
    model = build_nystrom_gpr(initial, candidates)
    assert noise_share_of(model) == pytest.approx(1 / 101, rel=1e-6)


@pytest.mark.parametrize("rate", [0.0, -1.0, math.inf, math.nan])
def test_a_rate_that_is_not_positive_and_finite_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="exploration rate"):
        ExplorationShare(FixedRule(1), rate=rate)


@pytest.mark.parametrize("algorithm", ["bbkb", "bkb", "gp-bucb", "mini-ucb", "mini-ei", "ts"])
def test_the_command_line_s_fitted_ucb_rules_keep_a_share_and_fixed_ones_do_not(
    algorithm: str,
) -> None:
    from trieste_scalable.acquisition import ConfidenceWidth
    from trieste_scalable.campaigns.algorithms.builders import build

    candidates = space()
    initial = data(candidates, 10)["OBJECTIVE"]
    options = dict(
        noise_variance=0.01,
        width=ConfidenceWidth("constant"),
        batch_size=5,
        max_batch_size=5,
        seed=0,
        budget=50,
    )
    model, fitted = build(algorithm, initial, fit_hyperparameters=True, **options)
    assert isinstance(fitted, ExplorationShare) == (algorithm != "ts")
    assert model.fitter.variance_optimism == (0.0 if algorithm == "ts" else 2.0)
    _, off = build(algorithm, initial, fit_hyperparameters=True, exploration_rate=0, **options)
    plain, _ = build(algorithm, initial, fit_hyperparameters=True, variance_optimism=0, **options)
    assert plain.fitter.variance_optimism == 0.0
    _, fixed = build(algorithm, initial, fit_hyperparameters=False, **options)
    _, screening = build(algorithm, initial, fit_hyperparameters=True, screening=True, **options)
    assert not any(isinstance(r, ExplorationShare) for r in (off, fixed, screening))
