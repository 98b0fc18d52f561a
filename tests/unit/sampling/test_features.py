"""Random feature maps against their kernels, and the Tanimoto kernel against direct counts."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.kernels import Tanimoto
from trieste_scalable.sampling import FourierFeatures, feature_map_for, register_feature_map
from trieste_scalable.sampling.features import FEATURE_MAPS

NUM_FEATURES = 40_000
# Monte Carlo error of a feature average is O(variance / sqrt(F)): 5e-3 at F = 40,000 for unit
# variance; the tolerance below is ~6 standard errors.
TOLERANCE = 0.03


def _max_error(kernel: gpflow.kernels.Kernel, x: np.ndarray, seed: int = 3) -> float:
    features = feature_map_for(kernel, NUM_FEATURES)
    draws = features.draw(tf.constant([seed, 1]), x.shape[1], tf.float64)
    phi = features(draws, tf.constant(x)).numpy()
    return float(np.abs(phi @ phi.T - kernel(x).numpy()).max())


@pytest.mark.parametrize(
    "kernel",
    [
        gpflow.kernels.SquaredExponential(variance=0.7, lengthscales=[0.3, 0.5, 0.4]),
        gpflow.kernels.Matern12(lengthscales=0.5),
        gpflow.kernels.Matern32(lengthscales=[0.4, 0.6, 0.5]),
        gpflow.kernels.Matern52(variance=1.5, lengthscales=0.5),
        gpflow.kernels.ArcCosine(order=0, variance=1.2, weight_variances=[1.0, 2.0, 3.0]),
    ],
    ids=["se", "matern12", "matern32", "matern52", "arccosine0"],
)
def test_features_reproduce_kernel(kernel: gpflow.kernels.Kernel) -> None:
    x = np.random.default_rng(0).uniform(size=(25, 3))
    assert _max_error(kernel, x) < TOLERANCE


def test_matern_features_are_not_se_features() -> None:
    """Student-t frequencies matter: SE features fit a Matern-1/2 kernel badly (errata 2)."""
    x = np.random.default_rng(1).uniform(size=(25, 3))
    matern = gpflow.kernels.Matern12(lengthscales=0.5)
    se_features = feature_map_for(gpflow.kernels.SquaredExponential(lengthscales=0.5), 40_000)
    draws = se_features.draw(tf.constant([3, 1]), 3, tf.float64)
    phi = se_features(draws, tf.constant(x)).numpy()
    assert np.abs(phi @ phi.T - matern(x).numpy()).max() > 5 * TOLERANCE
    assert _max_error(matern, x) < TOLERANCE


def _fingerprints(seed: int, num: int = 30, bits: int = 256) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(size=(num, bits)) < 0.1).astype(np.float64)


def test_tanimoto_kernel_known_pairs_and_psd() -> None:
    a = np.array([[1, 1, 0, 0, 1], [1, 0, 1, 0, 1], [0, 0, 0, 0, 0]], dtype=np.float64)
    gram = Tanimoto(variance=2.0)(a).numpy()
    # |a0 & a1| = 2, |a0 | a1| = 4; the empty fingerprint is similar to nothing.
    np.testing.assert_allclose(gram[0, 1], 2.0 * 2 / 4)
    np.testing.assert_allclose(np.diag(gram), [2.0, 2.0, 0.0])
    np.testing.assert_allclose(gram[2], 0.0)
    x = _fingerprints(0, 60)
    jaccard = (x @ x.T) / (x.sum(1)[:, None] + x.sum(1)[None, :] - x @ x.T)
    np.testing.assert_allclose(Tanimoto()(x).numpy(), jaccard)
    assert np.linalg.eigvalsh(Tanimoto()(x).numpy()).min() > -1e-10


@pytest.mark.parametrize("binary_inputs", [False, True])
def test_tanimoto_of_a_batch_of_sets_is_the_batch_of_their_grams(binary_inputs: bool) -> None:
    """GPflow's kernel contract: ``K(X)`` of X [S, B, D] is [S, B, B], each set's own Gram."""
    kernel = Tanimoto(variance=1.5, binary_inputs=binary_inputs)
    sets = _fingerprints(1, 12).reshape(4, 3, -1)
    grams = kernel(sets).numpy()
    assert grams.shape == (4, 3, 3)
    for s in range(4):
        np.testing.assert_allclose(grams[s], kernel(sets[s]).numpy(), rtol=1e-12)


def test_tanimoto_on_binary_inputs_is_exact_with_float32_products() -> None:
    x, x2 = _fingerprints(4, 40, 2048), _fingerprints(5, 25, 2048)
    fast, plain = Tanimoto(variance=1.7, binary_inputs=True), Tanimoto(variance=1.7)
    assert fast(x, x2).dtype == tf.float64
    np.testing.assert_array_equal(fast(x, x2).numpy(), plain(x, x2).numpy())
    np.testing.assert_array_equal(fast(x).numpy(), plain(x).numpy())
    # the norms and the diagonal read the rows' sums, not their squares: the same values
    x[0] = 0.0  # an empty fingerprint: zero prior variance
    np.testing.assert_array_equal(fast(x, x2).numpy(), plain(x, x2).numpy())
    np.testing.assert_array_equal(fast.K_diag(x).numpy(), plain.K_diag(x).numpy())
    np.testing.assert_allclose(fast.K_diag(x).numpy()[:2], [0.0, 1.7], rtol=1e-12)


def test_tanimoto_is_minmax_on_unary_counts() -> None:
    counts = np.random.default_rng(2).integers(0, 4, size=(10, 20)).astype(np.float64)
    unary = np.concatenate([(counts >= level) for level in (1, 2, 3)], axis=1).astype(np.float64)
    minmax = np.minimum(counts[:, None], counts[None]).sum(-1) / np.maximum(
        counts[:, None], counts[None]
    ).sum(-1)
    np.testing.assert_allclose(Tanimoto()(unary).numpy(), minmax)


def test_tanimoto_features_reproduce_kernel() -> None:
    x = _fingerprints(3)
    assert _max_error(Tanimoto(variance=1.3), x) < TOLERANCE


def test_tanimoto_signs_are_the_signs_of_each_rows_minhash() -> None:
    """Against MinHash written out in numpy from the same random streams: feature f of a row is
    the random sign of its on-bit that comes first in permutation f; an empty row's are 0."""
    num_features, dim = 40, 64
    x = (np.random.default_rng(1).uniform(size=(25, dim)) < 0.1).astype(np.float64)
    x[3] = 0.0  # an empty fingerprint
    x[4] = 1.0  # every bit on
    seed = tf.constant([7, 8], tf.int64)
    features = feature_map_for(Tanimoto(binary_inputs=True), num_features)
    signs = features.signs(features.draw(seed, dim, tf.float64), tf.constant(x)).numpy()

    seeds = tf.random.experimental.stateless_split(seed, 2)
    shape = [num_features, dim]
    order = np.argsort(tf.random.stateless_uniform(shape, seeds[0]).numpy(), axis=-1)  # [F, D]
    positive = tf.random.stateless_uniform(shape, seeds[1], maxval=2, dtype=tf.int32).numpy()
    expected = np.zeros_like(signs)
    for n, row in enumerate(x):
        for f in range(num_features):
            first = next((bit for bit in order[f] if row[bit]), None)  # first on-bit in order
            if first is not None:
                expected[n, f] = 1.0 if positive[f, first] else -1.0
    np.testing.assert_array_equal(signs, expected)
    assert np.all(signs[3] == 0) and np.all(np.abs(np.delete(signs, 3, axis=0)) == 1)


