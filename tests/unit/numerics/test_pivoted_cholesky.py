"""Block randomly pivoted Cholesky and the dictionary it draws, against independent
computations: NumPy's Nyström residuals, the draw's probabilities, GPflow's GPR and SGPR."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition import GPBUCB
from trieste_scalable.models import ExactDictionary, NystromGPR, PivotedCholeskyDictionary
from trieste_scalable.numerics.dtc import CompiledDTC
from trieste_scalable.numerics.pivoted_cholesky import PICKED

from ...util import reference_gpr, reference_sgpr_predictions, replicated_dataset, se_kernel

NOISE = 0.05


def _run(kernel: gpflow.kernels.Kernel, points: np.ndarray, blocks: list[int], seed: int = 0):
    """Rows, residual and pivots after drawing ``blocks`` pivots block by block."""
    ops = CompiledDTC(kernel, tf.float64)
    x = tf.constant(points)
    rows = tf.zeros([sum(blocks), len(points)], tf.float64)
    residual = kernel(x, full_cov=False)
    picked, start = [], 0
    for count in blocks:
        rows, residual, chosen = ops.pivot_block(x, rows, residual, start, count, [seed, start])
        picked.append(chosen.numpy())
        start += count
    return rows.numpy(), residual.numpy(), np.concatenate(picked)


@pytest.mark.parametrize("blocks", [[1] * 12, [5, 5, 2], [12]])
def test_rows_are_the_nystrom_factor_of_the_pivots_and_the_residual_its_error(
    blocks: list[int],
) -> None:
    points = np.random.default_rng(0).uniform(size=(40, 3))
    kernel = se_kernel(0.4)
    rows, residual, picked = _run(kernel, points, blocks)
    assert len(set(picked.tolist())) == 12  # distinct pivots
    k = kernel(points).numpy()
    s = picked
    nystrom = k[:, s] @ np.linalg.solve(k[np.ix_(s, s)], k[s, :])  # K_XS K_SS^-1 K_SX
    np.testing.assert_allclose(rows.T @ rows, nystrom, atol=1e-6)
    rest = np.setdiff1d(np.arange(40), s)
    np.testing.assert_allclose(residual[rest], np.diag(k - nystrom)[rest], atol=1e-6)
    np.testing.assert_array_equal(residual[s], PICKED)


def test_pivots_are_drawn_with_probabilities_proportional_to_the_residual() -> None:
    """A linear kernel's prior variances are |x|^2: the first pivot of 4,000 seeded draws
    lands on each point with frequency |x_i|^2 / sum_j |x_j|^2 (each within 4 standard
    errors)."""
    points = np.array([[1.0], [2.0], [3.0], [0.5]])
    kernel = gpflow.kernels.Linear()
    ops = CompiledDTC(kernel, tf.float64)
    x, rows = tf.constant(points), tf.zeros([1, 4], tf.float64)
    residual = kernel(x, full_cov=False)
    draws = 4000
    counts = np.zeros(4)
    for seed in range(draws):
        counts[int(ops.pivot_block(x, rows, residual, 0, 1, [7, seed])[2][0])] += 1
    expected = points[:, 0] ** 2 / np.sum(points**2)
    standard_error = np.sqrt(expected * (1 - expected) / draws)
    assert np.all(np.abs(counts / draws - expected) < 4 * standard_error)


def test_a_second_pivot_never_repeats_what_the_first_explains() -> None:
    """Two copies of a point: once one is a pivot, its copy has no residual left and is drawn
    only after every other point."""
    points = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [3.0, 0.0]])
    rows, residual, picked = _run(se_kernel(0.5), points, [1, 1, 1])
    duplicates = {0, 1}
    assert len(duplicates & set(picked.tolist())) == 1
    assert residual[list(duplicates - set(picked.tolist()))[0]] < 1e-6  # the jitter's share


def test_the_policy_keeps_every_input_up_to_its_size_then_exactly_its_size() -> None:
    ops = CompiledDTC(se_kernel(), tf.float64)
    policy = PivotedCholeskyDictionary(25, block=10, seed=3)
    inputs = np.random.default_rng(1).uniform(size=(60, 2))
    counts, variances = np.ones(60), np.ones(60)
    roomy = policy.choose(inputs[:25], counts[:25], variances[:25], ops)
    np.testing.assert_array_equal(roomy, np.arange(25))
    assert policy.is_exact(25, 25) and not policy.is_exact(25, 60)
    index = policy.choose(inputs, counts, variances, ops)
    assert index.shape == (25,) and np.all(np.diff(index) > 0)
    np.testing.assert_array_equal(policy.choose(inputs, counts, variances, ops), index)  # seeded
    again = PivotedCholeskyDictionary(25, block=10, seed=3).choose(inputs, counts, variances, ops)
    np.testing.assert_array_equal(again, index)  # a fresh policy (a resumed campaign) too
    with pytest.raises(ValueError, match="dictionary size must be a positive integer"):
        PivotedCholeskyDictionary(0)


def test_its_nystrom_error_is_far_below_a_uniform_subsets() -> None:
    """Clustered inputs: pivots drawn by residual cover the clusters, a uniform subset of the
    same size misses some (trace of K - K_XS K_SS^-1 K_SX, mean of 5 seeds, at least 3x
    smaller)."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(size=(12, 2)) * 10
    sizes = [200] + [5] * 11  # one big cluster, eleven small ones
    points = np.concatenate([c + 0.05 * rng.normal(size=(k, 2)) for c, k in zip(centres, sizes)])
    points = points[rng.permutation(len(points))]  # in no order (pivots among the first 235)
    kernel = se_kernel(0.5)
    k = kernel(points).numpy() + 1e-10 * np.eye(len(points))

    def error(s: np.ndarray) -> float:
        return float(np.trace(k - k[:, s] @ np.linalg.solve(k[np.ix_(s, s)], k[s, :])))

    ops = CompiledDTC(kernel, tf.float64)
    pivoted, uniform = [], []

    def ones(n: int) -> tuple[np.ndarray, np.ndarray]:
        return np.ones(n), np.ones(n)

    for seed in range(5):
        policy = PivotedCholeskyDictionary(15, block=5, seed=seed)
        pivoted.append(error(policy.choose(points, *ones(len(points)), ops)))
        uniform.append(error(np.random.default_rng(seed).choice(len(points), 15, replace=False)))
    assert 3 * np.mean(pivoted) < np.mean(uniform)


