"""Outcome transforms against independent computations (scipy's Yeo-Johnson and its fitted
power, scipy's ranks and normal quantiles, numpy's log and Gaussian likelihood), their round
trips inside and beyond the fitted values, and what ``auto`` picks."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from scipy import special, stats

from trieste_scalable.numerics.outcome_transforms import (
    TRANSFORMS,
    YeoJohnson,
    fit_outcome_transform,
    log_likelihood,
    yeo_johnson,
)

from ...util import retained_bytes


def _samples() -> dict[str, np.ndarray]:
    """Seeded values [N, 1] of the shapes campaigns see (Trieste's units: lower is better)."""
    rng = np.random.default_rng(7)
    hits = rng.random(400) < 0.02
    sparse = np.where(hits, rng.uniform(0.2, 0.9, 400), rng.exponential(1e-3, 400))
    return {
        "gaussian": rng.normal(3.0, 2.0, 300),
        "skewed": rng.exponential(1.0, 300) - 4.0,
        "sparse": -sparse,  # a probability of activity, negated: its hits are the lowest
        "ties": np.repeat([-1.0, 0.0, 2.5, 7.0], [50, 30, 15, 5]),
    }


SAMPLES = _samples()


@pytest.mark.parametrize("kind", [k for k in TRANSFORMS if k != "auto"])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_transform_is_increasing_standardised_and_undone(kind: str, name: str) -> None:
    """On the fitted values: mean 0 and sd 1 (1e-10), order kept, the inverse recovers them
    (relative 1e-8); on values between and 10 % beyond them, the round trip too."""
    y = SAMPLES[name][:, None]
    transform = fit_outcome_transform(kind, y)
    z = transform.forward(y).numpy()
    assert abs(z.mean()) < 1e-10 and abs(z.std() - 1) < 1e-10
    order = np.argsort(y[:, 0], kind="stable")
    assert np.all(np.diff(z[order, 0]) >= -1e-12)
    scale = np.ptp(y) or 1.0
    np.testing.assert_allclose(transform.inverse(z).numpy(), y, atol=1e-8 * scale)
    between = np.linspace(y.min(), y.max(), 57)[:, None]
    if kind == "log":  # defined up to the worst value (and its offset)
        beyond = np.concatenate([between, [[y.min() - 0.1 * scale]]])
    else:
        beyond = np.concatenate([between, [[y.min() - 0.1 * scale], [y.max() + 0.1 * scale]]])
    back = transform.inverse(transform.forward(beyond)).numpy()
    np.testing.assert_allclose(back, beyond, atol=1e-8 * scale)


@pytest.mark.parametrize("power", [-1.5, 0.0, 0.5, 1.0, 2.0, 3.0])
def test_yeo_johnson_equals_scipys(power: float) -> None:
    u = np.random.default_rng(1).normal(0.0, 1.5, 200)
    np.testing.assert_allclose(
        yeo_johnson(u, power).numpy(), stats.yeojohnson(u, lmbda=power), rtol=1e-12, atol=1e-12
    )
    as_tensor = yeo_johnson(u, tf.constant(power, tf.float64)).numpy()  # as the fit compiles it
    np.testing.assert_allclose(as_tensor, stats.yeojohnson(u, lmbda=power), rtol=1e-12, atol=1e-12)


def test_fitting_retains_no_memory() -> None:
    # the power's search evaluates its likelihood about 90 times a fit; done eagerly, each made
    # TensorFlow convert Python numbers and keep 336 bytes of each (host_tensors' docstring):
    # 265 KB a fit, on every tell of a campaign; compiled, 31 KB (the other eager steps'
    # conversions). The bound is 64 KB a fit.
    values = SAMPLES["skewed"][:, None]
    assert retained_bytes(lambda: fit_outcome_transform("auto", values), 10, warmup=2) < 10 * 65536


@pytest.mark.parametrize("name", ["gaussian", "skewed"])
def test_the_power_is_scipys_maximum_likelihood_one(name: str) -> None:
    """The fit's power equals scipy's (Brent's method, unbounded) to 1e-4 on the standardised
    values, and its transform equals scipy's transformed values, standardised."""
    y = SAMPLES[name]
    u = (y - y.mean()) / y.std()
    transformed, power = stats.yeojohnson(u)
    fitted = fit_outcome_transform("power", y[:, None])
    assert isinstance(fitted, YeoJohnson)
    assert fitted.power == pytest.approx(power, abs=1e-4)
    expected = (transformed - transformed.mean()) / transformed.std()
    np.testing.assert_allclose(fitted.forward(y[:, None]).numpy()[:, 0], expected, atol=1e-4)


def test_the_power_stops_at_its_range_where_scipys_goes_beyond() -> None:
    """The negated sparse probability: scipy's power is 14.4; ours is the end of its range,
    where scipy's likelihood still rises."""
    y = SAMPLES["sparse"]
    u = (y - y.mean()) / y.std()
    assert stats.yeojohnson(u)[1] > 10
    fitted = fit_outcome_transform("power", y[:, None])
    assert isinstance(fitted, YeoJohnson) and fitted.power == pytest.approx(5.0, abs=1e-5)
    assert stats.yeojohnson_llf(5.0, u) > stats.yeojohnson_llf(4.9, u)


def test_the_copula_is_the_normal_scores_of_the_ranks() -> None:
    y = SAMPLES["ties"]
    scores = special.ndtri((stats.rankdata(y) - 0.5) / len(y))
    expected = (scores - scores.mean()) / scores.std()
    fitted = fit_outcome_transform("rank", y[:, None])
    np.testing.assert_allclose(fitted.forward(y[:, None]).numpy()[:, 0], expected, atol=1e-12)


def test_the_log_is_of_the_gap_to_the_worst() -> None:
    y = SAMPLES["sparse"]
    gaps = y.max() - y
    warped = -np.log(gaps + 0.5 * gaps[gaps > 0].min())
    expected = (warped - warped.mean()) / warped.std()
    fitted = fit_outcome_transform("log", y[:, None])
    np.testing.assert_allclose(fitted.forward(y[:, None]).numpy()[:, 0], expected, atol=1e-12)


@pytest.mark.parametrize("kind", ["identity", "log", "power"])
def test_the_likelihood_is_the_gaussian_density_of_the_transformed_values_with_jacobian(
    kind: str,
) -> None:
    """Against numpy: the Gaussian log density of z = T(y) at its maximum-likelihood mean and
    variance, plus the sum of log T'(y) by central differences (relative step 1e-6)."""
    y = SAMPLES["skewed"][:, None]
    fitted = fit_outcome_transform(kind, y)
    z = fitted.forward(y).numpy()[:, 0]
    density = stats.norm.logpdf(z, z.mean(), z.std()).sum()
    step = 1e-6 * np.ptp(y)
    slope = (fitted.forward(y + step).numpy() - fitted.forward(y - step).numpy()) / (2 * step)
    expected = density + np.log(slope).sum()
    assert log_likelihood(fitted, y) == pytest.approx(expected, rel=1e-6)


def test_auto_keeps_gaussian_values_and_warps_sparse_ones() -> None:
    """Gaussian values: the identity (power's likelihood gain is below its penalty); a sparse
    probability: not the identity, and its likelihood is the best of the three."""
    gaussian = SAMPLES["gaussian"][:, None]
    assert fit_outcome_transform("auto", gaussian).name == "identity"
    sparse = SAMPLES["sparse"][:, None]
    chosen = fit_outcome_transform("auto", sparse)
    assert chosen.name == "log"
    others = [fit_outcome_transform(k, sparse) for k in ("identity", "log", "power")]
    assert log_likelihood(chosen, sparse) >= max(log_likelihood(t, sparse) for t in others) - (
        0.5 * np.log(len(sparse))
    )


def test_auto_does_not_weigh_power_on_a_point_mass() -> None:
    """A hit call (0 for 97 % of values, a probability above 0.5 elsewhere, negated as Trieste
    sees it): power's penalised likelihood beats log's by steepening at the zeros, so without
    the point-mass rule ``auto`` picks power; with it, log."""
    rng = np.random.default_rng(3)
    hits = np.where(rng.random(400) < 0.03, 0.5 + 0.45 * rng.random(400), 0.0)
    y = tf.constant(-hits[:, None])
    penalised = {
        k: log_likelihood(fit_outcome_transform(k, y), y) - (k == "power") * 0.5 * np.log(400)
        for k in ("identity", "log", "power")
    }
    assert max(penalised, key=penalised.__getitem__) == "power"
    assert fit_outcome_transform("auto", y).name == "log"
    spread = tf.constant(-np.where(hits > 0, hits, 1e-3 * rng.random(400))[:, None])
    assert fit_outcome_transform("auto", spread).name != "identity"  # no mass: all weighed


def test_one_value_or_equal_values_fit_every_transform() -> None:
    for kind in TRANSFORMS:
        fitted = fit_outcome_transform(kind, tf.constant([[2.0], [2.0]], tf.float64))
        np.testing.assert_allclose(fitted.inverse(fitted.forward([[2.0]])).numpy(), [[2.0]])


@pytest.mark.parametrize(
    "kind, values, message",
    [
        ("cube", [[1.0]], "unknown outcome transform 'cube'"),
        ("log", np.zeros((0, 1)), "at least one value"),
        ("power", [[1.0], [np.nan]], "finite values only"),
    ],
)
def test_bad_input_is_refused(kind: str, values: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_outcome_transform(kind, values)
