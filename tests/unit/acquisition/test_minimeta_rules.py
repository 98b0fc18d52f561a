"""MINI-GP-UCB / MINI-GP-EI: the switching rule, selection and budget."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import norm
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression
from trieste.space import Box, DiscreteSearchSpace, TaggedProductSearchSpace

from trieste_scalable.acquisition import BBKB, ConfidenceWidth, MiniGPEI, MiniGPUCB, repeats
from trieste_scalable.models import NystromGPR, ReplicatedGPR

from ...util import se_kernel

NOISE = 0.05


def objective(x: tf.Tensor) -> tf.Tensor:
    return tf.sin(5.0 * x[:, :1]) * tf.cos(3.0 * x[:, 1:])


def setup(seed: int = 0, num_points: int = 400, num_initial: int = 25):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(num_points, 2))))
    x = tf.gather(space.points, rng.choice(num_points, num_initial, replace=False))
    x = tf.concat([x, tf.repeat(x[:3], 20, axis=0)], axis=0)  # some replicated inputs
    y = objective(x) + 0.2 * rng.normal(size=(x.shape[0], 1))
    data = Dataset(x, y)
    return space, data, ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)


@pytest.mark.parametrize("threshold", [1.1, 1.5, 2.0, 3.0])
def test_epoch_shrinks_the_chosen_std_exactly_and_others_by_at_most_c(threshold: float) -> None:
    space, data, model = setup()
    rule = MiniGPUCB(threshold, width=ConfidenceWidth("constant", beta=2.0))
    batch = rule.acquire_single(space, model, data)(None)[1]
    count = int(batch.shape[0])
    assert count >= 1 and np.all(batch.numpy() == batch.numpy()[:1])
    _, var_before = model.predict(space.points)
    _, chosen_var = model.predict(batch[:1])
    model.update(data + Dataset(batch, objective(batch)))
    _, var_after = model.predict(space.points)
    ratio = np.sqrt(var_before / var_after)[:, 0]
    expected = np.sqrt(1 + count * float(chosen_var) / NOISE)
    index = int(np.flatnonzero(np.all(space.points.numpy() == batch.numpy()[0], axis=1))[0])
    np.testing.assert_allclose(ratio[index], expected, rtol=1e-6)
    limit = threshold if count > 1 else max(threshold, expected)  # the floor of one (errata 2)
    assert ratio.max() <= limit * (1 + 1e-9)


def test_repeats_are_never_zero() -> None:
    for variance in [1e-9, 0.01, 0.05, 1.0, 1e6]:
        assert repeats(1.1, NOISE, variance) >= 1
    assert repeats(2.0, 1.0, 0.5) == 6  # (4 - 1) * 1 / 0.5


def test_ucb_picks_the_lowest_bound_and_ei_the_largest_improvement() -> None:
    space, data, model = setup(1)
    mean, var = (t.numpy()[:, 0] for t in model.predict(space.points))
    ucb = MiniGPUCB(width=ConfidenceWidth("constant", beta=1.5)).acquire_single(space, model, data)(
        None
    )[1]
    np.testing.assert_array_equal(ucb[0], space.points[int(np.argmin(mean - 1.5 * np.sqrt(var)))])
    ei = MiniGPEI(width=ConfidenceWidth("constant", beta=1.3)).acquire_single(space, model, data)(
        None
    )[1]
    scale = 1.3 * np.sqrt(var)
    a = (mean.min() - mean) / scale
    improvement = scale * (a * norm.cdf(a) + norm.pdf(a))
    np.testing.assert_array_equal(ei[0], space.points[int(np.argmax(improvement))])


def test_theory_widths() -> None:
    space, data, model = setup(2)
    state, _ = MiniGPUCB(width=ConfidenceWidth("theory", rkhs_norm=1.0, delta=0.5)).acquire_single(
        space, model, data
    )(None)
    rule = MiniGPUCB(width=ConfidenceWidth("theory", rkhs_norm=1.0, delta=0.5))
    rule.acquire_single(space, model, data)(None)
    assert rule.last_statistics["beta"] == pytest.approx(
        1.0 + np.sqrt(model.information_gain() + np.log(2.0))
    )
    ei = MiniGPEI(width=ConfidenceWidth("theory", delta=0.5))
    ei.acquire_single(space, model, data)(None)
    info, log_t = model.information_gain(), np.log(len(data) / 0.5)
    assert ei.last_statistics["beta"] == pytest.approx(
        np.sqrt(info) + np.sqrt(info * log_t + log_t)
    )


def test_budget_and_cap_cut_the_epoch() -> None:
    space, data, model = setup(3)
    capped = MiniGPUCB(1.5, width="constant", max_batch_size=3)
    assert capped.acquire_single(space, model, data)(None)[1].shape[0] <= 3
    budgeted = MiniGPUCB(3.0, width="constant", budget=2)
    state, batch = budgeted.acquire_single(space, model, data)(None)
    assert batch.shape[0] <= 2
    state, batch = budgeted.acquire_single(space, model, data)(state)
    assert state.evaluations <= 2
    if state.evaluations == 2:
        with pytest.raises(ValueError, match="budget"):
            budgeted.acquire_single(space, model, data)(state)


def test_works_over_nystrom_and_trieste_gpr_models() -> None:
    space, data, _ = setup(4)
    nystrom = NystromGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    gpr = GaussianProcessRegression(
        gpflow.models.GPR(data.astuple(), se_kernel(), noise_variance=NOISE)
    )
    for model in (nystrom, gpr):
        batch = MiniGPUCB(width="constant").acquire_single(space, model, data)(None)[1]
        assert batch.shape[1] == 2
    with pytest.raises(ValueError, match="information_gain"):
        MiniGPUCB(width="theory").acquire_single(space, gpr, data)(None)


def test_one_width_api_across_rule_families() -> None:
    # every family takes a mode name or a ConfidenceWidth, and only its paper's modes
    width = ConfidenceWidth("constant", beta=1.7)
    assert MiniGPUCB(width=width).width == width and BBKB(width=width).width == width
    assert MiniGPUCB(width="bayesian").width == ConfidenceWidth("bayesian", delta=0.5)
    assert MiniGPEI(width="constant").width == ConfidenceWidth("constant", beta=1.0, delta=0.5)
    for make, mode in ((BBKB, "bayesian"), (MiniGPEI, "bayesian"), (MiniGPUCB, "reference_code")):
        with pytest.raises(ValueError, match=f"got '{mode}'"):
            make(width=mode)
    with pytest.raises(ValueError, match="unknown width mode"):
        ConfidenceWidth("wide")  # type: ignore[arg-type]


def test_box_search_space_and_errors() -> None:
    space = Box([0.0, 0.0], [1.0, 1.0])
    x = space.sample(15)
    data = Dataset(x, objective(x))
    model = ReplicatedGPR(se_kernel(), NOISE, data, fit_hyperparameters=False)
    batch = MiniGPEI(width="constant", num_initial_samples=200).acquire_single(space, model, data)
    batch = batch(None)[1]
    assert np.all(space.contains(batch))
    with pytest.raises(ValueError, match="> 1"):
        MiniGPUCB(ratio_threshold=1.0)
    with pytest.raises(ValueError, match="DiscreteSearchSpace and Box"):
        MiniGPUCB(width="constant").acquire_single(
            TaggedProductSearchSpace([space, space]), model, data
        )(None)


def test_state_counts_epochs_and_switches_through_ask_tell() -> None:
    space, data, model = setup(5)
    rule = MiniGPUCB(1.2, width=ConfidenceWidth("constant", beta=1.0))
    ask_tell = AskTellOptimizer(space, data, model, rule, fit_model=False)
    for _ in range(6):
        batch = ask_tell.ask()
        ask_tell.tell(Dataset(batch, objective(batch)))
    state = ask_tell.acquisition_state
    assert state is not None and state.epochs == 6
    assert 1 <= state.switches <= 6
    assert state.evaluations == len(ask_tell.dataset) - len(data)
    restored = AskTellOptimizer.from_state(ask_tell.to_state(), space, rule)
    assert restored.acquisition_state == state


def test_ei_epoch_width_and_incumbent_live_in_the_state() -> None:
    space, data, model = setup(6)
    rule = MiniGPEI(width=ConfidenceWidth("constant", beta=1.5))
    state, _ = rule.acquire_single(space, model, data)(None)
    expected = float(tf.reduce_min(model.predict(space.points)[0]))
    assert state.beta == 1.5 and state.incumbent == pytest.approx(expected, rel=1e-12)
    assert not hasattr(rule, "_eta")  # nothing of the epoch is kept on the rule itself