def test_a_model_with_room_for_every_input_is_gpflows_exact_gpr_and_else_sgprs_dtc() -> None:
    data = replicated_dataset(0, num_unique=40, num_repeats=20)
    x = tf.constant(np.random.default_rng(2).uniform(size=(15, 2)))
    roomy = NystromGPR(
        se_kernel(), NOISE, data, dictionary=PivotedCholeskyDictionary(40), jitter=1e-14,
        fit_hyperparameters=False,
    )  # fmt: skip
    mean, var = roomy.predict(x)
    ref_mean, ref_var = reference_gpr(data, se_kernel(), NOISE).predict_f(x)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8)
    np.testing.assert_allclose(var, ref_var, rtol=1e-8)
    assert roomy.batch_posterior().exact  # GP-BUCB's in-batch updates
    sparse = NystromGPR(
        se_kernel(), NOISE, data, dictionary=PivotedCholeskyDictionary(12, block=4), jitter=1e-14,
        fit_hyperparameters=False,
    )  # fmt: skip
    assert sparse.dictionary.shape == (12, 2) and not sparse.batch_posterior().exact
    mean, var = sparse.predict(x)
    ref_mean, ref_var = reference_sgpr_predictions(
        data, se_kernel(), NOISE, sparse.dictionary.numpy(), x
    )
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6)


def _space_and_data(num_initial: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(300, 2))))
    x = tf.gather(space.points, rng.choice(300, num_initial, replace=False))
    y = -tf.exp(-tf.reduce_sum((x - 0.3) ** 2, axis=-1, keepdims=True) / 0.1)
    return space, Dataset(x, y)