def test_unsupported_kernel_is_a_clear_error() -> None:
    kernel = gpflow.kernels.SquaredExponential() + gpflow.kernels.Linear()
    with pytest.raises(ValueError, match="random features"):
        feature_map_for(kernel, 10)
    with pytest.raises(ValueError, match="order"):
        feature_map_for(gpflow.kernels.ArcCosine(order=1), 10)


def test_feature_maps_are_found_by_kernel_class_and_a_users_map_registers() -> None:
    """The most specific registered class of a kernel picks its map: a subclass of a supported
    kernel gets that kernel's map (here with the subclass's Matern degree), and a map registered
    for a new kernel type is found without editing the package."""

    class MyMatern(gpflow.kernels.Matern32):
        pass

    class MyKernel(gpflow.kernels.SquaredExponential):
        pass

    x = np.random.default_rng(0).uniform(size=(6, 3))
    assert type(feature_map_for(MyMatern(lengthscales=0.5), 4)) is FourierFeatures
    assert _max_error(MyMatern(lengthscales=0.5), x) < TOLERANCE

    @register_feature_map(MyKernel)
    class Mine(FourierFeatures):
        pass

    try:
        assert type(feature_map_for(MyKernel(), 4)) is Mine
        assert type(feature_map_for(gpflow.kernels.SquaredExponential(), 4)) is FourierFeatures
    finally:
        del FEATURE_MAPS[MyKernel]


def test_float64_cosine_matches_numpy() -> None:
    """Features reduce the phase in float64 and take cos in float32 (10x faster on CPU)."""
    from trieste_scalable.sampling.features import _cosine

    phase = np.random.default_rng(5).uniform(-300.0, 300.0, size=100_000)
    np.testing.assert_allclose(_cosine(tf.constant(phase)).numpy(), np.cos(phase), atol=2e-7)
