import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.numerics import linalg
from trieste_scalable.numerics.linalg import (
    CholeskyError,
    cholesky_rank_one_update,
    chunked_map,
    jittered_cholesky,
    pad_rows,
)

from ...util import retained_bytes


def test_jittered_cholesky_is_exact_for_well_conditioned_matrix() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 6))
    matrix = tf.constant(a @ a.T + 6 * np.eye(6))
    chol, jitter = jittered_cholesky(matrix, 0.0)
    assert jitter == 0.0
    np.testing.assert_allclose(chol @ tf.transpose(chol), matrix, rtol=1e-12)


def test_jittered_cholesky_escalates_on_singular_matrix() -> None:
    v = tf.constant(np.ones((5, 1)))
    singular = v @ tf.transpose(v)  # rank one
    chol, jitter = jittered_cholesky(singular, 0.0)
    assert jitter > 0.0
    assert np.all(np.isfinite(chol.numpy()))
    np.testing.assert_allclose(chol @ tf.transpose(chol), singular, atol=10 * jitter)


def test_jittered_cholesky_raises_clearly_on_indefinite_matrix() -> None:
    indefinite = tf.constant(np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(CholeskyError, match="not positive definite"):
        jittered_cholesky(indefinite)


def test_rank_one_updates_equal_recomputation() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(size=(7, 7))
    base = a @ a.T + np.eye(7)
    vectors = rng.normal(size=(3, 7))
    updated = tf.constant(np.linalg.cholesky(base))
    for vector in vectors:
        updated = cholesky_rank_one_update(updated, tf.constant(vector))
    expected = np.linalg.cholesky(base + vectors.T @ vectors)
    np.testing.assert_allclose(updated, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("num_points", [0, 1, 7, 64, 65])
def test_chunked_map_matches_direct_evaluation(num_points: int) -> None:
    x = tf.constant(np.arange(num_points * 2, dtype=np.float64).reshape(num_points, 2))
    calls = []

    def fn(chunk: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        calls.append(int(chunk.shape[0]))
        return tf.reduce_sum(chunk, axis=1), chunk * 2

    total, doubled = chunked_map(fn, x, chunk_size=8)
    np.testing.assert_array_equal(total, tf.reduce_sum(x, axis=1))
    np.testing.assert_array_equal(doubled, x * 2)
    assert len(set(calls)) <= 1  # one shape only: a compiled fn traces once


def test_chunked_map_retains_no_memory() -> None:
    # a campaign maps chunks hundreds of times an ask; eager slices and a tf.repeat of Python
    # numbers kept 33 KB a call of these 9 chunks (host_tensors' docstring), now 0.2 KB. The
    # bound: 1 KB a call
    x = tf.constant(np.arange(130.0).reshape(65, 2))
    compiled = tf.function(lambda chunk: (tf.reduce_sum(chunk, axis=1), chunk * 2))
    assert retained_bytes(lambda: chunked_map(compiled, x, chunk_size=8), 300) < 1024 * 300


def test_chunked_map_rejects_bad_chunk_size() -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        chunked_map(lambda c: c, tf.zeros([3, 1]), 0)


def test_pad_rows() -> None:
    padded = pad_rows(np.ones((2, 3)), 4)
    assert padded.shape == (4, 3)
    np.testing.assert_array_equal(padded[2:], 0.0)
    with pytest.raises(ValueError, match="capacity"):
        pad_rows(np.ones((5, 1)), 4)


@pytest.mark.parametrize("parts", [1, 2, 3])
@pytest.mark.parametrize("num_columns", [1, 255, 767, 768, 1001])
def test_solve_lower_equals_one_triangular_solve(
    monkeypatch: pytest.MonkeyPatch, parts: int, num_columns: int
) -> None:
    # split into `parts` batch members from 256 columns a member on (uneven splits padded)
    monkeypatch.setattr(linalg, "_solve_parts", lambda: parts)
    rng = np.random.default_rng(parts * 1000 + num_columns)
    a = rng.normal(size=(40, 40))
    lower = tf.linalg.cholesky(tf.constant(a @ a.T + 40 * np.eye(40)))
    rhs = tf.constant(rng.normal(size=(40, num_columns)))
    expected = tf.linalg.triangular_solve(lower, rhs, lower=True)
    compiled = tf.function(
        linalg.solve_lower, input_signature=[tf.TensorSpec([None, None], tf.float64)] * 2
    )
    for solve in (linalg.solve_lower, compiled):
        np.testing.assert_allclose(solve(lower, rhs), expected, rtol=1e-12, atol=1e-14)