def test_gp_bucb_over_a_roomy_dictionary_picks_what_it_picks_over_an_exact_gp() -> None:
    space, data = _space_and_data(30)
    rule = dict(width="constant", max_batch_size=10, fixed_batch_size=True, allow_repeats=False)
    picks = [
        GPBUCB(**rule)
        .acquire_single(  # type: ignore[arg-type]
            space,
            NystromGPR(se_kernel(0.2), NOISE, data, dictionary=policy, fit_hyperparameters=False),
            data,
        )(None)[1]
        .numpy()
        for policy in (ExactDictionary(), PivotedCholeskyDictionary(30))
    ]
    np.testing.assert_array_equal(picks[0], picks[1])


def test_gp_bucb_grows_fixed_batches_over_a_nystrom_dictionary_and_refuses_adaptive_ones() -> None:
    space, data = _space_and_data(60)
    model = NystromGPR(
        se_kernel(0.2), NOISE, data, dictionary=PivotedCholeskyDictionary(20),
        fit_hyperparameters=False,
    )  # fmt: skip
    fixed = GPBUCB(width="constant", max_batch_size=12, fixed_batch_size=True, allow_repeats=False)
    batch = fixed.acquire_single(space, model, data)(None)[1].numpy()
    assert batch.shape == (12, 2) and len({tuple(row) for row in batch}) == 12
    with pytest.raises(ValueError, match="fix the batches"):
        GPBUCB().acquire_single(space, model, data)(None)


def test_the_inputs_drawn_among_grow_geometrically() -> None:
    policy = PivotedCholeskyDictionary(1000)
    assert [policy.drawn_among(n) for n in (10, 1000, 1049, 1050, 1101, 1102)] == [
        10, 1000, 1000, 1050, 1050, 1102,
    ]  # fmt: skip
    for n in range(1000, 120_000, 997):
        among = policy.drawn_among(n)
        assert n / 1.05 - 1 <= among <= n
    assert PivotedCholeskyDictionary(1000, growth=1.25).drawn_among(1562) == 1562
    with pytest.raises(ValueError, match="growth"):
        PivotedCholeskyDictionary(10, growth=1.0)


def test_a_growing_model_keeps_its_draw_until_the_inputs_drawn_among_change() -> None:
    """Data grown by appending within one step of the draws keep the dictionary (no draw), and
    a model built afresh on the same data (a resumed campaign) has the same one."""
    data = replicated_dataset(1, num_unique=40, num_repeats=1)
    head = [Dataset(data.query_points[:n], data.observations[:n]) for n in (30, 32, 34)]
    policy = PivotedCholeskyDictionary(10, block=5, seed=4, growth=1.25)  # 27 of 30, 32; 33 of 34
    draws = []
    choose = policy.choose
    policy.choose = lambda *args: draws.append(len(args[1])) or choose(*args)  # type: ignore
    fixed = dict(fit_hyperparameters=False, prior_mean=0.0)  # a mean that is not the first data's
    model = NystromGPR(se_kernel(), NOISE, head[0], dictionary=policy, **fixed)
    dictionaries = [model.dictionary.numpy()]
    for grown in head[1:]:
        model.update(grown)
        dictionaries.append(model.dictionary.numpy())
    assert draws == [30, 34]
    np.testing.assert_array_equal(dictionaries[0], dictionaries[1])
    for grown, dictionary in zip(head, dictionaries):
        fresh = NystromGPR(
            se_kernel(), NOISE, grown,
            dictionary=PivotedCholeskyDictionary(10, block=5, seed=4, growth=1.25), **fixed,
        )  # fmt: skip
        np.testing.assert_array_equal(fresh.dictionary.numpy(), dictionary)
        x = tf.constant(np.random.default_rng(0).uniform(size=(5, 2)))
        if grown is head[-1]:
            np.testing.assert_allclose(fresh.predict(x)[0], model.predict(x)[0], rtol=1e-10)
